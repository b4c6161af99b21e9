"""A bandwidth-allocation problem put together and solved: the network, the time model, the
constraints and the cost model (docs/libra.md).

`Problem.time`, `Problem.cost` and `Problem.objective` evaluate any allocation (the contract
other explorers build on); `solve` finds the best one, continuous (`explore.solve_lp`) or from
a link catalogue (`explore.solve_cp`). For a Chakra workload the time is the engine's
(`explore.timing.predict`); the solvers work on its task graph for the issue order of a run,
and `solve` re-solves with the order of the new allocation's run until it no longer changes
(at most `ORDER_ROUNDS` times), keeping the allocation whose engine time is best.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from explore.constraints import LinearConstraint
from explore.cost import CostModel
from explore.network import ExploreError, Network
from explore.timing import TaskGraph, WorkloadShapes, predict, workload_graph
from workloads.engine import Roofline

OBJECTIVES = {
    "perf": "PerfOpt: least iteration time",
    "perf-per-cost": "PerfPerCostOpt: least iteration time x network cost",
}

ORDER_ROUNDS = 5


@dataclass
class Problem:
    """What to allocate: ``net``'s per-NPU bandwidths under ``cons``, for the iteration time
    of ``graph`` (for a Chakra workload ``shapes`` is set and the engine is the reference),
    priced by ``cost_model`` (None: no cost, PerfOpt only)."""

    net: Network
    graph: TaskGraph
    cons: list[LinearConstraint]
    cost_model: CostModel | None
    source: str
    shapes: WorkloadShapes | None = None
    roofline: Roofline | None = None
    order: list[list[int]] | None = None
    """The issue order ``graph`` was built for (Chakra workloads)."""

    def unit_costs(self) -> tuple[float, ...] | None:
        return None if self.cost_model is None else self.cost_model.unit_costs(self.net)

    def time(self, bw: Sequence[float]) -> float:
        """The model's iteration time (ns) at ``bw`` (bytes per ns = GB/s per NPU)."""
        if self.shapes is not None:
            return predict(self.shapes, bw, roofline=self.roofline).time_ns
        return self.graph.evaluate(bw)

    def cost(self, bw: Sequence[float]) -> float | None:
        """The network's cost ($) at ``bw``, None without a cost model."""
        return None if self.cost_model is None else self.cost_model.cost(self.net, bw)

    def objective(self, objective: str, bw: Sequence[float], time_ns: float | None = None) -> float:
        """PerfOpt: the time (ns); PerfPerCostOpt: LIBRA's time x cost / 1e10."""
        t = self.time(bw) if time_ns is None else time_ns
        if objective == "perf":
            return t
        c = self.cost(bw)
        if c is None:
            raise ExploreError("perf-per-cost needs a cost model")
        return t * c / 1e10

    def feasible(self, bw: Sequence[float]) -> bool:
        return all(c.holds(bw, 1e-7) for c in self.cons) and all(b >= 0 for b in bw)


@dataclass
class Allocation:
    """A solved allocation: ``bw`` (GB/s per NPU), the model's ``time_ns``, ``cost``,
    ``objective`` and a ``lower_bound`` on the objective no allocation beats."""

    bw: tuple[float, ...]
    time_ns: float
    cost: float | None
    objective: float
    lower_bound: float
    solver: str
    seconds: float
    rounds: int = 0
    order_rounds: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        if self.lower_bound <= 0:
            return 0.0
        return max(0.0, self.objective / self.lower_bound - 1.0)


def workload_problem(
    shapes: WorkloadShapes,
    cons: list[LinearConstraint],
    cost_model: CostModel | None,
    source: str,
    *,
    roofline: Roofline | None = None,
) -> Problem:
    """The problem of a Chakra workload, its graph in the order of a run at a balanced
    feasible allocation."""
    from explore.solve_lp import balanced_point, check_feasible

    shapes.check_all()
    check_feasible(cons, shapes.net.ndims)
    used = [True] * shapes.net.ndims
    start = balanced_point(cons, shapes.net.ndims, used)
    if not any(b > 0 for b in start):
        start = [1.0] * shapes.net.ndims
    run = predict(shapes, [b if b > 0 else 1.0 for b in start], roofline=roofline)
    graph = workload_graph(shapes, run, roofline=roofline)
    return Problem(shapes.net, graph, cons, cost_model, source, shapes, roofline, run.issue_order)


def _solve_graph(
    p: Problem, graph: TaskGraph, objective: str, tol: float, catalogue: object | None
) -> tuple[tuple[float, ...], float, int, list[str], str]:
    """(bw, lower bound on the objective for this graph, rounds, notes, solver)."""
    if catalogue is not None:
        from explore.solve_cp import Catalogue, solve_catalogue

        assert isinstance(catalogue, Catalogue)
        sol = solve_catalogue(graph, p.cons, catalogue, objective, p.unit_costs(), p.net.num_npus)
        return sol.bw, sol.lower_bound, sol.rounds, sol.notes, "cp-sat"
    from explore.solve_lp import solve_perf, solve_perf_per_cost

    if objective == "perf":
        s = solve_perf(graph, p.cons, tol)
    else:
        units = p.unit_costs()
        if units is None:
            raise ExploreError("perf-per-cost needs a cost model")
        s = solve_perf_per_cost(graph, p.cons, units, p.net.num_npus, tol)
    return s.bw, s.lower_bound, s.rounds, s.notes, "glop"


def solve(
    p: Problem, objective: str = "perf", tol: float = 1e-4, catalogue: object | None = None
) -> Allocation:
    """The best allocation for ``objective`` (`OBJECTIVES`), within ``tol`` (continuous) or
    exactly up to the catalogue solver's rounding (`explore.solve_cp`)."""
    if objective not in OBJECTIVES:
        raise ExploreError(f"unknown objective {objective!r} (expected {', '.join(OBJECTIVES)})")
    t0 = time.perf_counter()
    graph, order = p.graph, p.order
    best: Allocation | None = None
    for k in range(1, ORDER_ROUNDS + 1):
        bw, lb, rounds, notes, solver = _solve_graph(p, graph, objective, tol, catalogue)
        if p.shapes is None:
            t = graph.evaluate(bw)
            value = p.objective(objective, bw, t)
            best = Allocation(
                bw, t, p.cost(bw), value, min(lb, value), solver, 0.0, rounds, k, notes
            )
            break
        run = predict(p.shapes, bw, roofline=p.roofline)
        t = run.time_ns
        value = p.objective(objective, bw, t)
        cand = Allocation(bw, t, p.cost(bw), value, min(lb, value), solver, 0.0, rounds, k, notes)
        if best is None or value < best.objective:
            best = cand
        if run.issue_order == order:
            break
        order = run.issue_order
        graph = workload_graph(p.shapes, run, roofline=p.roofline)
    assert best is not None
    if p.shapes is not None and best.order_rounds > 1:
        best.notes.append(
            f"the engine's issue order changed with the allocation: solved for {best.order_rounds} "
            "orders; the lower bound holds for the last"
        )
    best.seconds = time.perf_counter() - t0
    return best


LIBRA_KINDS = {
    "network": ("network", ".yml"),
    "workload": ("workload", ".txt"),
    "communicator": ("communicator", ".yml"),
    "cost_model": ("cost_model", ".yml"),
    "constraints": ("constraints", ".py"),
}
"""The files of a LIBRA ``inputs/`` folder: kind -> (subfolder, suffix)."""


@dataclass
class LibraCase:
    """A problem read from LIBRA's inputs, with the files it came from, the objective its
    configuration names and its text workload (for `explore.libra_chakra`)."""

    problem: Problem
    files: dict[str, str]
    objective: str | None
    layers: list[object]
    comm: dict[str, tuple[int, ...]]


def libra_problem(
    folder: str | Path,
    choose: dict[str, str],
    extra: list[LinearConstraint],
) -> LibraCase:
    """The problem LIBRA's ``inputs/`` ``folder`` describes: the files its
    ``libra_configs.py`` parses, each replaced by ``choose[kind]`` (a file name in the
    kind's subfolder, with or without suffix; ``constraints=none`` drops LIBRA's
    constraints), plus the constraints ``extra``."""
    from explore.cost import read_cost_model
    from explore.libra_inputs import (
        layer_phases,
        read_communicator,
        read_configs,
        read_constraints_py,
        read_network,
        read_text_workload,
    )
    from explore.timing import serial_graph

    root = Path(folder)
    if not root.is_dir():
        raise ExploreError(f"{root}: not a folder (expected LIBRA's inputs/ folder)")
    for kind in choose:
        if kind not in LIBRA_KINDS:
            raise ExploreError(
                f"--libra-file: unknown kind {kind!r} (expected {', '.join(LIBRA_KINDS)})"
            )
    cfg_path = root / "libra_configs.py"
    cfg = read_configs(cfg_path) if cfg_path.exists() else None
    files: dict[str, str] = {}
    for kind, (sub, suffix) in LIBRA_KINDS.items():
        name = choose.get(kind)
        if name is None and cfg is not None:
            if kind == "constraints":
                name = cfg.constraint
            elif kind in cfg.files:
                name = Path(cfg.files[kind]).name
        if name is None:
            raise ExploreError(
                f"{root}: no {kind} file chosen (libra_configs.py names none): give "
                f"--libra-file {kind}=NAME"
            )
        if kind == "constraints" and name == "none":
            continue
        path = root / sub / (name if name.endswith(suffix) else name + suffix)
        if not path.is_file():
            raise ExploreError(f"{path}: no such {kind} file")
        files[kind] = str(path)
    net, levels = read_network(files["network"])
    comm = read_communicator(files["communicator"], net)
    layers = read_text_workload(files["workload"])
    cost = read_cost_model(files["cost_model"], levels)
    cost.unit_costs(net)  # every level defined
    cons = list(extra)
    if "constraints" in files:
        cons = read_constraints_py(files["constraints"], net.ndims) + cons
    graph = serial_graph(net.ndims, layer_phases(layers, comm))
    loop = cfg.training_loop if cfg is not None else None
    if loop not in (None, "no_overlap"):
        raise ExploreError(
            f"{cfg_path}: training loop {loop!r}: collc reads LIBRA's no_overlap loop only "
            "(for other schedules give a Chakra workload)"
        )
    p = Problem(net, graph, cons, cost, str(root))
    return LibraCase(p, files, cfg.objective if cfg is not None else None, list(layers), comm)
