"""TACOS quality and speed: estimated time against the best lower bound, synthesis seconds and
peak memory, on the topologies the TACOS C++ reference was evaluated on, and a few more.

    python benchmarks/bench_tacos.py [--quick] [--big] [--verify] [--reference-model]
    python benchmarks/bench_tacos.py --against-baselines [--seeds 0,1,2,3]

``--big`` adds the All-Gather on a 4,096-NPU 3D torus; ``--verify`` also times `verify`.
``--reference-model`` times the reference's rows under the reference's own link model (a link
busy for latency + size / bandwidth, `CostModel.latency_holds_link`) and prints the times it
reported next to collc's: only then are the µs comparable (collc's default link is a pipe,
busy for the serialization only).
``--against-baselines`` runs the rows where TACOS's greedy matching was behind a simpler
algorithm (`AGAINST`) through `collc bench`'s runner, per seed: TACOS's simulated time over the
best baseline's and over the lower bound, the rule that ran and the synthesis seconds.
Synthesis seconds include lowering into the Program (not verification). The growth exponent is
fitted on the 3D-torus All-Gather rows (seconds ~ NPUs^k).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memory import peak_mib, reset_peak
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.verify import verify
from tacos import chunks_for, synthesize
from tacos.bounds import lower_bounds
from topologies import parse_topology
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel

AG, AR = CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE
REF = "bw=50GiB/s,lat=500ns"
MIB, GIB = 2**20, 2**30
# (spec, kind, chunks per NPU, size, reference seconds)
ROWS = [
    (f"mesh:8x8,{REF}", AG, 3, 12 * MIB, 0.089),
    (f"mesh:8x8,{REF}", AG, 1, GIB, 0.015),
    (f"torus:4x4x4,{REF}", AG, 3, 12 * MIB, 0.046),
    (f"torus:4x4x4,{REF}", AG, 1, GIB, 0.010),
    (f"mesh:16x16,{REF}", AG, 3, 12 * MIB, 6.92),
    (f"mesh:16x16,{REF}", AG, 1, GIB, 0.85),
    (f"torus:16x16,{REF}", AG, 3, 12 * MIB, 4.71),
    (f"torus:16x16,{REF}", AG, 1, GIB, 0.56),
    ("mesh:16x16,bw=[50GiB/s,75GiB/s],lat=500ns", AG, 3, 12 * MIB, 90.5),
    ("mesh:16x16,bw=[50GiB/s,75GiB/s],lat=500ns", AG, 1, GIB, 9.78),
    (f"torus:8x8x8,{REF}", AG, 3, 12 * MIB, 45.2),
    (f"torus:8x8x8,{REF}", AG, 1, GIB, 3.54),
    (f"mesh:8x8x8,{REF}", AG, 3, 12 * MIB, 48.7),
    (f"mesh:8x8x8,{REF}", AG, 1, GIB, 4.84),
    (f"torus:8x8x8,{REF}", AR, 3, 64 * MIB, None),
    (f"torus:4x4x4,{REF}", AR, 1, 64 * MIB, None),
    (f"mesh:4x4,{REF}", AR, 2, 64 * MIB, None),
    (f"hypercube:6,{REF}", AG, 1, GIB, None),
    (f"hypercube:6,{REF}", AR, 1, GIB, None),
    (f"ring:16,{REF}", AG, 1, GIB, None),
    (f"torus:8x8,{REF}", AG, 1, GIB, None),
    ("mesh:8x8,bw=[50GiB/s,12.5GiB/s],lat=500ns", AG, 1, GIB, None),
    ("mesh:8x8,bw=[50GiB/s,12.5GiB/s],lat=500ns", AG, 3, GIB, None),
    ("mesh:8x8,bw=[50GiB/s,12.5GiB/s],lat=500ns", AR, 3, GIB, None),
    ("stack:switch4*switch4", AG, 1, GIB, None),
    ("stack:switch4*switch4", AR, 1, GIB, None),
    ("switch:16", AG, 1, GIB, None),
    ("fred:16", AG, 1, GIB, None),
    ("fred:16", AR, 1, GIB, None),
    (
        "stack:ring4*fc4*switch8,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[100ns,200ns,500ns]",
        AG,
        1,
        GIB,
        None,
    ),
    ("mesh:4x4,fail=0-1;5-6", AG, 1, 16 * MIB, None),
]
# The All-Gather times (µs) the reference reported for the rows with reference seconds: set A
# (3 chunks per NPU, 12 MiB) and set B (1 chunk per NPU, 1 GiB), minimum over its runs.
REFERENCE_US = {
    (f"mesh:8x8,{REF}", 3): 163.47,
    (f"mesh:8x8,{REF}", 1): 10016.0,
    (f"torus:4x4x4,{REF}", 3): 55.06,
    (f"torus:4x4x4,{REF}", 1): 3443.0,
    (f"mesh:16x16,{REF}", 3): 308.38,
    (f"mesh:16x16,{REF}", 1): 10064.0,
    (f"torus:16x16,{REF}", 3): 155.40,
    (f"torus:16x16,{REF}", 1): 5110.6,
    ("mesh:16x16,bw=[50GiB/s,75GiB/s],lat=500ns", 3): 287.45,
    ("mesh:16x16,bw=[50GiB/s,75GiB/s],lat=500ns", 1): 8045.25,
    (f"torus:8x8x8,{REF}", 3): 167.06,
    (f"torus:8x8x8,{REF}", 1): 3402.4,
    (f"mesh:8x8x8,{REF}", 3): 333.47,
    (f"mesh:8x8x8,{REF}", 1): 6765.2,
}
FRED_A = "fred:20,cfg=A"
STACK = "stack:ring4*fc4*switch8,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[100ns,200ns,500ns]"
HETERO = "mesh:8x8,bw=[50GiB/s,12.5GiB/s]"
# (spec, kind, size, chunks per NPU): TACOS against the baselines (--against-baselines)
AGAINST = [
    (spec, kind, size, c)
    for c in (1, 4)
    for spec, kind, size in (
        ("switch:16", AR, 256 * MIB),
        ("mesh:4x4", AR, 64 * MIB),
        (FRED_A, AR, GIB),
        ("fred:16,innet=no", AR, 16 * MIB),
        ("fred:16,innet=no", AR, 256 * MIB),
        (STACK, AG, GIB),
        (HETERO, AR, 16 * MIB),
        (HETERO, AR, 256 * MIB),
    )
]
SCALING = [(f"torus:{k}x{k}x{k},{REF}", AG, 1, GIB, None) for k in (4, 6, 8, 10, 12)]
BIG = [(f"torus:16x16x16,{REF}", AG, 1, GIB, None)]


def run(
    spec: str,
    kind: CollectiveKind,
    c: int,
    size: int,
    ref: float | None,
    check: bool,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> dict[str, object]:
    t = parse_topology(spec)
    n = t.num_npus
    coll = Collective(kind, n, chunks_for(kind, n, c))
    reset_peak()
    t0 = time.perf_counter()
    syn = synthesize(coll, t, chunk_bytes_for(coll, size), cost=cost)
    secs = time.perf_counter() - t0
    mem = peak_mib()
    b = lower_bounds(kind, t, size, chunks_per_npu=c)
    vsecs = float("nan")
    if check:
        t1 = time.perf_counter()
        verify(syn.program)
        vsecs = time.perf_counter() - t1
    name, bound = b.best
    return {
        "topology": spec.split(",bw")[0].split(",lat")[0] if "fail" not in spec else spec,
        "kind": kind.value,
        "c": c,
        "npus": n,
        "seconds": secs,
        "ref": ref,
        "mib": mem,
        "est_us": syn.estimated_ns / 1e3,
        "bound": f"{name} {bound / 1e3:.2f}",
        "ratio": syn.estimated_ns / bound,
        "ops": syn.program.num_ops,
        "verify": vsecs,
        "bw": spec,
    }


def reference_model(quick: bool) -> None:
    """The reference's All-Gather rows with links busy for latency + serialization."""
    cost = CostModel(latency_holds_link=True)
    head = f"{'topology':<44} {'c':>2} {'NPUs':>5} {'collc µs':>10} {'reference µs':>13} {'collc/ref':>10} {'synth s':>8}"
    print(head)
    print("-" * len(head))
    for spec, kind, c, size, secs in ROWS:
        ref_us = REFERENCE_US.get((spec, c))
        if kind is not AG or secs is None or ref_us is None:
            continue
        if quick and parse_topology(spec).num_npus >= 512:
            continue
        x = run(spec, kind, c, size, secs, False, cost)
        est = float(x["est_us"])  # type: ignore[arg-type]
        print(
            f"{spec:<44} {c:>2} {x['npus']:>5} {est:>10.2f} {ref_us:>13.2f} "
            f"{est / ref_us:>10.4f} {x['seconds']:>8.2f}",
            flush=True,
        )


def against_baselines(seeds: list[int]) -> None:
    """`AGAINST` per seed: TACOS / best baseline, TACOS / bound, rule, synthesis seconds."""
    from collc.bench import run_bench

    head = f"{'topology':<24} {'coll':<9} {'MiB':>5} {'c':>2} {'seed':>4} {'tacos µs':>11} {'best baseline':>26} {'/best':>7} {'/bound':>7} {'rule':<9} {'synth s':>7}"
    print(head)
    print("-" * len(head))
    for spec, kind, size, c in AGAINST:
        t = parse_topology(spec)
        coll = Collective(kind, t.num_npus, chunks_for(kind, t.num_npus, c))
        for seed in seeds:
            rep = run_bench(spec, kind, [size], chunks_per_npu=c, seed=seed)
            times = {
                r.algorithm: r.time_ns for r in rep.rows if r.time_ns and r.model == "congestion"
            }
            tacos = times.pop("tacos")
            best = min(times, key=lambda a: times[a])
            t0 = time.perf_counter()
            syn = synthesize(coll, t, chunk_bytes_for(coll, size), seed=seed)
            secs = time.perf_counter() - t0
            name = "stack" if spec == STACK else spec.split(",bw")[0]
            print(
                f"{name:<24} {kind.value:<9} {size // MIB:>5} {c:>2} {seed:>4} {tacos / 1e3:>11.2f} "
                f"{best + ' ' + format(times[best] / 1e3, '.2f'):>26} {tacos / times[best]:>7.4f} "
                f"{tacos / rep.bounds_ns[size][1]:>7.4f} {getattr(syn, 'rule', '') or '-':<9} {secs:>7.2f}",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="skip the 512-NPU rows")
    ap.add_argument("--big", action="store_true", help="add the 4,096-NPU 3D torus")
    ap.add_argument("--verify", action="store_true", help="also time verify")
    ap.add_argument(
        "--reference-model",
        action="store_true",
        help="the reference's rows under its link model, next to the times it reported",
    )
    ap.add_argument(
        "--against-baselines",
        action="store_true",
        help="TACOS against the best baseline and the bound where it was behind, per seed",
    )
    ap.add_argument("--seeds", default="0", help="comma-separated seeds for --against-baselines")
    args = ap.parse_args()
    if args.against_baselines:
        against_baselines([int(x) for x in args.seeds.split(",")])
        return
    if args.reference_model:
        reference_model(args.quick)
        return
    rows = [r for r in ROWS if not (args.quick and parse_topology(r[0]).num_npus >= 512)]
    rows += SCALING + (BIG if args.big else [])
    head = f"{'topology':<34} {'coll':<9} {'c':>2} {'NPUs':>5} {'synth s':>8} {'ref s':>6} {'peak MiB':>8} {'est µs':>11} {'best bound µs':>20} {'ratio':>7} {'ops':>10} {'verify s':>8}"
    print(head)
    print("-" * len(head))
    done = []
    for r in rows:
        x = run(*r, check=args.verify)
        done.append(x)
        ref = "" if x["ref"] is None else f"{x['ref']:.3g}"
        print(
            f"{x['topology']:<34} {x['kind']:<9} {x['c']:>2} {x['npus']:>5} {x['seconds']:>8.2f} {ref:>6} "
            f"{x['mib']:>8.0f} {x['est_us']:>11.2f} {x['bound']:>20} {x['ratio']:>7.4f} {x['ops']:>10,} {x['verify']:>8.2f}",
            flush=True,
        )
    scal = [
        x
        for x in done
        if str(x["topology"]).startswith("torus:")
        and x["kind"] == "allgather"
        and x["c"] == 1
        and str(x["topology"]).count("x") == 2
    ]
    scal = sorted(
        {int(str(x["npus"])): x for x in scal}.values(), key=lambda x: int(str(x["npus"]))
    )
    if len(scal) >= 2:
        xs = [math.log(int(str(x["npus"]))) for x in scal]
        ys = [math.log(float(str(x["seconds"]))) for x in scal]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        k = sum((a - mx) * (b - my) for a, b in zip(xs, ys, strict=True)) / sum(
            (a - mx) ** 2 for a in xs
        )
        print(f"\ngrowth: synthesis seconds ~ NPUs^{k:.2f} (3D-torus All-Gather, 1 chunk per NPU)")


if __name__ == "__main__":
    main()
