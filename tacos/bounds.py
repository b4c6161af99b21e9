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

This module holds `lower_bounds` and the bounds of each kind of collective; the terms they are
built from are in `tacos.bound_terms`, the cut search in `tacos.cut_bounds` and the closed forms
for regular grids in `tacos.grid_bounds` (their public names are importable from here too).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from chakra_ir.collective import CollectiveKind
from tacos.bound_terms import (
    ALLREDUCE_DESCRIPTIONS,
    ALLTOALL_DESCRIPTIONS,
    _adjacency,
    _chunk_count,
    _dijkstra,
    _fluid,
    _latency,
    _ready_in_links,
    rooted_bounds,
)
from tacos.bound_terms import DESCRIPTIONS as DESCRIPTIONS
from tacos.bound_terms import LATENCY_MIN_SAMPLE as LATENCY_MIN_SAMPLE
from tacos.bound_terms import LATENCY_SAMPLE as LATENCY_SAMPLE
from tacos.bound_terms import LATENCY_WORK as LATENCY_WORK
from tacos.bound_terms import Bounds as Bounds
from tacos.bound_terms import allreduce_volume_bound_ns as allreduce_volume_bound_ns
from tacos.channels import Net
from tacos.cut_bounds import CUT_MIN_SAMPLE as CUT_MIN_SAMPLE
from tacos.cut_bounds import CUT_WORK as CUT_WORK
from tacos.cut_bounds import EXACT_CUT_NODES as EXACT_CUT_NODES
from tacos.cut_bounds import _cut_family, _exact_cut, _family_cut
from tacos.errors import TacosError
from tacos.grid_bounds import REGULAR_LINKS as REGULAR_LINKS
from tacos.grid_bounds import regular_lower_bounds as regular_lower_bounds
from tacos.kinds import SUPPORTED
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.regular import regular_grid
from topologies.topology import Topology


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
    return Bounds(items, {k: ALLREDUCE_DESCRIPTIONS[k] for k in items}, a.exact_cut)


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
    return rooted_bounds(items, toward, chunked)


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
    return Bounds(items, dict(ALLTOALL_DESCRIPTIONS))


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
