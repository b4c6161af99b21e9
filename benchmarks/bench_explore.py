"""COSMIC's targets (issue 33), printed by hand, never asserted.

    python -m benchmarks.bench_explore rate [--trials 500] [--psa PSA] [--runs local1,local2,ray2]
    python -m benchmarks.bench_explore stacks [--trials 100] [--psa PSA] [--plot stacks.png]

``rate``: a TPE study of the 1,024-NPU GPT-3-13B PSA (examples/explore/gpt3_13b_1024.yaml,
the workload layer's analytical mode) with 1 and 2 local workers and with Ray on 2 CPUs:
wall time, finished trials per minute, the share of points rejected by the constraints before
simulating, the simulations and cache hits, and the best iteration time. With fewer trials
than 500 it also prints the time 500 would take at the measured rate (labelled as such).

``stacks``: COSMIC's single-stack against full-stack search at the same budget of TPE trials:
only the workload knobs, only the collective knobs, only the network knobs (the others at the
PSA's baseline), and all of them; the best iteration time and time x cost each finds, and
full-stack's gain over each single stack.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from explore.psa import read_psa
from explore.report import load_study, report
from explore.space import precheck
from explore.study import Settings, run_study

ROOT = Path(__file__).resolve().parent.parent
PSA = ROOT / "examples" / "explore" / "gpt3_13b_1024.yaml"


def _study(psa_path: Path, db: Path, stacks: tuple[str, ...] | None, **kw: Any) -> dict[str, Any]:
    psa = read_psa(psa_path)
    if stacks is not None:
        psa = psa.restricted(stacks)
    precheck(psa)
    t0 = time.perf_counter()
    out = run_study(psa, Settings(storage=str(db), **kw))
    wall = time.perf_counter() - t0
    data = report(load_study(str(db)), top=1, with_importance=False)
    return {"wall": wall, "out": out, "report": data}


def rate(args: argparse.Namespace) -> None:
    runs = {
        "local1": {"executor": "local", "workers": 1},
        "local2": {"executor": "local", "workers": 2},
        "ray2": {"executor": "ray", "workers": 2},
    }
    print(f"TPE, {args.trials} trials, batch 2, seed 0, PSA {args.psa}")
    print(
        f"{'run':<8} {'wall s':>8} {'trials/min':>10} {'infeasible':>10} {'simulated':>9} "
        f"{'cached':>6} {'best time':>12}  500 trials"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.runs.split(","):
            r = _study(
                Path(args.psa),
                Path(tmp) / f"{name}.db",
                None,
                agent="tpe",
                trials=args.trials,
                batch=2,
                seed=0,
                **runs[name],
            )
            d, o = r["report"], r["out"]
            per_min = args.trials / r["wall"] * 60
            best = d["best"][0]["values"][0] / 1e6 if d["best"] else float("nan")
            est = "" if args.trials >= 500 else f"~{500 / per_min:.1f} min (extrapolated)"
            print(
                f"{name:<8} {r['wall']:>8.1f} {per_min:>10.1f} {d['infeasible_share']:>10.1%} "
                f"{o.simulated:>9} {o.cached:>6} {best:>9.3f} ms  {est}"
            )


def stacks(args: argparse.Namespace) -> None:
    searches = {
        "workload": ("workload",),
        "collective": ("collective",),
        "network": ("network",),
        "full stack": ("workload", "collective", "network"),
    }
    rows = []
    print(f"TPE, {args.trials} trials each, batch {args.batch}, {args.workers} workers, seed 0")
    with tempfile.TemporaryDirectory() as tmp:
        for name, st in searches.items():
            for obj in ("time", "time_x_cost"):
                r = _study(
                    Path(args.psa),
                    Path(tmp) / f"{name}-{obj}.db",
                    st,
                    agent="tpe",
                    trials=args.trials,
                    batch=args.batch,
                    workers=args.workers,
                    seed=0,
                    objectives=(obj,),
                )
                d = r["report"]
                best = d["best"][0]["values"][0] if d["best"] else float("nan")
                rows.append((name, obj, best, r["wall"], d["infeasible_share"]))
                print(
                    f"  {name:<11} {obj:<12} best {best:,.6g}  ({r['wall']:.0f} s, "
                    f"{d['infeasible_share']:.0%} infeasible)",
                    flush=True,
                )
    full = {obj: b for n, obj, b, _, _ in rows if n == "full stack"}
    print(
        f"\n{'search':<11} {'best time (ms)':>15} {'best time x cost (s*$)':>23} "
        f"{'full-stack gain (time, t x c)':>30}"
    )
    for name in searches:
        t = next(b for n, o, b, _, _ in rows if n == name and o == "time")
        tc = next(b for n, o, b, _, _ in rows if n == name and o == "time_x_cost")
        print(
            f"{name:<11} {t / 1e6:>15.3f} {tc:>23,.1f} "
            f"{t / full['time']:>14.2f}x {tc / full['time_x_cost']:>13.2f}x"
        )
    if args.plot:
        _plot(args.plot, list(searches), rows)
        print(f"wrote {args.plot}")


def _plot(path: str, names: list[str], rows: list[tuple[str, str, float, float, float]]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.5))
    FigureCanvasAgg(fig)
    for i, (obj, label) in enumerate(
        (("time", "best iteration time (ms)"), ("time_x_cost", "best time x cost (s*$)"))
    ):
        ax = fig.add_subplot(1, 2, i + 1)
        vals = [next(b for n, o, b, _, _ in rows if n == name and o == obj) for name in names]
        if obj == "time":
            vals = [v / 1e6 for v in vals]
        ax.bar(range(len(names)), vals, color=["C0", "C1", "C2", "C3"])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize="small")
        ax.set_ylabel(label)
    fig.savefig(path, dpi=120, bbox_inches="tight")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_explore")
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("rate")
    r.add_argument("--trials", type=int, default=500)
    r.add_argument("--psa", default=str(PSA))
    r.add_argument("--runs", default="local1,local2,ray2")
    s = sub.add_parser("stacks")
    s.add_argument("--trials", type=int, default=100)
    s.add_argument("--batch", type=int, default=2)
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--psa", default=str(PSA))
    s.add_argument("--plot", default=None)
    args = ap.parse_args()
    (rate if args.what == "rate" else stacks)(args)


if __name__ == "__main__":
    main()
