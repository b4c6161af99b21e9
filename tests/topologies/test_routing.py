"""Routes: the generator's rule, fallbacks around failures, and validity of every route."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies import Topology, TopologyError, from_networkx, parse_topology


def _assert_valid(t: Topology, src: int, dst: int) -> None:
    path = t.route(src, dst)
    assert path[0] == src and path[-1] == dst
    assert len(set(path)) == len(path)
    for u, v in itertools.pairwise(path):
        assert t.links_between(u, v), (t.spec, path)
    for idx, (u, v) in zip(t.route_links(src, dst), itertools.pairwise(path), strict=True):
        assert (t.links[idx].src, t.links[idx].dst) == (u, v)
    assert t.hop_distance(src, dst) == len(path) - 1


def test_mesh_dimension_order_by_hand() -> None:
    t = parse_topology("mesh:4x4")
    # NPU = x + 4y. From (1,0) to (3,2): x first (1->2->3), then y (3->7->11).
    assert t.route(1, 11) == (1, 2, 3, 7, 11)
    assert t.route(11, 1) == (11, 10, 9, 5, 1)
    assert t.route(0, 15) == (0, 1, 2, 3, 7, 11, 15)
    assert t.hop_distance(0, 15) == 6
    assert t.route(5, 5) == (5,)
    assert t.route_links(5, 5) == ()


def test_mesh_3d_dimension_order() -> None:
    t = parse_topology("mesh:2x2x2")
    assert t.route(0, 7) == (0, 1, 3, 7)


def test_torus_wraparound_and_ties() -> None:
    t = parse_topology("torus:5x4")
    # dim 0 (size 5): 0 -> 4 is one hop backwards over the wraparound link
    assert t.route(0, 4) == (0, 4)
    assert t.route(4, 0) == (4, 0)
    # 0 -> 3 (x=3): backwards is 2 hops, forwards 3
    assert t.route(0, 3) == (0, 4, 3)
    # dim 1 (size 4): y 0 -> 2 is a tie, so the positive direction: 0 -> 5 -> 10
    assert t.route(0, 10) == (0, 5, 10)
    assert t.route(10, 0) == (10, 15, 0)
    # y 0 -> 3 wraps backwards
    assert t.route(0, 15) == (0, 15)
    assert t.route(1, 19) == (1, 0, 4, 19)


def test_ring_routes() -> None:
    t = parse_topology("ring:8")
    assert t.route(0, 3) == (0, 1, 2, 3)
    assert t.route(0, 5) == (0, 7, 6, 5)
    assert t.route(0, 4) == (0, 1, 2, 3, 4)  # tie: +1 direction
    u = parse_topology("uniring:8")
    assert u.route(0, 7) == tuple(range(8))
    assert u.route(5, 1) == (5, 6, 7, 0, 1)


def test_switch_fc_hypercube_routes() -> None:
    assert parse_topology("switch:8").route(2, 5) == (2, 8, 5)
    assert parse_topology("fc:8").route(2, 5) == (2, 5)
    assert parse_topology("hypercube:4").route(0, 0b1011) == (0, 1, 3, 11)


def test_stack_routes() -> None:
    t = parse_topology("stack:ring4*fc2*switch3")
    # 0 = (0,0,0) -> 23 = (3,1,2): ring back one (0->3), fc jump (3->7), switch (7 -> sw -> 23)
    sw = t.route(0, 23)[3]
    assert t.route(0, 23) == (0, 3, 7, sw, 23)
    assert t.is_switch(sw)
    assert t.links_between(7, sw) and t.links_between(sw, 23)


def test_fred_routes() -> None:
    t = parse_topology("fred:20")
    assert t.route(0, 3) == (0, 20, 3)
    assert t.route(0, 19) == (0, 20, 25, 24, 19)


def test_graph_routes_are_shortest_and_deterministic() -> None:
    t = parse_topology("graph:4,links=0-1;1-3;0-2;2-3")
    assert t.route(0, 3) == (0, 1, 3)  # tie broken by the lower node id
    assert t.route(3, 0) == (3, 1, 0)


def test_routes_avoid_failed_links() -> None:
    t = parse_topology("mesh:4x4,fail=1-2")
    path = t.route(0, 3)
    assert (1, 2) not in itertools.pairwise(path)
    assert len(path) - 1 == 5
    _assert_valid(t, 0, 3)
    # a route the failure does not touch keeps dimension order
    assert t.route(4, 7) == (4, 5, 6, 7)
    t = parse_topology("torus:4x4,fail=0>3")
    assert t.route(0, 3) == (0, 1, 2, 3)
    assert t.route(3, 0) == (3, 0)


def test_disconnected_npu_is_reported() -> None:
    with pytest.raises(TopologyError, match="NPU 0 has no links"):
        parse_topology("fred:8,fail=0-8")


def test_route_arguments_must_be_npus() -> None:
    t = parse_topology("switch:4")
    with pytest.raises(TopologyError, match="not an NPU"):
        t.route(0, 4)
    with pytest.raises(TopologyError):
        t.route(-1, 2)
    with pytest.raises(TopologyError):
        t.out_links(5)


def test_route_is_cached() -> None:
    t = parse_topology("torus:4x4")
    assert t.route(0, 10) is t.route(0, 10)
    assert t.route_links(0, 10) is t.route_links(0, 10)


def test_route_links_prefers_fastest_parallel_link() -> None:
    t = parse_topology("graph:2,links=0-1:10GB/s;0-1:20GB/s;0-1:20GB/s:1ns")
    (idx,) = t.route_links(0, 1)
    lk = t.links[idx]
    assert (lk.bandwidth_bytes_per_ns, lk.latency_ns) == (20.0, 1.0)


def test_large_torus_routing_is_lazy_and_fast(graph_searches: list[int]) -> None:
    # Dimension-order routes need no graph search, whatever the torus's size (the benchmarks
    # measure the speed itself).
    searches = graph_searches
    t = parse_topology("torus:16x16x16")
    searches.clear()  # the two connectivity checks of construction
    for src in range(0, 4096, 97):
        for dst in range(0, 4096, 89):
            _assert_valid(t, src, dst)
    assert t.hop_distance(0, 4095) == 3
    assert searches == []


def test_large_torus_with_failure_falls_back() -> None:
    t = parse_topology("torus:16x16x16,fail=0-1")
    assert t.route(0, 1) != (0, 1)
    _assert_valid(t, 0, 1)
    assert t.hop_distance(0, 1) == 3


SPECS = [
    "ring:7",
    "uniring:5",
    "fc:4",
    "switch:5",
    "mesh:3x4",
    "torus:3x4x2",
    "hypercube:3",
    "stack:ring3*fc2*switch2",
    "stack:switch2*ring3",
    "fred:9,l1=2",
    "torus:4x4,fail_random=4,seed=3",
    "mesh:4x4,fail=5-6;9>10;1-5",
    "stack:ring4*switch3,fail=0>12",
]


@pytest.mark.parametrize("spec", SPECS)
def test_every_route_follows_links(spec: str) -> None:
    t = parse_topology(spec)
    for src in range(t.num_npus):
        for dst in range(t.num_npus):
            _assert_valid(t, src, dst)


def test_preferred_routes_are_shortest_on_tori() -> None:
    t = parse_topology("torus:5x4x3")
    g = from_networkx(t.to_networkx(), t.num_npus)  # routed by plain shortest paths
    for src in range(0, t.num_npus, 7):
        for dst in range(t.num_npus):
            assert t.hop_distance(src, dst) == g.hop_distance(src, dst)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(2, 5), min_size=1, max_size=3),
    st.integers(0, 6),
    st.integers(0, 1000),
    st.booleans(),
)
def test_routes_valid_under_random_failures(
    dims: list[int], failures: int, seed: int, wrap: bool
) -> None:
    kind = "torus" if wrap else "mesh"
    spec = f"{kind}:{'x'.join(map(str, dims))},fail_random={failures},seed={seed}"
    try:
        t = parse_topology(spec)
    except TopologyError:
        return  # the failures disconnected it; that is reported, not routed
    except Exception as exc:  # too many failures for a small grid
        assert "link pairs can fail" in str(exc)
        return
    for src in range(t.num_npus):
        for dst in range(t.num_npus):
            _assert_valid(t, src, dst)
            for u, v in itertools.pairwise(t.route(src, dst)):
                assert (u, v) not in t.failed
