"""Studies: the agents, batches and executors, the cache of canonical points, infeasible
points, objectives and the report."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState

from collc.cli import cli
from explore.evaluate import evaluate, native_config, topology_spec
from explore.network import ExploreError
from explore.objectives import reward
from explore.psa import read_psa
from explore.report import load_study, report
from explore.space import Point, resolve
from explore.study import Settings, run_study

TINY = """\
name: tiny
dimensions: 2
workload:
  model: gpt3-125m
  npus: 16
  dp: [1, 2, 4, 8, 16]
  pp: [1, 2, 4]
collective:
  implementation: {values: [ring, direct], scope: same}
network:
  topology: {fixed: [ring, switch]}
  size: {fixed: [4, 4]}
  bandwidth: {range: [50, 200, 50]}
derived:
  tp: "npus // (dp * pp)"
reward:
  targets: {time: 5000000, cost: 100000}
"""


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def trials_of(db: Path, name: str = "tiny") -> list[optuna.trial.FrozenTrial]:
    return load_study(str(db), name).get_trials()


def run(psa: Path, db: Path, **kw: Any) -> Any:
    s = Settings(storage=str(db), **kw)
    return run_study(read_psa(psa), s)


@pytest.mark.parametrize("agent", ["random", "tpe", "nsga2", "cmaes", "rw", "grid"])
def test_every_agent_finishes_exactly_the_trials_asked(
    tiny: Path, tmp_path: Path, agent: str
) -> None:
    db = tmp_path / "s.db"
    out = run(tiny, db, agent=agent, trials=12, batch=3)
    ts = trials_of(db)
    finished = [t for t in ts if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == 12 == out.finished == len(ts)
    assert out.simulated + out.cached + out.infeasible == 12
    for t in ts:
        if t.state == TrialState.COMPLETE:
            assert t.values[0] == t.user_attrs["metrics"]["time"] > 0
            assert t.user_attrs["derived"]["tp"] * t.params["dp"] * t.params["pp"] == 16
        else:
            assert t.user_attrs["infeasible"]


def test_gp_needs_torch_or_runs(tiny: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ExploreError, match=r"collc\[gp\]"):
            run(tiny, tmp_path / "s.db", agent="gp", trials=4)
    else:
        assert run(tiny, tmp_path / "s.db", agent="gp", trials=4).finished == 4


def test_same_seed_and_batch_give_the_same_study_on_any_worker_count(
    tiny: Path, tmp_path: Path
) -> None:
    a = run(tiny, tmp_path / "a.db", agent="tpe", trials=14, batch=2, seed=3, workers=1)
    b = run(tiny, tmp_path / "b.db", agent="tpe", trials=14, batch=2, seed=3, workers=2)
    assert a.finished == b.finished == 14
    ta, tb = trials_of(tmp_path / "a.db"), trials_of(tmp_path / "b.db")
    assert [t.params for t in ta] == [t.params for t in tb]
    assert [t.values for t in ta] == [t.values for t in tb]
    assert [t.state for t in ta] == [t.state for t in tb]
    run(tiny, tmp_path / "c.db", agent="tpe", trials=14, batch=2, seed=4)
    assert [t.params for t in trials_of(tmp_path / "c.db")] != [t.params for t in ta]


def test_identical_points_are_simulated_once(tmp_path: Path) -> None:
    small = TINY.replace("dp: [1, 2, 4, 8, 16]", "dp: [4, 8]").replace("pp: [1, 2, 4]", "pp: 1")
    small = small.replace("bandwidth: {range: [50, 200, 50]}", "bandwidth: 100")
    psa = tmp_path / "tiny.yaml"
    psa.write_text(small)  # 2 x 2 = 4 points
    out = run(psa, tmp_path / "s.db", agent="random", trials=20, batch=4)
    assert out.simulated <= 4 and out.cached == 20 - out.simulated - out.infeasible
    ts = trials_of(tmp_path / "s.db")
    by_key: dict[str, list[Any]] = {}
    for t in ts:
        if t.state == TrialState.COMPLETE:
            by_key.setdefault(t.user_attrs["key"], []).append(t)
    for group in by_key.values():
        sims = [t for t in group if t.user_attrs.get("cached_from") is None]
        assert len(sims) == 1
        assert all(t.values == sims[0].values for t in group)
        assert all(t.user_attrs.get("cached_from") in (None, sims[0].number) for t in group)


def test_infeasible_points_are_pruned_with_their_reason_and_counted(
    tiny: Path, tmp_path: Path
) -> None:
    run(tiny, tmp_path / "s.db", agent="random", trials=25, batch=5, seed=1)
    data = report(load_study(str(tmp_path / "s.db")))
    pruned = [t for t in trials_of(tmp_path / "s.db") if t.state == TrialState.PRUNED]
    assert data["infeasible"] == len(pruned) > 0
    assert sum(data["infeasible_reasons"].values()) == len(pruned)
    # dp*pp = 32 or 64 leaves tp = 0, and tp = 16 does not divide GPT-3 125M's 12 heads.
    assert set(data["infeasible_reasons"]) <= {
        "derived knob tp",
        "workload: tp divides the heads",
        "workload: pp divides the layers",
    }
    assert all(t.values is None and "metrics" not in t.user_attrs for t in pruned)


def test_evaluation_equals_collc_workload_simulate(tmp_path: Path) -> None:
    psa = read_psa("t.yaml", TINY)
    p = resolve(
        psa,
        {"dp": 2, "pp": 2, "implementation": "direct", "bandwidth.0": 100.0, "bandwidth.1": 50.0},
    )
    assert isinstance(p, Point)
    got = evaluate(p.values)
    wl = tmp_path / "wl"
    r = CliRunner().invoke(
        cli,
        [
            "workload",
            "generate",
            "gpt3-125m",
            "--npus",
            "16",
            "--dp",
            "2",
            "--tp",
            "4",
            "--pp",
            "2",
            "-o",
            str(wl),
        ],
    )
    assert r.exit_code == 0, r.output
    config = native_config(p.values)
    r = CliRunner().invoke(
        cli,
        [
            "workload",
            "simulate",
            str(wl),
            "-t",
            topology_spec(p.values),
            "--model",
            "analytical",
            "--native",
            ",".join(config.implementation),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["iteration_ns"] == got["time_ns"]


def test_multi_objective_pareto_front_and_reward(tiny: Path, tmp_path: Path) -> None:
    run(tiny, tmp_path / "s.db", agent="nsga2", trials=20, batch=4, objectives=("time", "cost"))
    data = report(load_study(str(tmp_path / "s.db")))
    front = data["pareto"]
    assert front
    for a in front:  # no point of the front dominates another
        for b in front:
            assert not (
                all(x <= y for x, y in zip(a["values"], b["values"], strict=True))
                and a["values"] != b["values"]
            )
    run(tiny, tmp_path / "r.db", agent="tpe", trials=8, objectives=("reward",))
    for t in trials_of(tmp_path / "r.db"):
        if t.state == TrialState.COMPLETE:
            m = t.user_attrs["metrics"]
            want = 1 / math.sqrt(1 + (m["time"] / 5e6 - 1) ** 2 + (m["cost"] / 1e5 - 1) ** 2)
            assert t.values[0] == pytest.approx(want)
            assert reward(m, {"time": 5e6, "cost": 1e5}) == pytest.approx(want)


def test_cli_run_and_report(tiny: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    r = CliRunner().invoke(
        cli, ["explore", str(tiny), "--trials", "6", "--storage", str(db), "--json"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["finished"] == 6 and data["best"]
    r = CliRunner().invoke(
        cli, ["explore", "report", str(db), "--json", "--plot", str(tmp_path / "p.png")]
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["finished"] == 6 and (tmp_path / "p.png").stat().st_size > 0
    assert rep["best"][0]["values"] == sorted(b["values"] for b in rep["best"])[0]
    r = CliRunner().invoke(cli, ["explore", "report", str(db)])
    assert r.exit_code == 0 and "finished" in r.output
    # The same study again without --resume is refused in one line.
    r = CliRunner().invoke(cli, ["explore", str(tiny), "--trials", "6", "--storage", str(db)])
    assert r.exit_code == 2 and "--resume" in r.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["explore", "report", "missing.db"], "missing.db: no such study database"),
        (["explore", "{psa}", "--objectives", "speed"], "unknown objective 'speed'"),
        (["explore", "{psa}", "--stacks", "memory"], "unknown stack 'memory'"),
        (["explore", "{psa}", "--trials", "0"], "--trials must be at least 1"),
        (["explore", "--trials", "0", "{psa}"], "--trials must be at least 1"),
        (["explore", "{bad}"], "bad.yaml:3:"),
        (["explore", "{unsat}"], "no point satisfies"),
        (["explore", "{psa}", "--agent", "cmaes", "--objectives", "time,cost"], "one objective"),
    ],
)
def test_cli_bad_input_is_one_line_and_status_2(
    tiny: Path, tmp_path: Path, args: list[str], words: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.replace("workload:", "workloads:"))
    unsat = tmp_path / "unsat.yaml"
    unsat.write_text(TINY + 'constraints:\n  - "dp > 16"\n')
    names = {"psa": str(tiny), "bad": str(bad), "unsat": str(unsat)}
    argv = [a.format(**names) for a in args] + ["--storage", str(tmp_path / "x.db")]
    if args[1] == "report":
        argv = args
    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("collc: error")]
    assert len(lines) == 1 and words in lines[0], r.output
