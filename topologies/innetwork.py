"""Where an in-network flow runs: the tree of links between its inputs and its outputs.

A topology whose switches reduce and multicast (`Topology.in_network`: FRED, a
``switch:N,innet=yes``) is a tree of switches with the NPUs as leaves. Rooted at its last node
(FRED's L2 switch, the one switch of ``switch:N``), every node has one parent. A flow with
input NPUs I and output NPUs O runs on:

- its root: the deepest common ancestor of I and O (an L1 switch when every NPU of the flow
  hangs off it, else the L2 switch);
- up edges ``(child, parent)``: every link on the path from an input up to the root. A switch
  sums what its up children send, piece by piece, and passes the sum on;
- down edges ``(parent, child)``: every link on the path from the root down to an output. A
  switch copies what it receives onto each of its down children.

Each up and each down edge carries the flow's bytes exactly once, however many inputs and
outputs meet there: that is the whole saving of in-network collectives.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from topologies.errors import TopologyError
from topologies.routing import bfs_parents
from topologies.topology import Topology


@dataclass(frozen=True)
class FlowTree:
    """The links one flow uses (see the module docstring).

    ``up`` lists ``(child, parent)`` node pairs, deeper edges first, so every node's
    incoming up edges come before its own; ``down`` lists ``(parent, child)`` pairs, the
    root's first. ``depth`` is the number of links from the root down to its deepest NPU.
    """

    root: int
    up: tuple[tuple[int, int], ...]
    down: tuple[tuple[int, int], ...]

    @property
    def links(self) -> int:
        """How many links the flow crosses (each carries its bytes once)."""
        return len(self.up) + len(self.down)


class FlowTrees:
    """The flow trees of one in-network topology; builds its parent table once.

    Raises TopologyError when the topology has no reducing switches or its switches do not
    form a tree over the NPUs (only FRED and ``switch:N`` can be in-network).
    """

    def __init__(self, topology: Topology) -> None:
        if not topology.in_network:
            raise TopologyError(
                f"{topology.spec} has no switches that reduce and multicast, so in-network "
                "flows cannot run on it (FRED: fred:N; a reducing switch: switch:N,innet=yes)"
            )
        self.topology = topology
        root = topology.num_nodes - 1
        succ = [topology.successors(v) for v in range(topology.num_nodes)]
        self.parent = bfs_parents(succ, root)
        self.parent[root] = -1
        for v in range(topology.num_nodes):
            if v != root and self.parent[v] < 0:
                raise TopologyError(f"node {v} of {topology.spec} is not under its root {root}")
        for v in range(topology.num_npus):
            if succ[v] != (self.parent[v],) or not topology.is_switch(self.parent[v]):
                raise TopologyError(
                    f"{topology.spec}: in-network flows need every NPU to hang off one switch, "
                    f"and NPU {v} does not"
                )
        self.depth = [self._depth_of(v) for v in range(topology.num_nodes)]
        self._cache: dict[tuple[tuple[int, ...], tuple[int, ...]], FlowTree] = {}

    def _depth_of(self, v: int) -> int:
        d = 0
        while self.parent[v] >= 0:
            v = self.parent[v]
            d += 1
        return d

    def tree(self, inputs: Sequence[int], outputs: Sequence[int]) -> FlowTree:
        """The tree of a flow from the NPUs ``inputs`` to the NPUs ``outputs``."""
        key = (tuple(sorted(set(inputs))), tuple(sorted(set(outputs))))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        ins, outs = key
        nodes = sorted(set(ins) | set(outs))
        if len(nodes) < 2:
            raise TopologyError(f"a flow needs at least two NPUs, got {nodes}")
        for v in nodes:
            if not 0 <= v < self.topology.num_npus:
                raise TopologyError(f"{v} is not an NPU of {self.topology.spec}")
        root = self._common_ancestor(nodes)
        up = {(c, p) for v in ins for c, p in self._climb(v, root)}
        down = {(p, c) for v in outs for c, p in self._climb(v, root)}
        depth = self.depth
        tree = FlowTree(
            root,
            tuple(sorted(up, key=lambda e: (-depth[e[0]], e))),
            tuple(sorted(down, key=lambda e: (depth[e[1]], e))),
        )
        self._cache[key] = tree
        return tree

    def _climb(self, v: int, root: int) -> Iterator[tuple[int, int]]:
        """The tree edges (child, parent) from node ``v`` up to ``root``."""
        while v != root:
            p = self.parent[v]
            yield v, p
            v = p

    def _common_ancestor(self, nodes: Sequence[int]) -> int:
        depth, parent = self.depth, self.parent
        frontier = set(nodes)
        while len(frontier) > 1:
            deepest = max(depth[v] for v in frontier)
            frontier = {parent[v] if depth[v] == deepest else v for v in frontier}
        return frontier.pop()
