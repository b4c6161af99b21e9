"""The Topology object: queries, equality, immutability, networkx views."""

from __future__ import annotations

import pickle

import networkx as nx
import pytest

from topologies import (
    Link,
    SpecError,
    Topology,
    TopologyError,
    from_networkx,
    parse_topology,
)


def test_link_is_frozen() -> None:
    t = parse_topology("ring:4")
    with pytest.raises(AttributeError):
        t.links[0].src = 3  # type: ignore[misc]
    assert isinstance(t.links[0], Link)


def test_topology_is_immutable() -> None:
    t = parse_topology("ring:4")
    with pytest.raises(AttributeError):
        t.spec = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        t.num_npus = 3  # type: ignore[misc]
    assert isinstance(t.links, tuple) and isinstance(t.out_links(0), tuple)


def test_queries() -> None:
    t = parse_topology("switch:3")
    assert [lk.dst for lk in t.out_links(0)] == [3]
    assert sorted(lk.src for lk in t.in_links(3)) == [0, 1, 2]
    assert t.links_between(0, 1) == ()
    assert t.successors(3) == (0, 1, 2) and t.predecessors(0) == (3,)


def test_equality_is_by_content() -> None:
    a = parse_topology("ring:4")
    b = parse_topology("torus:4")  # same links, different dims? torus tags dimension 0
    assert a != b
    c = parse_topology("graph:4,links=0-1;1-2;2-3;3-0")
    assert a == c and hash(a) == hash(c)
    assert a.spec != c.spec
    assert a != parse_topology("ring:4,lat=1ns")
    assert a != "ring:4"
    assert len({a, c, parse_topology("ring:4")}) == 1


def test_to_networkx_is_a_fresh_copy() -> None:
    t = parse_topology("switch:3,bw=10GB/s")
    g = t.to_networkx()
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == 4 and g.number_of_edges() == 6
    assert g.nodes[3]["switch"] and not g.nodes[0]["switch"]
    data = g.get_edge_data(0, 3)
    (attrs,) = data.values()
    assert attrs["bandwidth_bytes_per_ns"] == 10.0 and attrs["latency_ns"] == 500.0
    assert t.links[attrs["index"]].src == 0
    g.remove_node(0)
    assert t.to_networkx().number_of_nodes() == 4


def test_networkx_round_trip() -> None:
    for spec in ("torus:3x4,linkbw=0-1:1GB/s", "stack:ring3*switch2", "fred:6,l1=2"):
        t = parse_topology(spec)
        back = from_networkx(t.to_networkx())
        assert back == t
        assert back.name == "graph"
        assert parse_topology(back.spec) == back


def test_from_undirected_graph_with_defaults() -> None:
    g: nx.Graph[int] = nx.cycle_graph(5)
    g.edges[0, 1]["bandwidth_bytes_per_ns"] = 10
    g.edges[1, 2]["latency_ns"] = "1us"
    t = from_networkx(g)
    assert t.num_npus == 5 and len(t.links) == 10
    assert t.links_between(1, 0)[0].bandwidth_bytes_per_ns == 10.0
    assert t.links_between(2, 1)[0].latency_ns == 1000.0
    assert t.links_between(3, 4)[0].bandwidth_bytes_per_ns == 50.0
    assert t.links_between(3, 4)[0].latency_ns == 500.0


def test_from_networkx_with_switches() -> None:
    g: nx.DiGraph[int] = nx.DiGraph()
    for i in range(3):
        g.add_edge(i, 3)
        g.add_edge(3, i)
    t = from_networkx(g, num_npus=3)
    assert t.num_npus == 3 and t.num_switches == 1 and t.is_switch(3)
    assert t.route(0, 2) == (0, 3, 2)
    assert t.spec.startswith("graph:3+1,")
    assert parse_topology(t.spec) == t


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: nx.relabel_nodes(nx.path_graph(3), {0: "a"}), "integers"),
        (lambda: nx.Graph([(0, 2)]), "integers 0..1"),
        (lambda: nx.Graph([(0, 0), (0, 1)]), "self-loop"),
    ],
)
def test_from_networkx_errors(build: object, fragment: str) -> None:
    with pytest.raises(SpecError, match=fragment):
        from_networkx(build())  # type: ignore[operator]


def test_from_networkx_bad_attributes_and_sizes() -> None:
    g: nx.Graph[int] = nx.path_graph(3)
    with pytest.raises(SpecError, match="num_npus"):
        from_networkx(g, num_npus=5)
    g.edges[0, 1]["bandwidth_bytes_per_ns"] = 0
    with pytest.raises(SpecError, match="must be > 0"):
        from_networkx(g)
    g.edges[0, 1]["bandwidth_bytes_per_ns"] = "fast"
    with pytest.raises(SpecError):
        from_networkx(g)


def test_from_networkx_checks_connectivity() -> None:
    g: nx.Graph[int] = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(TopologyError, match="NPU 0 cannot reach NPU 2"):
        from_networkx(g)


def test_check_connected_can_be_called() -> None:
    t = parse_topology("mesh:3x3")
    t.check_connected()


def test_pickle_round_trip() -> None:
    t = parse_topology("torus:4x4,fail=0-1")
    t.route(0, 5)
    u = pickle.loads(pickle.dumps(t))
    assert u == t and u.spec == t.spec and u.route(0, 1) == t.route(0, 1)


def test_repr_is_short() -> None:
    t = from_networkx(nx.complete_graph(30))
    assert len(repr(t)) < 150
    assert isinstance(t, Topology)
