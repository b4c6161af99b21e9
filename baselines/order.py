"""Topology-aware rank orders for ring algorithms.

`ring_order` puts the placed ranks on a cycle whose consecutive members are close on the
topology, so each ring step crosses as few links as possible:

1. When the placement covers every NPU and the topology has a Hamiltonian cycle
   (`topologies.hamiltonian_cycle`: consecutive NPUs joined by a link or through one switch),
   the ranks follow that cycle.
2. Otherwise (a subset of the NPUs, or no cycle), the candidates are the Hamiltonian cycle
   restricted to the placed NPUs (when one exists), the plain rank order, and short tours on
   hop distances (breadth-first search over the links): the exact best for up to 9 ranks,
   else nearest neighbour improved by 2-opt and segment moves (skipped for very large
   placements, where the distances cost too much to compute). The candidate with the fewest
   hops on its longest ring step, then the fewest hops in total, wins; each is tried in both
   directions, so a one-way ring is followed the right way round.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
import numpy.typing as npt

from chakra_ir import Collective
from topologies import Topology, hamiltonian_cycle

# Above this many (sources x graph size) steps the breadth-first distances are not computed.
_BFS_BUDGET = 4_000_000
# Up to this many ranks the best cycle is found by trying every order.
_EXACT_LIMIT = 9
# Up to this many ranks the heuristic starts from `_STARTS` points instead of one.
_MULTI_START_LIMIT = 128
_STARTS = 8
_TWO_OPT_ROUNDS = 40


def ring_order(collective: Collective, topology: Topology) -> list[int]:
    """The ranks of ``collective`` in ring order (rank ``order[i]`` sends to ``order[i+1]``).

    Deterministic for a given collective and topology; see the module docstring for the rule.
    """
    n = collective.num_ranks
    if n <= 2:
        return list(range(n))
    npus = [collective.npu(r) for r in range(n)]
    rank_of = {npu: r for r, npu in enumerate(npus)}
    cycle = hamiltonian_cycle(topology)
    if cycle is not None and len(cycle) == len(rank_of) and all(x in rank_of for x in cycle):
        order = [rank_of[x] for x in cycle]
        return _orient_cycle(order, npus, topology)

    candidates: list[list[int]] = []
    if cycle is not None:
        candidates.append([rank_of[x] for x in cycle if x in rank_of])
    dist = _hop_matrix(npus, topology)
    if dist is not None:
        candidates.extend(_tours(dist))
    candidates.append(list(range(n)))

    def hops(a: int, b: int) -> int:
        if dist is not None:
            return int(dist[a, b])
        return len(topology.route(npus[a], npus[b])) - 1

    best: list[int] = candidates[0]
    best_key: tuple[int, int] | None = None
    for cand in candidates:
        for oriented in (cand, cand[::-1]):
            steps = [hops(oriented[i], oriented[(i + 1) % n]) for i in range(n)]
            key = (max(steps), sum(steps))
            if best_key is None or key < best_key:
                best, best_key = oriented, key
    return _rotate_to_zero(best)


def _rotate_to_zero(order: list[int]) -> list[int]:
    """The same cycle, starting at rank 0 (a canonical form)."""
    k = order.index(0)
    return order[k:] + order[:k]


def _orient_cycle(order: list[int], npus: list[int], topology: Topology) -> list[int]:
    """``order`` or its reverse, whichever follows links (matters on one-way rings)."""
    n = len(order)

    def direct(seq: list[int]) -> bool:
        return all(topology.links_between(npus[seq[i]], npus[seq[(i + 1) % n]]) for i in range(n))

    if direct(order):
        return _rotate_to_zero(order)
    rev = order[::-1]
    if direct(rev):
        return _rotate_to_zero(rev)

    def cost(seq: list[int]) -> tuple[int, int]:
        steps = [len(topology.route(npus[seq[i]], npus[seq[(i + 1) % n]])) - 1 for i in range(n)]
        return max(steps), sum(steps)

    return _rotate_to_zero(order if cost(order) <= cost(rev) else rev)


def _hop_matrix(npus: list[int], topology: Topology) -> npt.NDArray[np.int64] | None:
    """Directed hop distances between the placed NPUs, or None when too costly to compute."""
    adj: dict[int, list[int]] = {}
    for link in topology.links:
        adj.setdefault(link.src, []).append(link.dst)
    size = len(adj) + len(topology.links)
    if len(npus) * size > _BFS_BUDGET:
        return None
    m = len(npus)
    index = {npu: i for i, npu in enumerate(npus)}
    unreachable = 4 * (size + 1)
    dist = np.full((m, m), unreachable, dtype=np.int64)
    for i, src in enumerate(npus):
        seen = {src: 0}
        queue = deque([src])
        while queue:
            x = queue.popleft()
            d = seen[x] + 1
            for y in adj.get(x, ()):
                if y not in seen:
                    seen[y] = d
                    queue.append(y)
        for node, d in seen.items():
            j = index.get(node)
            if j is not None:
                dist[i, j] = d
    return dist


def _tours(dist: npt.NDArray[np.int64]) -> list[list[int]]:
    """Short cycles through all points, for the caller to choose from.

    Up to `_EXACT_LIMIT` points, the exact best cycle (fewest hops on the longest step, then
    in total). Beyond, nearest-neighbour tours from a few starts improved by 2-opt and segment
    moves, once per edge weight: powers of the symmetrised hop distance, where the square
    favours a short total and the eighth power mostly avoids long steps.
    """
    m = len(dist)
    if m <= _EXACT_LIMIT:
        return [_exact(dist)]
    sym = (dist + dist.T).astype(np.float64)
    starts = range(0, m, max(1, m // _STARTS)) if m <= _MULTI_START_LIMIT else range(1)
    tours = []
    for power in (2, 8):
        cost = sym**power
        for start in starts:
            tour = _nearest_neighbour(cost, start)
            for _ in range(_TWO_OPT_ROUNDS):
                if not (_two_opt(tour, cost) | _or_opt(tour, cost)):
                    break
            tours.append([int(x) for x in tour])
    return tours


def _exact(dist: npt.NDArray[np.int64]) -> list[int]:
    m = len(dist)
    if m < 3:
        return list(range(m))
    rest = np.array(list(itertools.permutations(range(1, m))), dtype=np.int64)
    cycles = np.concatenate([np.zeros((len(rest), 1), dtype=np.int64), rest], axis=1)
    steps = dist[cycles, np.roll(cycles, -1, axis=1)]
    key = steps.max(axis=1) * (int(steps.sum(axis=1).max()) + 1) + steps.sum(axis=1)
    return [int(x) for x in cycles[int(np.argmin(key))]]


def _nearest_neighbour(cost: npt.NDArray[np.float64], start: int) -> npt.NDArray[np.int64]:
    m = len(cost)
    tour = [start]
    left = np.ones(m, dtype=bool)
    left[start] = False
    for _ in range(m - 1):
        row = np.where(left, cost[tour[-1]], np.inf)
        nxt = int(np.argmin(row))
        tour.append(nxt)
        left[nxt] = False
    return np.array(tour, dtype=np.int64)


def _two_opt(t: npt.NDArray[np.int64], cost: npt.NDArray[np.float64]) -> bool:
    """One sweep of segment reversals that shorten the cycle, in place; True if any."""
    m = len(t)
    eps = 1e-9 * float(cost.max(initial=1.0))
    improved = False
    for i in range(m - 2):
        a, b = t[i], t[i + 1]
        j = np.arange(i + 2, m)
        c, d = t[j], t[(j + 1) % m]
        delta = cost[a, c] + cost[b, d] - cost[a, b] - cost[c, d]
        if i == 0:
            delta[-1] = 0  # the closing edge touches edge (t[0], t[1])
        best = int(np.argmin(delta))
        if delta[best] < -eps:
            jj = int(j[best])
            t[i + 1 : jj + 1] = t[i + 1 : jj + 1][::-1].copy()
            improved = True
    return improved


def _or_opt(t: npt.NDArray[np.int64], cost: npt.NDArray[np.float64]) -> bool:
    """One sweep of moving runs of 1-3 points elsewhere (either way round), in place."""
    m = len(t)
    eps = 1e-9 * float(cost.max(initial=1.0))
    improved = False
    for length in (1, 2, 3):
        if m < length + 3:
            break
        i = 0
        while i < m:
            seg = np.roll(t, -i)  # the run is seg[0:length]; the rest keeps its order
            first, last, prev, nxt = seg[0], seg[length - 1], seg[-1], seg[length]
            gain = cost[prev, first] + cost[last, nxt] - cost[prev, nxt]
            rest = seg[length:]
            a, b = rest[:-1], rest[1:]
            base = cost[a, b]
            keep = cost[a, first] + cost[last, b] - base
            flip = cost[a, last] + cost[first, b] - base
            k_keep, k_flip = int(np.argmin(keep)), int(np.argmin(flip))
            best, flipped, k = (
                (keep[k_keep], False, k_keep)
                if keep[k_keep] <= flip[k_flip]
                else (flip[k_flip], True, k_flip)
            )
            if best < gain - eps:
                run = seg[:length][::-1] if flipped else seg[:length]
                t[:] = np.concatenate([rest[: k + 1], run, rest[k + 1 :]])
                improved = True
            i += 1
    return improved
