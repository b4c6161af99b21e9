"""Training workloads: collc's analytical mode against ASTRA-sim, and the cost at 1,024 NPUs.

    python -m benchmarks.bench_workload astra [--astra-examples DIR] [--only TEXT]  # the binary
    python -m benchmarks.bench_workload scale [--contended] [--npus 1024]

``astra``: every case is a workload run by ``collc workload simulate --model analytical`` (in
process) and by ASTRA-sim's congestion-unaware analytical binary, named by the environment
variable ``COLLC_ASTRA_SIM_UNAWARE``, with the same network, system knobs and communicator
groups: ASTRA-sim's 16 shipped microbenchmark runs (the ETs under ``--astra-examples`` = a
checkout's ``examples/workload/microbenchmarks``, with the checkout's shipped network YAML and
system JSON, which collc reads as ``--system``), generated workloads whose tensor-parallel
groups are unevenly spaced on rings (1-D rings, 2-D stacks; endpoint delays 10, 100 and
1,000 ns), and generated workloads on stacks (system JSON written by
`workloads.analytical.system_json`). It prints both iteration times (the largest
``sys[i] finished, T cycles``) and the relative error.

``scale``: GPT-3 13B on ``--npus`` NPUs (dp x tp 8 x pp 4) of a 4-D stack: generate, write,
read, check, the analytical mode by classes and in full, and with ``--contended`` the
contention mode with TACOS collectives; seconds, peak memory, nodes, collectives, messages.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.memory import peak_mib, reset_peak

_FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


@dataclass(frozen=True)
class Case:
    """One comparison: a workload (``model`` generated, or ``example`` ETs), a topology and
    the analytical knobs."""

    name: str
    topology: str
    model: str = ""
    parallel: tuple[int, int, int] = (1, 1, 1)
    gen: tuple[tuple[str, Any], ...] = ()
    example: str = ""
    knobs: tuple[tuple[str, Any], ...] = ()
    system_file: str = ""
    network_file: str = ""


SHIPPED_RUNS = [
    (coll, npus, f"Ring_{npus}npus.yml", "Ring_4chunks.json", f"ring:{npus},bw=50GiB/s,lat=500ns")
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
    for npus in (4, 8, 16)
] + [
    (
        coll,
        8,
        "HGX-H100-validated.yml",
        "HGX-H100-validated.json",
        "switch:8,bw=400GiB/s,lat=936.25ns",
    )
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
]
"""ASTRA-sim's 16 shipped microbenchmark runs: (collective, NPUs, network YAML, system JSON,
the same network as a collc topology)."""


def cases() -> list[Case]:
    ring_ring = "stack:ring4*ring4,bw=[50GiB/s,25GiB/s],lat=[500ns,1000ns]"
    three = "stack:ring4*fc4*switch2,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[50ns,500ns,1000ns]"
    out = [
        Case(
            f"shipped {c} {n}npus {sysf[:-5]}",
            topo,
            example=f"{c}/{n}npus_1MB",
            system_file=sysf,
            network_file=net,
        )
        for c, n, net, sysf, topo in SHIPPED_RUNS
    ]
    # Groups unevenly spaced on rings (a tensor-parallel group of 4 on ring:8 or ring:16),
    # on 2-D stacks, with endpoint delays of 10, 100 and 1,000 ns.
    uneven = [
        ("vit-base dp4 tp4", "ring:16,bw=100GiB/s,lat=700ns", "vit-base", (4, 4, 1), ()),
        ("gpt3-125m dp2 tp4", "ring:8,bw=50GiB/s,lat=500ns", "gpt3-125m", (2, 4, 1), ()),
        (
            "gpt3-125m dp4 tp4 ring8*ring2",
            "stack:ring8*ring2,bw=[50GiB/s,25GiB/s],lat=[500ns,1000ns]",
            "gpt3-125m",
            (4, 4, 1),
            (),
        ),
    ]
    for name, topo, model, par, gen in uneven:
        for ed in (10, 100, 1000):
            out.append(
                Case(f"{name} ed{ed}", topo, model, par, gen, knobs=(("endpoint_delay_ns", ed),))
            )
    out += [
        Case(
            "vit-large dp4 tp4 ring8*fc2 splits4 mem-bw ed100",
            "stack:ring8*fc2,bw=[100GiB/s,50GiB/s],lat=[300ns,1000ns]",
            "vit-large",
            (4, 4, 1),
            knobs=(
                ("endpoint_delay_ns", 100),
                ("preferred_dataset_splits", 4),
                ("local_mem_bw_gbps", 1600.0),
            ),
        ),
        Case(
            "gpt3-125m dp4 tp4 sp ring16 splits2 active2",
            "ring:16,bw=50GiB/s,lat=500ns",
            "gpt3-125m",
            (4, 4, 1),
            gen=(("sp", True),),
            knobs=(("preferred_dataset_splits", 2), ("active_chunks_per_dimension", 2)),
        ),
        Case(
            "vit-base dp4 tp3 ring12 ed1000",
            "ring:12,bw=100GiB/s,lat=700ns",
            "vit-base",
            (4, 3, 1),
            knobs=(("endpoint_delay_ns", 1000),),
        ),
    ]
    # Pipeline-parallel workloads: ASTRA-sim's ETFeeder (this ASTRA-sim's Chakra) resolves
    # only data_deps, so the ctrl_deps that order a stage's 1F1B schedule do not bind there.
    out += [
        Case("gpt3-125m dp2 tp4 pp2", ring_ring, "gpt3-125m", (2, 4, 2)),
        Case(
            "gpt3-125m dp2 tp4 pp2 splits4 mem-bw",
            ring_ring,
            "gpt3-125m",
            (2, 4, 2),
            knobs=(("preferred_dataset_splits", 4), ("local_mem_bw_gbps", 1600.0)),
        ),
        Case(
            "gpt3-350m dp4 tp4 pp2 sp zero1 localBWAware",
            three,
            "gpt3-350m",
            (4, 4, 2),
            gen=(("sp", True), ("zero", 1)),
            knobs=(("collective_optimization", "localBWAware"), ("preferred_dataset_splits", 2)),
        ),
        Case(
            "gpt3-350m dp2 tp8 pp2 direct",
            three,
            "gpt3-350m",
            (2, 8, 2),
            knobs=(("implementation", ("direct",)),),
        ),
        Case("vit-base dp8 tp2 switch16", "switch:16,bw=100GiB/s,lat=700ns", "vit-base", (8, 2, 1)),
        Case(
            "gpt3-125m dp4 tp4 roofline",
            "stack:ring4*ring4,bw=[50GiB/s,50GiB/s],lat=[500ns,500ns]",
            "gpt3-125m",
            (4, 4, 1),
            knobs=(("roofline", True), ("peak_perf_tflops", 312.0), ("local_mem_bw_gbps", 2039.0)),
        ),
    ]
    return out


def _config(case: Case, root: Path) -> Any:
    """The case's analytical knobs: the shipped system JSON, read as `collc workload simulate
    --system` reads it, or the case's own."""
    from collc.commands.workload import native_config
    from workloads.analytical import NativeConfig

    if case.system_file:
        return native_config(root / "system" / "native_collectives" / case.system_file, {})
    return NativeConfig(**dict(case.knobs))


def _collc(folder: Path, case: Case, root: Path) -> tuple[float, float]:
    from topologies import parse_topology
    from workloads.analytical import run_analytical
    from workloads.chakra_io import read_workload
    from workloads.engine import Roofline
    from workloads.model import check_workload

    t0 = time.perf_counter()
    cfg = _config(case, root)
    w = read_workload(folder)
    classes = check_workload(w, roofline=cfg.roofline)
    roof = (
        Roofline(cfg.peak_perf_tflops * 1e12, cfg.local_mem_bw_gbps * 1e9) if cfg.roofline else None
    )
    run, _ = run_analytical(w, parse_topology(case.topology), cfg, classes=classes, roofline=roof)
    return run.time_ns, time.perf_counter() - t0


def _astra(binary: str, folder: Path, case: Case, work: Path, root: Path) -> tuple[float, float]:
    import json

    from backends.astrasim.network import network_yaml
    from topologies import parse_topology
    from workloads.analytical import NativeConfig, system_json

    topo = parse_topology(case.topology)
    net = work / "net.yml"
    net.write_text(network_yaml(topo))
    sysj = work / "system.json"
    if case.system_file:
        net = root / "network" / "analytical" / case.network_file
        sysj = root / "system" / "native_collectives" / case.system_file
    else:
        ndims = len(net.read_text().split("npus_count:")[1].split("]")[0].split(","))
        sysj.write_text(json.dumps(system_json(NativeConfig(**dict(case.knobs)), ndims)))
    mem = work / "mem.json"
    mem.write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    prefix = next(folder.glob("*.0.et")).name[: -len(".0.et")]
    cmd = [
        binary,
        f"--workload-configuration={folder / prefix}",
        f"--system-configuration={sysj}",
        f"--network-configuration={net}",
        f"--remote-memory-configuration={mem}",
    ]
    groups = folder / "comm_groups.json"
    if groups.exists():
        cmd.append(f"--comm-group-configuration={groups}")
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=3600)
    secs = time.perf_counter() - t0
    times = [int(m[2]) for m in _FINISHED.finditer(done.stdout + done.stderr)]
    if done.returncode != 0 or not times:
        raise RuntimeError(f"ASTRA-sim failed ({done.returncode}): {done.stderr[-400:]}")
    return float(max(times)), secs


def astra(args: argparse.Namespace) -> None:
    binary = os.environ.get("COLLC_ASTRA_SIM_UNAWARE")
    if not binary:
        raise SystemExit("set COLLC_ASTRA_SIM_UNAWARE to ASTRA-sim's congestion-unaware binary")
    from workloads.chakra_io import write_workload
    from workloads.transformer import generate

    print(
        f"{'case':<46} {'collc ns':>16} {'ASTRA-sim ns':>16} {'error':>9} {'collc s':>8} {'astra s':>8}"
    )
    worst = 0.0
    root = Path(args.astra_examples).resolve().parent.parent if args.astra_examples else Path()
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases()):
            if args.only and args.only not in case.name:
                continue
            work = Path(tmp) / str(i)
            work.mkdir()
            if case.example:
                if not args.astra_examples:
                    print(f"{case.name:<46} skipped: give --astra-examples")
                    continue
                src = Path(args.astra_examples) / case.example
                folder = work / "wl"
                shutil.copytree(src, folder)
            else:
                dp, tp, pp = case.parallel
                w = generate(case.model, npus=dp * tp * pp, dp=dp, tp=tp, pp=pp, **dict(case.gen))
                folder = work / "wl"
                write_workload(w, folder)
            ours, s1 = _collc(folder, case, root)
            theirs, s2 = _astra(binary, folder, case, work, root)
            err = (ours - theirs) / theirs
            worst = max(worst, abs(err))
            print(
                f"{case.name:<46} {ours:>16,.0f} {theirs:>16,.0f} {err:>+9.4%} {s1:>8.2f} {s2:>8.2f}"
            )
    print(f"worst |error| {worst:.4%}")


def scale(args: argparse.Namespace) -> None:
    from topologies import parse_topology
    from workloads.analytical import NativeConfig, native_timers
    from workloads.chakra_io import read_workload, write_workload
    from workloads.engine import run_workload
    from workloads.model import check_workload
    from workloads.symmetry import run_by_classes
    from workloads.transformer import generate

    n = args.npus
    dp = n // 32
    spec = (
        "stack:ring4*fc8*ring4*switch"
        + str(n // 128)
        + ",bw=[200GiB/s,100GiB/s,50GiB/s,25GiB/s],lat=[50ns,500ns,1000ns,2000ns]"
    )
    topo = parse_topology(spec)

    def step(label: str, fn: Any) -> Any:
        reset_peak()
        t0 = time.perf_counter()
        out = fn()
        print(f"{label:<44} {time.perf_counter() - t0:8.2f} s  peak {peak_mib():8.0f} MiB")
        return out

    print(f"gpt3-13b, {n} NPUs: dp {dp} x tp 8 x pp 4 on {spec}")
    w = step("generate", lambda: generate("gpt3-13b", npus=n, dp=dp, tp=8, pp=4))
    print(f"  {w.num_nodes:,} nodes, {len(w.groups)} groups")
    with tempfile.TemporaryDirectory() as tmp:
        step("write ETs", lambda: write_workload(w, Path(tmp) / "wl"))
        w2 = step("read ETs", lambda: read_workload(Path(tmp) / "wl"))
    assert w2.ranks == w.ranks
    classes = step("check_workload", lambda: check_workload(w))
    coll, p2p, _ = native_timers(topo, NativeConfig())
    quick = step("analytical, by classes", lambda: run_by_classes(w, coll, p2p, classes=classes))
    full = step("analytical, every NPU", lambda: run_workload(w, coll, p2p))
    assert quick is not None and quick.finish_ns == full.finish_ns
    print(f"  iteration {full.time_ns / 1e6:,.3f} ms, {len(full.collectives):,} collectives")
    if args.contended:
        from collc.pipeline import cost_model_for, program_for
        from workloads.expand import run_contended

        cost = cost_model_for("on-arrival")
        make = program_for(topo, ("tacos", {}), cost=cost, chunks_per_npu=1, seed=0)
        done = step(
            "contention mode, TACOS, full expansion",
            lambda: run_contended(w, topo, make, cost=cost),
        )
        print(
            f"  iteration {done.run.time_ns / 1e6:,.3f} ms (uncontended "
            f"{done.uncontended.time_ns / 1e6:,.3f} ms), {done.programs} programs, "
            f"{done.sim.messages:,} messages"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("astra")
    a.add_argument("--astra-examples", default="")
    a.add_argument("--only", default="", help="run the cases whose name contains this")
    s = sub.add_parser("scale")
    s.add_argument("--npus", type=int, default=1024)
    s.add_argument("--contended", action="store_true")
    args = ap.parse_args()
    {"astra": astra, "scale": scale}[args.what](args)


if __name__ == "__main__":
    main()
