"""The catalogue solver: each dimension picks one bandwidth from its catalogue, chosen exactly
with CP-SAT (docs/libra.md, section 5).

A catalogue file (YAML) lists, per dimension, the per-NPU bandwidths it may take:

```yaml
dims:
  - [50GB/s, 100GB/s, 200GB/s]    # dimension 0 (a plain number is GB/s)
  - [25GB/s, 50GB/s]
```

The model is the task graph's (`explore.timing.TaskGraph`) with one boolean per option: the
time of traffic vector v is at least ``sum_k z[d,k] * round(bytes[v,d] / bw[d,k])`` for every
dimension d, a task ends after its predecessors plus its time, the iteration time after every
task. Times are integers of `TICK_NS` (1 ps) and bandwidths integers of 1 KB/s for the user's
constraints, so CP-SAT's optimum is the exact optimum of the rounded model; rounding moves any
allocation's time by at most half a tick per task on its longest path, which bounds how far
the chosen allocation can be from the true optimum (``Solution.notes`` states it).
PerfPerCostOpt walks the Pareto front: least time at cost <= c, then below the cost found,
until no cheaper allocation can beat the best product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explore.constraints import LinearConstraint
from explore.network import ExploreError
from explore.solve_lp import Solution
from explore.timing import TaskGraph
from topologies.errors import SpecError

TICK_NS = 1e-3
"""The time unit of the CP-SAT model (1 ps)."""

BW_UNIT = 1e-6
"""The bandwidth unit of the constraints in the CP-SAT model (1 KB/s, in bytes per ns)."""

MAX_OPTIONS = 1000


@dataclass(frozen=True)
class Catalogue:
    """Per dimension, the bandwidths (bytes per ns = GB/s per NPU) it may take."""

    options: tuple[tuple[float, ...], ...]
    source: str = ""

    @property
    def combinations(self) -> int:
        n = 1
        for o in self.options:
            n *= len(o)
        return n


def read_catalogue(path: str | Path, ndims: int) -> Catalogue:
    """A catalogue file (module docstring); errors name the file, line and column."""
    from topologies.files import YamlDocument
    from topologies.units import parse_bandwidth_bytes_per_ns

    name = str(path)
    doc = YamlDocument(name, Path(path).read_text(encoding="utf-8"))
    data = doc.mapping((), ("dims",))
    dims = data.get("dims")
    if not isinstance(dims, list) or len(dims) != ndims:
        raise doc.error(("dims",), f"expected a list of {ndims} option lists, one per dimension")
    out = []
    for d, opts in enumerate(dims):
        if not isinstance(opts, list) or not 1 <= len(opts) <= MAX_OPTIONS:
            raise doc.error(("dims", d), f"expected a list of 1 to {MAX_OPTIONS} bandwidths")
        vals = []
        for k, v in enumerate(opts):
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise doc.error(("dims", d, k), f"expected a bandwidth, not {v!r}")
            if isinstance(v, str):
                try:
                    b = parse_bandwidth_bytes_per_ns(v, doc.pos(("dims", d, k)))
                except SpecError as e:
                    raise doc.error(("dims", d, k), e.message) from None
            else:
                b = float(v)
                if not 1e-6 <= b <= 1e9:
                    raise doc.error(("dims", d, k), f"{v} GB/s is out of range (1e-6 to 1e9)")
            vals.append(b)
        if len(set(vals)) != len(vals):
            raise doc.error(("dims", d), "an option is listed twice")
        out.append(tuple(vals))
    return Catalogue(tuple(out), name)


def _model(
    graph: TaskGraph, cons: Sequence[LinearConstraint], cat: Catalogue
) -> tuple[Any, list[list[Any]], Any]:
    from ortools.sat.python import cp_model

    m: Any = cp_model.CpModel()
    n = graph.ndims
    z = [[m.NewBoolVar(f"z{d}_{k}") for k in range(len(cat.options[d]))] for d in range(n)]
    for d in range(n):
        m.AddExactlyOne(z[d])
    for c in cons:
        terms = []
        for d in range(n):
            if c.coeffs[d] == 0:
                continue
            for k, b in enumerate(cat.options[d]):
                terms.append(round(c.coeffs[d] * b / BW_UNIT) * z[d][k])
        rhs = round(c.rhs / BW_UNIT)
        expr = sum(terms)
        if c.sense == "<=":
            m.Add(expr <= rhs)
        elif c.sense == ">=":
            m.Add(expr >= rhs)
        else:
            m.Add(expr == rhs)
    horizon = 0
    comm = []
    for v, tr in enumerate(graph.traffic):
        worst = max(
            (round(b / min(cat.options[d]) / TICK_NS) for d, b in enumerate(tr) if b > 0), default=0
        )
        cv = m.NewIntVar(0, worst, f"c{v}")
        for d, b in enumerate(tr):
            if b > 0:
                m.Add(
                    cv
                    >= sum(round(b / o / TICK_NS) * z[d][k] for k, o in enumerate(cat.options[d]))
                )
        comm.append((cv, worst))
    for t in range(graph.num_tasks):
        v = graph.vector[t]
        horizon += round(graph.const_ns[t] / TICK_NS) + (comm[v][1] if v >= 0 else 0)
    ends: list[Any] = []
    for t in range(graph.num_tasks):
        e = m.NewIntVar(0, horizon, f"e{t}")
        dur = round(graph.const_ns[t] / TICK_NS)
        v = graph.vector[t]
        extra = comm[v][0] if v >= 0 else 0
        if not graph.preds[t]:
            m.Add(e >= dur + extra)
        for p in graph.preds[t]:
            m.Add(e >= ends[p] + dur + extra)
        ends.append(e)
    T = m.NewIntVar(0, horizon, "T")
    for e in ends:
        m.Add(e <= T)
    m.Minimize(T)
    return m, z, T


def _run(
    m: object, z: list[list[object]], cat: Catalogue
) -> tuple[tuple[float, ...], float] | None:
    from ortools.sat.python import cp_model

    solver: Any = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    status = solver.Solve(m)
    if status == cp_model.INFEASIBLE:
        return None
    if status != cp_model.OPTIMAL:
        raise ExploreError(f"CP-SAT did not prove an optimum (status {solver.StatusName(status)})")
    bw = tuple(
        next(cat.options[d][k] for k, v in enumerate(zs) if solver.Value(v))
        for d, zs in enumerate(z)
    )
    return bw, solver.ObjectiveValue() * TICK_NS


def solve_catalogue(
    graph: TaskGraph,
    cons: Sequence[LinearConstraint],
    cat: Catalogue,
    objective: str,
    unit_costs: Sequence[float] | None,
    npus: int,
) -> Solution:
    """The best allocation from the catalogue (module docstring)."""
    if len(cat.options) != graph.ndims:
        raise ExploreError(
            f"the catalogue has {len(cat.options)} dimensions, the network {graph.ndims}"
        )
    slack = graph.num_tasks * TICK_NS  # half a tick per rounded term, two terms per task
    m, z, _ = _model(graph, cons, cat)
    got = _run(m, z, cat)
    if got is None:
        raise ExploreError("no combination of the catalogue satisfies the constraints")
    note = f"times rounded to {TICK_NS * 1e3:g} ps: within {slack:.3g} ns of the optimum"
    bw, _ = got
    if objective == "perf":
        t = graph.evaluate(bw)
        sol = Solution(bw, t, t, max(0.0, t - slack), 1, notes=[note])
        return sol
    if unit_costs is None:
        raise ExploreError("perf-per-cost needs a cost model")

    def cost(b: Sequence[float]) -> float:
        return npus * sum(u * x for u, x in zip(unit_costs, b, strict=True))

    scale = 1e-3  # cost in integer thousandths of a dollar
    cost_expr = sum(
        round(npus * unit_costs[d] * o / scale) * z[d][k]
        for d in range(graph.ndims)
        for k, o in enumerate(cat.options[d])
    )
    cheapest = cost([min(o) for o in cat.options])
    best = (cost(bw) * graph.evaluate(bw), bw)
    rounds = 1
    cap = m.Add(cost_expr <= round(cost(bw) / scale) - 1)
    while True:
        got = _run(m, z, cat)
        rounds += 1
        if got is None:
            break
        b, t_model = got
        t = graph.evaluate(b)
        value = cost(b) * t
        if value < best[0]:
            best = (value, b)
        # anything cheaper than b takes at least t_model - slack and costs at least `cheapest`
        if cheapest * max(0.0, t_model - slack) >= best[0]:
            break
        domain = m.Proto().constraints[cap.Index()].linear.domain
        domain[len(domain) - 1] = round(cost(b) / scale) - 1
    value, b = best
    t = graph.evaluate(b)
    return Solution(
        b,
        t,
        value / 1e10,
        value / 1e10 * (1 - slack / max(t, 1e-300)),
        rounds,
        cost=cost(b),
        notes=[note],
    )
