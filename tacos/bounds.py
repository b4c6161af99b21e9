"""Lower bounds on a collective's time under the cost model, in ns (docs/architecture.md,
"Lower bounds").

For All-Gather over ranks ``R`` (``|R| = n``), output size ``M``, ``m = M/n`` bytes per rank and
``c`` chunks per rank (chunk ``s = m/c``); every bound holds for any schedule under
`topologies.cost_model` (pipelined links: a link carries back-to-back messages, each arriving
``latency + bytes/bandwidth`` after it starts; store-and-forward at every node):

- ``ingress``: every rank must receive ``(n-1) m`` bytes through its in-links: the least ``T``
  with ``sum_e B_e max(0, T - a_e) >= (n-1) m``.
- ``egress``: every rank must send its own ``m`` bytes at least once (same form, out-links).
- ``cut``: for a node set ``S`` holding some ranks but not all, the chunks of the ranks in ``S``
  must leave it: ``T >= a_min + |S ∩ R| m / B+(S)`` (and the mirror: data entering ``S``). Exact
  over all cuts by parametric min-cut when the topology has at most `EXACT_CUT_NODES` nodes;
  otherwise over a stated family: every slab of every grid dimension, every single node and its
  complement, every switch with the NPUs hanging off it (on large topologies, evenly spaced
  slabs and switches, as many as `CUT_WORK` allows, see `_family_cut`).
- ``latency``: some chunk must travel from its rank to the farthest other rank, store and
  forward: the largest shortest-path time with hop cost ``a_e + s/B_e`` (over all pairs of
  ranks, or, on large topologies, from a sample of sources: a double sweep and random ranks,
  fewer as the links grow, see `_latency`).
- ``hop-bytes`` (All-to-All): every block keeps the links of its cheapest path busy, and all
  links share that work: ``sum over pairs of block x sum_e 1/B_e on the cheapest path / number
  of links``.
- ``chunk``: every rank must receive ``(n-1) c`` chunks, and in-link ``e`` delivers its ``j``-th
  chunk no earlier than ``a_e + j s/B_e``: the least ``T`` by which the in-links can deliver
  them all.
- Switches hold no data and store and forward whole messages, so a link out of a switch ``x``
  carries nothing before a whole message has reached ``x``: ``ingress``, ``chunk`` and
  ``total-in`` start such a link at ``r_x``, the store-and-forward time (hop: latency +
  ``s``/bandwidth, plus the switch delay) from the nearest NPU to ``x`` (`_switch_ready`; with
  ``s = 0`` for programs cut any way, and on topologies whose switches reduce, whose flows
  travel in pieces). (The reference's form with a link busy for ``a_e + s/B_e`` per chunk assumes links
  that do not pipeline, which the cost model's links do; so it is not a bound here.)

Reduce-Scatter: the All-Gather bounds on the transposed topology (a Reduce-Scatter run
backwards is an All-Gather on the transpose). All-Reduce without in-network reduction: each rank
receives and sends a value for every element of the buffer (``ingress``, ``egress``, ``chunk``
over the whole buffer), and the larger of the Reduce-Scatter's and the All-Gather's cut and
latency bounds; not their sums, which a program that overlaps the phases can beat. Broadcast: the root's ``M`` must
reach every rank; Reduce: Broadcast on the transpose; Gather: everything must reach the root;
Scatter: Gather on the transpose. All-Reduce on a topology whose switches reduce and
multicast (`Topology.in_network`): ``total`` does not hold, ``in-network`` (the whole buffer
through each rank's links once, plus the latency to the farthest rank) takes its place.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import CollectiveKind
from tacos.channels import LinkCost, Net
from tacos.errors import TacosError
from tacos.kinds import SUPPORTED
from tacos.maxflow import sink_side
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.regular import RegularGrid, regular_grid
from topologies.routing import FC, LINE, RING, SWITCH, UNIRING
from topologies.topology import Topology

EXACT_CUT_NODES = 40
LATENCY_SAMPLE = 48
LATENCY_MIN_SAMPLE = 2
LATENCY_WORK = 1_000_000
"""Searches of `_latency` cover every source while sources x links stays under this."""
CUT_WORK = 20_000_000
"""`_family_cut` evaluates every slab and every switch while their number x links stays under
this (a few tenths of a second); beyond it, an evenly spaced sample of them."""
CUT_MIN_SAMPLE = 8

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


def lower_bounds(
    kind: CollectiveKind,
    topology: Topology,
    size_bytes: float,
    *,
    placement: Sequence[int] = (),
    chunks_per_npu: int = 1,
    root: int = 0,
    cost: CostModel = DEFAULT_COST_MODEL,
    any_chunking: bool = False,
) -> Bounds:
    """Lower bounds for ``kind`` of ``size_bytes`` (nccl-tests: all-gather the output, reduce-
    scatter the input, all-reduce the buffer, rooted kinds the root's buffer) on ``topology``,
    over the ranks on ``placement`` (all NPUs when empty), with ``chunks_per_npu`` chunks per
    rank's share (see `tacos.chunks_for`). ``root`` is a rank. Raises TacosError on a non-positive
    size or chunk count, an unknown kind, a root outside the ranks or bad placement.
    With ``any_chunking`` the bounds hold for a program that cuts the buffer any way at all
    (baselines, MSCCLang programs): the chunk-level bound is left out and the latency bound
    counts link latencies only, since smaller chunks cross a store-and-forward hop sooner.
    """
    if kind not in SUPPORTED and kind is not CollectiveKind.ALLTOALL:
        raise TacosError(f"no bounds for {kind.value}")
    if not (math.isfinite(size_bytes) and size_bytes > 0):
        raise TacosError(f"size must be positive, got {size_bytes} bytes")
    if chunks_per_npu < 1:
        raise TacosError(f"chunks per NPU must be at least 1, got {chunks_per_npu}")
    ranks = list(placement) if placement else list(range(topology.num_npus))
    if len(set(ranks)) != len(ranks) or any(not 0 <= x < topology.num_npus for x in ranks):
        raise TacosError("placement must name distinct NPUs of the topology")
    n = len(ranks)
    if kind.rooted and not 0 <= root < n:
        raise TacosError(f"root {root} is outside the ranks 0..{n - 1}")
    if len(topology.links) > REGULAR_LINKS and ranks == list(range(topology.num_npus)):
        grid = regular_grid(topology.spec)
        if grid is not None:
            return regular_lower_bounds(
                kind,
                grid,
                size_bytes,
                chunks_per_npu=chunks_per_npu,
                root=root,
                cost=cost,
                any_chunking=any_chunking,
            )
    net = Net.of(topology)
    c = chunks_per_npu
    chunked = not any_chunking
    shape = topology.layout.shape if topology.layout is not None else topology.shape
    if n == 1:
        return Bounds({"latency": 0.0}, {"latency": "one rank: nothing to move"})
    m = size_bytes / n
    if kind is CollectiveKind.ALLTOALL:
        return _alltoall(net, ranks, size_bytes, c, cost, shape, chunked)
    whole = chunked and not topology.in_network
    if kind is CollectiveKind.ALLGATHER:
        return _spread(net, ranks, m, c, cost, shape, chunked, whole)
    if kind is CollectiveKind.REDUCE_SCATTER:
        return _spread(net.transpose(), ranks, m, c, cost, shape, chunked, whole)
    if kind is CollectiveKind.ALLREDUCE:
        b = _allreduce(net, ranks, size_bytes, c, cost, shape, chunked, whole)
        return _in_network(b, net, ranks, size_bytes, cost) if topology.in_network else b
    if kind is CollectiveKind.BROADCAST:
        return _rooted(
            net, ranks, ranks[root], size_bytes, n * c, cost, toward=False, chunked=chunked
        )
    if kind is CollectiveKind.REDUCE:
        return _rooted(
            net.transpose(),
            ranks,
            ranks[root],
            size_bytes,
            n * c,
            cost,
            toward=False,
            chunked=chunked,
        )
    if kind is CollectiveKind.GATHER:
        return _rooted(net, ranks, ranks[root], m, c, cost, toward=True, chunked=chunked)
    return _rooted(net.transpose(), ranks, ranks[root], m, c, cost, toward=True, chunked=chunked)


# -- building blocks -------------------------------------------------------------------------


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


def _allreduce(
    net: Net,
    ranks: list[int],
    size: float,
    c: int,
    cost: CostModel,
    shape: tuple[int, ...],
    chunked: bool,
    whole: bool,
) -> Bounds:
    """All-Reduce bounds that hold however a program overlaps its phases.

    Every element of every rank's result sums every rank's input, and a rank holds only its own:
    each rank receives at least one value per element (``ingress``: the whole buffer through
    its in-links; ``chunk``: ``n c`` chunks) and sends one (``egress``). Making the sum known
    to all ``n`` ranks takes at least ``2(n-1)`` messages per element (``n-1`` to bring every
    contribution together somewhere, ``n-1`` more for the others to learn it), so the ranks
    together send ``2(n-1)`` buffers through their out-links (``total``). The cut and latency
    bounds are those of the Reduce-Scatter and the All-Gather it contains (the larger of each).
    Adding the two phases' bounds would be wrong: a program may overlap them. The ``2(n-1)``
    messages also enter ranks, through in-links that may leave switches (``total-in``); on the
    transpose that is the last message's way out through a switch.
    """
    n = len(ranks)
    m = size / n
    s = size / (n * c)
    a = _spread(net, ranks, m, c, cost, shape, chunked, whole)
    b = _spread(net.transpose(), ranks, m, c, cost, shape, chunked, whole)
    out, _ = _adjacency(net)
    inn = _ready_in_links(net, s if whole else 0.0, cost)
    items = {k: max(a.items[k], b.items[k]) for k in a.items}
    items["ingress"] = max(_fluid(inn[v], size) for v in ranks)
    items["egress"] = max(_fluid(out[v], size) for v in ranks)
    items["total"] = _fluid([lk for v in ranks for lk in out[v]], 2 * (n - 1) * size)
    if net.num_nodes > net.num_npus:
        tin = _ready_in_links(net.transpose(), s if whole else 0.0, cost)
        items["total-in"] = max(
            _fluid([lk for v in ranks for lk in links[v]], 2 * (n - 1) * size)
            for links in (inn, tin)
        )
    if chunked:
        items["chunk"] = max(_chunk_count(inn[v], s, n * c) for v in ranks)
    desc = {
        "total": "the ranks together send 2(n-1) values per element through their out-links",
        "total-in": _TOTAL_IN,
        "ingress": "every rank receives a value for every element of the buffer",
        "egress": "every rank sends a value for every element of the buffer",
        "chunk": "every rank receives every chunk of the buffer once, one per link serialization",
        "cut": "the larger cut bound of the reduce-scatter and the all-gather it contains",
        "latency": "the larger latency bound of the reduce-scatter and the all-gather",
    }
    return Bounds(items, {k: desc[k] for k in items}, a.exact_cut)


def _in_network(b: Bounds, net: Net, ranks: list[int], size: float, cost: CostModel) -> Bounds:
    """All-Reduce bounds on a topology whose switches reduce and multicast.

    The ``total`` bound (``2(n-1)`` buffers through the ranks' out-links) assumes that only
    ranks reduce; inside the network one copy of each rank's buffer suffices, so it is
    dropped. In its place, ``in-network``: every element of every result sums every rank's
    input, so each rank sends its whole buffer, and the last byte it sends must still reach the
    farthest other rank (``egress`` through the out-links, then the latency of the rest of the
    path); likewise each rank receives the whole buffer, whose first byte cannot reach its
    in-links before the nearest other rank's data can.
    """
    out, inn = _adjacency(net)
    npus = net.num_npus
    dist: dict[int, list[float]] = {}

    def from_node(x: int) -> list[float]:
        if x not in dist:
            dist[x] = _dijkstra(out, x, 0.0, cost, npus)
        return dist[x]

    others = set(ranks)
    worst = 0.0
    for r in ranks:
        rest = min(
            (max(from_node(lk.dst)[v] for v in others if v != r) for lk in out[r]),
            default=math.inf,
        )
        worst = max(worst, _fluid(out[r], size) + rest)
        first = min(
            (min(from_node(v)[lk.src] for v in others if v != r) for lk in inn[r]),
            default=math.inf,
        )
        worst = max(worst, first + _fluid(inn[r], size))
    items = {k: v for k, v in b.items.items() if k not in ("total", "total-in")}
    items["in-network"] = worst
    desc = {k: v for k, v in b.descriptions.items() if k not in ("total", "total-in")}
    desc["in-network"] = (
        "switches reduce and multicast: every rank sends and receives the whole buffer once, "
        "plus the latency its last byte needs to reach the farthest rank"
    )
    return Bounds(items, desc, b.exact_cut)


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


def _cut_value(net: Net, inside: set[int], ranks: set[int], m: float) -> float:
    """Both directions of the cut bound for node set ``inside``."""
    k_in = len(inside & ranks)
    k_out = len(ranks) - k_in
    if k_in == 0 or k_out == 0:
        return 0.0
    leave = [lk for lk in net.links if lk.src in inside and lk.dst not in inside]
    enter = [lk for lk in net.links if lk.dst in inside and lk.src not in inside]
    best = 0.0
    for links, k in ((leave, k_in), (enter, k_out)):
        if not links:
            return math.inf
        bw = sum(lk.bandwidth_bytes_per_ns for lk in links)
        best = max(best, min(lk.latency_ns for lk in links) + k * m / bw)
    return best


def _cut_family(net: Net, topology_shape: tuple[int, ...], ranks: list[int]) -> list[set[int]]:
    """Slabs of every grid dimension, single nodes, and switches with their NPUs."""
    sets: list[set[int]] = []
    n_npu = net.num_npus
    out, inn = _adjacency(net)
    if topology_shape and math.prod(topology_shape) == n_npu:
        stride = 1
        for size in topology_shape:
            for k in range(1, size):
                sets.append({x for x in range(n_npu) if (x // stride) % size < k})
            stride *= size
    for x in range(net.num_nodes):
        sets.append({x})
        if x >= n_npu:
            sets.append(
                {x}
                | {lk.dst for lk in out[x] if lk.dst < n_npu}
                | {lk.src for lk in inn[x] if lk.src < n_npu}
            )
    # Switches join the side holding most of their neighbours.
    full = []
    for s in sets:
        extra = set()
        for w in range(n_npu, net.num_nodes):
            if w in s:
                continue
            nb = {lk.dst for lk in out[w]}
            if nb and len(nb & s) * 2 > len(nb):
                extra.add(w)
        full.append(s | extra)
    return full


@dataclass(frozen=True)
class _LinkArrays:
    """A net's links as numpy columns, for evaluating many cuts at once."""

    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    bw: npt.NDArray[np.float64]
    lat: npt.NDArray[np.float64]

    @classmethod
    def of(cls, net: Net) -> _LinkArrays:
        return cls(
            np.array([lk.src for lk in net.links], dtype=np.int64),
            np.array([lk.dst for lk in net.links], dtype=np.int64),
            np.array([lk.bandwidth_bytes_per_ns for lk in net.links], dtype=np.float64),
            np.array([lk.latency_ns for lk in net.links], dtype=np.float64),
        )


def _family_cut(
    net: Net,
    shape: tuple[int, ...],
    ranks: list[int],
    value: Callable[[int, int, float, float], float],
    *,
    empty_is_infinite: bool,
) -> float:
    """The largest cut bound over `_cut_family`'s sets, evaluated with numpy.

    For a set holding ``k_in`` of the ranks (the others ``k_out``, both non-zero) the links
    leaving it give ``value(k_in, k_out, bandwidth, min latency)`` and the links entering it
    ``value(k_out, k_in, ...)``. A direction without links gives infinity when
    ``empty_is_infinite`` (the data must cross it), else nothing. Equal to evaluating the sets
    of `_cut_family` one by one; single nodes are done for all nodes at once from per-node
    sums, so the cost is O(links x (slabs + switches)) instead of O(links x nodes). When
    (slabs + switches) x links exceeds `CUT_WORK` (a failed link on ``ring:100000``), only
    ``CUT_WORK // links`` of them (at least `CUT_MIN_SAMPLE`) are evaluated, evenly spaced in
    each dimension and among the switches with the first, middle and last of each: a smaller
    family, so still a lower bound.
    """
    arr = _LinkArrays.of(net)
    nn, n_npu = net.num_nodes, net.num_npus
    is_rank = np.zeros(nn, dtype=bool)
    is_rank[ranks] = True
    n = len(ranks)
    best = 0.0
    # Distinct switch -> neighbour pairs, for the rule that a switch joins the side holding
    # more than half of its neighbours.
    # (np.unique(pairs, axis=1) in effect, without its import of numpy.ma: start-up time)
    sw = arr.src >= n_npu
    keys = np.sort(arr.src[sw] * nn + arr.dst[sw])
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys
    sw_pairs = np.stack([keys // nn, keys % nn])
    sw_deg = np.bincount(sw_pairs[0], minlength=nn) if sw_pairs.size else np.zeros(nn, np.int64)

    def with_switches(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        if not sw_pairs.size:
            return mask
        inside = np.bincount(sw_pairs[0][mask[sw_pairs[1]]], minlength=nn)
        join = (inside * 2 > sw_deg) & (np.arange(nn) >= n_npu) & ~mask
        return mask | join

    def side(k_in: int, k_out: int, cross: npt.NDArray[np.bool_]) -> float:
        if not cross.any():
            return math.inf if empty_is_infinite else 0.0
        return value(k_in, k_out, float(arr.bw[cross].sum()), float(arr.lat[cross].min()))

    def evaluate(mask: npt.NDArray[np.bool_]) -> float:
        mask = with_switches(mask)
        k_in = int(np.count_nonzero(mask & is_rank))
        k_out = n - k_in
        if k_in == 0 or k_out == 0:
            return 0.0
        leave = mask[arr.src] & ~mask[arr.dst]
        enter = mask[arr.dst] & ~mask[arr.src]
        return max(side(k_in, k_out, leave), side(k_out, k_in, enter))

    slabbed = bool(shape) and math.prod(shape) == n_npu
    candidates = (sum(size - 1 for size in shape) if slabbed else 0) + (nn - n_npu)
    allowed = max(CUT_MIN_SAMPLE, CUT_WORK // max(1, len(arr.src)))
    share = 1.0 if candidates <= allowed else allowed / candidates
    # Slabs of every grid dimension.
    if slabbed:
        ids = np.arange(nn)
        stride = 1
        for size in shape:
            coord = (ids // stride) % size
            for k in _spaced(range(1, size), share):
                best = max(best, evaluate((coord < k) & (ids < n_npu)))
            stride *= size
    # Each switch with the NPUs hanging off it.
    for x in _spaced(range(n_npu, nn), share):
        mask = np.zeros(nn, dtype=bool)
        mask[x] = True
        mask[arr.dst[(arr.src == x) & (arr.dst < n_npu)]] = True
        mask[arr.src[(arr.dst == x) & (arr.src < n_npu)]] = True
        best = max(best, evaluate(mask))
    # Single nodes: a switch alone holds no rank; an NPU alone holds one if it is a rank.
    # A switch whose only neighbour is the node would join it: such nodes go one by one.
    lonely = set(sw_pairs[1][sw_deg[sw_pairs[0]] == 1].tolist()) if sw_pairs.size else set()
    singles = [v for v in ranks if v not in lonely]
    if n > 1 and singles:
        out_bw = np.bincount(arr.src, weights=arr.bw, minlength=nn)
        in_bw = np.bincount(arr.dst, weights=arr.bw, minlength=nn)
        out_lat = np.full(nn, np.inf)
        in_lat = np.full(nn, np.inf)
        np.minimum.at(out_lat, arr.src, arr.lat)
        np.minimum.at(in_lat, arr.dst, arr.lat)
        for v in singles:
            for k_in, k_out, bw, lat in (
                (1, n - 1, out_bw[v], out_lat[v]),
                (n - 1, 1, in_bw[v], in_lat[v]),
            ):
                if lat == np.inf:
                    if empty_is_infinite:
                        return math.inf
                    continue
                best = max(best, value(k_in, k_out, float(bw), float(lat)))
    for v in lonely:
        if v < n_npu:
            mask = np.zeros(nn, dtype=bool)
            mask[v] = True
            best = max(best, evaluate(mask))
    return best


def _spaced(items: range, share: float) -> list[int]:
    """All of ``items`` when ``share`` is 1, else about ``share`` of them, evenly spaced, with
    the first, the middle and the last."""
    if share >= 1.0 or len(items) <= 3:
        return list(items)
    count = max(3, int(len(items) * share))
    picks = {round(i * (len(items) - 1) / (count - 1)) for i in range(count)}
    picks.add(len(items) // 2)
    return [items[i] for i in sorted(picks)]


def _exact_cut(net: Net, ranks: list[int], m: float, start_ratio: float) -> float:
    """max over S of |S ∩ R| / B+(S) (S holds a rank, not all), by Dinkelbach iterations of a
    parametric min-cut; returns the bandwidth term of the cut bound in ns."""
    rset = set(ranks)
    lam = start_ratio
    best_t = 0.0
    for _ in range(30):
        improved = False
        for t in ranks:
            inside = _min_cut_side(net, ranks, t, lam)
            if not inside:
                continue
            k = len(inside & rset)
            bw = sum(
                lk.bandwidth_bytes_per_ns
                for lk in net.links
                if lk.src in inside and lk.dst not in inside
            )
            if k and bw > 0 and k / bw > lam * (1 + 1e-12):
                lam = k / bw
                improved = True
        if not improved:
            break
        best_t = lam * m
    return max(best_t, lam * m)


def _min_cut_side(net: Net, ranks: list[int], t: int, lam: float) -> set[int]:
    """The side S of a minimum cut between a source feeding every rank but ``t`` (capacity 1
    each) and ``t``, links weighing ``lam`` x bandwidth (parallel links added up): the nodes
    that do not reach ``t`` in the residual network of a maximum flow, as `networkx.minimum_cut`
    gives it (`tacos.maxflow`)."""
    source = net.num_nodes
    capacity: dict[tuple[int, int], float] = {}
    for lk in net.links:
        cap = lam * lk.bandwidth_bytes_per_ns
        key = (lk.src, lk.dst)
        capacity[key] = capacity[key] + cap if key in capacity else cap
    for r in ranks:
        if r != t:
            capacity[source, r] = 1.0
    nodes = {x for lk in net.links for x in (lk.src, lk.dst)} | set(ranks)
    return nodes - sink_side(net.num_nodes + 1, capacity, source, t)


def _spread(
    net: Net,
    ranks: list[int],
    m: float,
    c: int,
    cost: CostModel,
    shape: tuple[int, ...],
    chunked: bool = True,
    whole: bool = True,
) -> Bounds:
    """All-Gather bounds (module docstring); ``whole``: messages through a switch carry whole
    chunks of ``s`` bytes (else they may be arbitrarily small)."""
    out, _ = _adjacency(net)
    n = len(ranks)
    s = m / c
    inn = _ready_in_links(net, s if whole and chunked else 0.0, cost)
    ingress = max(_fluid(inn[v], (n - 1) * m) for v in ranks)
    egress = max(_fluid(out[v], m) for v in ranks)
    chunk = max(_chunk_count(inn[v], s, (n - 1) * c) for v in ranks)
    latency = _latency(net, ranks, ranks, s if chunked else 0.0, cost)
    rset = set(ranks)

    def spread_cut(k_in: int, k_out: int, bw: float, lat: float) -> float:
        return lat + k_in * m / bw

    cut = _family_cut(net, shape, ranks, spread_cut, empty_is_infinite=True)
    exact = False
    if net.num_nodes <= EXACT_CUT_NODES:
        family = _cut_family(net, shape, ranks)
        ratio = max(
            (
                len(S & rset) / bw
                for S in family
                if (
                    bw := sum(
                        lk.bandwidth_bytes_per_ns
                        for lk in net.links
                        if lk.src in S and lk.dst not in S
                    )
                )
                > 0
                and 0 < len(S & rset) < n
            ),
            default=1e-30,
        )
        cut = max(cut, _exact_cut(net, ranks, m, ratio))
        exact = True
    items = {"ingress": ingress, "egress": egress, "cut": cut, "latency": latency, "chunk": chunk}
    if not chunked:
        del items["chunk"]
    return Bounds(items, dict(DESCRIPTIONS), exact)


def _rooted(
    net: Net,
    ranks: list[int],
    root: int,
    m: float,
    c: int,
    cost: CostModel,
    *,
    toward: bool,
    chunked: bool = True,
) -> Bounds:
    """Broadcast (``toward=False``: ``m`` bytes in ``c`` chunks from ``root`` to every rank) or
    Gather (``toward=True``: ``m`` bytes in ``c`` chunks from every rank to ``root``)."""
    out, inn = _adjacency(net)
    n = len(ranks)
    s = m / c
    s_lat = s if chunked else 0.0
    others = [v for v in ranks if v != root]
    if toward:
        ingress = _fluid(inn[root], (n - 1) * m)
        egress = max(_fluid(out[v], m) for v in others)
        chunk = _chunk_count(inn[root], s, (n - 1) * c)
        latency = _latency(net.transpose(), [root], others, s_lat, cost)
    else:
        ingress = max(_fluid(inn[v], m) for v in others)
        egress = _fluid(out[root], m)
        chunk = max(_chunk_count(inn[v], s, c) for v in others)
        latency = _latency(net, [root], others, s_lat, cost)
    items = {"ingress": ingress, "egress": egress, "chunk": chunk, "latency": latency}
    desc = {
        "ingress": "the root receives everything" if toward else "every rank receives the buffer",
        "egress": "every rank sends its share" if toward else "the root sends the buffer",
        "chunk": DESCRIPTIONS["chunk"],
        "latency": DESCRIPTIONS["latency"],
    }
    if not chunked:
        del items["chunk"]
    return Bounds(items, desc)


def _alltoall(
    net: Net,
    ranks: list[int],
    buffer: float,
    c: int,
    cost: CostModel,
    shape: tuple[int, ...],
    chunked: bool,
) -> Bounds:
    """All-to-all of a ``buffer`` per rank: a block of ``buffer / n`` for every other rank.

    Every rank receives and sends ``(n - 1) / n`` of its buffer; across a cut S, each rank
    inside sends a block to each rank outside (the bisection bound); the farthest pair of ranks
    bounds the latency.
    """
    out, inn = _adjacency(net)
    n = len(ranks)
    block = buffer / n
    ingress = max(_fluid(inn[v], (n - 1) * block) for v in ranks)
    egress = max(_fluid(out[v], (n - 1) * block) for v in ranks)
    latency = _latency(net, ranks, ranks, block / c if chunked else 0.0, cost)

    def pairs_cut(k_in: int, k_out: int, bw: float, lat: float) -> float:
        return lat + k_in * k_out * block / bw

    cut = _family_cut(net, shape, ranks, pairs_cut, empty_is_infinite=False)
    items = {
        "ingress": ingress,
        "egress": egress,
        "cut": cut,
        "latency": latency,
        "hop-bytes": _hop_bytes(net, ranks, block),
    }
    desc = {
        "ingress": "every rank receives a block from every other rank",
        "egress": "every rank sends a block to every other rank",
        "cut": "blocks between the two sides of a cut over the bandwidth crossing it",
        "latency": DESCRIPTIONS["latency"],
        "hop-bytes": "every block crosses the links of its cheapest path; all links share that",
    }
    return Bounds(items, desc)


def _hop_bytes(net: Net, ranks: list[int], block: float) -> float:
    """Every block of ``block`` bytes keeps the links of a path busy for at least the sum of
    ``block / B_e`` over the cheapest such path, and the links work side by side: ``T >= sum
    over pairs of that time / number of links``."""
    if not net.links:
        return 0.0
    out, _ = _adjacency(net)
    uniform = len({lk.bandwidth_bytes_per_ns for lk in net.links}) == 1
    total = 0.0
    for s in ranks:
        if uniform:
            hops = [-1] * net.num_nodes
            hops[s] = 0
            frontier = [s]
            while frontier:
                nxt = []
                for x in frontier:
                    for lk in out[x]:
                        if hops[lk.dst] < 0:
                            hops[lk.dst] = hops[x] + 1
                            nxt.append(lk.dst)
                frontier = nxt
            per_byte = 1.0 / net.links[0].bandwidth_bytes_per_ns
            total += sum(hops[d] for d in ranks if d != s) * per_byte
        else:
            dist = [math.inf] * net.num_nodes
            dist[s] = 0.0
            heap = [(0.0, s)]
            while heap:
                t, x = heapq.heappop(heap)
                if t > dist[x]:
                    continue
                for lk in out[x]:
                    nt = t + 1.0 / lk.bandwidth_bytes_per_ns
                    if nt < dist[lk.dst]:
                        dist[lk.dst] = nt
                        heapq.heappush(heap, (nt, lk.dst))
            total += sum(dist[d] for d in ranks if d != s)
    return total * block / len(net.links)


# -- closed forms for regular grids ----------------------------------------------------------

REGULAR_LINKS = 20_000
"""`lower_bounds` takes the closed forms for a plain regular grid of more links than this."""


def regular_lower_bounds(
    kind: CollectiveKind,
    grid: RegularGrid,
    size_bytes: float,
    *,
    chunks_per_npu: int = 1,
    root: int = 0,
    cost: CostModel = DEFAULT_COST_MODEL,
    any_chunking: bool = False,
) -> Bounds:
    """`lower_bounds` over every NPU of a regular grid (`topologies.regular`), in closed form.

    The same bounds and the same cut family, evaluated from the grid's structure instead of
    its links, in time that grows with the number of dimensions and their sizes, not the NPUs:

    - per-node bounds (ingress, egress, chunk) are largest at a corner, whose links are a
      subset of every node's (ends of mesh lines, any node of the symmetric kinds);
    - the latency bound is exact: on a Cartesian product the shortest path is the sum of the
      per-dimension ones, so the farthest pair is ``sum_d hops_d (a_d + s/B_d)`` (hops: a mesh
      line s-1, a ring s//2, a one-way ring s-1, fully connected 1, a switch 2, plus the switch
      delay), against the sampled search `lower_bounds` makes on large topologies;
    - the cut family (slabs of every dimension, single nodes, each switch with its NPUs) is
      evaluated per slab from the links of one line, which are the same on every line;
    - every kind of grid is its own transpose up to relabelling, so the Reduce-Scatter and
      reduction bounds equal the All-Gather and Broadcast ones.

    The exact min-cut of `lower_bounds` (graphs of at most `EXACT_CUT_NODES` nodes) is not
    made, so on small grids `lower_bounds` may be tighter. Tested equal to `lower_bounds` on
    grids too large for the exact cut and small enough to search.
    """
    if kind not in SUPPORTED and kind is not CollectiveKind.ALLTOALL:
        raise TacosError(f"no bounds for {kind.value}")
    if not (math.isfinite(size_bytes) and size_bytes > 0):
        raise TacosError(f"size must be positive, got {size_bytes} bytes")
    if chunks_per_npu < 1:
        raise TacosError(f"chunks per NPU must be at least 1, got {chunks_per_npu}")
    n = grid.num_npus
    if kind.rooted and not 0 <= root < n:
        raise TacosError(f"root {root} is outside the ranks 0..{n - 1}")
    if n == 1:
        return Bounds({"latency": 0.0}, {"latency": "one rank: nothing to move"})
    g = _Grid(grid, cost)
    c = chunks_per_npu
    chunked = not any_chunking
    corner = g.links_at((0,) * len(grid.sizes))
    m = size_bytes / n
    if kind in (CollectiveKind.ALLGATHER, CollectiveKind.REDUCE_SCATTER):
        return g.spread(corner, m, c, chunked)
    if kind is CollectiveKind.ALLREDUCE:
        a = g.spread(corner, m, c, chunked)
        s = size_bytes / (n * c) if chunked else 0.0
        corner_in = g.ready(corner, s)
        items = dict(a.items)
        items["ingress"] = _fluid(corner_in, size_bytes)
        items["egress"] = _fluid(corner, size_bytes)
        items["total"] = _fluid(g.all_npu_links(), 2 * (n - 1) * size_bytes)
        if SWITCH in grid.kinds:
            items["total-in"] = _fluid(g.ready(g.all_npu_links(), s), 2 * (n - 1) * size_bytes)
        if chunked:
            items["chunk"] = _chunk_count(corner_in, size_bytes / (n * c), n * c)
        else:
            items.pop("chunk", None)
        desc = {
            "total": "the ranks together send 2(n-1) values per element through their out-links",
            "total-in": _TOTAL_IN,
            "ingress": "every rank receives a value for every element of the buffer",
            "egress": "every rank sends a value for every element of the buffer",
            "chunk": "every rank receives every chunk of the buffer once, one per link serialization",
            "cut": "the larger cut bound of the reduce-scatter and the all-gather it contains",
            "latency": "the larger latency bound of the reduce-scatter and the all-gather",
        }
        return Bounds(items, {k: desc[k] for k in items})
    if kind is CollectiveKind.ALLTOALL:
        block = size_bytes / n
        items = {
            "ingress": _fluid(corner, (n - 1) * block),
            "egress": _fluid(corner, (n - 1) * block),
            "cut": g.cut(lambda k_in, k_out, bw, lat: lat + k_in * k_out * block / bw, True),
            "latency": g.farthest(block / c if chunked else 0.0),
            "hop-bytes": g.hop_bytes(block),
        }
        desc = {
            "ingress": "every rank receives a block from every other rank",
            "egress": "every rank sends a block to every other rank",
            "cut": "blocks between the two sides of a cut over the bandwidth crossing it",
            "latency": DESCRIPTIONS["latency"],
            "hop-bytes": "every block crosses the links of its cheapest path; all links share that",
        }
        return Bounds(items, desc)
    at_root = g.links_at(g.coords(root))
    toward = kind in (CollectiveKind.GATHER, CollectiveKind.SCATTER)
    mm, cc = (m, c) if toward else (size_bytes, n * c)
    s = mm / cc
    s_lat = s if chunked else 0.0
    latency = g.farthest(s_lat, g.coords(root))
    if toward:
        items = {
            "ingress": _fluid(at_root, (n - 1) * mm),
            "egress": _fluid(corner, mm),
            "chunk": _chunk_count(at_root, s, (n - 1) * cc),
            "latency": latency,
        }
    else:
        items = {
            "ingress": _fluid(corner, mm),
            "egress": _fluid(at_root, mm),
            "chunk": _chunk_count(corner, s, cc),
            "latency": latency,
        }
    desc = {
        "ingress": "the root receives everything" if toward else "every rank receives the buffer",
        "egress": "every rank sends its share" if toward else "the root sends the buffer",
        "chunk": DESCRIPTIONS["chunk"],
        "latency": DESCRIPTIONS["latency"],
    }
    if not chunked:
        del items["chunk"]
    return Bounds(items, desc)


_CutValue = Callable[[int, int, float, float], float]
"""(ranks on the side the links leave, ranks on the other side, bandwidth, latency) -> ns."""


class _Grid:
    """A regular grid's per-dimension structure, for the closed forms."""

    def __init__(self, grid: RegularGrid, cost: CostModel) -> None:
        self.grid = grid
        self.cost = cost
        self.n = grid.num_npus
        self.dims = list(zip(grid.sizes, grid.kinds, grid.bandwidths, grid.latencies, strict=True))

    def coords(self, npu: int) -> tuple[int, ...]:
        out = []
        for size in self.grid.sizes:
            out.append(npu % size)
            npu //= size
        return tuple(out)

    def links_at(self, coords: tuple[int, ...], skip: int = -1) -> list[LinkCost]:
        """The in-links (equally, the out-links) of the NPU at ``coords``, leaving out those
        of dimension ``skip``."""
        links = []
        for d, ((size, kind, bw, lat), c) in enumerate(zip(self.dims, coords, strict=True)):
            if size < 2 or d == skip:
                continue
            if kind == LINE:
                k = 1 if c in (0, size - 1) else 2
            elif kind == RING:
                k = 1 if size == 2 else 2
            elif kind == FC:
                k = size - 1
            else:  # UNIRING, SWITCH
                k = 1
            links += [LinkCost(d, 0, 0, lat, bw)] * k  # index: the dimension
        return links

    def ready(self, links: list[LinkCost], s: float) -> list[LinkCost]:
        """``links`` (of `links_at` or `all_npu_links`) as in-links: a Switch dimension's link
        starts once a whole message of ``s`` bytes has come up to the switch and through it
        (`_switch_ready`: latency + s/bandwidth + the switch delay)."""
        out = []
        for lk in links:
            d = lk.index
            if d >= 0 and self.dims[d][1] == SWITCH:
                _size, _kind, bw, lat = self.dims[d]
                start = lat + s / bw + self.cost.switch_delay_ns
                lk = LinkCost(d, 0, 0, lk.latency_ns + start, lk.bandwidth_bytes_per_ns)
            out.append(lk)
        return out

    def all_npu_links(self) -> list[LinkCost]:
        """The out-links of every NPU, as one aggregate link per dimension."""
        return [
            LinkCost(d, 0, 0, lat, self.grid.dim_links(d) * bw)
            for d, (_size, _kind, bw, lat) in enumerate(self.dims)
            if self.grid.dim_links(d)
        ]

    def farthest(self, s: float, source: tuple[int, ...] | None = None) -> float:
        """The longest shortest path (hop: latency + s/bandwidth) from ``source`` (or over
        all pairs) to another NPU."""
        total = 0.0
        for d, (size, kind, bw, lat) in enumerate(self.dims):
            if size < 2:
                continue
            if kind == LINE:
                hops = size - 1 if source is None else max(source[d], size - 1 - source[d])
            elif kind == RING:
                hops = size // 2
            elif kind == UNIRING:
                hops = size - 1
            elif kind == FC:
                hops = 1
            else:
                hops = 2
            total += hops * (lat + s / bw)
            if kind == SWITCH:
                total += self.cost.switch_delay_ns
        return total

    def cut(self, value: _CutValue, all_directions: bool = False) -> float:
        """The largest cut bound over the family: single NPUs, switch groups, slabs.

        ``value(k_in, k_out, bw, lat)`` is the bound for links leaving a side that holds
        ``k_in`` ranks, the other side ``k_out``. Both directions of every set are taken.
        """
        n = self.n
        best = 0.0

        def side(k_in: int, k_out: int, links: list[LinkCost]) -> float:
            if not links:
                return math.inf
            bw = sum(lk.bandwidth_bytes_per_ns for lk in links)
            return value(k_in, k_out, bw, min(lk.latency_ns for lk in links))

        corner = self.links_at((0,) * len(self.dims))
        best = max(best, side(1, n - 1, corner), side(n - 1, 1, corner))
        for d, (size, kind, bw, lat) in enumerate(self.dims):
            lines = n // size
            if kind == SWITCH and n > size:
                # The switch with the NPUs of its line: they leave through their links of
                # the other dimensions (fewest on the corner's line).
                other = self.links_at((0,) * len(self.dims), skip=d)
                out = [
                    LinkCost(-1, 0, 0, lk.latency_ns, size * lk.bandwidth_bytes_per_ns)
                    for lk in other
                ]
                best = max(best, side(size, n - size, out), side(n - size, size, out))
            for k in range(1, size):
                k_in = k * lines
                k_out = n - k_in
                if kind == LINE:
                    leave = enter = 1
                elif kind == RING:
                    leave = enter = 1 if size == 2 else 2
                elif kind == UNIRING:
                    leave = enter = 1
                elif kind == FC:
                    leave = enter = k * (size - k)
                else:
                    leave = enter = size - k if 2 * k > size else k
                total_leave = leave * lines * bw
                total_enter = enter * lines * bw
                best = max(best, value(k_in, k_out, total_leave, lat))
                best = max(best, value(k_out, k_in, total_enter, lat))
        return best

    def hop_bytes(self, block: float) -> float:
        """`_hop_bytes` in closed form: on a product of one-dimensional networks the cheapest
        path (cost 1/B per hop) adds up per dimension, so the sum over ordered pairs is
        ``sum_d (n/s_d)^2 D_d / B_d`` with ``D_d`` the sum of hop distances over pairs of
        positions of dimension d."""
        n = self.n
        total = 0.0
        for size, kind, bw, _lat in self.dims:
            if size < 2:
                continue
            if kind == LINE:
                pair_hops = (size**3 - size) // 3
            elif kind == RING:
                pair_hops = size * sum(min(k, size - k) for k in range(size))
            elif kind == UNIRING:
                pair_hops = size * size * (size - 1) // 2
            elif kind == FC:
                pair_hops = size * (size - 1)
            else:  # SWITCH: up and down
                pair_hops = 2 * size * (size - 1)
            total += (n // size) ** 2 * pair_hops / bw
        return total * block / self.grid.num_links

    def spread(self, corner: list[LinkCost], m: float, c: int, chunked: bool) -> Bounds:
        """`_spread` in closed form (All-Gather of ``m`` bytes per rank in ``c`` chunks)."""
        n = self.n
        s = m / c
        corner_in = self.ready(corner, s if chunked else 0.0)

        def cut_value(k_in: int, k_out: int, bw: float, lat: float) -> float:
            return lat + k_in * m / bw

        items = {
            "ingress": _fluid(corner_in, (n - 1) * m),
            "egress": _fluid(corner, m),
            "cut": self.cut(cut_value),
            "latency": self.farthest(s if chunked else 0.0),
            "chunk": _chunk_count(corner_in, s, (n - 1) * c),
        }
        if not chunked:
            del items["chunk"]
        return Bounds(items, dict(DESCRIPTIONS))
