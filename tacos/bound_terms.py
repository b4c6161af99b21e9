"""The pieces every lower bound of `tacos.bounds` is built from: the `Bounds` result and the
bounds' descriptions, and what a set of links can do by a time: carry some bytes (`_fluid`),
deliver some chunks (`_chunk_count`), start after a switch has a whole message
(`_switch_ready`), reach the farthest node store-and-forward (`_dijkstra`, `_latency`); and
`allreduce_volume_bound_ns`, the cheap All-Reduce bound a synthesizer asks for."""

from __future__ import annotations

import functools
import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tacos.channels import LinkCost, Net
from topologies.cost_model import CostModel

LATENCY_SAMPLE = 48
LATENCY_MIN_SAMPLE = 2
LATENCY_WORK = 1_000_000
"""Searches of `_latency` cover every source while sources x links stays under this."""

DESCRIPTIONS = {
    "ingress": "every rank receives all it lacks through its in-links",
    "egress": "every rank sends what only it holds through its out-links",
    "cut": "data that must cross a cut over the bandwidth crossing it",
    "latency": "the farthest chunk travels store-and-forward (hop: latency + chunk/bandwidth)",
    "chunk": "every rank receives its missing chunks one per link serialization",
}


_TOTAL_IN = (
    "the ranks together receive 2(n-1) values per element through their in-links, which "
    "carry nothing out of a switch before a whole message has reached it"
)


@dataclass(frozen=True)
class Bounds:
    """Named lower bounds in ns (``items``) with a description each; `best` is the largest."""

    items: dict[str, float]
    descriptions: dict[str, str] = field(default_factory=dict)
    exact_cut: bool = False

    @property
    def best(self) -> tuple[str, float]:
        """The tightest bound: ``(name, ns)``."""
        name = max(self.items, key=lambda k: self.items[k])
        return name, self.items[name]


ALLREDUCE_DESCRIPTIONS = {
    "total": "the ranks together send 2(n-1) values per element through their out-links",
    "total-in": _TOTAL_IN,
    "ingress": "every rank receives a value for every element of the buffer",
    "egress": "every rank sends a value for every element of the buffer",
    "chunk": "every rank receives every chunk of the buffer once, one per link serialization",
    "cut": "the larger cut bound of the reduce-scatter and the all-gather it contains",
    "latency": "the larger latency bound of the reduce-scatter and the all-gather",
}
"""What each all-reduce bound says, by name."""

ALLTOALL_DESCRIPTIONS = {
    "ingress": "every rank receives a block from every other rank",
    "egress": "every rank sends a block to every other rank",
    "cut": "blocks between the two sides of a cut over the bandwidth crossing it",
    "latency": DESCRIPTIONS["latency"],
    "hop-bytes": "every block crosses the links of its cheapest path; all links share that",
}
"""What each all-to-all bound says, by name."""


def rooted_bounds(items: dict[str, float], toward: bool, chunked: bool) -> Bounds:
    """The bounds of a rooted collective: toward the root (reduce, gather) or away from it
    (broadcast, scatter); the chunk bound only where the buffer is chunked."""
    desc = {
        "ingress": "the root receives everything" if toward else "every rank receives the buffer",
        "egress": "every rank sends its share" if toward else "the root sends the buffer",
        "chunk": DESCRIPTIONS["chunk"],
        "latency": DESCRIPTIONS["latency"],
    }
    if not chunked:
        del items["chunk"]
    return Bounds(items, desc)


def allreduce_volume_bound_ns(
    net: Net, npus: Sequence[int], chunk_bytes: float, chunks: int
) -> float:
    """The cheap All-Reduce bounds (`_allreduce`'s ``total`` and ``chunk``) for ``chunks``
    chunks of ``chunk_bytes`` over the ranks on ``npus``, in ns: no cut or path search, so a
    synthesizer can ask it to decide whether to look further."""
    n = len(npus)
    size = chunk_bytes * chunks
    out, inn = _adjacency(net)
    total = _fluid([lk for v in npus for lk in out[v]], 2 * (n - 1) * size)
    chunk = max(_chunk_count(inn[v], chunk_bytes, chunks) for v in npus)
    return max(total, chunk)


def _fluid(links: Sequence[LinkCost], nbytes: float) -> float:
    """Least T with sum_e B_e max(0, T - a_e) >= nbytes (links start at time 0)."""
    if nbytes <= 0:
        return 0.0
    if not links:
        return math.inf
    ls = sorted(links, key=lambda lk: lk.latency_ns)
    rate = 0.0
    sent = 0.0
    prev = ls[0].latency_ns
    for i, lk in enumerate(ls):
        if i:
            gain = rate * (lk.latency_ns - prev)
            if sent + gain >= nbytes:
                return prev + (nbytes - sent) / rate
            sent += gain
            prev = lk.latency_ns
        rate += lk.bandwidth_bytes_per_ns
    return prev + (nbytes - sent) / rate


def _chunk_count(links: Sequence[LinkCost], s: float, need: int) -> float:
    """Least T by which ``links`` can deliver ``need`` chunks of ``s`` bytes (pipelined)."""
    if need <= 0:
        return 0.0
    if not links:
        return math.inf
    key = tuple(sorted((lk.latency_ns, lk.bandwidth_bytes_per_ns) for lk in links))
    return _chunk_count_of(key, s, need)


@functools.lru_cache(maxsize=4096)
def _chunk_count_of(key: tuple[tuple[float, float], ...], s: float, need: int) -> float:
    """`_chunk_count` of the links ``key`` ((latency, bandwidth) pairs, sorted): many nodes
    share one set of in-links, so each set is solved once; numpy over the distinct links, each
    counted as many times as it occurs (the n-1 equal in-links of ``fc:n`` are one), in
    O(links log links) time and O(links) memory."""
    pairs = np.array(key, dtype=np.float64).reshape(-1, 2)
    first = np.ones(len(pairs), dtype=bool)
    first[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    starts = np.flatnonzero(first)
    mult = np.diff(np.append(starts, len(pairs))).astype(np.float64)
    lat = pairs[starts, 0]
    sig = s / pairs[starts, 1]

    def count(t: float) -> int:
        k = np.floor((t - lat) / sig + 1e-9)
        return int((np.maximum(k, 0) * mult)[t >= lat].sum())

    lo = 0.0
    hi = float(np.max(lat + need * sig))
    for _ in range(200):
        mid = (lo + hi) / 2
        if count(mid) >= need:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-6:
            break
    # Snap to the arrival time that achieves it: the earliest candidate arrival by which
    # `count` (nondecreasing in time) reaches ``need``, found by bisection over them.
    k = np.floor((hi - lat) / sig + 1e-9)
    cands = (lat + k * sig)[k >= 1]
    cands = np.sort(cands[cands >= lo - 1e-6])
    left, right = 0, len(cands)
    while left < right:
        mid_i = (left + right) // 2
        if count(float(cands[mid_i]) + 1e-7) >= need:
            right = mid_i
        else:
            left = mid_i + 1
    return float(cands[left]) if left < len(cands) else hi


def _switch_ready(net: Net, s: float, cost: CostModel) -> list[float]:
    """Per node, the earliest time a whole message of ``s`` bytes can leave it: 0 at an NPU;
    at a switch, the store-and-forward time (hop: latency + ``s``/bandwidth) from the nearest
    NPU plus the switch delay (every NPU a source of one Dijkstra)."""
    out, _ = _adjacency(net)
    npus = net.num_npus
    dist = _dijkstra(out, range(npus), s, cost, npus)
    return [d + cost.switch_delay_ns if x >= npus else 0.0 for x, d in enumerate(dist)]


def _ready_in_links(net: Net, s: float, cost: CostModel) -> list[list[LinkCost]]:
    """Each node's in-links, a link out of a switch starting when a whole message of ``s``
    bytes can leave the switch (`_switch_ready`, folded into its latency, which is how
    `_fluid` and `_chunk_count` take a start time)."""
    _, inn = _adjacency(net)
    if net.num_nodes == net.num_npus:
        return inn
    ready = _switch_ready(net, s, cost)
    return [
        [
            LinkCost(
                lk.index, lk.src, lk.dst, lk.latency_ns + ready[lk.src], lk.bandwidth_bytes_per_ns
            )
            if ready[lk.src] > 0
            else lk
            for lk in links
        ]
        for links in inn
    ]


def _adjacency(net: Net) -> tuple[list[list[LinkCost]], list[list[LinkCost]]]:
    out: list[list[LinkCost]] = [[] for _ in range(net.num_nodes)]
    inn: list[list[LinkCost]] = [[] for _ in range(net.num_nodes)]
    for lk in net.links:
        out[lk.src].append(lk)
        inn[lk.dst].append(lk)
    return out, inn


def _dijkstra(
    out: list[list[LinkCost]], src: int | range, s: float, cost: CostModel, num_npus: int
) -> list[float]:
    """Store-and-forward times (hop: latency + s/bandwidth, plus the switch delay leaving a
    switch) from ``src``, one node or several at time 0."""
    sources = [src] if isinstance(src, int) else list(src)
    dist = [math.inf] * len(out)
    for x in sources:
        dist[x] = 0.0
    heap = [(0.0, x) for x in sources]
    while heap:
        d, x = heapq.heappop(heap)
        if d > dist[x]:
            continue
        extra = cost.switch_delay_ns if x >= num_npus else 0.0
        for lk in out[x]:
            nd = d + extra + lk.latency_ns + s / lk.bandwidth_bytes_per_ns
            if nd < dist[lk.dst]:
                dist[lk.dst] = nd
                heapq.heappush(heap, (nd, lk.dst))
    return dist


def _latency(
    net: Net, sources: Sequence[int], targets: Sequence[int], s: float, cost: CostModel
) -> float:
    """The longest shortest path (hop: latency + s/bandwidth, plus the switch delay) from one of
    ``sources`` to another of ``targets``. Over every source when sources x links is at most
    `LATENCY_WORK`; otherwise over a sample, which still gives a lower bound: the first and
    last source, the far end of a double sweep from the first, and random ones, as many as
    `LATENCY_WORK` / links allows (at least `LATENCY_MIN_SAMPLE`, at most `LATENCY_SAMPLE`)."""
    out, _ = _adjacency(net)
    srcs = list(sources)
    tset = list(targets)
    worst = 0.0
    if len(srcs) * len(net.links) > LATENCY_WORK:
        # Double sweep: the farthest target from the first source, as a source itself.
        d = _dijkstra(out, srcs[0], s, cost, net.num_npus)
        far, worst = max(((v, d[v]) for v in tset if v != srcs[0]), key=lambda x: x[1])
        budget = max(LATENCY_MIN_SAMPLE, min(LATENCY_SAMPLE, LATENCY_WORK // len(net.links)))
        rng = random.Random(0)
        chosen = {srcs[-1], *rng.sample(srcs, min(budget, len(srcs)))}
        if far in set(srcs):
            chosen.add(far)
        chosen.discard(srcs[0])
        srcs = sorted(chosen)
    for u in srcs:
        d = _dijkstra(out, u, s, cost, net.num_npus)
        worst = max(worst, max(d[v] for v in tset if v != u))
    return worst
