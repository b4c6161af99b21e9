"""Colouring a conflict graph with m colours: a greedy heuristic first, CP-SAT when it fails.

A level of a FRED_m(P) switch routes every flow through one of its m middle sub-switches,
and two flows that share an input or output µSwitch need different ones: a proper m-colouring
of the conflict graph (`backends.fred.clos`). `colour` tries DSatur (the vertex with the most
distinct colours among its neighbours first, ties by degree), then, when that fails and
``exact`` is set, an exact CP-SAT model with a time limit (ortools, imported on first use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Graph = Sequence[Sequence[int]]
"""Adjacency lists: ``graph[v]`` = the neighbours of vertex ``v`` (symmetric, no loops)."""


@dataclass(frozen=True)
class Colouring:
    """A colouring's outcome. ``colours[v]`` in ``0..m-1`` when ``ok``; ``method`` is
    ``"greedy"``, ``"cp-sat"``, ``"infeasible"`` (CP-SAT proved no m-colouring exists),
    ``"timeout"`` (CP-SAT found none within its limit) or ``"greedy-failed"`` (no exact try)."""

    colours: tuple[int, ...]
    method: str

    @property
    def ok(self) -> bool:
        return self.method in ("greedy", "cp-sat")


def dsatur(graph: Graph, m: int) -> list[int] | None:
    """A proper colouring with colours ``0..m-1`` by DSatur, or None when it gets stuck."""
    n = len(graph)
    colour = [-1] * n
    seen: list[set[int]] = [set() for _ in range(n)]
    left = set(range(n))
    while left:
        v = max(left, key=lambda x: (len(seen[x]), len(graph[x]), -x))
        free = [c for c in range(m) if c not in seen[v]]
        if not free:
            return None
        # The colour fewest uncoloured neighbours already exclude keeps options open.
        c = min(free, key=lambda c: sum(1 for u in graph[v] if colour[u] < 0 and c in seen[u]))
        colour[v] = c
        left.discard(v)
        for u in graph[v]:
            seen[u].add(c)
    return colour


def cp_sat(graph: Graph, m: int, time_limit_s: float) -> tuple[list[int] | None, bool]:
    """An exact m-colouring by CP-SAT: ``(colours, proved)``; ``colours`` is None when there
    is none (``proved``) or none was found within ``time_limit_s`` (not ``proved``)."""
    from ortools.sat.python import cp_model  # heavy: loaded only when the heuristic fails

    n = len(graph)
    model = cp_model.CpModel()
    x = [[model.new_bool_var(f"x{v}_{c}") for c in range(m)] for v in range(n)]
    for v in range(n):
        model.add_exactly_one(x[v])
        for u in graph[v]:
            if u > v:
                for c in range(m):
                    model.add_bool_or([~x[v][c], ~x[u][c]])
    # Symmetry: vertex v (in order) uses a colour no higher than v.
    for v in range(min(n, m)):
        for c in range(v + 1, m):
            model.add(x[v][c] == 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [next(c for c in range(m) if solver.value(x[v][c])) for v in range(n)], True
    return None, status == cp_model.INFEASIBLE


def colour(graph: Graph, m: int, exact: bool = True, time_limit_s: float = 1.0) -> Colouring:
    """Colour ``graph`` with ``m`` colours (see the module docstring)."""
    got = dsatur(graph, m)
    if got is not None:
        return Colouring(tuple(got), "greedy")
    if not exact:
        return Colouring((), "greedy-failed")
    exact_colours, proved = cp_sat(graph, m, time_limit_s)
    if exact_colours is not None:
        return Colouring(tuple(exact_colours), "cp-sat")
    return Colouring((), "infeasible" if proved else "timeout")
