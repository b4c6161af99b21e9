"""The search behind the cut bound of `tacos.bounds`: the largest bound over a stated family
of node sets (every slab of every grid dimension, single nodes, switches with their NPUs;
`_family_cut`, sampled beyond `CUT_WORK`), and over every cut by parametric min-cut on
topologies of at most `EXACT_CUT_NODES` nodes (`_exact_cut`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tacos.bound_terms import _adjacency
from tacos.channels import Net
from tacos.maxflow import sink_side

EXACT_CUT_NODES = 40
CUT_WORK = 20_000_000
"""`_family_cut` evaluates every slab and every switch while their number x links stays under
this (a few tenths of a second); beyond it, an evenly spaced sample of them."""
CUT_MIN_SAMPLE = 8


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
