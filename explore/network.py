"""LIBRA's view of a network: dimensions, the traffic a collective puts on each, and the
mapping of communicator groups onto them (docs/libra.md, section 1).

A `Network` is a stack of dimensions, dimension 0 innermost (ASTRA-sim's numbering: NPU
``sum(coord[d] * stride[d])``), each a ring, a fully connected group or a switch of ``size``
NPUs. The allocation is ``bw[d]``, bytes per ns (= GB/s) *per NPU* in dimension d: a ring
NPU has two links of ``bw/2``, a fully connected NPU ``size - 1`` links of ``bw/(size-1)``, a
switch NPU one link of ``bw`` (`link_bandwidths`).

Traffic (`dim_bytes`), LIBRA's table, for a collective of ``m`` bytes (ASTRA-sim's
``comm_size``: an all-gather's is the per-rank input) on a group spanning ``g[d]`` NPUs of
dimension d (1: the dimension is not used):

- all-reduce, dimensions ascending: ``2 (m/g)(g-1)`` bytes, then m becomes m/g;
- reduce-scatter, ascending: ``(m/g)(g-1)``, then m/g;
- all-gather, descending: ``m (g-1)``, then m*g;
- all-to-all: ``(m/g)(g-1)`` on every used dimension, m unchanged.

A collective takes ``max_d bytes[d] / bw[d]`` (ideal overlap of the dimensions); a message of
``b`` bytes between two NPUs puts ``b`` on every dimension in which their coordinates differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topologies.errors import CollcError, SourcePos
from topologies.topology import Topology
from workloads.model import CollKind

KINDS = ("ring", "fc", "switch")
"""Dimension kinds, as `stack:` specs spell them."""

ASTRA_NAMES = {"ring": "Ring", "fc": "FullyConnected", "switch": "Switch"}
"""The kinds as ASTRA-sim's and LIBRA's files spell them."""


class ExploreError(CollcError):
    """A bandwidth-allocation problem that cannot be set up or solved: a bad network, cost
    model, constraint or workload, or constraints that no allocation satisfies."""


@dataclass(frozen=True)
class Dim:
    """One dimension: ``kind`` (ring, fc or switch) and ``size`` NPUs (>= 2)."""

    kind: str
    size: int


@dataclass(frozen=True)
class Network:
    """A stack of dimensions, dimension 0 innermost."""

    dims: tuple[Dim, ...]

    @property
    def ndims(self) -> int:
        return len(self.dims)

    @property
    def num_npus(self) -> int:
        n = 1
        for d in self.dims:
            n *= d.size
        return n

    @property
    def strides(self) -> tuple[int, ...]:
        out, acc = [], 1
        for d in self.dims:
            out.append(acc)
            acc *= d.size
        return tuple(out)

    def coords(self, npu: int) -> tuple[int, ...]:
        """NPU ``npu``'s coordinate in every dimension."""
        out = []
        for d in self.dims:
            out.append(npu % d.size)
            npu //= d.size
        return tuple(out)

    def label(self) -> str:
        """``ring4*fc8*switch32``: the shape as a `stack:` spec writes it."""
        return "*".join(f"{d.kind}{d.size}" for d in self.dims)


def network_from_kinds(
    kinds: Sequence[str], sizes: Sequence[int], where: SourcePos | None = None
) -> Network:
    """A network from its kinds (``ring``/``fc``/``switch``, or ASTRA-sim's ``Ring``,
    ``FullyConnected``, ``Switch``) and sizes; ExploreError for anything else."""
    if len(kinds) != len(sizes) or not kinds:
        raise ExploreError(
            f"{len(kinds)} dimension kinds but {len(sizes)} sizes (need as many, at least one)",
            where,
        )
    dims = []
    for k, n in zip(kinds, sizes, strict=True):
        kind = {"ring": "ring", "fc": "fc", "fullyconnected": "fc", "switch": "switch"}.get(
            str(k).lower()
        )
        if kind is None:
            raise ExploreError(f"dimension kind {k!r} is not Ring, FullyConnected or Switch", where)
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 1 << 20:
            raise ExploreError(f"dimension size {n!r} is not an integer from 2 to 2^20", where)
        dims.append(Dim(kind, n))
    net = Network(tuple(dims))
    if net.num_npus > 1 << 20:
        raise ExploreError(f"{net.label()} has more than 2^20 NPUs", where)
    return net


def network_from_topology(topology: Topology) -> Network:
    """The dimensions of a `stack:` topology of ring, fc and switch dimensions (or an
    ASTRA-sim network file); ExploreError for any other topology."""
    lay = topology.layout
    if lay is None or any(k not in KINDS for k in lay.kinds) or topology.failed:
        raise ExploreError(
            f"{topology.spec}: LIBRA needs a stack of ring, fc and switch dimensions without "
            "failed links (e.g. stack:ring4*fc8*switch32)"
        )
    return Network(tuple(Dim(k, s) for k, s in zip(lay.kinds, lay.shape, strict=True)))


def group_shape(net: Network, members: Sequence[int], name: str = "") -> tuple[int, ...]:
    """How many NPUs of each dimension the group ``members`` spans (1: none). The group must
    be a box of the grid: every combination of its coordinates, and nothing else, so that
    LIBRA's per-dimension traffic applies. ExploreError naming the group otherwise."""
    what = f"group {name!r}" if name else "a group"
    n = net.num_npus
    seen: list[set[int]] = [set() for _ in net.dims]
    for m in members:
        if not 0 <= m < n:
            raise ExploreError(f"{what} names NPU {m}, but {net.label()} has {n} NPUs")
        for d, c in enumerate(net.coords(m)):
            seen[d].add(c)
    shape = tuple(len(s) for s in seen)
    box = 1
    for s in shape:
        box *= s
    if box != len(set(members)) or len(set(members)) != len(members):
        spans = ", ".join(f"dim {d}: {s}" for d, s in enumerate(shape))
        raise ExploreError(
            f"{what} of {len(members)} NPUs does not fit the dimensions of {net.label()}: "
            f"its coordinates span {spans}, a box of {box} NPUs (LIBRA needs a group that is "
            "a full sub-grid)"
        )
    return shape


def dim_bytes(kind: CollKind, m: float, shape: Sequence[int]) -> tuple[float, ...]:
    """Bytes per NPU that a collective of ``kind`` and ``m`` bytes puts on each dimension,
    for a group spanning ``shape[d]`` NPUs of dimension d (LIBRA's table, module docstring).
    Kinds other than all-reduce, reduce-scatter, all-gather and all-to-all carry nothing."""
    out = [0.0] * len(shape)
    if kind == CollKind.ALL_REDUCE:
        for d, g in enumerate(shape):
            if g > 1:
                out[d] = 2 * m / g * (g - 1)
                m /= g
    elif kind == CollKind.REDUCE_SCATTER:
        for d, g in enumerate(shape):
            if g > 1:
                out[d] = m / g * (g - 1)
                m /= g
    elif kind == CollKind.ALL_GATHER:
        for d in reversed(range(len(shape))):
            g = shape[d]
            if g > 1:
                out[d] = m * (g - 1)
                m *= g
    elif kind == CollKind.ALL_TO_ALL:
        for d, g in enumerate(shape):
            if g > 1:
                out[d] = m / g * (g - 1)
    return tuple(out)


def p2p_bytes(net: Network, src: int, dst: int, nbytes: float) -> tuple[float, ...]:
    """A message's bytes per dimension: ``nbytes`` on every dimension where the coordinates
    of ``src`` and ``dst`` differ."""
    a, b = net.coords(src), net.coords(dst)
    return tuple(float(nbytes) if x != y else 0.0 for x, y in zip(a, b, strict=True))


def link_bandwidths(net: Network, bw: Sequence[float]) -> tuple[float, ...]:
    """The bandwidth of one link of each dimension (bytes per ns) for per-NPU bandwidths
    ``bw``: ring ``bw/2`` (two links per NPU), fc ``bw/(size-1)``, switch ``bw``."""
    out = []
    for d, b in zip(net.dims, bw, strict=True):
        if d.kind == "ring":
            out.append(b / 2 if d.size > 2 else b)
        elif d.kind == "fc":
            out.append(b / (d.size - 1))
        else:
            out.append(b)
    return tuple(out)


def topology_spec(net: Network, bw: Sequence[float], latency_ns: Sequence[float]) -> str:
    """The `stack:` spec of ``net`` with link bandwidths for the allocation ``bw`` and the
    given latencies, for the simulators."""
    from topologies.spec import format_bandwidth

    links = link_bandwidths(net, bw)
    bws = ",".join(format_bandwidth(b) for b in links)
    lats = ",".join(f"{t:g}ns" for t in latency_ns)
    return f"stack:{net.label()},bw=[{bws}],lat=[{lats}]"
