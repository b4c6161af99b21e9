"""Generators: the links, switches and routing rule of each topology kind, before failures.

Each generator returns a `Blueprint` whose ``head`` is the canonical spec of the generator part
(kind, shape and generator options, every one explicit); `topologies.build` adds the link
overrides and failures and makes the `Topology`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from topologies.errors import SourcePos, SpecError
from topologies.routing import (
    FC,
    LINE,
    RING,
    SWITCH,
    UNIRING,
    GridLayout,
    GridRouter,
    Router,
    ShortestPathRouter,
    TreeRouter,
)
from topologies.spec import format_bandwidth, format_latency, format_per_dim
from topologies.topology import LinkSpec
from topologies.units import env_limit

#: Defaults when a spec does not say (bytes per ns = GB/s; ns).
DEFAULT_BANDWIDTH = 50.0
DEFAULT_LATENCY = 500.0
#: FRED (ISCA 2025): 3 TB/s per direction between an NPU and its L1 switch, 4 NPUs per L1.
#: The fact sheet gives no latency, so FRED uses DEFAULT_LATENCY.
FRED_BANDWIDTH = 3000.0
FRED_NPUS_PER_L1 = 4
FRED_CONFIGS: dict[str, tuple[float, bool]] = {
    "A": (1 / 8, False),
    "B": (1 / 8, True),
    "C": (1.0, False),
    "D": (1.0, True),
}
"""The paper's FRED-A..D (spec ``cfg=``): the L1<->L2 bandwidth as a share of the NPU
bandwidth under the L1 switch (A, B: 375 of 3000 GB/s per NPU, the mesh's bisection; C, D:
all of it, the almost-fat tree), and whether the switches reduce and multicast."""

#: Limits that keep a typo from exhausting memory.
MAX_NPUS = 1 << 20
MAX_LINKS = 1 << 17
"""Default most links a built topology may have: about 110 MB of memory at ~860 B a link, and
a few seconds to build and to search for bounds (tens of microseconds a link, so the 2M links
of ``ring:1000000`` would take a minute); the environment variable ``COLLC_MAX_LINKS`` raises
or lowers it (`max_links`)."""


def max_links() -> int:
    """The link limit: ``COLLC_MAX_LINKS`` when set to a positive integer, else `MAX_LINKS`."""
    return env_limit("COLLC_MAX_LINKS", MAX_LINKS)


#: Stack dimension names in specs, and the ASTRA-sim names they match.
STACK_NAMES = {RING: "ring", FC: "fc", SWITCH: "switch"}


@dataclass
class Blueprint:
    """A topology before link overrides and failures.

    ``failed`` holds directed pairs already failed by the source (a file's ``fail`` list).
    """

    name: str
    head: str
    num_npus: int
    num_switches: int
    links: list[LinkSpec]
    shape: tuple[int, ...] = ()
    dim_kinds: tuple[str, ...] = ()
    layout: GridLayout | None = None
    router: Router = field(default_factory=ShortestPathRouter)
    failed: set[tuple[int, int]] = field(default_factory=set)
    in_network: bool = False


def grid_link_count(shape: tuple[int, ...], kinds: tuple[str, ...]) -> int:
    """How many links `grid` makes for this shape (to refuse huge ones before building)."""
    n = 1
    for size in shape:
        n *= size
    count = 0
    for size, kind in zip(shape, kinds, strict=True):
        if kind == LINE:
            count += 2 * (size - 1) * (n // size)
        elif kind == RING:
            count += n if size == 2 else 2 * n
        elif kind == UNIRING:
            count += n
        elif kind == FC:
            count += n * (size - 1)
        else:
            count += 2 * n
    return count


def check_size(num_npus: int, num_links: int, pos: SourcePos | None) -> None:
    """SpecError, before anything is built, if a topology would exceed `MAX_NPUS` or the link
    limit (`max_links`)."""
    if num_npus > MAX_NPUS:
        raise SpecError(f"too many NPUs: {num_npus} (at most {MAX_NPUS})", pos)
    limit = max_links()
    if num_links > limit:
        raise SpecError(
            f"too many links: {num_links:,} (at most {limit:,}, about {limit * 860 / 1e9:.1f} GB "
            "and seconds to build; set COLLC_MAX_LINKS to raise the limit)",
            pos,
        )


def _grid(
    name: str,
    head: str,
    shape: tuple[int, ...],
    kinds: tuple[str, ...],
    bandwidths: list[float],
    latencies: list[float],
    *,
    public_shape: bool,
    tag_dims: bool,
) -> Blueprint:
    n = 1
    for size in shape:
        n *= size
    switch_base: list[int] = []
    next_switch = n
    for size, kind in zip(shape, kinds, strict=True):
        if kind == SWITCH:
            switch_base.append(next_switch)
            next_switch += n // size
        else:
            switch_base.append(-1)
    layout = GridLayout(shape, kinds, tuple(switch_base))
    links: list[LinkSpec] = []
    add = links.append
    for d, (size, kind) in enumerate(zip(shape, kinds, strict=True)):
        stride = layout.strides[d]
        bw = bandwidths[d]
        lat = latencies[d]
        tag = d if tag_dims else -1
        for v in range(n):
            c = (v // stride) % size
            if kind in (LINE, RING):
                if c + 1 < size:
                    u = v + stride
                elif kind == RING and size > 2:
                    u = v - (size - 1) * stride
                else:
                    continue
                add((v, u, lat, bw, tag))
                add((u, v, lat, bw, tag))
            elif kind == UNIRING:
                add((v, v + ((c + 1) % size - c) * stride, lat, bw, tag))
            elif kind == FC:
                for t in range(size):
                    if t != c:
                        add((v, v + (t - c) * stride, lat, bw, tag))
            else:
                sw = layout.switch_of(v, d)
                add((v, sw, lat, bw, tag))
                add((sw, v, lat, bw, tag))
    return Blueprint(
        name=name,
        head=head,
        num_npus=n,
        num_switches=next_switch - n,
        links=links,
        shape=shape if public_shape else (),
        dim_kinds=kinds if public_shape else (),
        layout=layout,
        router=GridRouter(layout),
    )


def _opts(bandwidths: list[float], latencies: list[float]) -> str:
    return f"bw={format_per_dim(bandwidths, bw=True)},lat={format_per_dim(latencies, bw=False)}"


def ring(n: int, bandwidth: float, latency: float) -> Blueprint:
    """``ring:N``: links i <-> i+1 mod N (one pair of links when N = 2)."""
    return _grid(
        "ring",
        f"ring:{n},{_opts([bandwidth], [latency])}",
        (n,),
        (RING,),
        [bandwidth],
        [latency],
        public_shape=False,
        tag_dims=False,
    )


def uniring(n: int, bandwidth: float, latency: float) -> Blueprint:
    """``uniring:N``: links i -> i+1 mod N only."""
    return _grid(
        "uniring",
        f"uniring:{n},{_opts([bandwidth], [latency])}",
        (n,),
        (UNIRING,),
        [bandwidth],
        [latency],
        public_shape=False,
        tag_dims=False,
    )


def fully_connected(n: int, bandwidth: float, latency: float) -> Blueprint:
    """``fc:N``: a link between every ordered pair of NPUs."""
    return _grid(
        "fc",
        f"fc:{n},{_opts([bandwidth], [latency])}",
        (n,),
        (FC,),
        [bandwidth],
        [latency],
        public_shape=False,
        tag_dims=False,
    )


def switch(n: int, bandwidth: float, latency: float, in_network: bool = False) -> Blueprint:
    """``switch:N``: switch node N, with an up link and a down link per NPU. With
    ``in_network`` the switch reduces and multicasts (SHARP-like; spec ``innet=yes``)."""
    bp = _grid(
        "switch",
        f"switch:{n},{_opts([bandwidth], [latency])}" + (",innet=yes" if in_network else ""),
        (n,),
        (SWITCH,),
        [bandwidth],
        [latency],
        public_shape=False,
        tag_dims=False,
    )
    bp.in_network = in_network
    return bp


def mesh(shape: tuple[int, ...], bandwidths: list[float], latencies: list[float]) -> Blueprint:
    """``mesh:AxBx..``: neighbours in each dimension, no wraparound."""
    return _grid(
        "mesh",
        f"mesh:{'x'.join(map(str, shape))},{_opts(bandwidths, latencies)}",
        shape,
        (LINE,) * len(shape),
        bandwidths,
        latencies,
        public_shape=True,
        tag_dims=True,
    )


def torus(shape: tuple[int, ...], bandwidths: list[float], latencies: list[float]) -> Blueprint:
    """``torus:AxBx..``: a mesh plus wraparound links (a size-2 dimension has one pair)."""
    return _grid(
        "torus",
        f"torus:{'x'.join(map(str, shape))},{_opts(bandwidths, latencies)}",
        shape,
        (RING,) * len(shape),
        bandwidths,
        latencies,
        public_shape=True,
        tag_dims=True,
    )


def hypercube(dims: int, bandwidths: list[float], latencies: list[float]) -> Blueprint:
    """``hypercube:D``: 2^D NPUs, links between ids differing in one bit (``dim`` = the bit)."""
    return _grid(
        "hypercube",
        f"hypercube:{dims},{_opts(bandwidths, latencies)}",
        (2,) * dims,
        (LINE,) * dims,
        bandwidths,
        latencies,
        public_shape=False,
        tag_dims=True,
    )


def stack(
    sizes: tuple[int, ...],
    kinds: tuple[str, ...],
    bandwidths: list[float],
    latencies: list[float],
) -> Blueprint:
    """``stack:ring4*fc4*switch8``: ASTRA-sim's multi-dimensional network, dimension 0 first.

    Ring dimensions are bidirectional rings, fc dimensions fully connected, and each group of a
    switch dimension gets its own switch node.
    """
    dims = "*".join(f"{STACK_NAMES[k]}{s}" for s, k in zip(sizes, kinds, strict=True))
    return _grid(
        "stack",
        f"stack:{dims},{_opts(bandwidths, latencies)}",
        sizes,
        kinds,
        bandwidths,
        latencies,
        public_shape=True,
        tag_dims=True,
    )


def fred(
    n: int,
    npus_per_l1: int,
    bandwidth: float,
    latency: float,
    l2_bandwidth: float | None,
    in_network: bool = True,
) -> Blueprint:
    """``fred:N``: FRED's two-level tree.

    NPU ``i`` hangs off L1 switch ``N + i // l1`` (up and down link of ``bandwidth``); every L1
    switch links up and down to the one L2 switch (the last node). The L1<->L2 bandwidth is the
    sum of the NPU bandwidth under that L1 unless ``l2_bandwidth`` is given. The switches
    reduce and multicast in the network unless ``in_network`` is False (spec ``innet=no``:
    FRED-A and FRED-C of the paper).
    """
    num_l1 = -(-n // npus_per_l1)
    l2 = n + num_l1
    links: list[LinkSpec] = []
    for v in range(n):
        l1 = n + v // npus_per_l1
        links.append((v, l1, latency, bandwidth, -1))
        links.append((l1, v, latency, bandwidth, -1))
    for j in range(num_l1):
        under = min(npus_per_l1, n - j * npus_per_l1)
        up = l2_bandwidth if l2_bandwidth is not None else under * bandwidth
        links.append((n + j, l2, latency, up, -1))
        links.append((l2, n + j, latency, up, -1))
    l2bw = "auto" if l2_bandwidth is None else format_bandwidth(l2_bandwidth)
    head = (
        f"fred:{n},bw={format_bandwidth(bandwidth)},lat={format_latency(latency)},"
        f"l1={npus_per_l1},l2bw={l2bw}" + ("" if in_network else ",innet=no")
    )
    return Blueprint(
        name="fred",
        head=head,
        num_npus=n,
        num_switches=num_l1 + 1,
        links=links,
        router=TreeRouter(npus_per_l1, n, l2),
        in_network=in_network,
    )


def graph(
    num_npus: int,
    num_switches: int,
    links: list[LinkSpec],
    bandwidth: float = DEFAULT_BANDWIDTH,
    latency: float = DEFAULT_LATENCY,
    *,
    name: str = "graph",
    in_network: bool = False,
) -> Blueprint:
    """``graph:N[+S],links=..``: an explicit link list, routed by shortest paths. With
    ``in_network`` (spec ``innet=yes``) its switches reduce and multicast; they must then form
    a tree under the last node (`topologies.innetwork`).

    The canonical form spells out every link with its bandwidth, latency and (if set) dimension,
    writing a pair once as ``a-b`` where both directions carry the same attributes.
    """
    by_pair: dict[tuple[int, int], Counter[tuple[float, float, int]]] = {}
    for s, d, lat, bw, dim in links:
        by_pair.setdefault((s, d), Counter())[(bw, lat, dim)] += 1
    entries: list[tuple[int, int, int, str]] = []

    def text(a: int, sep: str, b: int, attrs: tuple[float, float, int]) -> str:
        bw, lat, dim = attrs
        out = f"{a}{sep}{b}:{format_bandwidth(bw)}:{format_latency(lat)}"
        return out + (f":{dim}" if dim >= 0 else "")

    for (a, b), forward in sorted(by_pair.items()):
        backward = by_pair.get((b, a), Counter())
        if a < b:
            both = forward & backward
            for attrs, count in sorted(both.items()):
                entries.extend([(a, b, 0, text(a, "-", b, attrs))] * count)
            rest = forward - both
        else:
            rest = forward - (forward & backward)
        for attrs, count in sorted(rest.items()):
            entries.extend([(min(a, b), max(a, b), 1, text(a, ">", b, attrs))] * count)
    entries.sort()
    shape = f"{num_npus}+{num_switches}" if num_switches else f"{num_npus}"
    head = f"graph:{shape},bw={format_bandwidth(bandwidth)},lat={format_latency(latency)}"
    if entries:
        head += ",links=" + ";".join(e[3] for e in entries)
    if in_network:
        head += ",innet=yes"
    return Blueprint(
        name=name,
        head=head,
        num_npus=num_npus,
        num_switches=num_switches,
        links=list(links),
        in_network=in_network,
    )
