"""LIBRA's targets (issue 30), printed by hand, never asserted.

    python -m benchmarks.bench_libra shipped --libra-inputs PATH/TO/libra/inputs
    python -m benchmarks.bench_libra catalogue
    python -m benchmarks.bench_libra gpt13b

``shipped``: LIBRA's 3-D and 4-D networks with its GPT-3 and MSFT-1T workloads at 500 GB/s
(its ``total_bw_500gbps`` constraints): the allocation, predicted and simulated (analytical)
times, cost, against the equal split and a grid, and the solve time. ``catalogue``: 20
options on each of 5 dimensions (3.2 M combinations), CP-SAT. ``gpt13b``: the generated
GPT-3-13B workload on 64 NPUs, the ideal-overlap prediction against the analytical and
congestion simulations per allocation.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from collc.cli import cli


def _libra(args: list[str]) -> dict[str, object]:
    import json

    r = CliRunner().invoke(cli, ["libra", *args, "--json"])
    if r.exit_code != 0:
        raise SystemExit(r.output)
    return dict(json.loads(r.output))


def _rows(d: dict[str, object]) -> None:
    check = d.get("check")
    sims = {}
    if isinstance(check, dict):
        sims = {r["name"]: r["simulated"] for r in check["rows"]}
    for r in d["allocations"]:  # type: ignore[attr-defined]
        bw = " ".join(f"{b:7.2f}" for b in r["bw"])
        sim = " ".join(
            f"{m} {v / 1e6:.3f} ms" if isinstance(v, float) else f"{m} {v}"
            for m, v in sims.get(r["name"], {}).items()
        )
        cost = f"${r['cost']:,.0f}" if r["cost"] is not None else "-"
        print(
            f"    {r['name']:<36} [{bw}]  predicted {r['time_ns'] / 1e6:9.3f} ms  {cost:>14}  {sim}"
        )


def shipped(inputs: str) -> None:
    for net, wl, comm, cost in [
        ("3d_network", "GPT_3", "GPT_3_3d", "3d_cost_model"),
        ("3d_network", "MSFT_1T", "MSFT_1T_3d", "3d_cost_model"),
        ("4d_network", "GPT_3", "GPT_3_4d", "4d_cost_model"),
        ("4d_network", "MSFT_1T", "MSFT_1T_4d", "4d_cost_model"),
    ]:
        for objective in ("perf", "perf-per-cost"):
            files = [
                f"network={net}",
                f"workload={wl}",
                f"communicator={comm}",
                f"cost_model={cost}",
                "constraints=total_bw_500gbps",
            ]
            args = ["--libra-inputs", inputs, "--objective", objective, "--grid-step", "5"]
            for f in files:
                args += ["--libra-file", f]
            t0 = time.perf_counter()
            d = _libra(args)
            solve_s = time.perf_counter() - t0
            d2 = _libra([*args, "--check"])
            print(
                f"{wl} on {net}, {objective}: gap {d['gap']:.2e}, {d['rounds']} rounds, "
                f"{solve_s:.2f} s (with the grid)"
            )
            _rows(d2)


def catalogue() -> None:
    from explore.constraints import parse_constraint
    from explore.network import network_from_kinds
    from explore.problem import Problem, solve
    from explore.solve_cp import Catalogue
    from explore.timing import Phase, serial_graph
    from workloads.model import CollKind

    net = network_from_kinds(["ring", "fc", "ring", "fc", "switch"], [2, 4, 4, 4, 8])
    layers = []
    for k in range(24):
        layers.append(
            (
                f"L{k}",
                Phase(3e5, CollKind.ALL_REDUCE, 5e7, (2, 4, 1, 1, 1)),
                Phase(3e5, CollKind.ALL_GATHER, 1e6, (2, 4, 1, 1, 1)),
                Phase(6e5, CollKind.ALL_REDUCE, 2e8, (1, 1, 4, 4, 8)),
            )
        )
    g = serial_graph(5, layers)
    cat = Catalogue(tuple(tuple(float(10 * (i + 1)) for i in range(20)) for _ in range(5)))
    p = Problem(net, g, parse_constraint("sum <= 500", 5), None, "bench")
    t0 = time.perf_counter()
    a = solve(p, "perf", catalogue=cat)
    print(
        f"catalogue: {cat.combinations:,} combinations, {g.num_tasks} tasks: CP-SAT "
        f"{time.perf_counter() - t0:.2f} s, bw {a.bw}, time {a.time_ns / 1e6:.3f} ms; {a.notes}"
    )


def gpt13b() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wl = str(Path(tmp) / "wl")
        r = CliRunner().invoke(
            cli,
            [
                "workload",
                "generate",
                "gpt3-13b",
                "--npus",
                "64",
                "--dp",
                "4",
                "--tp",
                "4",
                "--pp",
                "4",
                "--no-memory-check",
                "-o",
                wl,
            ],
        )
        assert r.exit_code == 0, r.output
        for total in ("300", "600"):
            d = _libra(
                ["-t", "stack:ring4*fc4*switch4", "--workload", wl, "--total-bw", total, "--check"]
            )
            print(f"GPT-3-13B, 64 NPUs (dp 4, tp 4, pp 4), ring4*fc4*switch4, {total} GB/s:")
            _rows(d)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "catalogue"
    if what == "shipped":
        shipped(sys.argv[sys.argv.index("--libra-inputs") + 1])
    elif what == "gpt13b":
        gpt13b()
    else:
        catalogue()
