"""Hamiltonian cycles over the NPUs of a topology (rings for ring-based algorithms).

Two NPUs are *joined* ``a -> b`` when there is a link ``a -> b`` or a switch ``s`` with links
``a -> s`` and ``s -> b``. Known constructions come first (ring order, snakes on grids, Gray
code on hypercubes); when failures break them, a bounded depth-first search takes over.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from itertools import islice, permutations

from topologies.routing import FC, RING, SWITCH, UNIRING, GridLayout
from topologies.topology import Topology

#: How many extensions the fallback search may try before giving up.
SEARCH_BUDGET = 200_000
#: Skip the fallback search when the NPU adjacency would be larger than this.
ADJACENCY_LIMIT = 4_000_000
_DIM_ORDERS = 6
_ROTATION_STARTS = 8
_CYCLIC = (RING, FC, SWITCH)


def hamiltonian_cycle(t: Topology) -> list[int] | None:
    """An order of all NPUs in which each NPU is joined to the next and the last to the first.

    Ring and uniring topologies give id order; fc and switch id order; meshes with an even
    dimension a snake closed through a return column; tori and stacks always have one (an
    all-odd torus uses its wraparound links); hypercubes a Gray code. A mesh whose dimensions are
    all odd has none. With failed links, or for FRED, file and graph topologies, the
    constructions are checked and a bounded search tries the rest. Returns None if no cycle is
    found.
    """
    joined = _Joined(t)
    for candidate in _constructions(t):
        if joined.is_cycle(candidate):
            return candidate
    if t.layout is not None and not t.failed:
        return None  # the constructions cover every intact grid that has a cycle
    return _search(t)


class _Joined:
    def __init__(self, t: Topology) -> None:
        self.t = t

    def __call__(self, a: int, b: int) -> bool:
        t = self.t
        if t.links_between(a, b):
            return True
        return any(s >= t.num_npus and t.links_between(s, b) for s in t.successors(a))

    def is_cycle(self, order: list[int]) -> bool:
        n = self.t.num_npus
        if len(order) != n or set(order) != set(range(n)):
            return False
        return all(self(order[i], order[(i + 1) % n]) for i in range(n))


def _constructions(t: Topology) -> Iterator[list[int]]:
    n = t.num_npus
    if t.name == "hypercube":
        yield [i ^ (i >> 1) for i in range(n)]
    if t.layout is not None:
        yield from _grid_cycles(t.layout)
    else:
        yield list(range(n))


def _grid_cycles(layout: GridLayout) -> Iterator[list[int]]:
    shape, kinds = layout.shape, layout.kinds
    k = len(shape)
    if k == 1:
        if kinds[0] in _CYCLIC or kinds[0] == UNIRING or shape[0] == 2:
            yield list(range(shape[0]))
            if kinds[0] != UNIRING:
                yield list(range(shape[0]))[::-1]
        return
    even = [d for d in range(k) if shape[d] % 2 == 0]
    if even:
        for x in even:
            others = [d for d in range(k) if d != x]
            for rest in islice(permutations(others), _DIM_ORDERS):
                cycle = _even_cycle(layout, x, list(rest))
                yield cycle
                yield cycle[::-1]
        return
    for c in (d for d in range(k) if kinds[d] in _CYCLIC):
        others = [d for d in range(k) if d != c]
        for rest in islice(permutations(others), _DIM_ORDERS):
            cycle = _odd_cycle(layout, c, list(rest))
            yield cycle
            yield cycle[::-1]


def _snake(layout: GridLayout, dims: list[int]) -> list[int]:
    """A boustrophedon path over ``dims`` (first fastest), as NPU id offsets."""
    order = [0]
    for d in dims:
        stride = layout.strides[d]
        new: list[int] = []
        for c in range(layout.shape[d]):
            new.extend(o + c * stride for o in (order if c % 2 == 0 else reversed(order)))
        order = new
    return order


def _even_cycle(layout: GridLayout, x: int, rest: list[int]) -> list[int]:
    """Dimension ``x`` (even size X) times a snake path P over ``rest``: columns ``x`` walk
    P[1..] back and forth, and P[0] is the return column."""
    size, stride = layout.shape[x], layout.strides[x]
    path = _snake(layout, rest)
    m = len(path)
    cycle: list[int] = []
    for xi in range(size):
        ys = range(1, m) if xi % 2 == 0 else range(m - 1, 0, -1)
        cycle.extend(xi * stride + path[y] for y in ys)
    cycle.extend(xi * stride + path[0] for xi in range(size - 1, -1, -1))
    return cycle


def _odd_cycle(layout: GridLayout, c: int, rest: list[int]) -> list[int]:
    """All sizes odd: a snake path P (odd length m) over ``rest`` times the cyclic dimension
    ``c``. The first m-1 slices of P form the even construction; the last slice is spliced in
    between (m-2, 1) and (m-2, 0) by going round dimension ``c``."""
    size, stride = layout.shape[c], layout.strides[c]
    path = _snake(layout, rest)
    m = len(path)
    cycle: list[int] = []
    for xi in range(m - 1):
        ys = range(1, size) if xi % 2 == 0 else range(size - 1, 0, -1)
        for y in ys:
            cycle.append(path[xi] + y * stride)
            if xi == m - 2 and y == 1:
                cycle.extend(path[m - 1] + yy * stride for yy in range(1, size))
                cycle.append(path[m - 1])
    cycle.extend(path[xi] for xi in range(m - 2, -1, -1))
    return cycle


def _npu_adjacency(t: Topology) -> list[list[int]] | None:
    n = t.num_npus
    succ: list[list[int]] = []
    total = 0
    for a in range(n):
        out: set[int] = set()
        for s in t.successors(a):
            if s < n:
                out.add(s)
            else:
                out.update(b for b in t.successors(s) if b < n and b != a)
        total += len(out)
        if total > ADJACENCY_LIMIT:
            return None
        succ.append(sorted(out))
    return succ


def _search(t: Topology) -> list[int] | None:
    n = t.num_npus
    succ = _npu_adjacency(t)
    if succ is None:
        return None
    pred: list[list[int]] = [[] for _ in range(n)]
    for a, outs in enumerate(succ):
        for b in outs:
            pred[b].append(a)
    if not (_reaches_all(succ) and _reaches_all(pred)) or _unbalanced_bipartite(succ, pred):
        return None
    succ_sets = [set(x) for x in succ]
    symmetric = [[b for b in succ[a] if a in succ_sets[b]] for a in range(n)]
    found = _rotation_search(symmetric, _ROTATION_STARTS)
    if found is None:
        found = _depth_first(succ, pred)
    if found is None:
        return None
    first = found.index(0)
    return found[first:] + found[:first]


def _rotation_search(adj: list[list[int]], starts: int) -> list[int] | None:
    """Posa's rotation-extension on a graph whose links run both ways: extend the path from its
    end while it can, else pick a neighbour ``w`` of the end inside the path and reverse the
    part after ``w``, which gives a new end. Seeded, so repeatable."""
    n = len(adj)
    if any(len(a) < 2 for a in adj) and n > 2:
        return None
    rng = random.Random(0)
    neighbours = [set(a) for a in adj]
    for _ in range(starts):
        path = [rng.randrange(n)]
        on_path = [False] * n
        on_path[path[0]] = True
        for _ in range(SEARCH_BUDGET // starts):
            end = path[-1]
            free = [w for w in adj[end] if not on_path[w]]
            if free:
                w = min(free, key=lambda w: (sum(not on_path[x] for x in adj[w]), rng.random()))
                path.append(w)
                on_path[w] = True
                continue
            if len(path) == n and path[0] in neighbours[end]:
                return path
            choices = [w for w in adj[end] if len(path) < 2 or w != path[-2]]
            if not choices:
                break
            i = path.index(rng.choice(choices))
            path[i + 1 :] = path[:i:-1]
    return None


def _depth_first(succ: list[list[int]], pred: list[list[int]]) -> list[int] | None:
    """Exhaustive depth-first search (Warnsdorff order) within `SEARCH_BUDGET` steps."""
    n = len(succ)
    visited = [False] * n
    visited[0] = True
    path = [0]
    closes = set(pred[0])

    def order(u: int) -> list[int]:
        free = [v for v in succ[u] if not visited[v]]
        if len(free) <= 64:  # Warnsdorff: fewest onward choices first
            free.sort(key=lambda v: (sum(1 for w in succ[v] if not visited[w]), v))
        return free

    frontier = [iter(order(0))]
    steps = 0
    while frontier:
        for v in frontier[-1]:
            if visited[v]:
                continue
            steps += 1
            if steps > SEARCH_BUDGET:
                return None
            if len(path) == n - 1:
                if v in closes:
                    return [*path, v]
                continue
            visited[v] = True
            path.append(v)
            frontier.append(iter(order(v)))
            break
        else:
            frontier.pop()
            if len(path) > 1:
                visited[path.pop()] = False
    return None


def _reaches_all(succ: list[list[int]]) -> bool:
    seen = [False] * len(succ)
    seen[0] = True
    queue = deque([0])
    while queue:
        for v in succ[queue.popleft()]:
            if not seen[v]:
                seen[v] = True
                queue.append(v)
    return all(seen)


def _unbalanced_bipartite(succ: list[list[int]], pred: list[list[int]]) -> bool:
    """True if the joined-graph is bipartite with sides of different sizes (then no cycle)."""
    colour = [-1] * len(succ)
    colour[0] = 0
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for v in (*succ[u], *pred[u]):
            if colour[v] < 0:
                colour[v] = 1 - colour[u]
                queue.append(v)
            elif colour[v] == colour[u]:
                return False
    ones = sum(colour)
    return 2 * ones != len(succ)
