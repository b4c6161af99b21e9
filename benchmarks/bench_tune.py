"""`collc tune` on switch:16, mesh 8x8 and torus 4x4x4: the chosen ranges, how well they hold
between the sweep's sizes, the exported XML by the MSCCL runtime's rule, and a GPT-style
workload with --algorithm tuned against each single producer.

    python benchmarks/bench_tune.py [--quick] [--topology SPEC ...] [--cache FILE]
        [--tacos-chunks 1,2] [--tacos-seeds 0] [--no-workload]

1. For each topology, `run_tune` over all-reduce 1 KiB..4 GiB (x2; --quick: x4 up to 1 GiB)
   prints the chosen ranges.
2. At the off-grid sizes (each sweep size times sqrt(2), rounded) every candidate runs again;
   the figure is the chosen algorithm's time there over the best one's (target: within 3%).
3. The ranges are exported as MSCCL-IR XML, and the runtime's selection rule
   (msccl-executor-nccl `msccl_lifecycle.cc`: nBytes >= minBytes && (maxBytes == 0 || nBytes
   <= maxBytes)) is applied to every sweep and off-grid size: exactly one file must match, the
   chosen one. The files' nchunksperloop is printed (a call's element count must be a multiple).
4. A GPT-3 125M iteration on torus:4x4 (dp 4, tp 4) and on switch:16 (dp 16) with every single
   producer and with `tuned` (`collc workload simulate`, congestion model).

The results cache (default: a file in the temporary folder) makes a re-run cheap.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from click.testing import CliRunner

from chakra_ir.collective import CollectiveKind
from collc.bench import parse_sizes
from collc.cli import cli
from collc.tune import TuneCache, TuneSpec, choice_at, run_tune
from collc.tune_export import export_tuning
from topologies.units import format_size_bytes as fmt

TOPOLOGIES = ["switch:16", "mesh:8x8", "torus:4x4x4"]
WORKLOADS = [("torus:4x4", ["--dp", "4", "--tp", "4"]), ("switch:16", ["--dp", "16"])]
PRODUCERS = ["tacos", "ring", "ring-bidir", "direct", "rhd", "dbt", "hierarchical", "swing"]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def tune_case(spec: TuneSpec, cache: TuneCache, out: Path) -> None:
    report = run_tune(spec, cache)
    print(
        f"\n== {report.topology}: {len(report.candidates)} candidates, "
        f"{report.runs} simulated, {report.hits} cached, {report.seconds:.0f} s"
    )
    for r in report.ranges:
        upper = str(r.max_bytes) if r.max_bytes else "no limit"
        print(
            f"  {r.label:<18} minBytes {r.min_bytes:>12}  maxBytes {upper:>12}"
            f"   sweep {fmt(r.first)}..{fmt(r.last)}"
        )
    mids = tuple(sorted({round(s * math.sqrt(2)) for s in report.sizes[:-1]}))
    off = run_tune(TuneSpec(**{**spec.__dict__, "sizes": mids}), cache)
    worst, within = 1.0, 0
    print(f"  {'off-grid size':>14}  {'chosen':<18}{'best':<18}{'chosen / best':>14}")
    for m in mids:
        chosen = choice_at(report.ranges, m)
        cell = off.cell(chosen, m)
        best = off.cell(off.best[m], m)
        assert best is not None and best.time_ns
        if cell is None or cell.time_ns is None:
            print(f"  {m:>14}  {chosen:<18}{off.best[m]:<18}{'(did not run)':>14}")
            continue
        ratio = cell.time_ns / best.time_ns
        worst = max(worst, ratio)
        within += ratio <= 1.03
        print(f"  {m:>14}  {chosen:<18}{off.best[m]:<18}{ratio:>14.4f}")
    print(f"  off-grid: {within}/{len(mids)} within 3% of the best; worst {worst:.4f}")
    folder = out / report.topology.split(",")[0].replace(":", "-")
    export_tuning(report, spec, "msccl-xml", folder)
    bounds = {}
    for f in sorted(folder.glob("*.xml")):
        head = f.read_text().split(">", 1)[0]
        lo, hi, loop = (
            int(re.search(rf'{k}="(\d+)"', head).group(1))  # type: ignore[union-attr]
            for k in ("minBytes", "maxBytes", "nchunksperloop")
        )
        bounds[f.name] = (lo, hi, loop)
    ok = 0
    probes = sorted(set(report.sizes) | set(mids))
    for size in probes:
        match = [n for n, (lo, hi, _) in bounds.items() if size >= lo and (hi == 0 or size <= hi)]
        label = choice_at(report.ranges, size)
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)
        ok += len(match) == 1 and match[0].endswith(f"-{safe}.xml")
    loops = ", ".join(f"{n}: {loop}" for n, (_, _, loop) in bounds.items())
    print(
        f"  MSCCL rule on {len(bounds)} XML files: {ok}/{len(probes)} sizes select exactly "
        f"the chosen file; nchunksperloop {loops}"
    )


def workloads(tmp: Path) -> None:
    runner = CliRunner()
    print("\n== GPT-3 125M iteration (congestion model), us")
    for spec, par in WORKLOADS:
        wl = tmp / f"wl-{spec.replace(':', '-')}"
        npus = "16"
        gen = ["workload", "generate", "gpt3-125m", "--npus", npus, *par, "-o", str(wl)]
        assert runner.invoke(cli, [*gen, "--no-memory-check"]).exit_code == 0
        line = []
        for algo in [*PRODUCERS, "tuned"]:
            t0 = time.perf_counter()
            argv = ["workload", "simulate", str(wl), "-t", spec, "--algorithm", algo, "--json"]
            res = runner.invoke(cli, argv)
            if res.exit_code != 0:
                line.append(f"{algo} (refused: {res.output.strip()[:60]})")
                continue
            d = json.loads(res.output)
            extra = ""
            if algo == "tuned":
                picks = sorted({t["algorithm"] for t in d["tuned"]})
                extra = f" [{', '.join(picks)}]"
            line.append(
                f"{algo} {d['iteration_ns'] / 1000:,.1f}{extra} ({time.perf_counter() - t0:.0f} s)"
            )
        print(f"  {spec} {' '.join(par)}:")
        for item in line:
            print(f"    {item}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 KiB..1 GiB, x4")
    ap.add_argument("--topology", action="append")
    ap.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "collc-bench-tune.json"
    )
    ap.add_argument("--tacos-chunks", default="1,2")
    ap.add_argument("--tacos-seeds", default="0")
    ap.add_argument("--no-workload", action="store_true")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sizes = tuple(parse_sizes("1KiB:1GiB:x4" if args.quick else "1KiB:4GiB:x2"))
    cache = TuneCache(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        for topo in args.topology or TOPOLOGIES:
            spec = TuneSpec(
                topo,
                CollectiveKind.ALLREDUCE,
                sizes,
                tacos_chunks=_ints(args.tacos_chunks),
                tacos_seeds=_ints(args.tacos_seeds),
                max_work=10**9,
            )
            tune_case(spec, cache, Path(tmp))
        if not args.no_workload:
            workloads(Path(tmp))


if __name__ == "__main__":
    main()
