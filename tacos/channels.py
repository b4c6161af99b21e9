"""Channels: the rank-to-rank paths TACOS moves chunks over.

TACOS synthesizes at rank granularity. A *channel* is one fixed route from the NPU of a rank to
the NPU of another rank whose interior holds only nodes that are not ranks: switches, and NPUs
outside the collective's placement (relays, which hold no buffers). A message on a channel is
one Send/Recv pair whose route hint is the channel's node path; it crosses the route hop by hop,
store-and-forward, as the cost model says.

- Between two ranks joined by links, one one-hop channel over the best of their parallel links
  (highest bandwidth, then lowest latency, then lowest index): a route hint names nodes, not
  links, so a simulator crossing that hop takes that link, and the schedule must too.
- Through switches and relays, every rank reachable by a path whose interior avoids ranks gets
  one channel: the breadth-first shortest such path (ties: lowest node id first), with the
  fastest of parallel links on each hop. NPUs outside the placement relay only when the ranks
  are not connected without them (`build_channels`).

Times are integer picoseconds (`to_ps`), so equal times compare equal during synthesis.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from chakra_ir.collective import Collective
from tacos.errors import TacosError
from topologies.cost_model import CostModel
from topologies.topology import Topology


@dataclass(frozen=True)
class LinkCost:
    """One directed link as the synthesizer sees it (``index`` is the topology's link index)."""

    index: int
    src: int
    dst: int
    latency_ns: float
    bandwidth_bytes_per_ns: float


@dataclass(frozen=True)
class Net:
    """A topology reduced to what synthesis needs, possibly transposed.

    ``links[i]`` is the topology's link ``i`` (reversed when ``transposed``), so a link index
    means the same physical link in a net and in its transpose.
    """

    num_npus: int
    num_nodes: int
    links: tuple[LinkCost, ...]
    transposed: bool = False

    @classmethod
    def of(cls, topology: Topology) -> Net:
        links = tuple(
            LinkCost(lk.index, lk.src, lk.dst, lk.latency_ns, lk.bandwidth_bytes_per_ns)
            for lk in topology.links
        )
        return cls(topology.num_npus, topology.num_nodes, links)

    def transpose(self) -> Net:
        """Every link reversed, with its cost and index kept."""
        links = tuple(
            LinkCost(lk.index, lk.dst, lk.src, lk.latency_ns, lk.bandwidth_bytes_per_ns)
            for lk in self.links
        )
        return Net(self.num_npus, self.num_nodes, links, not self.transposed)

    def is_self_transpose(self) -> bool:
        """Whether reversing every link gives the same links with the same costs."""
        fwd = sorted(
            (lk.src, lk.dst, lk.latency_ns, lk.bandwidth_bytes_per_ns) for lk in self.links
        )
        rev = sorted(
            (lk.dst, lk.src, lk.latency_ns, lk.bandwidth_bytes_per_ns) for lk in self.links
        )
        return fwd == rev


@dataclass(frozen=True)
class Channel:
    """A route from rank ``src`` to rank ``dst``: ``nodes`` (NPUs and switches) and ``links``
    (link indices, one per hop)."""

    src: int
    dst: int
    nodes: tuple[int, ...]
    links: tuple[int, ...]


@dataclass(frozen=True)
class Timed:
    """A channel's timing for one chunk size: per hop (link, start offset, serialization) in
    ps from the send's start, and the arrival offset ``dur``."""

    hops: tuple[tuple[int, int, int], ...]
    dur: int


def time_channel(net: Net, ch: Channel, chunk_bytes: float, cost: CostModel) -> Timed:
    """Store-and-forward timing of one chunk along ``ch``, hop by hop as the cost model rounds
    it (`CostModel.hop_ps`: latency + serialization, plus the switch delay into a switch)."""
    hops = []
    off = 0
    for i, li in enumerate(ch.links):
        into_switch = i + 1 < len(ch.links) and ch.nodes[i + 1] >= net.num_npus
        ser, arrive = cost.hop_ps(net.links[li], chunk_bytes, into_switch)
        hops.append((li, off, ser))
        off += arrive
    return Timed(tuple(hops), off)


def check_placement(collective: Collective, topology: Topology) -> list[int]:
    """The NPU of every rank; raises TacosError unless they are distinct NPUs of ``topology``."""
    npus = [collective.npu(r) for r in range(collective.num_ranks)]
    for r, x in enumerate(npus):
        if not 0 <= x < topology.num_npus:
            raise TacosError(
                f"rank {r} is placed on node {x}, which is not an NPU of the "
                f"{topology.num_npus}-NPU topology"
            )
    return npus


def build_channels(net: Net, npus: Sequence[int]) -> list[Channel]:
    """Every channel between the ranks placed on ``npus`` (see the module docstring).

    NPUs outside the placement relay only when the ranks need them: when the channels through
    switches alone connect every rank to every other, no channel crosses another NPU (on a
    torus, a group along one ring keeps to its ring instead of a channel to every member over
    other NPUs, which would take the links of the NPUs it crosses).

    Raises TacosError naming an unreachable pair when the channels do not connect every rank to
    every other.
    """
    direct = _channels(net, npus, relays=False)
    if len(npus) > 1 and _connected(len(npus), direct):
        return direct
    if any(x < net.num_npus for x in range(net.num_nodes) if x not in set(npus)):
        channels = _channels(net, npus, relays=True)
        # Relayed channels with the fewest NPU relays each rank has, when they suffice:
        # longer ones take the links of every NPU they cross.
        short = _fewest_relays(channels, net.num_npus)
        if _connected(len(npus), short):
            channels = short
    else:
        channels = direct
    _check_connected(len(npus), channels, npus, net)
    return channels


def group_channels(net: Net, collective: Collective) -> list[Channel]:
    """Every process group's channels (`build_channels` over the group's NPUs, other NPUs
    relays), with the collective's ranks as ends: a group's chunks travel between its own ranks
    only."""
    c = collective
    out: list[Channel] = []
    for members in c.groups:
        npus = [c.npu(r) for r in members]
        for ch in build_channels(net, npus):
            out.append(Channel(members[ch.src], members[ch.dst], ch.nodes, ch.links))
    return out


def _fewest_relays(channels: list[Channel], num_npus: int) -> list[Channel]:
    """Channels without NPU relays, and per sending rank its relayed channels that cross the
    fewest NPUs."""

    def relays(ch: Channel) -> int:
        return sum(1 for x in ch.nodes[1:-1] if x < num_npus)

    fewest: dict[int, int] = {}
    for ch in channels:
        k = relays(ch)
        if k and k < fewest.get(ch.src, 1 << 30):
            fewest[ch.src] = k
    return [ch for ch in channels if relays(ch) in (0, fewest.get(ch.src, 0))]


def _channels(net: Net, npus: Sequence[int], *, relays: bool) -> list[Channel]:
    """One-hop channels, and the breadth-first channels through switches (and, with
    ``relays``, through NPUs that hold no rank)."""
    rank_of = [-1] * net.num_nodes
    for r, x in enumerate(npus):
        rank_of[x] = r
    out: list[list[LinkCost]] = [[] for _ in range(net.num_nodes)]
    for lk in net.links:
        out[lk.src].append(lk)
    for lst in out:
        lst.sort(key=lambda lk: (lk.dst, -lk.bandwidth_bytes_per_ns, lk.latency_ns, lk.index))
    channels: list[Channel] = []
    first_inner = 0 if relays else net.num_npus
    interior_exists = any(rank_of[x] < 0 for x in range(first_inner, net.num_nodes))
    for u, x in enumerate(npus):
        # One-hop channels: to every neighbouring rank, over the best of parallel links.
        seen_dst: set[int] = set()
        for lk in out[x]:
            v = rank_of[lk.dst]
            if v >= 0 and lk.dst not in seen_dst:
                seen_dst.add(lk.dst)
                channels.append(Channel(u, v, (x, lk.dst), (lk.index,)))
        if not interior_exists:
            continue
        # Multi-hop channels: breadth-first through non-rank nodes only.
        parent: dict[int, LinkCost] = {}
        seen = {x}
        queue = deque([x])
        while queue:
            y = queue.popleft()
            for lk in out[y]:
                z = lk.dst
                if z in seen:
                    continue
                if rank_of[z] < 0 and z < first_inner:
                    continue
                seen.add(z)
                parent[z] = lk
                if rank_of[z] >= 0:
                    if y != x:
                        path_links = [lk]
                        w = y
                        while w != x:
                            plk = parent[w]
                            path_links.append(plk)
                            w = plk.src
                        path_links.reverse()
                        nodes = (x, *(p.dst for p in path_links))
                        links = tuple(p.index for p in path_links)
                        channels.append(Channel(u, rank_of[z], nodes, links))
                else:
                    queue.append(z)
    return channels


def _unreached(n: int, channels: list[Channel]) -> tuple[int, bool] | None:
    """The first rank that rank 0 cannot reach (``True``) or that cannot reach rank 0
    (``False``) over ``channels``; None when they connect every rank to every other."""
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for ch in channels:
        succ[ch.src].append(ch.dst)
        pred[ch.dst].append(ch.src)
    for adj, forward in ((succ, True), (pred, False)):
        seen = [False] * n
        seen[0] = True
        stack = [0]
        while stack:
            a = stack.pop()
            for b in adj[a]:
                if not seen[b]:
                    seen[b] = True
                    stack.append(b)
        for r in range(n):
            if not seen[r]:
                return r, forward
    return None


def _connected(n: int, channels: list[Channel]) -> bool:
    """Whether ``channels`` connect every rank to every other (strongly)."""
    return _unreached(n, channels) is None


def _check_connected(n: int, channels: list[Channel], npus: Sequence[int], net: Net) -> None:
    linked = [False] * n
    for ch in channels:
        linked[ch.src] = linked[ch.dst] = True
    for r in range(n):
        if n > 1 and not linked[r]:
            raise TacosError(f"NPU {npus[r]} (rank {r}) has no links to the other ranks")
    missing = _unreached(n, channels)
    if missing is not None:
        r, forward = missing
        a, b = (0, r) if forward else (r, 0)
        if net.transposed:
            a, b = b, a
        raise TacosError(
            f"NPU {npus[a]} (rank {a}) cannot reach NPU {npus[b]} (rank {b}): the "
            "topology is disconnected"
        )


def channel_hops(topology: Topology, npus: Sequence[int]) -> float:
    """About how many hops the channels of one rank hold together, the mean over the ranks on
    ``npus``, from the topology alone in O(links): a channel to every rank linked directly (one
    hop each), and through every group of switches joined by switch links, a channel to every
    other rank hanging off the group (two hops through one switch, four through several; at
    most one channel per other rank). Synthesis looks over a rank's channels at every step, so
    this weighs each chunk transfer in the work estimate (`collc.pipeline.check_work`)."""
    n = topology.num_npus
    if len(npus) < 2:
        return 0.0
    is_rank = [False] * n
    for x in npus:
        is_rank[x] = True
    parent = list(range(topology.num_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    direct: dict[int, set[int]] = {}
    attached: dict[int, set[int]] = {}  # rank -> switches it links to
    for lk in topology.links:
        s, d = lk.src, lk.dst
        if s >= n and d >= n:
            parent[find(s)] = find(d)
        elif s < n and is_rank[s]:
            if d >= n:
                attached.setdefault(s, set()).add(d)
            elif is_rank[d]:
                direct.setdefault(s, set()).add(d)
    members: dict[int, set[int]] = {}
    switches: dict[int, int] = {}
    for sw in range(n, topology.num_nodes):
        root = find(sw)
        switches[root] = switches.get(root, 0) + 1
    groups_of = {r: {find(sw) for sw in sws} for r, sws in attached.items()}
    for r, roots in groups_of.items():
        for root in roots:
            members.setdefault(root, set()).add(r)
    others = len(npus) - 1
    total = 0
    for r in npus:
        hops = len(direct.get(r, ()))
        for root in groups_of.get(r, ()):
            per = 2 if switches[root] == 1 else 4
            hops += per * min(others, len(members[root]) - 1)
        total += hops
    return total / len(npus)


def mean_route_hops(topology: Topology, npus: Sequence[int]) -> float:
    """The mean number of links on a shortest path from the first of ``npus`` to the others
    (switch hops included; one breadth-first search, O(links)): about how many hops an
    all-to-all block travels (`collc.pipeline.check_work`). 1.0 for fewer than two NPUs."""
    if len(npus) < 2:
        return 1.0
    depth = [-1] * topology.num_nodes
    depth[npus[0]] = 0
    queue = deque([npus[0]])
    while queue:
        u = queue.popleft()
        for v in topology.successors(u):
            if depth[v] < 0:
                depth[v] = depth[u] + 1
                queue.append(v)
    reached = [depth[x] for x in npus[1:] if depth[x] > 0]
    return max(1.0, sum(reached) / len(reached)) if reached else 1.0
