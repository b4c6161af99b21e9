"""The links each message crosses: a send's route hint as given, else the topology's own
route, with parallel links resolved as `Topology.route_links` does."""

from __future__ import annotations

import itertools

import numpy as np

from backends.sim.errors import SimError
from backends.sim.tasks import TaskGraph, TaskKind
from topologies.errors import TopologyError
from topologies.topology import Link, Topology


def pick_link(links: tuple[Link, ...]) -> Link:
    """Among parallel links, the one `Topology.route_links` would take: the highest
    bandwidth, then the lowest latency, then the lowest index."""
    return min(links, key=lambda lk: (-lk.bandwidth_bytes_per_ns, lk.latency_ns, lk.index))


def best_links(topology: Topology) -> dict[tuple[int, int], int]:
    """``(u, v) -> index`` of the link `pick_link` takes between each linked pair."""
    best: dict[tuple[int, int], Link] = {}
    for lk in topology.links:
        key = (lk.src, lk.dst)
        cur = best.get(key)
        if cur is None or pick_link((cur, lk)) is lk:
            best[key] = lk
    return {k: lk.index for k, lk in best.items()}


def route_link_table(topology: Topology, pairs: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    """Link indices along ``topology.route(a, b)`` for each pair (parallel links resolved as
    `Topology.route_links` does). Raises SimError when a pair has no route."""
    best = best_links(topology)
    out = []
    for a, b in pairs:
        try:
            path = topology.route(a, b)
        except TopologyError as e:
            raise SimError(f"no route from NPU {a} to NPU {b}: {e.message}") from None
        out.append(tuple(best[uv] for uv in itertools.pairwise(path)))
    return out


def message_routes(graph: TaskGraph, topology: Topology) -> list[tuple[int, ...]]:
    """Per task, the link indices its message crosses (empty for other tasks).

    A route hint is followed as given (between parallel links, the one `route_links` would
    pick); otherwise ``topology.route`` between the two ranks' NPUs. Raises SimError when
    a hint crosses a missing link or when there is no route.
    """
    n = graph.num_tasks
    sends = np.flatnonzero(graph.kind == TaskKind.SEND)
    if sends.size == 0:
        return [()] * n
    # Every distinct route once in `table`; per task, its index there (the last: no route).
    table: list[tuple[int, ...]] = []
    idx = np.full(n, -1, dtype=np.int64)
    npus = np.asarray(graph.npus, dtype=np.int64)
    src = npus[graph.task_rank()[sends]]
    dst = npus[graph.peer[sends]]
    hinted = np.diff(graph.route_offsets)[sends] > 0
    plain = sends[~hinted]
    nn = topology.num_nodes
    if plain.size:
        code = src[~hinted] * nn + dst[~hinted]
        pairs, inverse = np.unique(code, return_inverse=True)
        table = route_link_table(topology, [divmod(c, nn) for c in pairs.tolist()])
        idx[plain] = inverse.reshape(-1)
    hs = sends[hinted]
    if hs.size:
        best = best_links(topology)
        starts = graph.route_offsets[hs]
        lens = graph.route_offsets[hs + 1] - starts
        bad: tuple[int, int, int] | None = None  # (task, u, v): the first task, its first gap
        for length in np.unique(lens).tolist():
            sel = lens == length
            ts = hs[sel]
            paths = graph.route_nodes[starts[sel][:, None] + np.arange(length)]
            if nn**length < 1 << 62 and paths.min() >= 0 and paths.max() < nn:
                key = paths @ (nn ** np.arange(length - 1, -1, -1, dtype=np.int64))
                _, first, inv = np.unique(key, return_index=True, return_inverse=True)
            else:
                _, first, inv = np.unique(paths, axis=0, return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
            base = len(table)
            for j, path in enumerate(paths[first].tolist()):
                chosen = []
                for u, v in itertools.pairwise(path):
                    li = best.get((u, v))
                    if li is None:
                        t = int(ts[np.flatnonzero(inv == j)[0]])
                        if bad is None or t < bad[0]:
                            bad = (t, u, v)
                        break
                    chosen.append(li)
                table.append(tuple(chosen))
            idx[ts] = base + inv
        if bad is not None:
            t, u, v = bad
            raise SimError(
                f"{graph.describe(t)}: its route hint crosses {u}>{v}, a link the "
                f"topology does not have"
            )
    tab = np.empty(len(table) + 1, dtype=object)
    for i, links in enumerate(table):
        tab[i] = links
    tab[-1] = ()
    out: list[tuple[int, ...]] = tab[idx].tolist()
    return out
