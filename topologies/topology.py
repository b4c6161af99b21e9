"""`Link` and `Topology`: an immutable directed multigraph of NPUs and switches."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topologies.errors import TopologyError
from topologies.routing import (
    GridLayout,
    Router,
    ShortestPathRouter,
    bfs_parents,
    path_from_parents,
)

if TYPE_CHECKING:
    import networkx as nx

#: ``(src, dst, latency_ns, bandwidth_bytes_per_ns, dim)``: a link before it gets its index.
LinkSpec = tuple[int, int, float, float, int]


@dataclass(frozen=True, slots=True)
class Link:
    """One directed link. ``index`` is its position in `Topology.links`.

    ``dim`` is the grid dimension the link belongs to on mesh, torus, hypercube (the bit) and
    stack topologies, and -1 elsewhere.
    """

    index: int
    src: int
    dst: int
    latency_ns: float
    bandwidth_bytes_per_ns: float
    dim: int = -1


class Topology:
    """An immutable network: NPUs ``0..num_npus-1``, then switches up to ``num_nodes-1``.

    ``links`` holds the directed links that exist (failed ones are removed, and listed as
    directed pairs in ``failed``); several links may join one pair. ``spec`` is the canonical
    spec string: ``parse_topology(t.spec) == t``. Equality and hashing compare content only
    (``num_npus``, ``num_nodes`` and the links without their indices), not the spec.

    Build topologies with `parse_topology`, `load_topology_file` or `from_networkx`; the
    constructor is for those builders.
    """

    def __init__(
        self,
        *,
        spec: str,
        name: str,
        num_npus: int,
        num_switches: int,
        links: Iterable[LinkSpec],
        shape: tuple[int, ...] = (),
        dim_kinds: tuple[str, ...] = (),
        failed: Iterable[tuple[int, int]] = (),
        router: Router | None = None,
        layout: GridLayout | None = None,
        in_network: bool = False,
    ) -> None:
        self._spec = spec
        self._in_network = in_network
        self._name = name
        self._num_npus = num_npus
        self._num_nodes = num_npus + num_switches
        self._shape = shape
        self._dim_kinds = dim_kinds
        self._failed = tuple(sorted(set(failed)))
        self._router: Router = router if router is not None else ShortestPathRouter()
        self._layout = layout
        self._links = tuple(
            Link(i, s, d, float(lat), float(bw), dim)
            for i, (s, d, lat, bw, dim) in enumerate(links)
        )
        n = self._num_nodes
        out: list[list[Link]] = [[] for _ in range(n)]
        inn: list[list[Link]] = [[] for _ in range(n)]
        pair: dict[tuple[int, int], list[Link]] = {}
        for link in self._links:
            if not (0 <= link.src < n and 0 <= link.dst < n) or link.src == link.dst:
                raise TopologyError(f"bad link {link.src}->{link.dst} in a {n}-node topology")
            out[link.src].append(link)
            inn[link.dst].append(link)
            pair.setdefault((link.src, link.dst), []).append(link)
        self._out = tuple(tuple(x) for x in out)
        self._in = tuple(tuple(x) for x in inn)
        self._pair = {k: tuple(v) for k, v in pair.items()}
        self._succ = tuple(tuple(sorted({lk.dst for lk in x})) for x in out)
        self._pred = tuple(tuple(sorted({lk.src for lk in x})) for x in inn)
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}
        self._route_links: dict[tuple[int, int], tuple[int, ...]] = {}
        self._bfs: dict[int, list[int]] = {}
        self._key: tuple[int, int, bool, tuple[tuple[int, int, float, float, int], ...]] | None = (
            None
        )

    # --- plain attributes -------------------------------------------------------------------

    @property
    def spec(self) -> str:
        """The canonical spec string; `parse_topology` rebuilds an equal topology from it."""
        return self._spec

    @property
    def name(self) -> str:
        """The generator kind: ring, uniring, fc, switch, mesh, torus, hypercube, stack, fred,
        file or graph."""
        return self._name

    @property
    def in_network(self) -> bool:
        """Whether the switches reduce and multicast while forwarding (FRED's µSwitches; a
        ``switch:N,innet=yes``), so a program may use in-network flows
        (`topologies.innetwork`)."""
        return self._in_network

    @property
    def num_npus(self) -> int:
        """NPUs are nodes ``0..num_npus-1``."""
        return self._num_npus

    @property
    def num_nodes(self) -> int:
        """NPUs plus switches; switches are nodes ``num_npus..num_nodes-1``."""
        return self._num_nodes

    @property
    def num_switches(self) -> int:
        """``num_nodes - num_npus``."""
        return self._num_nodes - self._num_npus

    @property
    def links(self) -> tuple[Link, ...]:
        """Every directed link that exists; ``links[i].index == i``."""
        return self._links

    @property
    def shape(self) -> tuple[int, ...]:
        """Grid shape of mesh, torus and stack topologies (dimension 0 fastest), else ()."""
        return self._shape

    @property
    def dim_kinds(self) -> tuple[str, ...]:
        """One kind per entry of ``shape``: 'line' (mesh), 'ring', 'fc' or 'switch'."""
        return self._dim_kinds

    @property
    def failed(self) -> tuple[tuple[int, int], ...]:
        """The directed ``(u, v)`` pairs whose links were removed by failures, sorted."""
        return self._failed

    @property
    def layout(self) -> GridLayout | None:
        """The grid behind a ring, uniring, fc, switch, mesh, torus, hypercube or stack
        topology (hypercube: shape ``(2,)*d``), else None."""
        return self._layout

    # --- adjacency --------------------------------------------------------------------------

    def _check_node(self, node: int) -> None:
        if not 0 <= node < self._num_nodes:
            raise TopologyError(f"node {node} does not exist (nodes 0..{self._num_nodes - 1})")

    def _check_npu(self, node: int) -> None:
        if not 0 <= node < self._num_npus:
            raise TopologyError(f"{node} is not an NPU (NPUs 0..{self._num_npus - 1})")

    def is_switch(self, node: int) -> bool:
        """True for switch nodes, False for NPUs."""
        self._check_node(node)
        return node >= self._num_npus

    def out_links(self, node: int) -> tuple[Link, ...]:
        """The links leaving ``node``."""
        self._check_node(node)
        return self._out[node]

    def in_links(self, node: int) -> tuple[Link, ...]:
        """The links entering ``node``."""
        self._check_node(node)
        return self._in[node]

    def links_between(self, u: int, v: int) -> tuple[Link, ...]:
        """The links from ``u`` to ``v`` (empty if there is none)."""
        return self._pair.get((u, v), ())

    def successors(self, node: int) -> tuple[int, ...]:
        """The distinct nodes ``node`` has a link to, ascending."""
        self._check_node(node)
        return self._succ[node]

    def predecessors(self, node: int) -> tuple[int, ...]:
        """The distinct nodes with a link to ``node``, ascending."""
        self._check_node(node)
        return self._pred[node]

    # --- routing ----------------------------------------------------------------------------

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """The node path ``src .. dst`` between two NPUs (``(src,)`` when equal).

        The generator's rule (dimension order on grids, the tree on FRED, the switch on switch
        topologies) when all its links exist, else a shortest path by hop count with ties broken
        by lowest node id in breadth-first order. Cached; raises TopologyError when there is no
        path.
        """
        key = (src, dst)
        cached = self._routes.get(key)
        if cached is not None:
            return cached
        self._check_npu(src)
        self._check_npu(dst)
        path = self._router.preferred(src, dst) if src != dst else [src]
        if path is None or not self._path_exists(path):
            parents = self._bfs.get(src)
            if parents is None:
                parents = bfs_parents(self._succ, src)
                self._bfs[src] = parents
            path = path_from_parents(parents, src, dst)
            if path is None:
                raise TopologyError(f"NPU {src} cannot reach NPU {dst}")
        result = tuple(path)
        self._routes[key] = result
        return result

    def _path_exists(self, path: list[int]) -> bool:
        pair = self._pair
        return all((path[i], path[i + 1]) in pair for i in range(len(path) - 1))

    def route_links(self, src: int, dst: int) -> tuple[int, ...]:
        """Link indices along `route`; between parallel links the one with the highest
        bandwidth, then the lowest latency, then the lowest index."""
        key = (src, dst)
        cached = self._route_links.get(key)
        if cached is not None:
            return cached
        path = self.route(src, dst)
        result = tuple(
            min(
                self._pair[(path[i], path[i + 1])],
                key=lambda lk: (-lk.bandwidth_bytes_per_ns, lk.latency_ns, lk.index),
            ).index
            for i in range(len(path) - 1)
        )
        self._route_links[key] = result
        return result

    def hop_distance(self, src: int, dst: int) -> int:
        """The number of links on `route` (switch hops included)."""
        return len(self.route(src, dst)) - 1

    # --- whole-graph views ------------------------------------------------------------------

    def to_networkx(self) -> nx.MultiDiGraph[int]:
        """A fresh MultiDiGraph: node attr ``switch``; edge key = link index, edge attrs
        ``index``, ``latency_ns``, ``bandwidth_bytes_per_ns``, ``dim``; graph attrs ``name``,
        ``spec``, ``num_npus``, ``in_network``."""
        import networkx as nx  # only here: a Topology itself needs no networkx (start-up time)

        g: nx.MultiDiGraph[int] = nx.MultiDiGraph(
            name=self._name,
            spec=self._spec,
            num_npus=self._num_npus,
            in_network=self._in_network,
        )
        for node in range(self._num_nodes):
            g.add_node(node, switch=node >= self._num_npus)
        for lk in self._links:
            g.add_edge(
                lk.src,
                lk.dst,
                key=lk.index,
                index=lk.index,
                latency_ns=lk.latency_ns,
                bandwidth_bytes_per_ns=lk.bandwidth_bytes_per_ns,
                dim=lk.dim,
            )
        return g

    def check_connected(self) -> None:
        """Raise TopologyError unless every NPU can reach every other NPU.

        The message names an isolated NPU (``NPU 3 has no links``) or an unreachable pair
        (``NPU 3 cannot reach NPU 7``).
        """
        suffix = ""
        if self._failed:
            shown = ", ".join(f"{u}>{v}" for u, v in self._failed[:8])
            more = ", ..." if len(self._failed) > 8 else ""
            suffix = f" (failed links: {shown}{more})"
        for v in range(self._num_npus):
            if not self._out[v] and not self._in[v]:
                raise TopologyError(f"NPU {v} has no links{suffix}")
        forward = bfs_parents(self._succ, 0)
        backward = bfs_parents(self._pred, 0)
        for v in range(1, self._num_npus):
            if forward[v] < 0:
                raise TopologyError(f"NPU 0 cannot reach NPU {v}{suffix}")
        for v in range(1, self._num_npus):
            if backward[v] < 0:
                raise TopologyError(f"NPU {v} cannot reach NPU 0{suffix}")

    # --- identity ---------------------------------------------------------------------------

    def _content(self) -> tuple[int, int, bool, tuple[tuple[int, int, float, float, int], ...]]:
        if self._key is None:
            self._key = (
                self._num_npus,
                self._num_nodes,
                self._in_network,
                tuple(
                    sorted(
                        (lk.src, lk.dst, lk.latency_ns, lk.bandwidth_bytes_per_ns, lk.dim)
                        for lk in self._links
                    )
                ),
            )
        return self._key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return self is other or self._content() == other._content()

    def __hash__(self) -> int:
        return hash(self._content())

    def __repr__(self) -> str:
        spec = self._spec if len(self._spec) <= 80 else self._spec[:77] + "..."
        return f"<Topology {spec!r}: {self._num_npus} NPUs, {len(self._links)} links>"
