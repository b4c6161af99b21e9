"""Minimum s-t cuts of small networks, exactly, for the cut bound of `tacos.bounds`.

`sink_side` is the set of nodes from which the sink can still be reached in the residual
network of a maximum flow: the sink side of the minimum cut with the smallest sink side. It is
the same for every maximum flow, and it is the cut `networkx.minimum_cut` returns (which takes
the nodes that reach the sink through unsaturated edges as the sink side); `tacos.bounds` used
networkx for it, and `tests/tacos/test_maxflow.py` compares the two.

The capacities are floats, taken exactly: each is an integer multiple of a common power of two,
and the flow is computed in integers (Dinic's blocking flows on a dense residual matrix), so
no rounding decides which edges are saturated. For the graphs of at most
`tacos.cut_bounds.EXACT_CUT_NODES` nodes it is meant for; the cost is O(nodes^2 x edges).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import pairwise


def sink_side(
    num_nodes: int, capacity: Mapping[tuple[int, int], float], source: int, sink: int
) -> set[int]:
    """The nodes ``0..num_nodes-1`` from which ``sink`` is reachable in the residual network of
    a maximum ``source``-``sink`` flow (``sink`` included, ``source`` never).

    ``capacity`` maps directed edges ``(u, v)`` to finite capacities >= 0 (an edge absent or
    of capacity 0 carries nothing; self-loops are ignored). Raises ValueError on a negative,
    infinite or NaN capacity, a node out of range, or ``source == sink``.
    """
    if not (0 <= source < num_nodes and 0 <= sink < num_nodes) or source == sink:
        raise ValueError(f"source {source} and sink {sink} must be distinct nodes")
    ratios: list[tuple[int, int, int, int]] = []
    for (u, v), cap in capacity.items():
        if not (0 <= u < num_nodes and 0 <= v < num_nodes):
            raise ValueError(f"edge ({u}, {v}) names a node outside 0..{num_nodes - 1}")
        if not math.isfinite(cap) or cap < 0:
            raise ValueError(f"edge ({u}, {v}) has capacity {cap}")
        if u != v and cap > 0:
            ratios.append((u, v, *float(cap).as_integer_ratio()))
    # Floats are dyadic: over the largest denominator (a power of two) every one is an integer.
    scale = max((den for *_, den in ratios), default=1)
    res = [[0] * num_nodes for _ in range(num_nodes)]
    for u, v, num, den in ratios:
        res[u][v] = num * (scale // den)
    adj = [[v for v in range(num_nodes) if res[u][v] or res[v][u]] for u in range(num_nodes)]
    while _blocking_flow(res, adj, source, sink):
        pass
    # Every node from which the sink is reachable through edges with residual capacity.
    reach = {sink}
    stack = [sink]
    while stack:
        v = stack.pop()
        for u in adj[v]:
            if u not in reach and res[u][v] > 0:
                reach.add(u)
                stack.append(u)
    return reach


def _blocking_flow(res: list[list[int]], adj: list[list[int]], source: int, sink: int) -> bool:
    """One phase of Dinic's algorithm: a blocking flow in the level graph of ``res`` (updated
    in place). False when the sink is unreachable, that is when the flow is maximum."""
    n = len(res)
    level = [-1] * n
    level[source] = 0
    queue = [source]
    for u in queue:
        for v in adj[u]:
            if level[v] < 0 and res[u][v] > 0:
                level[v] = level[u] + 1
                queue.append(v)
    if level[sink] < 0:
        return False
    nxt = [0] * n
    path = [source]
    while path:
        u = path[-1]
        if u == sink:
            d = min(res[a][b] for a, b in pairwise(path))
            for a, b in pairwise(path):
                res[a][b] -= d
                res[b][a] += d
            path = [source]
            continue
        nbrs = adj[u]
        i = nxt[u]
        while i < len(nbrs) and not (res[u][nbrs[i]] > 0 and level[nbrs[i]] == level[u] + 1):
            i += 1
        nxt[u] = i
        if i < len(nbrs):
            path.append(nbrs[i])
        else:  # a dead end: leave it and go on from its predecessor's next edge
            path.pop()
            if path:
                nxt[path[-1]] += 1
    return True
