"""The continuous solver: the optimal allocation on GLOP, by outer approximation with tangent
cuts of 1/bw, to a proven relative tolerance (docs/libra.md, section 5).

With ``x[d] = 1/bw[d]`` the iteration time of a `explore.timing.TaskGraph` is convex and
piecewise linear in x, and LIBRA's constraints are linear in bw. The linear program keeps both
bw and x, with ``x[d] >= 1/bw[d]`` (a convex set, since the time never decreases in x)
replaced by tangents ``x >= 2/b - bw/b^2`` at points b. Its optimum is a lower bound on the
true optimum (a relaxation); the true time at its bandwidths an upper bound (a feasible
point). Each round adds the tangents at the new point (Kelley's cutting planes) until the
best upper bound is within ``tol`` of the lower bound: the allocation returned is then
within ``tol`` (relative) of optimal.

PerfPerCostOpt (minimise time x cost) is solved by branch and bound over the cost: ``g(c)``,
the least time at cost <= c, is non-increasing, so on a cost interval [a, b] no allocation
beats ``a * g(b)``; intervals are split until none can improve the best product by more than
``tol``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from explore.constraints import LinearConstraint
from explore.network import ExploreError
from explore.timing import TaskGraph

FLOOR = 1e-4
"""A dimension that carries traffic gets at least this fraction of its largest feasible
bandwidth (0 would make the time infinite; this bound never binds at an optimum)."""

MAX_ROUNDS = 2000
"""Rounds of cuts before the solver gives up (it then reports the gap it reached)."""


def _glop() -> Any:
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with ortools
        raise ExploreError("OR-Tools' GLOP solver is not available")
    return solver


def _add(solver: Any, expr: Any, sense: str, rhs: float) -> Any:
    if sense == "<=":
        return solver.Add(expr <= rhs)
    if sense == ">=":
        return solver.Add(expr >= rhs)
    return solver.Add(expr == rhs)


def _feasible(cons: Sequence[LinearConstraint], ndims: int) -> bool:
    s = _glop()
    bw = [s.NumVar(0.0, s.infinity(), f"bw{d}") for d in range(ndims)]
    for c in cons:
        _add(s, sum(k * b for k, b in zip(c.coeffs, bw, strict=True)), c.sense, c.rhs)
    return bool(s.Solve() == s.OPTIMAL)


def conflicting_set(cons: Sequence[LinearConstraint], ndims: int) -> list[LinearConstraint]:
    """An irreducible set of the constraints (with bw >= 0) that no allocation satisfies
    (deletion filter: drop each constraint whose removal leaves the rest infeasible), or []
    when they are feasible."""
    if _feasible(cons, ndims):
        return []
    keep = list(cons)
    for c in list(cons):
        trial = [k for k in keep if k is not c]
        if not _feasible(trial, ndims):
            keep = trial
    return keep


def check_feasible(cons: Sequence[LinearConstraint], ndims: int) -> None:
    """ExploreError naming a conflicting set when no allocation satisfies ``cons``."""
    bad = conflicting_set(cons, ndims)
    if bad:
        names = "; ".join(f"{c.text} ({c.pos})" if c.pos else c.text for c in bad)
        raise ExploreError(
            f"no allocation satisfies the constraints: {names} conflict (with every bw >= 0)"
        )


def bandwidth_box(cons: Sequence[LinearConstraint], ndims: int) -> tuple[list[float], list[float]]:
    """Per dimension the least and the largest bandwidth the constraints allow (inf when
    unbounded)."""
    check_feasible(cons, ndims)
    lo: list[float] = []
    hi: list[float] = []
    for d in range(ndims):
        for sign, out in ((1.0, lo), (-1.0, hi)):
            s = _glop()
            bw = [s.NumVar(0.0, s.infinity(), f"bw{k}") for k in range(ndims)]
            for c in cons:
                _add(s, sum(k * b for k, b in zip(c.coeffs, bw, strict=True)), c.sense, c.rhs)
            s.Minimize(sign * bw[d])
            status = s.Solve()
            if status == s.OPTIMAL:
                out.append(max(0.0, bw[d].solution_value()))
            else:
                out.append(math.inf)
    return lo, hi


@dataclass
class Solution:
    """An allocation and what the solver proved about it: ``time_ns`` is the model's time at
    ``bw``, ``lower_bound`` a bound no feasible allocation beats (same unit as
    ``objective``); ``gap`` = objective / lower_bound - 1."""

    bw: tuple[float, ...]
    time_ns: float
    objective: float
    lower_bound: float
    rounds: int
    cost: float | None = None
    solves: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        if self.lower_bound <= 0:
            return 0.0 if self.objective <= 0 else math.inf
        return self.objective / self.lower_bound - 1.0


class TimeLP:
    """The outer-approximation LP of one problem, kept between solves so that cuts
    accumulate (they stay valid for every cost cap)."""

    def __init__(
        self,
        graph: TaskGraph,
        cons: Sequence[LinearConstraint],
        unit_costs: Sequence[float] | None = None,
        npus: int = 1,
    ) -> None:
        n = graph.ndims
        self.graph = graph
        self.used = graph.used_dims()
        self.cons = list(cons)
        lo, hi = bandwidth_box(cons, n)
        for d in range(n):
            if self.used[d] and math.isinf(hi[d]):
                raise ExploreError(
                    f"the constraints leave bw{d} unbounded, and dimension {d} carries traffic: "
                    "give --total-bw or a constraint bounding it"
                )
        finite = [h for h, u in zip(hi, self.used, strict=True) if u]
        self.beta = max(finite) if finite else 1.0
        if not self.beta > 0:
            raise ExploreError("the constraints allow no bandwidth on the dimensions with traffic")
        self.lo, self.hi = lo, hi
        s = self.s = _glop()
        inf = s.infinity()
        self.y = [
            s.NumVar(
                max(lo[d], FLOOR * hi[d] if self.used[d] else 0.0) / self.beta,
                hi[d] / self.beta if not math.isinf(hi[d]) else inf,
                f"y{d}",
            )
            for d in range(n)
        ]
        for c in cons:
            _add(
                s,
                sum(k * y for k, y in zip(c.coeffs, self.y, strict=True)),
                c.sense,
                c.rhs / self.beta,
            )
        top = [hi[d] if self.used[d] else 0.0 for d in range(n)]
        tau = graph.evaluate([t if t > 0 else 1.0 for t in top]) if any(self.used) else 0.0
        self.tau = tau if tau > 0 else 1.0
        self.w = {d: s.NumVar(0.0, inf, f"w{d}") for d in range(n) if self.used[d]}
        c_v = [s.NumVar(0.0, inf, f"c{v}") for v in range(len(graph.traffic))]
        for v, tr in enumerate(graph.traffic):
            for d, b in enumerate(tr):
                if b > 0:
                    s.Add(c_v[v] >= b / (self.beta * self.tau) * self.w[d])
        ends = [s.NumVar(0.0, inf, f"e{t}") for t in range(graph.num_tasks)]
        has_succ = [False] * graph.num_tasks
        for t in range(graph.num_tasks):
            dur = graph.const_ns[t] / self.tau
            v = graph.vector[t]
            extra = c_v[v] if v >= 0 else 0
            if not graph.preds[t]:
                s.Add(ends[t] >= dur + extra)
            for p in graph.preds[t]:
                has_succ[p] = True
                s.Add(ends[t] >= ends[p] + dur + extra)
        self.T = s.NumVar(0.0, inf, "T")
        for t in range(graph.num_tasks):
            if not has_succ[t]:
                s.Add(ends[t] <= self.T)
        self.cap = None
        self.unit_costs = tuple(unit_costs) if unit_costs is not None else None
        self.npus = npus
        if self.unit_costs is not None:
            self.cost_scale = npus * self.beta * max(max(self.unit_costs), 1e-300)
            unit = [npus * u * self.beta / self.cost_scale for u in self.unit_costs]
            self.cap = s.Add(sum(u * y for u, y in zip(unit, self.y, strict=True)) <= inf)
        self.cuts: set[tuple[int, float]] = set()
        for d in self.w:
            ylo, yhi = max(self.y[d].lb(), 1e-2 * self.y[d].ub()), self.y[d].ub()
            k = 8
            for j in range(k + 1):
                self._cut(d, ylo * (yhi / ylo) ** (j / k))
        s.Minimize(self.T)
        self.solves = 0

    def _cut(self, d: int, at: float) -> bool:
        key = (d, float(at))
        if at <= 0 or key in self.cuts:
            return False
        self.cuts.add(key)
        self.s.Add(self.w[d] >= 2.0 / at - self.y[d] * (1.0 / (at * at)))
        return True

    def _solve(self) -> tuple[float, list[float]]:
        status = self.s.Solve()
        self.solves += 1
        if status != self.s.OPTIMAL:
            raise ExploreError(
                f"GLOP found no optimum (status {status}): the constraints admit no allocation "
                "at this cost, or the problem is badly scaled"
            )
        bw = [
            min(max(self.beta * y.solution_value(), 0.0), self.hi[d]) for d, y in enumerate(self.y)
        ]
        return self.T.solution_value() * self.tau, bw

    def min_time(self, tol: float, cost_cap: float | None = None) -> Solution:
        """The least-time allocation (at cost <= ``cost_cap`` when given), within ``tol``."""
        if cost_cap is not None:
            assert self.cap is not None
            self.cap.SetUb(cost_cap / self.cost_scale)
        best: tuple[float, list[float]] | None = None
        lb = 0.0
        rounds = 0
        while rounds < MAX_ROUNDS:
            rounds += 1
            lb, bw = self._solve()
            t = self.graph.evaluate(bw)
            if best is None or t < best[0]:
                best = (t, bw)
            if best[0] - lb <= tol * max(lb, 1e-300):
                break
            added = False
            wv = {d: w.solution_value() for d, w in self.w.items()}
            for d in self.w:
                yd = bw[d] / self.beta
                if wv[d] < (1.0 / yd) * (1 - 1e-12):
                    added |= self._cut(d, yd)
            if not added:
                break
        assert best is not None
        sol = Solution(tuple(best[1]), best[0], best[0], min(lb, best[0]), rounds)
        sol.solves = self.solves
        return sol

    def cost(self, bw: Sequence[float]) -> float:
        assert self.unit_costs is not None
        return self.npus * sum(u * b for u, b in zip(self.unit_costs, bw, strict=True))

    def cost_range(self) -> tuple[float, float]:
        """The least and the largest cost of an allocation the constraints (and the floors
        of the dimensions with traffic) allow."""
        assert self.unit_costs is not None
        out = []
        for sign in (1.0, -1.0):
            s = _glop()
            ys = [s.NumVar(y.lb(), y.ub(), f"y{d}") for d, y in enumerate(self.y)]
            for c in self.cons:
                _add(
                    s,
                    sum(k * y for k, y in zip(c.coeffs, ys, strict=True)),
                    c.sense,
                    c.rhs / self.beta,
                )
            s.Minimize(sign * sum(u * y for u, y in zip(self.unit_costs, ys, strict=True)))
            if s.Solve() != s.OPTIMAL:
                raise ExploreError(
                    "the constraints leave the network's cost unbounded: bound every bandwidth"
                )
            out.append(self.cost([self.beta * y.solution_value() for y in ys]))
        return out[0], out[1]


def solve_perf(graph: TaskGraph, cons: Sequence[LinearConstraint], tol: float = 1e-4) -> Solution:
    """PerfOpt: the allocation of least iteration time, within ``tol`` (relative)."""
    lp = TimeLP(graph, cons)
    return lp.min_time(tol)


def solve_perf_per_cost(
    graph: TaskGraph,
    cons: Sequence[LinearConstraint],
    unit_costs: Sequence[float],
    npus: int,
    tol: float = 1e-4,
    max_solves: int = 400,
) -> Solution:
    """PerfPerCostOpt: the allocation of least ``time x cost`` (time in ns, cost in $), within
    ``tol`` (relative), by branch and bound over the cost (module docstring). The objective
    reported is LIBRA's ``time x cost / 1e10``."""
    lp = TimeLP(graph, cons, unit_costs, npus)
    c_min, c_max = lp.cost_range()
    c_min, c_max = c_min * (1 + 1e-6), max(c_max, c_min * (1 + 1e-6))
    inner = tol / 3  # each time bound within tol/3, so that the products close within tol
    evals: dict[float, Solution] = {}

    def g(c: float) -> Solution:
        if c not in evals:
            evals[c] = lp.min_time(inner, cost_cap=c)
        return evals[c]

    best: tuple[float, Solution] | None = None

    def consider(sol: Solution) -> None:
        nonlocal best
        value = lp.cost(sol.bw) * sol.time_ns
        if best is None or value < best[0]:
            best = (value, sol)

    top, bottom = g(c_max), g(c_min)
    consider(top)
    consider(bottom)
    heap: list[tuple[float, float, float]] = []

    def push(a: float, b: float) -> None:
        heapq.heappush(heap, (a * g(b).lower_bound, a, b))

    if c_max > c_min:
        push(c_min, c_max)
    lower = min(c_min * top.lower_bound, best[0] if best else math.inf)
    solves = 2
    while heap:
        lb, a, b = heap[0]
        assert best is not None
        lower = lb
        if lb >= best[0] / (1 + tol) or b - a <= 1e-12 * c_max:
            break
        if solves >= max_solves:
            break
        heapq.heappop(heap)
        m = (a + b) / 2
        consider(g(m))
        solves += 1
        push(a, m)
        push(m, b)
    assert best is not None
    if not heap:
        lower = min(best[0], c_min * top.lower_bound)
    value, sol = best
    out = Solution(
        sol.bw,
        sol.time_ns,
        value / 1e10,
        min(lower, value) / 1e10,
        sum(e.rounds for e in evals.values()),
        cost=lp.cost(sol.bw),
    )
    out.solves = lp.solves
    if out.gap > tol:
        out.notes.append(f"stopped after {solves} cost levels with a gap of {out.gap:.2e}")
    return out


def balanced_point(
    cons: Sequence[LinearConstraint], ndims: int, used: Sequence[bool]
) -> list[float]:
    """A feasible allocation that maximises the least bandwidth of a dimension with traffic
    (a fair starting point for the order of a workload's run)."""
    check_feasible(cons, ndims)
    s = _glop()
    bw = [s.NumVar(0.0, s.infinity(), f"bw{d}") for d in range(ndims)]
    t = s.NumVar(0.0, s.infinity(), "t")
    for c in cons:
        _add(s, sum(k * b for k, b in zip(c.coeffs, bw, strict=True)), c.sense, c.rhs)
    for d in range(ndims):
        if used[d]:
            s.Add(bw[d] >= t)
    s.Add(sum(bw) <= 1e12)
    s.Maximize(t)
    if s.Solve() != s.OPTIMAL:
        raise ExploreError("no allocation satisfies the constraints")
    return [max(0.0, b.solution_value()) for b in bw]
