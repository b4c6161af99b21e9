"""LIBRA's model, its solvers, LIBRA's input files and `collc libra` (docs/libra.md)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collc.cli import cli
from explore.constraints import parse_constraint, total_constraint
from explore.cost import DEFAULT_UNITS, CostModel, default_cost_model
from explore.network import ExploreError, dim_bytes, group_shape, network_from_kinds
from explore.problem import Problem, libra_problem, solve, workload_problem
from explore.solve_cp import Catalogue
from explore.solve_lp import conflicting_set
from explore.timing import Phase, WorkloadShapes, predict, serial_graph, workload_graph
from workloads.model import CollKind
from workloads.transformer import generate

NET = network_from_kinds(["ring", "fc", "switch"], [4, 2, 8])


def test_traffic_follows_libras_table() -> None:
    m = 1200.0
    assert dim_bytes(CollKind.ALL_REDUCE, m, (4, 2, 1)) == (2 * m / 4 * 3, 2 * (m / 4) / 2, 0.0)
    assert dim_bytes(CollKind.REDUCE_SCATTER, m, (4, 1, 8)) == (m / 4 * 3, 0.0, m / 4 / 8 * 7)
    # all-gather walks the dimensions downwards, the data growing
    assert dim_bytes(CollKind.ALL_GATHER, m, (4, 2, 1)) == (m * 2 * 3, m * 1, 0.0)
    assert dim_bytes(CollKind.ALL_TO_ALL, m, (4, 2, 1)) == (m / 4 * 3, m / 2, 0.0)


def test_groups_must_be_boxes_of_the_grid() -> None:
    assert group_shape(NET, [0, 1, 2, 3]) == (4, 1, 1)
    assert group_shape(NET, [0, 4, 8, 12]) == (1, 2, 2)
    with pytest.raises(ExploreError, match="does not fit the dimensions"):
        group_shape(NET, [0, 1, 2, 4])


def test_cost_is_npus_times_bandwidth_times_unit_cost() -> None:
    cm = default_cost_model(NET)
    assert cm.levels == ("InterPackage", "InterNode", "InterPod")
    units = cm.unit_costs(NET)
    pod = DEFAULT_UNITS["InterPod"]
    assert units == pytest.approx((4.0, 4.0, pod["Link"] + pod["Switch"] + pod["Nic"]))
    assert cm.cost(NET, (10, 20, 30)) == pytest.approx(64 * (40 + 80 + 30 * units[2]))
    with pytest.raises(ExploreError, match="no cost level"):
        CostModel({"A": {"Link": 1.0}}, ("A", "A", "B")).unit_costs(NET)


def test_constraint_language_and_its_errors() -> None:
    (c,) = parse_constraint("bw0 >= 2*bw1 + 10GB/s", 3)
    assert (c.coeffs, c.sense, c.rhs) == ((1.0, -2.0, 0.0), ">=", 10.0)
    chain = parse_constraint("bw[0] >= bw_1 >= bw2", 3)
    assert [x.coeffs for x in chain] == [(1.0, -1.0, 0.0), (0.0, 1.0, -1.0)]
    (s,) = parse_constraint("sum(bw) == 4Tbps", 3)
    assert s.coeffs == (1.0, 1.0, 1.0) and s.rhs == 500.0
    for text, col, what in [
        ("bw0 + bw7 <= 3", 7, "unknown dimension bw7"),
        ("bw0 > bw1", 5, "strict"),
        ("bw0 * bw1 <= 3", 7, "only a number"),
        ("bw0 + 3", 8, "needs a relation"),
    ]:
        with pytest.raises(ExploreError, match=what) as e:
            parse_constraint(text, 3)
        assert e.value.pos is not None and e.value.pos.column == col


def _one_collective(sizes: tuple[float, ...]) -> Problem:
    """A workload of one collective with the given bytes per dimension."""
    g = serial_graph(
        3,
        [
            (
                "l",
                Phase(0.0, None, 0.0, (1, 1, 1)),
                Phase(0.0, None, 0.0, (1, 1, 1)),
                Phase(0.0, None, 0.0, (1, 1, 1)),
            )
        ],
    )
    g.traffic = [sizes]
    g.const_ns, g.vector, g.preds, g.names = [0.0], [0], [()], ["c"]
    return Problem(NET, g, [total_constraint(100.0, 3)], default_cost_model(NET), "test")


def test_perf_opt_matches_the_closed_form_of_one_collective() -> None:
    # max_d b_d / bw_d under sum bw = B is least with bw_d proportional to b_d: T = sum b / B
    p = _one_collective((3000.0, 1000.0, 6000.0))
    a = solve(p, "perf", tol=1e-6)
    assert a.time_ns == pytest.approx(10000.0 / 100.0, rel=1e-6)
    assert a.lower_bound <= 100.0 + 1e-9 and a.gap <= 1e-6
    assert a.bw == pytest.approx((30.0, 10.0, 60.0), rel=1e-4)


def _layers() -> list[tuple[str, Phase, Phase, Phase]]:
    tp, dp = (4, 1, 1), (1, 2, 8)
    out = []
    for k in range(3):
        out.append(
            (
                f"L{k}",
                Phase(1000.0 * (k + 1), CollKind.ALL_REDUCE, 4e5, tp),
                Phase(500.0, CollKind.ALL_GATHER, 1e4 * (k + 1), tp),
                Phase(2000.0, CollKind.ALL_REDUCE, 3e6, dp),
            )
        )
    return out


def test_continuous_optimum_is_never_worse_than_a_fine_grid() -> None:
    g = serial_graph(3, _layers())
    # LIBRA's loop: forward in order, backward reversed, each compute then its collective
    assert g.names[:2] == ["L0 forward compute", "L0 forward collective"]
    assert g.names[6] == "L2 input-grad compute"
    p = Problem(NET, g, [total_constraint(90.0, 3)], default_cost_model(NET), "test")
    tol = 1e-4
    for objective in ("perf", "perf-per-cost"):
        a = solve(p, objective, tol=tol)
        assert p.feasible(a.bw)
        if objective == "perf":
            assert a.objective <= a.lower_bound * (1 + tol) + 1e-9
        else:  # the branch and bound may stop at its solve limit: then it says so
            assert a.gap <= tol or any("gap" in n for n in a.notes)
        best = min(
            p.objective(objective, (x, y, 90.0 - x - y))
            for x, y in itertools.product([i * 0.5 for i in range(1, 180)], repeat=2)
            if x + y < 90.0
        )
        assert a.objective <= best * (1 + tol)
        assert a.lower_bound <= best


def test_infeasible_constraints_name_a_conflicting_set() -> None:
    cons = [
        total_constraint(100.0, 3),
        *parse_constraint("bw0 >= 80", 3),
        *parse_constraint("bw2 <= 50", 3),
        *parse_constraint("bw1 >= 30", 3),
    ]
    bad = conflicting_set(cons, 3)
    assert [c.text for c in bad] == ["sum == 100", "bw0 >= 80", "bw1 >= 30"]
    assert conflicting_set(cons[:3], 3) == []


def test_catalogue_solver_matches_brute_force() -> None:
    g = serial_graph(3, _layers())
    cons = parse_constraint("sum <= 120", 3)
    p = Problem(NET, g, cons, default_cost_model(NET), "test")
    cat = Catalogue(((10.0, 25.0, 50.0, 80.0), (5.0, 20.0, 40.0), (10.0, 30.0, 60.0, 90.0)))
    for objective in ("perf", "perf-per-cost"):
        a = solve(p, objective, catalogue=cat)
        brute = min(
            p.objective(objective, bw) for bw in itertools.product(*cat.options) if sum(bw) <= 120
        )
        assert a.objective == pytest.approx(brute, rel=1e-12)


def test_workload_graph_equals_the_engine_for_its_order() -> None:
    w = generate("gpt3-125m", npus=64, dp=4, tp=4, pp=4, check_memory=False)
    shapes = WorkloadShapes(w, NET)
    run = predict(shapes, [50.0, 50.0, 50.0])
    g = workload_graph(shapes, run)
    for bw in ([50.0, 50.0, 50.0], [90.0, 5.0, 20.0], [10.0, 70.0, 70.0]):
        again = predict(shapes, bw)
        if again.issue_order == run.issue_order:
            assert g.evaluate(bw) == pytest.approx(again.time_ns, rel=1e-12)
    p = workload_problem(shapes, [total_constraint(150.0, 3)], None, "test")
    a = solve(p, "perf")
    assert a.time_ns == pytest.approx(predict(shapes, a.bw).time_ns)
    assert a.time_ns < predict(shapes, [50.0, 50.0, 50.0]).time_ns


# --- LIBRA's own files: small fixtures in its formats, written here -------------------------


def _libra_inputs(root: Path, constraint: str = "model.addLConstr(gp.quicksum(bw) == 300)") -> Path:
    inp = root / "inputs"
    for sub in ("network", "workload", "communicator", "cost_model", "constraints"):
        (inp / sub).mkdir(parents=True)
    (inp / "network" / "net.yml").write_text(
        "Topology: [ Ring, FullyConnected, Switch ]\nNpusCount: [ 4, 2, 8 ]\n"
        "CostDimension: [ InterPackage, InterNode, InterPod ]\n"
    )
    (inp / "communicator" / "comm.yml").write_text(
        "Forward: [ 4, -1, -1 ]\nInputGrad: [ 4, -1, -1 ]\nWeightGrad: [ -1, 2, 8 ]\n"
    )
    (inp / "cost_model" / "cost.yml").write_text(
        "InterPackage:\n  Link: 4.0\nInterNode:\n  Link: 4.0\n  Switch: 13.0\n"
        "InterPod:\n  Link: 7.8\n  Switch: 18.0\n  Nic: 31.6\n"
    )
    (inp / "workload" / "wl.txt").write_text(
        "attn -1 1000 ALLREDUCE 400000 500 ALLGATHER 10000 2000 ALLREDUCE 3000000 10\n"
        "mlp -1 2000 NONE 0 800 NONE 0 3000 ALLREDUCE 6000000 10\n"
    )
    (inp / "constraints" / "budget.py").write_text(
        "import gurobipy as gp\nfrom src.model import Model\n\n\ndef budget() -> None:\n"
        "    model = Model._gp_model\n    bw = Model._bw\n"
        f"    {constraint}\n    model.addLConstr(bw[0] >= 2 * bw[1] - 10)\n"
    )
    (inp / "libra_configs.py").write_text(
        "def libra_configs():\n"
        "    network = NetworkParser().parse(path='./inputs/network/net.yml')\n"
        "    workload = WorkloadParser().parse(path='./inputs/workload/wl.txt')\n"
        "    cost_model = CostModelParser().parse(path='./inputs/cost_model/cost.yml')\n"
        "    communicator = CommunicatorParser().parse(path='./inputs/communicator/comm.yml')\n"
        "    constraint = constraints['budget']\n"
        "    training_loop = training_loops['no_overlap']\n"
        "    objective = SolverObjective.PerfOpt\n"
        "    # objective = SolverObjective.PerfPerCostOpt\n"
    )
    return inp


def test_libra_inputs_are_read_as_they_are(tmp_path: Path) -> None:
    case = libra_problem(_libra_inputs(tmp_path), {}, [])
    p = case.problem
    assert p.net.label() == "ring4*fc2*switch8" and case.objective == "perf"
    assert [c.text for c in p.cons] == ["bw0 + bw1 + bw2 == 300", "bw0 - 2*bw1 >= -10"]
    # the no-overlap loop summed by hand at one allocation
    bw = (100.0, 100.0, 100.0)
    ar_tp = 2 * 4e5 / 4 * 3 / 100
    ag_tp = 1e4 * 3 / 100

    def ar_dp(m: float) -> float:
        return max(2 * m / 2 / 100, 2 * (m / 2) / 8 * 7 / 100)

    want = 1000 + ar_tp + 2000 + 800 + 3000 + ar_dp(6e6) + 500 + ag_tp + 2000 + ar_dp(3e6)
    assert p.time(bw) == pytest.approx(want)
    a = solve(p, "perf")
    assert p.feasible(a.bw) and a.gap <= 1e-4


def test_libra_constraint_files_outside_the_language_are_refused_at_their_line(
    tmp_path: Path,
) -> None:
    inp = _libra_inputs(tmp_path, "model.addLConstr(bw[0] * bw[1] <= 300)")
    with pytest.raises(ExploreError, match="product of bandwidths") as e:
        libra_problem(inp, {}, [])
    assert e.value.pos is not None and e.value.pos.line == 8


def _run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, args)
    return r.exit_code, r.output


def test_cli_on_libra_inputs_with_json(tmp_path: Path) -> None:
    inp = _libra_inputs(tmp_path)
    code, out = _run(["libra", "--libra-inputs", str(inp), "--json"])
    assert code == 0, out
    d = json.loads(out)
    names = [r["name"] for r in d["allocations"]]
    assert names[0] == "libra" and names[1] == "equal split" and names[2].startswith("grid")
    libra_row, grid_row = d["allocations"][0], d["allocations"][2]
    assert libra_row["objective"] <= grid_row["objective"] * (1 + 1e-4)
    assert sum(libra_row["bw"]) == pytest.approx(300.0)


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    inp = _libra_inputs(tmp_path)
    wl = tmp_path / "wl"
    assert (
        _run(
            [
                "workload",
                "generate",
                "gpt3-125m",
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
                str(wl),
            ]
        )[0]
        == 0
    )
    cases = [
        (
            [
                "libra",
                "--libra-inputs",
                str(inp),
                "--libra-file",
                "constraints=none",
                "--constraint",
                "bw0 + bw5 <= 3",
            ],
            "unknown dimension bw5",
        ),
        (["libra", "--libra-inputs", str(inp), "--constraint", "bw2 >= 400"], "conflict"),
        (
            ["libra", "-t", "stack:ring8*fc2*switch8", "--workload", str(wl), "--total-bw", "100"],
            "the workload has 64 NPUs",
        ),
        (["libra", "-t", "mesh:8x8", "--workload", str(wl), "--total-bw", "100"], "stack of ring"),
    ]
    for args, what in cases:
        code, out = _run(args)
        assert code == 2, out
        assert what in out
        assert "Traceback" not in out
