"""Routing strategies: the preferred node path between two NPUs, and the shortest-path fallback.

A router proposes a path from the structure of its generator (dimension order on grids, up and
down a tree for FRED). `Topology.route` checks that every hop of the proposal still has a link
and otherwise, or when a router proposes nothing, takes a breadth-first shortest path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Per-dimension kinds of a grid layout.
LINE = "line"  # a path: mesh dimensions
RING = "ring"  # a bidirectional cycle: torus dimensions, ring:N, stack Ring dimensions
UNIRING = "uniring"  # a one-way cycle i -> i+1
FC = "fc"  # fully connected
SWITCH = "switch"  # one switch node per group of the dimension
DIM_KINDS = (LINE, RING, UNIRING, FC, SWITCH)


@dataclass(frozen=True)
class GridLayout:
    """NPUs on a grid of ``shape`` (dimension 0 varies fastest), one kind per dimension.

    Switch dimensions have one switch node per group (the NPUs that differ only in that
    dimension); the switches of dimension ``d`` are numbered from ``switch_base[d]`` in the order
    of the smallest NPU id of their group. ``switch_base[d]`` is -1 for other kinds.
    """

    shape: tuple[int, ...]
    kinds: tuple[str, ...]
    switch_base: tuple[int, ...]
    strides: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        strides = []
        acc = 1
        for size in self.shape:
            strides.append(acc)
            acc *= size
        object.__setattr__(self, "strides", tuple(strides))

    @property
    def num_npus(self) -> int:
        """The product of the shape."""
        n = 1
        for size in self.shape:
            n *= size
        return n

    def coord(self, node: int, dim: int) -> int:
        """The coordinate of NPU ``node`` in dimension ``dim``."""
        return (node // self.strides[dim]) % self.shape[dim]

    def group(self, node: int, dim: int) -> int:
        """The index of ``node``'s group in dimension ``dim`` (its coordinates without ``dim``)."""
        stride = self.strides[dim]
        return node % stride + (node // (stride * self.shape[dim])) * stride

    def switch_of(self, node: int, dim: int) -> int:
        """The switch node serving ``node`` in switch dimension ``dim``."""
        return self.switch_base[dim] + self.group(node, dim)


class Router:
    """Proposes a route; the base class proposes none, so every route is a shortest path."""

    def preferred(self, src: int, dst: int) -> list[int] | None:
        """The node path ``src .. dst`` this topology's routing rule picks, or None."""
        return None


class ShortestPathRouter(Router):
    """Breadth-first shortest paths only (graphs and files)."""


class GridRouter(Router):
    """Dimension-order routing over a `GridLayout`, lowest dimension first.

    Inside a dimension: a line walks straight, a ring takes the shorter way (ties to the
    positive direction), a one-way ring walks forward, fully connected jumps directly, a switch
    dimension goes through that group's switch.
    """

    def __init__(self, layout: GridLayout) -> None:
        self.layout = layout

    def preferred(self, src: int, dst: int) -> list[int] | None:
        layout = self.layout
        path = [src]
        cur = src
        for dim, (size, kind) in enumerate(zip(layout.shape, layout.kinds, strict=True)):
            stride = layout.strides[dim]
            c = (cur // stride) % size
            t = (dst // stride) % size
            if c == t:
                continue
            if kind == LINE:
                step = 1 if t > c else -1
                while c != t:
                    c += step
                    cur += step * stride
                    path.append(cur)
            elif kind in (RING, UNIRING):
                forward = (t - c) % size
                if kind == UNIRING or forward <= size - forward:
                    step, count = 1, forward
                else:
                    step, count = -1, size - forward
                for _ in range(count):
                    nxt = (c + step) % size
                    cur += (nxt - c) * stride
                    c = nxt
                    path.append(cur)
            elif kind == FC:
                cur += (t - c) * stride
                path.append(cur)
            else:
                path.append(layout.switch_of(cur, dim))
                cur += (t - c) * stride
                path.append(cur)
        return path


class TreeRouter(Router):
    """FRED's two-level tree: up to the NPU's L1 switch, through L2 if the L1s differ, down."""

    def __init__(self, npus_per_l1: int, first_l1: int, l2: int) -> None:
        self.npus_per_l1 = npus_per_l1
        self.first_l1 = first_l1
        self.l2 = l2

    def preferred(self, src: int, dst: int) -> list[int] | None:
        a = self.first_l1 + src // self.npus_per_l1
        b = self.first_l1 + dst // self.npus_per_l1
        if a == b:
            return [src, a, dst]
        return [src, a, self.l2, b, dst]


def bfs_parents(successors: Sequence[Sequence[int]], src: int) -> list[int]:
    """Breadth-first tree from ``src``: ``parent[v]`` (``src`` for itself, -1 if unreachable).

    Successors are visited in the order given (ascending node id in `Topology`), so the
    first-found parent makes shortest paths deterministic.
    """
    parent = [-1] * len(successors)
    parent[src] = src
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for v in successors[u]:
            if parent[v] < 0:
                parent[v] = u
                queue.append(v)
    return parent


def path_from_parents(parent: Sequence[int], src: int, dst: int) -> list[int] | None:
    """The path ``src .. dst`` recorded in a `bfs_parents` tree, or None if unreachable."""
    if parent[dst] < 0:
        return None
    path = [dst]
    while path[-1] != src:
        path.append(parent[path[-1]])
    path.reverse()
    return path
