"""Where the page draws each node and link of a topology, as users draw it.

- rings, one-way rings and fully connected networks: the NPUs on a circle;
- meshes, tori, hypercubes and stacks: a grid, dimension 0 across and dimension 1 down; the
  layers of higher dimensions side by side in a grid of blocks. A link between two NPUs that
  are not neighbours on the drawing (a torus's wraparound, a link between layers) is a stub
  leaving its NPU: wraparounds point out of the grid's edge, links between layers point
  diagonally (up-right towards the next layer, down-left towards the previous one). The
  switch of a switch dimension sits beside the NPUs of its group;
- ``switch:N``: the NPUs in a row under their switch; FRED: NPUs, L1 switches and the L2
  switch as a three-level tree;
- anything else (graphs, files): a spring layout (networkx, seeded, so it is stable).

Coordinates are in drawing units (one unit between grid neighbours); the page scales them to
its canvas. Each link is drawn from its source: as a line to its destination (``bend`` > 0
curves it, to keep a fully connected dimension's chords off the NPUs between them) or as a
stub of direction ``(dx, dy)``. The page offsets the two directions of a pair to either side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topologies.routing import SWITCH
from topologies.topology import Topology

LINE = 0
"""A link drawn from its source to its destination (`LinkShape.kind`)."""
STUB = 1
"""A link drawn as a short stub leaving its source towards ``(dx, dy)``."""


@dataclass(frozen=True)
class LinkShape:
    """How one link is drawn: ``kind`` `LINE` with ``a`` = bend, or `STUB` with ``(a, b)`` =
    its unit direction."""

    kind: int
    a: float = 0.0
    b: float = 0.0


@dataclass(frozen=True)
class Layout:
    """Per node ``(x, y)`` (NPUs then switches), per link its `LinkShape`, and ``style``: the
    name of the rule that placed them (``circle``, ``grid``, ``tree``, ``spring``)."""

    xy: tuple[tuple[float, float], ...]
    links: tuple[LinkShape, ...]
    style: str


def layout(topology: Topology) -> Layout:
    """The drawing of ``topology`` (see the module docstring)."""
    name = topology.name
    if name in ("ring", "uniring", "fc"):
        return _finish(topology, _circle(topology.num_npus), "circle")
    if name == "switch":
        n = topology.num_npus
        xy = [(float(i), 0.0) for i in range(n)] + [((n - 1) / 2.0, -max(2.0, n / 6.0))]
        return _finish(topology, xy, "tree")
    if name == "fred":
        return _finish(topology, _fred(topology), "tree")
    if topology.layout is not None and name in ("mesh", "torus", "hypercube", "stack"):
        return _grid(topology)
    return _finish(topology, _spring(topology), "spring")


def _circle(n: int) -> list[tuple[float, float]]:
    r = max(1.0, n / (2 * math.pi))  # neighbours one unit apart
    return [
        (
            r * math.cos(2 * math.pi * i / n - math.pi / 2),
            r * math.sin(2 * math.pi * i / n - math.pi / 2),
        )
        for i in range(n)
    ]


def _fred(topology: Topology) -> list[tuple[float, float]]:
    n = topology.num_npus
    xy: list[tuple[float, float]] = [(float(i), 0.0) for i in range(n)]
    l2 = topology.num_nodes - 1
    height = max(1.5, n / 12.0)
    for s in range(n, l2):
        below = [lk.dst for lk in topology.out_links(s) if lk.dst < n]
        x = sum(below) / len(below) if below else 0.0
        xy.append((x, -height))
    xy.append(((n - 1) / 2.0, -2 * height))
    return xy


def _spring(topology: Topology) -> list[tuple[float, float]]:
    import networkx as nx

    g: nx.Graph[int] = nx.Graph()
    g.add_nodes_from(range(topology.num_nodes))
    g.add_edges_from((lk.src, lk.dst) for lk in topology.links)
    n = topology.num_nodes
    pos = nx.spring_layout(g, seed=1, scale=max(1.0, math.sqrt(n)))
    return [(float(pos[v][0]), float(pos[v][1])) for v in range(n)]


def _grid(topology: Topology) -> Layout:
    lay = topology.layout
    assert lay is not None
    shape = lay.shape
    n = topology.num_npus
    w = shape[0]
    h = shape[1] if len(shape) > 1 else 1
    layers = n // (w * h)
    cols = max(1, math.ceil(math.sqrt(layers * h / w))) if layers > 1 else 1
    cols = min(cols, layers)
    gap = 1.5
    xy: list[tuple[float, float]] = []
    for v in range(n):
        x = lay.coord(v, 0)
        y = lay.coord(v, 1) if len(shape) > 1 else 0
        layer = v // (w * h)
        bx, by = layer % cols, layer // cols
        xy.append((bx * (w - 1 + gap + 1) + x, by * (h - 1 + gap + 1) + y))
    # switches of switch dimensions: beside the NPUs of their group
    sw_xy: dict[int, tuple[float, float]] = {}
    for d, kind in enumerate(lay.kinds):
        if kind != SWITCH:
            continue
        groups: dict[int, list[int]] = {}
        for v in range(n):
            groups.setdefault(lay.switch_of(v, d), []).append(v)
        for s, members in groups.items():
            mx = sum(xy[v][0] for v in members) / len(members)
            my = sum(xy[v][1] for v in members) / len(members)
            sw_xy[s] = (mx + 0.3 * (d + 1), my - 0.45 * (d + 1))
    xy.extend(sw_xy.get(s, (0.0, -1.0)) for s in range(n, topology.num_nodes))
    shapes: list[LinkShape] = []
    for lk in topology.links:
        (x0, y0), (x1, y1) = xy[lk.src], xy[lk.dst]
        dx, dy = x1 - x0, y1 - y0
        if lk.src >= n or lk.dst >= n:
            shapes.append(LinkShape(LINE))
            continue
        dim = _dim_of(lay.strides, shape, lk.src, lk.dst)
        same_layer = dim is not None and dim < 2
        adjacent = abs(dx) + abs(dy) <= 1.0001
        if adjacent:
            shapes.append(LinkShape(LINE))
        elif same_layer and dim is not None and lay.kinds[dim] == "fc":
            shapes.append(LinkShape(LINE, 0.25))
        elif same_layer:  # wraparound: out of the edge, away from where the far end lies
            norm = math.hypot(dx, dy) or 1.0
            shapes.append(LinkShape(STUB, -dx / norm, -dy / norm))
        else:
            forward = (
                dim is not None
                and lay.coord(lk.dst, dim) == (lay.coord(lk.src, dim) + 1) % shape[dim]
            )
            diag = math.sqrt(0.5)
            shapes.append(LinkShape(STUB, diag, -diag) if forward else LinkShape(STUB, -diag, diag))
    return Layout(tuple(xy), tuple(shapes), "grid")


def _dim_of(strides: tuple[int, ...], shape: tuple[int, ...], a: int, b: int) -> int | None:
    """The one dimension in which NPUs ``a`` and ``b`` differ, or None."""
    diff = [d for d, s in enumerate(strides) if (a // s) % shape[d] != (b // s) % shape[d]]
    return diff[0] if len(diff) == 1 else None


def _finish(topology: Topology, xy: list[tuple[float, float]], style: str) -> Layout:
    return Layout(tuple(xy), tuple(LinkShape(LINE) for _ in topology.links), style)
