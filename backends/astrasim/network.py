"""collc topologies as ASTRA-sim analytical network YAML (its ``network.yml`` format).

The mapping, dimension by dimension (dimension 0 first, varying fastest, as in both tools):

==================  ======================  ===================================================
collc               ASTRA-sim               per-dimension values
==================  ======================  ===================================================
``ring:N``          ``[Ring]``              the links' bandwidth and latency
``fc:N``            ``[FullyConnected]``    the links' bandwidth and latency
``switch:N``        ``[Switch]``            the NPU<->switch links' bandwidth and latency
``torus:AxB``       ``[Ring, Ring]``        per dimension
``stack:K1N1*...``  K = ring/fc/switch ->   per dimension
                    Ring/FullyConnected/
                    Switch
ASTRA-sim YAML      the same dimensions     the file's values (collc reads it as a stack)
a line of 2 NPUs    ``Ring`` of 2           a line and a ring of 2 NPUs are the same links in
(``hypercube:D``,                           collc (one pair), and ASTRA-sim charges one hop
``mesh:2x2``)                               either way: ``hypercube:D`` is ``[Ring] * D``
==================  ======================  ===================================================

Units: ``bandwidth`` is ASTRA-sim's GB/s, where 1 GB = 2^30 bytes: ``bytes_per_ns * 1e9 /
2^30``, computed exactly and written as the double that reads back into collc as the same
bandwidth (`astra_bandwidth`: collc's 50GB/s = 50e9 B/s is written ``46.566128730773926``;
``50GiB/s`` is written ``50.0``). ``latency`` is ns, per link.

Switch latency: collc's ``switch`` dimension has two links per message (NPU->switch and
switch->NPU), each with its own latency L; ASTRA-sim's Switch charges two hops x the
dimension's latency. So the dimension's latency is the per-link latency L (not 2L), and both
tools charge 2L per message.

Refused (`AstraExportError`): topologies without a grid of Ring/FullyConnected/Switch
dimensions (FRED, ``graph:``, collc link-list files), one-way rings (``uniring``: ASTRA-sim's
Ring is bidirectional), lines of more than 2 NPUs (``mesh``: no wraparound), any failed link,
and a dimension whose links do not all share one bandwidth and one latency (``linkbw=``,
``linklat=``): the YAML has one value per dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from backends.astrasim.errors import AstraExportError
from topologies.files import ASTRA_GB_PER_S_IN_BYTES_PER_NS
from topologies.spec import format_bandwidth, format_latency
from topologies.topology import Link, Topology

ASTRA_NAMES = {"ring": "Ring", "fc": "FullyConnected", "switch": "Switch"}
"""collc dimension kind -> ASTRA-sim topology name."""

_GIB = 2**30
_ULPS = 4


def astra_bandwidth(bytes_per_ns: float) -> float:
    """collc's bytes per ns as ASTRA-sim's GB/s (2^30 bytes per 1e9 ns).

    The result is within a few ulps of the exact quotient ``bytes_per_ns * 1e9 / 2^30``: among
    the doubles that close, the shortest one that collc's reader of ASTRA-sim YAML (which
    multiplies by ``ASTRA_GB_PER_S_IN_BYTES_PER_NS``) turns back into exactly
    ``bytes_per_ns``, so ``50GiB/s`` is written ``50.0`` and a YAML read by collc is written
    back unchanged; when no such double exists, the exact quotient correctly rounded.
    collc's 50GB/s (50e9 B/s) is 46.566128730773926.
    """
    exact = Fraction(bytes_per_ns) * 10**9 / _GIB
    nearest = float(exact)
    found: set[float] = set()
    for base in (nearest, bytes_per_ns / ASTRA_GB_PER_S_IN_BYTES_PER_NS):
        g = base
        for _ in range(_ULPS):
            g = math.nextafter(g, -math.inf)
        for _ in range(2 * _ULPS + 1):
            if g > 0 and g * ASTRA_GB_PER_S_IN_BYTES_PER_NS == bytes_per_ns:
                found.add(g)
            g = math.nextafter(g, math.inf)
    if not found:
        return nearest
    return min(found, key=lambda g: (len(repr(g)), abs(Fraction(g) - exact)))


@dataclass(frozen=True)
class AstraDimension:
    """One dimension of the network YAML: ``topology`` (Ring, FullyConnected or Switch), the
    NPUs in it, the bandwidth in ASTRA-sim GB/s (2^30 B/s) and the per-link latency in ns.
    ``bandwidth_bytes_per_ns`` keeps collc's value the bandwidth was converted from."""

    topology: str
    npus_count: int
    bandwidth: float
    latency: float
    bandwidth_bytes_per_ns: float


def astra_dimensions(topology: Topology) -> tuple[AstraDimension, ...]:
    """The ASTRA-sim dimensions of ``topology``, dimension 0 first; `AstraExportError` when it
    has no exact ASTRA-sim counterpart (see the module docstring)."""
    spec = topology.spec
    if topology.failed:
        pairs = ", ".join(f"{u}>{v}" for u, v in topology.failed[:4])
        more = ", ..." if len(topology.failed) > 4 else ""
        raise AstraExportError(
            f"topology {spec} has failed links ({pairs}{more}); ASTRA-sim's analytical network "
            f"has no failed links"
        )
    lay = topology.layout
    if lay is None or lay.num_npus != topology.num_npus:
        raise AstraExportError(
            f"topology {spec} is not a stack of Ring, FullyConnected and Switch dimensions "
            f"({topology.name} has no ASTRA-sim analytical network)"
        )
    kinds: list[str] = []
    for d, (size, kind) in enumerate(zip(lay.shape, lay.kinds, strict=True)):
        if kind == "line" and size == 2:
            kinds.append("ring")
        elif kind == "line":
            raise AstraExportError(
                f"topology {spec}: dimension {d} is a line of {size} NPUs without wraparound; "
                f"ASTRA-sim has only Ring, FullyConnected and Switch dimensions"
            )
        elif kind == "uniring":
            raise AstraExportError(
                f"topology {spec}: dimension {d} is a one-way ring; ASTRA-sim's analytical Ring "
                f"is bidirectional"
            )
        elif kind in ASTRA_NAMES:
            kinds.append(kind)
        else:
            raise AstraExportError(
                f"topology {spec}: dimension {d} of kind {kind!r} has no ASTRA-sim counterpart"
            )
        if size < 2:
            raise AstraExportError(
                f"topology {spec}: dimension {d} has {size} NPU; ASTRA-sim needs at least 2"
            )
    ndims = len(lay.shape)
    by_dim: list[list[Link]] = [[] for _ in range(ndims)]
    for link in topology.links:
        d = link.dim if link.dim >= 0 else (0 if ndims == 1 else -1)
        if not 0 <= d < ndims:
            raise AstraExportError(
                f"topology {spec}: link {link.src}->{link.dst} belongs to no dimension"
            )
        by_dim[d].append(link)
    dims: list[AstraDimension] = []
    for d, links in enumerate(by_dim):
        name = ASTRA_NAMES[kinds[d]]
        if not links:
            raise AstraExportError(f"topology {spec}: dimension {d} ({name}) has no links")
        first = links[0]
        for link in links:
            if link.bandwidth_bytes_per_ns != first.bandwidth_bytes_per_ns:
                raise AstraExportError(
                    f"topology {spec}: dimension {d} ({name}) has links of different bandwidth "
                    f"({format_bandwidth(first.bandwidth_bytes_per_ns)} on "
                    f"{first.src}->{first.dst}, {format_bandwidth(link.bandwidth_bytes_per_ns)} "
                    f"on {link.src}->{link.dst}); ASTRA-sim takes one bandwidth per dimension"
                )
            if link.latency_ns != first.latency_ns:
                raise AstraExportError(
                    f"topology {spec}: dimension {d} ({name}) has links of different latency "
                    f"({format_latency(first.latency_ns)} on {first.src}->{first.dst}, "
                    f"{format_latency(link.latency_ns)} on {link.src}->{link.dst}); ASTRA-sim "
                    f"takes one latency per dimension"
                )
        dims.append(
            AstraDimension(
                topology=name,
                npus_count=lay.shape[d],
                bandwidth=astra_bandwidth(first.bandwidth_bytes_per_ns),
                latency=float(first.latency_ns),
                bandwidth_bytes_per_ns=first.bandwidth_bytes_per_ns,
            )
        )
    return tuple(dims)


def network_yaml(topology: Topology) -> str:
    """The analytical network YAML of ``topology`` (both ASTRA-sim analytical binaries read
    it): the four lists ``topology``, ``npus_count``, ``bandwidth`` (GB/s = 2^30 B/s) and
    ``latency`` (ns), after a comment naming collc's spec. Numbers are written so that they
    read back as exactly the doubles `astra_dimensions` computed."""
    dims = astra_dimensions(topology)

    def row(values: list[str]) -> str:
        return "[ " + ", ".join(values) + " ]"

    spec = " ".join(topology.spec.splitlines())
    lines = [
        f"# ASTRA-sim analytical network written by collc from the topology {spec}",
        "# dimension 0 first; bandwidth in GB/s of 2^30 bytes per link and direction; latency in",
        "# ns per link (a Switch hop pair is charged twice this latency, as collc's two links)",
        f"topology: {row([d.topology for d in dims])}",
        f"npus_count: {row([str(d.npus_count) for d in dims])}",
        f"bandwidth: {row([repr(d.bandwidth) for d in dims])}",
        f"latency: {row([repr(d.latency) for d in dims])}",
    ]
    return "\n".join(lines) + "\n"
