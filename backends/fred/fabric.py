"""The physical switches of an in-network tree (``fred:N``, ``switch:N,innet=yes``) as
FRED_m(P) switches, and what one program flow asks of each of them.

**Ports.** Every port of a FRED_m(P) runs at the NPU link's bandwidth (the paper's switch
bandwidth equals its link bandwidth), so a switch-to-switch link of bandwidth B is
``max(1, floor(B / npu bandwidth))`` ports, each at B divided by that count: on ``fred:20``
(FRED-C/D) an L1 switch has 4 NPU ports and 4 up ports (FRED_m(8)) and L2 has 5 x 4 ports
(FRED_m(20)); on FRED-A/B the L1-L2 link is one port at 1.5 TB/s (L1: FRED_m(5), L2:
FRED_m(5)). A switch numbers its ports by neighbour: its children in node order (each with
its ports in a row), then its parent's ports last. Port k towards a neighbour is input k on
one side and output k on the other: the two directions are allocated separately.

**Switch flows.** A program flow runs on its tree (`topologies.innetwork.FlowTree`). At its
root switch it is one `LocalFlow` from the child ports its inputs come up by to the child
ports its outputs go down by; at any other switch of the tree it is up to two: the sum going
up (child ports to one parent port) and the result coming down (one parent port to child
ports). `PortAllocator` gives each flow its own port of every switch-to-switch link it
crosses, per direction, within one phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from backends.fred.clos import LocalFlow
from backends.fred.errors import FredError
from topologies.errors import TopologyError
from topologies.innetwork import FlowTree, FlowTrees
from topologies.topology import Topology


@dataclass(frozen=True)
class Switch:
    """One physical switch: its ``node``, ``name`` (``L1-0``, ``L2``), ``ports`` (P of its
    FRED_m(P)), ``parent`` node (-1 at the root) and ``base[n]``, the first of its ports
    towards neighbour ``n``."""

    node: int
    name: str
    ports: int
    parent: int
    base: dict[int, int]


@dataclass
class Fabric:
    """The switches of an in-network topology (see the module docstring). ``width[(a, b)]``
    is how many ports the link a->b is, ``port_rate[(a, b)]`` each one's bytes/ns and
    ``latency[(a, b)]`` the link's ns."""

    topology: Topology
    trees: FlowTrees
    switches: dict[int, Switch]
    width: dict[tuple[int, int], int]
    port_rate: dict[tuple[int, int], float]
    latency: dict[tuple[int, int], float]

    @classmethod
    def of(cls, topology: Topology) -> Fabric:
        """The fabric of ``topology``; FredError when it has no reducing switches in a tree."""
        try:
            trees = FlowTrees(topology)
        except TopologyError as e:
            raise FredError(f"--target fred: {e.message}") from None
        npu_rate = min(
            lk.bandwidth_bytes_per_ns
            for v in range(topology.num_npus)
            for lk in topology.out_links(v)
        )
        width: dict[tuple[int, int], int] = {}
        rate: dict[tuple[int, int], float] = {}
        lat: dict[tuple[int, int], float] = {}
        for lk in topology.links:
            key = (lk.src, lk.dst)
            bw = lk.bandwidth_bytes_per_ns
            w = 1 if min(key) < topology.num_npus else max(1, int(bw / npu_rate + 1e-9))
            width[key] = w
            rate[key] = bw / w
            lat[key] = lk.latency_ns
        parent = trees.parent
        children: dict[int, list[int]] = {}
        for v in range(topology.num_nodes):
            if parent[v] >= 0:
                children.setdefault(parent[v], []).append(v)
        height = [0] * topology.num_nodes
        for v in sorted(range(topology.num_nodes), key=lambda x: -trees.depth[x]):
            if parent[v] >= 0 and topology.is_switch(parent[v]):
                height[parent[v]] = max(height[parent[v]], height[v] + 1)
        per_level: dict[int, list[int]] = {}
        for s in range(topology.num_npus, topology.num_nodes):
            per_level.setdefault(height[s], []).append(s)
        switches: dict[int, Switch] = {}
        for h, nodes in per_level.items():
            for j, s in enumerate(sorted(nodes)):
                name = f"L{h}" if len(nodes) == 1 else f"L{h}-{j}"
                base: dict[int, int] = {}
                at = 0
                neighbours = sorted(children.get(s, []))
                if parent[s] >= 0:
                    neighbours.append(parent[s])
                for n in neighbours:
                    base[n] = at
                    at += width[(n, s)]
                switches[s] = Switch(s, name, at, parent[s], base)
        return cls(topology, trees, switches, width, rate, lat)

    def switch_named(self, name: str) -> Switch | None:
        return next((s for s in self.switches.values() if s.name == name), None)


@dataclass
class PortAllocator:
    """Ports of switch-to-switch links handed out to the flows of one phase."""

    fabric: Fabric
    used: dict[tuple[int, int], int] = field(default_factory=dict)

    def fits(self, tree: FlowTree) -> bool:
        """Whether every link of ``tree`` has a free port left in its direction."""
        for a, b in (*tree.up, *tree.down):
            if self.used.get((a, b), 0) >= self.fabric.width[(a, b)]:
                return False
        return True

    def take(self, a: int, b: int) -> int:
        k = self.used.get((a, b), 0)
        if k >= self.fabric.width[(a, b)]:
            raise FredError(f"no free port left on the link {a}->{b}")
        self.used[(a, b)] = k + 1
        return k


@dataclass(frozen=True)
class FlowAtSwitch:
    """What one program flow asks of one switch: its local flows (one or two, see the module
    docstring), in the switch's port numbers."""

    switch: int
    flows: tuple[LocalFlow, ...]


def switch_flows(
    fabric: Fabric, tree: FlowTree, alloc: PortAllocator, flow_id: int
) -> list[FlowAtSwitch]:
    """The local flows of one program flow at every switch of its tree (ports taken from
    ``alloc``); every local flow carries ``flow_id``."""
    port: dict[tuple[int, int], int] = {}
    for a, b in (*tree.up, *tree.down):
        port[(a, b)] = alloc.take(a, b)
    sw = fabric.switches
    nodes = sorted({x for e in (*tree.up, *tree.down) for x in e if x in sw})
    out: list[FlowAtSwitch] = []
    for s in nodes:
        base = sw[s].base
        up_in = sorted(base[c] + port[(c, p)] for c, p in tree.up if p == s)
        down_out = sorted(base[c] + port[(p, c)] for p, c in tree.down if p == s)
        local: list[LocalFlow] = []
        if s == tree.root:
            local.append(LocalFlow(flow_id, tuple(up_in), tuple(down_out)))
        else:
            par = sw[s].parent
            if up_in:
                local.append(LocalFlow(flow_id, tuple(up_in), (base[par] + port[(s, par)],)))
            if down_out:
                local.append(LocalFlow(flow_id, (base[par] + port[(par, s)],), tuple(down_out)))
        out.append(FlowAtSwitch(s, tuple(local)))
    return out


def flow_rate_and_latency(fabric: Fabric, tree: FlowTree) -> tuple[float, float, int]:
    """(bytes/ns, ns, links): the slowest port a flow crosses, the latency of its longest
    input-to-output path and that path's links."""
    edges = (*tree.up, *tree.down)
    rate = min(fabric.port_rate[e] for e in edges)
    up_lat: dict[int, float] = {}
    for c, p in tree.up:  # deeper edges first
        up_lat[p] = max(up_lat.get(p, 0.0), up_lat.get(c, 0.0) + fabric.latency[(c, p)])
    up_hops: dict[int, int] = {}
    for c, p in tree.up:
        up_hops[p] = max(up_hops.get(p, 0), up_hops.get(c, 0) + 1)
    down_lat: dict[int, float] = {tree.root: up_lat.get(tree.root, 0.0)}
    down_hops: dict[int, int] = {tree.root: up_hops.get(tree.root, 0)}
    for p, c in tree.down:  # the root's first
        down_lat[c] = down_lat[p] + fabric.latency[(p, c)]
        down_hops[c] = down_hops[p] + 1
    leaves = [c for _, c in tree.down] or [tree.root]
    return rate, max(down_lat[c] for c in leaves), max(down_hops[c] for c in leaves)


def describe_ports(switch: Switch, ports: Sequence[int], fabric: Fabric) -> str:
    """``NPU 3``, ``L2 port 1`` style names of a switch's ports (messages)."""
    names = []
    for p in ports:
        n = max((x for x, b in switch.base.items() if b <= p), key=lambda x: switch.base[x])
        k = p - switch.base[n]
        who = f"NPU {n}" if n < fabric.topology.num_npus else fabric.switches[n].name
        names.append(who if fabric.width[(n, switch.node)] == 1 else f"{who} #{k}")
    return ", ".join(names)
