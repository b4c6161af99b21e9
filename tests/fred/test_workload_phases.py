"""FRED phases of a workload (`workloads.fred_phases`, `collc workload simulate --fred-phases`)
and the switch scheduler behind them (`backends.fred.schedule`).

The reference times are each collective's phases alone (pass 1) and, for the scheduler, the
arithmetic of its rules: a preempted phase finishes exactly the preempting phase's streaming
later than alone."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from backends.fred.clos import state_bits
from backends.fred.schedule import Job, PhasePlan, SwitchScheduler
from collc.cli import cli
from collc.pipeline import cost_model_for, program_for
from tests.workloads.build import AR, coll, comp, recv, send, workload
from topologies import parse_topology
from workloads.engine import WorkloadRun
from workloads.expand import ProgramFor
from workloads.fred_phases import FredPhaseOptions, FredPhasesRun, run_fred_phases
from workloads.model import Workload, check_workload

COST = cost_model_for("on-arrival")
S = 1 << 20


@cache
def producer(spec: str) -> ProgramFor:
    return program_for(
        parse_topology(spec), ("fred-innetwork", {}), cost=COST, chunks_per_npu=1, seed=0
    )


def run(w: Workload, spec: str, preempt: bool = True, unknown: str = "dp") -> FredPhasesRun:
    check_workload(w)
    topo = parse_topology(spec)
    o = FredPhaseOptions(preempt=preempt, unknown=unknown)
    return run_fred_phases(w, topo, producer(spec), cost=COST, options=o)


def ends(r: WorkloadRun) -> dict[str, float]:
    return {c.call.pg_name: c.end_ns for c in r.collectives}


# -- the scheduler ---------------------------------------------------------------------------


def plan(stream: float, switches: set[int], tail: float = 0.0) -> PhasePlan:
    return PhasePlan(stream, tail, frozenset(switches), ())


def drain(s: SwitchScheduler) -> dict[str, float]:
    out: dict[str, float] = {}
    while s.busy():
        _, done = s.advance(s.next_ns())
        out.update({str(j.owner): j.done_ns for j in done})
    return out


def test_one_configuration_shares_a_switch_and_two_take_turns() -> None:
    s = SwitchScheduler()
    s.add(Job("a", 1, "dp", plan(100, {7})), 0.0)
    s.add(Job("b", 1, "dp", plan(100, {7})), 0.0)
    s.add(Job("c", 2, "dp", plan(50, {7}, tail=5)), 0.0)
    assert drain(s) == {"a": 100, "b": 100, "c": 155}


def test_a_higher_class_preempts_and_the_lower_resumes() -> None:
    s = SwitchScheduler()
    s.add(Job("dp", 1, "dp", plan(100, {7, 8})), 0.0)
    s.advance(30.0)
    s.add(Job("mp", 2, "mp", plan(20, {8})), 30.0)
    s.add(Job("other", 3, "pp", plan(10, {9})), 30.0)  # another switch: runs at once
    got = drain(s)
    assert got == {"mp": 50, "other": 40, "dp": 120}
    assert s.preemptions == 1
    q = SwitchScheduler(preempt=False)
    q.add(Job("dp", 1, "dp", plan(100, {7, 8})), 0.0)
    q.advance(30.0)
    q.add(Job("mp", 2, "mp", plan(20, {8})), 30.0)
    assert drain(q) == {"dp": 100, "mp": 120}
    assert q.preemptions == 0


def test_without_preemption_the_queue_still_goes_by_class() -> None:
    q = SwitchScheduler(preempt=False)
    q.add(Job("busy", 1, "dp", plan(10, {7})), 0.0)
    q.add(Job("dp", 2, "dp", plan(10, {7})), 1.0)
    q.add(Job("mp", 3, "mp", plan(10, {7})), 2.0)
    assert drain(q) == {"busy": 10, "mp": 20, "dp": 30}


# -- workloads -------------------------------------------------------------------------------


def mp_during_dp() -> Workload:
    """On fred:8: a 64 MiB DP all-reduce of NPUs 0 and 4 from t=0, and 5 us later a 4 MiB MP
    all-reduce of NPUs 1 and 5: both cross L1-0, L1-1 and L2, in different configurations."""
    ranks: list[list] = [[comp(1, 1)] for _ in range(8)]  # type: ignore[type-arg]
    for r in (0, 4):
        ranks[r] = [coll(1, AR, 64 * S, "1")]
    for r in (1, 5):
        ranks[r] = [comp(1, 5), coll(2, AR, 4 * S, "2", [1])]
    w = workload(*ranks, groups={"1": (0, 4), "2": (1, 5)})
    w.metadata["groups"] = {"dp": ["1"], "tp": ["2"]}
    return w


def test_preemption_changes_the_order_and_the_times() -> None:
    w = mp_during_dp()
    pre = run(w, "fred:8")
    fifo = run(w, "fred:8", preempt=False)
    alone = ends(pre.uncontended)
    e, f = ends(pre.run), ends(fifo.run)
    assert pre.classes["1"] == "dp" and pre.classes["2"] == "mp"
    assert pre.preemptions == 1 and fifo.preemptions == 0
    # With preemption the MP all-reduce runs at once: as alone; the DP one is pushed back by
    # exactly the MP phase's streaming (4 MiB at 3000 GB/s).
    assert e["2"] == pytest.approx(alone["2"], rel=1e-9)
    mp_stream = 4 * S / 3000.0
    assert e["1"] == pytest.approx(alone["1"] + mp_stream, rel=1e-9)
    assert e["2"] < e["1"]
    # Without it the MP all-reduce waits for the DP phase to stop streaming: it ends last.
    assert f["1"] == pytest.approx(alone["1"], rel=1e-9)
    assert f["2"] > f["1"]
    assert f["2"] - e["2"] > 15_000
    assert pre.run.time_ns != fifo.run.time_ns
    # Two configurations (one per class), each on the three switches: 16 B of FRED_3(8) each.
    assert len(pre.configurations) == 2
    for sw in pre.switches:
        assert sw.configurations == 2
        assert sw.bytes == math.ceil(2 * state_bits(sw.ports, 3) / 8)
        assert sw.fits


def three_kinds() -> Workload:
    """MP2-DP5-PP2 on fred:20 with the three kinds pending at once, each NPU in one of them: DP5 of
    the even NPUs of stage 0 ({0,2,4,6,8}), MP2 of stage 1's pairs but the first
    ({12,13} ... {18,19}), PP messages from stage 0's odd NPUs to stage 1 (1 -> 11, ...)."""
    ranks: list[list] = [[] for _ in range(20)]  # type: ignore[type-arg]
    groups = {"dp": (0, 2, 4, 6, 8)}
    for n in groups["dp"]:
        ranks[n] = [coll(1, AR, 64 * S, "dp")]
    for a in range(12, 20, 2):
        groups[f"mp{a}"] = (a, a + 1)
        for n in (a, a + 1):
            ranks[n] = [coll(1, AR, 16 * S, f"mp{a}")]
    for n in range(1, 10, 2):
        ranks[n] = [send(1, n, n + 10, 32 * S, tag=n)]
        ranks[n + 10].append(recv(9, n, n + 10, 32 * S, tag=n))
    ranks[10] = [comp(1, 1)]
    w = workload(*ranks, groups=groups)
    w.metadata["groups"] = {"dp": ["dp"], "tp": [g for g in groups if g.startswith("mp")]}
    return w


def test_three_kinds_at_once_are_served_mp_then_pp_then_dp() -> None:
    w = three_kinds()
    r = run(w, "fred:20")
    assert r.m == 3 and r.fix == ""  # every configuration routes at m=3
    assert {c.priority for c in r.configurations} == {"mp", "dp"}  # PP: default configuration
    e = ends(r.run)
    alone = ends(r.uncontended)
    mp = max(e[g] for g in e if g.startswith("mp"))
    assert mp == pytest.approx(max(alone[g] for g in alone if g.startswith("mp")), rel=1e-9)
    assert e["dp"] > alone["dp"] and mp < e["dp"]
    pp_arrive = max(r.run.ends[n][-1] for n in range(11, 20, 2))  # the receives
    assert mp < pp_arrive < e["dp"]
    assert r.preemptions == 0  # all pending at t=0: served by class, nothing interrupted
    # Without preemption the queue is first come (the sends were issued first, the DP group
    # cannot start beside them): MP waits for the messages to stream, 32 MiB at 3000 GB/s.
    fifo = run(w, "fred:20", preempt=False)
    f = ends(fifo.run)
    mp_fifo = max(f[g] for g in f if g.startswith("mp"))
    assert mp_fifo == pytest.approx(mp + 32 * S / 3000.0, rel=1e-9)
    assert fifo.run.time_ns != pytest.approx(r.run.time_ns, rel=1e-3)


def test_unknown_roles_take_the_option() -> None:
    w = mp_during_dp()
    w.metadata.clear()
    r = run(w, "fred:8", unknown="pp")
    assert set(r.classes.values()) == {"pp"}
    assert r.preemptions == 0  # one class: no preemption


# -- the command -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wl") / "gpt"
    res = CliRunner().invoke(
        cli,
        ["workload", "generate", "gpt3-125m", "--npus", "20", "--tp", "2", "--dp", "5",
         "--pp", "2", "-o", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return out


def test_cli_gpt_on_fred_d(gpt: Path) -> None:
    args = ["workload", "simulate", str(gpt), "-t", "fred:20", "--algorithm", "fred-innetwork"]
    res = CliRunner().invoke(cli, [*args, "--fred-phases", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    f = d["fred"]
    assert d["model"] == "fred-phases"
    assert f["m"] == 3 and f["group_classes"]["1"] == "mp" and f["group_classes"]["11"] == "dp"
    assert f["configurations_per_class"]["mp"] >= 1 and f["configurations_per_class"]["dp"] >= 1
    by = {s["name"]: s for s in f["switches"]}
    assert by["L2"]["bytes"] == math.ceil(by["L2"]["configurations"] * 1087 / 8)
    assert all(s["fits"] for s in f["switches"])
    # Pass 2 is never faster than every collective alone.
    assert d["iteration_ns"] >= f["uncontended_iteration_ns"] - 1e-6
    small = CliRunner().invoke(cli, [*args, "--fred-phases", "--config-memory", "32", "--json"])
    assert small.exit_code == 0, small.output
    fits = {s["name"]: s["fits"] for s in json.loads(small.output)["fred"]["switches"]}
    assert fits["L2"] is False and fits["L1-0"] is (by["L1-0"]["bytes"] <= 32)
    text = CliRunner().invoke(cli, [*args, "--fred-phases", "--fred-no-preempt"])
    assert text.exit_code == 0, text.output
    assert "FRED phases:" in text.output and "L2" in text.output


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--model", "analytical"], "not --model analytical"),
        (["--algorithm", "ring"], "need in-network collectives"),
        (["-t", "fred:20,cfg=C"], "nothing to configure"),
        (["--fred-m", "1"], "--fred-m 1"),
    ],
)
def test_cli_refuses_in_one_line(gpt: Path, extra: list[str], says: str) -> None:
    args = ["workload", "simulate", str(gpt), "-t", "fred:20", "--algorithm", "fred-innetwork"]
    res = CliRunner().invoke(cli, [*args, "--fred-phases", *extra])
    assert res.exit_code == 2, res.output
    assert says in res.output and len(res.output.strip().splitlines()) == 1
    assert "Traceback" not in res.output
