"""The FRED switch compiler's figures (docs/fred.md): run ``python -m benchmarks.bench_fred_compiler``.

1. The paper's 20-NPU cases on FRED-D (``fred:20``): MP(20) all-reduce, MP2 (pairs), DP5
   (stride 4) groups: phases, m, colouring method, configuration bytes per switch, replay time
   against ``collc simulate``.
2. FRED_3(64) with up to 32 flows of 2-8 ports each, from the seeded generator `flow_set`
   (ports shuffled with ``random.Random(seed)``, cut into groups of 2-8 ports in a row of the
   shuffle, each group an all-reduce, a reduce into its first port or a multicast from it, a
   third each): the share of 100 seeds routed at m = 2, 3, 4 by the greedy colouring alone and
   with CP-SAT (0.5 s per conflict graph), the slowest routing, and at m=3 the share the
   paper's placement fix (every group on consecutive ports) rescues.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from backends.fred.clos import LocalFlow, route
from backends.fred.errors import FredUncolourable

SEEDS = 100
PORTS = 64


def flow_set(
    seed: int, ports: int = PORTS, flows: int = 32, placed: bool = False
) -> list[LocalFlow]:
    """The seeded flow set (module docstring); ``placed``: the same groups on consecutive
    ports, in order (the placement fix)."""
    rng = random.Random(seed)
    order = list(range(ports))
    rng.shuffle(order)
    out: list[LocalFlow] = []
    at = 0
    groups: list[tuple[int, int]] = []
    while len(groups) < flows and ports - at >= 2:
        k = min(rng.randint(2, 8), ports - at)
        groups.append((at, k))
        at += k
    for i, (a, k) in enumerate(groups):
        members = sorted(range(a, a + k)) if placed else sorted(order[a : a + k])
        kind = rng.randrange(3)
        ins = members if kind != 2 else members[:1]
        outs = members if kind != 1 else members[:1]
        out.append(LocalFlow(i, tuple(ins), tuple(outs)))
    return out


def random_sets() -> None:
    print(f"FRED_m({PORTS}), {SEEDS} seeded flow sets of up to 32 flows of 2-8 ports")
    print(f"{'m':>3} {'greedy':>8} {'+CP-SAT':>8} {'slowest s':>10} {'placed (m=3 fix)':>18}")
    for m in (2, 3, 4):
        greedy = exact = placed = 0
        slowest = 0.0
        for seed in range(SEEDS):
            fs = flow_set(seed)
            try:
                route(fs, PORTS, m, exact=False)
                greedy += 1
            except FredUncolourable:
                pass
            t = time.perf_counter()
            try:
                route(fs, PORTS, m, exact=True, time_limit_s=0.5)
                exact += 1
                ok = True
            except FredUncolourable:
                ok = False
            slowest = max(slowest, time.perf_counter() - t)
            if not ok:
                try:
                    route(flow_set(seed, placed=True), PORTS, m, exact=True, time_limit_s=0.5)
                    placed += 1
                except FredUncolourable:
                    pass
        print(
            f"{m:>3} {greedy / SEEDS:>8.0%} {exact / SEEDS:>8.0%} {slowest:>10.3f} "
            f"{(exact + placed) / SEEDS:>18.0%}"
        )


def paper_cases() -> None:
    from click.testing import CliRunner

    from collc.cli import cli

    runner = CliRunner()

    def run(*args: str) -> str:
        res = runner.invoke(cli, list(args))
        if res.exit_code != 0:
            sys.exit(f"collc {' '.join(args)}: {res.output}")
        return str(res.output)

    import json

    print("The paper's 20-NPU cases on FRED-D (fred:20), 256 MiB, m=3")
    print(f"{'case':<12} {'phases':>6} {'m':>2} {'routing':<16} {'L1 B':>5} {'L2 B':>5} "
          f"{'replay us':>10} {'simulate us':>12} {'diff':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        for name, extra in [
            ("MP(20)", ()),
            ("MP2", ("--groups", "2")),
            ("DP5", ("--groups", "stride:4")),
        ]:
            out = Path(d) / name
            run("synthesize", "-t", "fred:20", "-c", "allreduce", "--algorithm",
                "fred-innetwork", "--size", "256MiB", "-o", str(out), *extra)  # fmt: skip
            run("export", str(out), "--target", "fred", "-o", str(out) + ".hw")
            h = json.loads((Path(str(out) + ".hw") / "hwprog.json").read_text())
            rep = json.loads(run("replay", str(out) + ".hw", "--json"))
            sim = json.loads(run("simulate", str(out), "--json"))["finish_ns"]
            assert rep["postcondition"] == "holds"
            sizes = {s["name"]: s["config_bytes"] for s in h["switches"]}
            routing = ",".join(f"{k} {v}" for k, v in h["routing"].items())
            print(
                f"{name:<12} {len(h['phases']):>6} {h['m']:>2} {routing:<16} "
                f"{sizes['L1-0']:>5} {sizes['L2']:>5} {rep['time_ns'] / 1e3:>10.2f} "
                f"{sim / 1e3:>12.2f} {(rep['time_ns'] - sim) / sim:>+7.2%}"
            )


if __name__ == "__main__":
    paper_cases()
    print()
    random_sets()
