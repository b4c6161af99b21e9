"""`regular_lower_bounds`: the bounds of `tacos.bounds.lower_bounds` in closed form on a regular
grid (`topologies.regular`), from its per-dimension structure instead of its links, which
`lower_bounds` takes for grids of more than `REGULAR_LINKS` links."""

from __future__ import annotations

import math
from collections.abc import Callable

from chakra_ir.collective import CollectiveKind
from tacos.bound_terms import (
    ALLREDUCE_DESCRIPTIONS,
    ALLTOALL_DESCRIPTIONS,
    DESCRIPTIONS,
    Bounds,
    _chunk_count,
    _fluid,
    rooted_bounds,
)
from tacos.channels import LinkCost
from tacos.errors import TacosError
from tacos.kinds import SUPPORTED
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.regular import RegularGrid
from topologies.routing import FC, LINE, RING, SWITCH, UNIRING

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
        return Bounds(items, {k: ALLREDUCE_DESCRIPTIONS[k] for k in items})
    if kind is CollectiveKind.ALLTOALL:
        block = size_bytes / n
        items = {
            "ingress": _fluid(corner, (n - 1) * block),
            "egress": _fluid(corner, (n - 1) * block),
            "cut": g.cut(lambda k_in, k_out, bw, lat: lat + k_in * k_out * block / bw, True),
            "latency": g.farthest(block / c if chunked else 0.0),
            "hop-bytes": g.hop_bytes(block),
        }
        return Bounds(items, dict(ALLTOALL_DESCRIPTIONS))
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
    return rooted_bounds(items, toward, chunked)


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
