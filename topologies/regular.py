"""Regular grid topologies described without building them.

``ring``, ``uniring``, ``fc``, ``switch``, ``mesh``, ``torus``, ``hypercube`` and ``stack``
specs with no options but ``bw`` and ``lat`` are Cartesian products of one-dimensional
networks with one bandwidth and latency per dimension (`topologies.generators._grid` builds
them so). `regular_grid` reads such a spec into a `RegularGrid` in time independent of its
size, so that quantities with closed forms (`tacos.bounds.regular_lower_bounds`) can be had for
topologies of millions of links without materializing a `Topology`. Any other spec (failures,
per-link overrides, files, graphs, FRED) gives None: build it with `parse_topology`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topologies.routing import FC, LINE, RING, SWITCH, UNIRING
from topologies.spec import SpecReader, Token, format_per_dim


@dataclass(frozen=True)
class RegularGrid:
    """A grid of NPUs: dimension ``d`` has ``sizes[d]`` positions, kind ``kinds[d]``
    (`topologies.routing` LINE, RING, UNIRING, FC or SWITCH) and links of ``bandwidths[d]`` B/ns
    and ``latencies[d]`` ns. ``spec`` is the canonical spec `parse_topology` would give."""

    spec: str
    sizes: tuple[int, ...]
    kinds: tuple[str, ...]
    bandwidths: tuple[float, ...]
    latencies: tuple[float, ...]

    @property
    def num_npus(self) -> int:
        return math.prod(self.sizes)

    @property
    def num_switches(self) -> int:
        return sum(
            self.num_npus // s for s, k in zip(self.sizes, self.kinds, strict=True) if k == SWITCH
        )

    def dim_links(self, d: int) -> int:
        """Directed links of dimension ``d`` (for a switch dimension: NPU-to-switch ones)."""
        s, k, n = self.sizes[d], self.kinds[d], self.num_npus
        lines = n // s
        if s == 1:
            return 0
        if k == LINE or (k == RING and s == 2):
            return 2 * (s - 1) * lines
        if k == RING:
            return 2 * n
        if k == UNIRING:
            return n
        if k == FC:
            return n * (s - 1)
        return n  # SWITCH: one up link per NPU

    @property
    def num_links(self) -> int:
        """Every directed link, switch down links included."""
        return sum(self.dim_links(d) * (2 if k == SWITCH else 1) for d, k in enumerate(self.kinds))


_SIMPLE = {"ring": RING, "uniring": UNIRING, "fc": FC, "switch": SWITCH}


def regular_grid(spec: str) -> RegularGrid | None:
    """The grid ``spec`` describes, or None when it is not a plain regular grid. Raises the
    SpecError `parse_topology` would raise for a malformed spec of a grid kind (its size
    limits included)."""
    from topologies import build, generators

    reader = SpecReader(spec)
    syntax = reader.syntax()
    if set(syntax.options) - {"bw", "lat"}:
        return None
    kind, shape = syntax.kind, syntax.shape
    sizes: tuple[int, ...]
    kinds: tuple[str, ...]
    if kind in _SIMPLE:
        sizes = (reader.integer(shape, f"{kind} NPU count", 2),)
        kinds = (_SIMPLE[kind],)
        head = f"{kind}:{sizes[0]}"
    elif kind in ("mesh", "torus"):
        sizes = tuple(
            reader.integer(part, f"{kind} dimension", 2) for part in reader.split(shape, "x")
        )
        kinds = (LINE if kind == "mesh" else RING,) * len(sizes)
        head = f"{kind}:{'x'.join(map(str, sizes))}"
    elif kind == "hypercube":
        d = reader.integer(shape, "hypercube dimension", 1)
        if d > build._MAX_HYPERCUBE:
            return None  # parse_topology names the limit
        sizes, kinds = (2,) * d, (LINE,) * d
        head = f"hypercube:{d}"
    elif kind == "stack":
        dims: list[tuple[int, str]] = []
        for part in reader.split(shape, "*"):
            m = build._STACK_DIM.fullmatch(part.text)
            if m is None:
                return None
            size_token = Token(m.group(2), part.col + len(m.group(1)))
            size = reader.integer(size_token, f"stack dimension {part.text!r} size", 2)
            dims.append((size, build._STACK_KINDS[m.group(1).lower()]))
        sizes = tuple(s for s, _ in dims)
        kinds = tuple(k for _, k in dims)
        names = "*".join(
            f"{generators.STACK_NAMES[k]}{s}" for s, k in zip(sizes, kinds, strict=True)
        )
        head = f"stack:{names}"
    else:
        return None
    bw, lat = build._values(reader, syntax, len(sizes), generators.DEFAULT_BANDWIDTH)
    # NPUs are limited as for a built topology; links are not, since none are built here.
    generators.check_size(math.prod(sizes), 0, reader.pos(shape.col))
    opts = f"bw={format_per_dim(bw, bw=True)},lat={format_per_dim(lat, bw=False)}"
    return RegularGrid(f"{head},{opts}", sizes, kinds, tuple(bw), tuple(lat))
