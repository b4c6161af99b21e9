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
3. MP2-DP5-PP2 with the three kinds pending at once (`three_kinds`, a workload built here: a
   64 MiB all-reduce of DP group {0,2,4,6,8}, 16 MiB all-reduces of MP pairs {12,13} ...
   {18,19}, 32 MiB pipeline messages 1->11, 3->13, ..., 9->19, all issued at t=0) through
   ``collc workload simulate --fred-phases`` on FRED-D: configurations, m, each kind's end with
   and without preemption, each collective alone against ``collc simulate``'s contention mode
   (the congestion model), and FRED-C.
4. A GPT-style workload (``collc workload generate gpt3-125m --npus 20 --tp 2 --dp 5 --pp 2``,
   and gpt3-350m with 4 microbatches) on ``fred:20,cfg=D``: the iteration with and without
   preemption, the preemptions, and each switch's configurations against the 1.5 KB budget.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def three_kinds() -> Any:
    """The workload of case 3 (module docstring)."""
    from workloads.model import CollKind, NodeKind, WNode, Workload

    mib = 1 << 20

    def ar(size: int, pg: str) -> WNode:
        return WNode(1, "ar", NodeKind.COLL, comm_type=int(CollKind.ALL_REDUCE), comm_size=size,
                     pg_name=pg)  # fmt: skip

    ranks: list[list[WNode]] = [[] for _ in range(20)]
    groups = {"dp": (0, 2, 4, 6, 8)}
    for n in groups["dp"]:
        ranks[n] = [ar(64 * mib, "dp")]
    for a in range(12, 20, 2):
        groups[f"mp{a}"] = (a, a + 1)
        ranks[a] = [ar(16 * mib, f"mp{a}")]
        ranks[a + 1] = [ar(16 * mib, f"mp{a}")]
    for n in range(1, 10, 2):
        ranks[n] = [WNode(1, "send", NodeKind.SEND, comm_src=n, comm_dst=n + 10,
                          comm_size=32 * mib, comm_tag=n)]  # fmt: skip
        ranks[n + 10].append(WNode(9, "recv", NodeKind.RECV, comm_src=n, comm_dst=n + 10,
                                   comm_size=32 * mib, comm_tag=n))  # fmt: skip
    ranks[10] = [WNode(1, "idle", NodeKind.COMP, duration_micros=1)]
    w = Workload(ranks, groups, [f"npu{i}" for i in range(20)])
    w.metadata["groups"] = {"dp": ["dp"], "tp": [g for g in groups if g.startswith("mp")]}
    return w


def workload_cases() -> None:
    from collc.pipeline import cost_model_for, program_for
    from topologies import parse_topology
    from topologies.errors import CollcError
    from workloads.expand import run_contended
    from workloads.fred_phases import FredPhaseOptions, run_fred_phases
    from workloads.model import check_workload

    cost = cost_model_for("on-arrival")
    w = three_kinds()
    check_workload(w)
    print("MP2-DP5-PP2, the three kinds pending at once, on FRED-D (fred:20)")
    topo = parse_topology("fred:20")
    make = program_for(topo, ("fred-innetwork", {}), cost=cost, chunks_per_npu=1, seed=0)
    runs = {p: run_fred_phases(w, topo, make, cost=cost, options=FredPhaseOptions(preempt=p))
            for p in (True, False)}  # fmt: skip
    r = runs[True]
    per = ", ".join(f"{c.priority} {len(c.flows)} flows" for c in r.configurations)
    print(
        f"  {len(r.configurations)} configurations ({per}), m={r.m}{' ' + r.fix if r.fix else ''}"
    )
    print("  " + ", ".join(f"{s.name} {s.configurations} ({s.bytes} B)" for s in r.switches))
    sim = run_contended(w, topo, make, cost=cost)
    print(
        f"  {'end us':<22} {'alone':>8} {'preempt':>8} {'no-pre':>8} {'simulate':>9} {'alone/sim':>9}"
    )
    alone_sim = {c.call.pg_name: c.end_ns for c in sim.uncontended.collectives}

    def ends(run: Any) -> dict[str, float]:
        out = {c.call.pg_name: c.end_ns for c in run.collectives}
        out["pp"] = max(run.ends[n][-1] for n in range(11, 20, 2))  # the receives
        return out

    rows = [ends(runs[True].uncontended), ends(runs[True].run), ends(runs[False].run),
            ends(sim.run)]  # fmt: skip
    for k in ("mp12", "dp", "pp"):
        ref = alone_sim.get(k)
        diff = f"{(rows[0][k] - ref) / ref:>+9.2%}" if ref else f"{'-':>9}"
        print(f"  {k:<22} " + " ".join(f"{x[k] / 1e3:>8.2f}" for x in rows) + f" {diff}")
    print(f"  {'iteration':<22} " + " ".join(
        f"{x / 1e3:>8.2f}" for x in (runs[True].uncontended.time_ns, runs[True].run.time_ns,
                                    runs[False].run.time_ns, sim.run.time_ns)))  # fmt: skip
    print(f"  preemptions: {runs[True].preemptions} / {runs[False].preemptions}")
    try:
        c = parse_topology("fred:20,cfg=C")
        run_fred_phases(w, c, program_for(c, ("fred-innetwork", {}), cost=cost,
                        chunks_per_npu=1, seed=0), cost=cost)  # fmt: skip
    except CollcError as e:
        print(f"  FRED-C: {e}")
    print()
    from click.testing import CliRunner

    from collc.cli import cli

    print("GPT-style workloads on fred:20,cfg=D (MP2-DP5-PP2), fred-innetwork, m=3, 1.5 KB")
    with tempfile.TemporaryDirectory() as d:
        for model, mb in (("gpt3-125m", 2), ("gpt3-350m", 4)):
            out = str(Path(d) / model)
            res = CliRunner().invoke(cli, ["workload", "generate", model, "--npus", "20",
                  "--tp", "2", "--dp", "5", "--pp", "2", "--microbatches", str(mb), "-o", out])  # fmt: skip
            assert res.exit_code == 0, res.output
            got = {}
            for flag in ("--fred-preempt", "--fred-no-preempt"):
                t = time.perf_counter()
                res = CliRunner().invoke(cli, ["workload", "simulate", out, "-t",
                      "fred:20,cfg=D", "--algorithm", "fred-innetwork", "--fred-phases", flag,
                      "--json"])  # fmt: skip
                assert res.exit_code == 0, res.output
                got[flag] = (json.loads(res.output), time.perf_counter() - t)
            res = CliRunner().invoke(cli, ["workload", "simulate", out, "-t", "fred:20,cfg=D",
                  "--algorithm", "fred-innetwork", "--json"])  # fmt: skip
            cong = json.loads(res.output)["iteration_ns"]
            (a, ta), (b, _) = got["--fred-preempt"], got["--fred-no-preempt"]
            f = a["fred"]
            print(f"  {model}, {mb} microbatches: iteration {a['iteration_ns'] / 1e3:,.2f} us "
                  f"with preemption ({f['preemptions']} preemptions), "
                  f"{b['iteration_ns'] / 1e3:,.2f} us without "
                  f"({b['fred']['preemptions']}); alone {f['uncontended_iteration_ns'] / 1e3:,.2f} us; "
                  f"congestion simulator {cong / 1e3:,.2f} us ({ta:.1f} s)")  # fmt: skip
            print(f"    {f['configurations']} configurations {f['configurations_per_class']}: "
                  + ", ".join(f"{s['name']} {s['configurations']} = {s['bytes']} B"
                              for s in f["switches"]) + f" of {f['switches'][0]['budget_bytes']} B")  # fmt: skip


if __name__ == "__main__":
    paper_cases()
    print()
    workload_cases()
    print()
    random_sets()
