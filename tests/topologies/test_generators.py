"""Every generator's nodes, links and link attributes."""

from __future__ import annotations

from collections import Counter

import pytest

from topologies import Topology, parse_topology


def _pairs(t: Topology) -> Counter[tuple[int, int]]:
    return Counter((lk.src, lk.dst) for lk in t.links)


def _assert_index_consistent(t: Topology) -> None:
    assert all(lk.index == i for i, lk in enumerate(t.links))
    for node in range(t.num_nodes):
        assert all(lk.src == node for lk in t.out_links(node))
        assert all(lk.dst == node for lk in t.in_links(node))


@pytest.mark.parametrize(
    ("spec", "npus", "nodes", "links"),
    [
        ("ring:2", 2, 2, 2),
        ("ring:8", 8, 8, 16),
        ("uniring:2", 2, 2, 2),
        ("uniring:8", 8, 8, 8),
        ("fc:2", 2, 2, 2),
        ("fc:8", 8, 8, 56),
        ("switch:2", 2, 3, 4),
        ("switch:16", 16, 17, 32),
        ("mesh:4", 4, 4, 6),
        ("mesh:4x4", 16, 16, 48),
        ("mesh:2x3x4", 24, 24, 2 * (1 * 12 + 2 * 8 + 3 * 6)),
        ("torus:4x4x4", 64, 64, 384),
        ("torus:2x3", 6, 6, 6 + 12),
        ("torus:2x2", 4, 4, 8),
        ("hypercube:1", 2, 2, 2),
        ("hypercube:6", 64, 64, 6 * 64),
        ("stack:ring4*fc4*switch8", 128, 128 + 16, 128 * 2 + 128 * 3 + 128 * 2),
        ("stack:switch4*switch2", 8, 8 + 2 + 4, 16 + 16),
        ("fred:20", 20, 26, 40 + 10),
        ("fred:10", 10, 14, 20 + 6),
        ("fred:20,l1=5", 20, 25, 40 + 8),
        ("graph:3+1,links=0-3;1-3;2-3", 3, 4, 6),
    ],
)
def test_counts(spec: str, npus: int, nodes: int, links: int) -> None:
    t = parse_topology(spec)
    assert (t.num_npus, t.num_nodes, len(t.links)) == (npus, nodes, links)
    assert t.num_switches == nodes - npus
    assert [t.is_switch(v) for v in range(nodes)] == [False] * npus + [True] * (nodes - npus)
    _assert_index_consistent(t)


def test_names_and_shapes() -> None:
    cases = {
        "ring:8": ("ring", (), ()),
        "uniring:8": ("uniring", (), ()),
        "fc:8": ("fc", (), ()),
        "switch:8": ("switch", (), ()),
        "mesh:4x2": ("mesh", (4, 2), ("line", "line")),
        "torus:4x4x2": ("torus", (4, 4, 2), ("ring", "ring", "ring")),
        "hypercube:3": ("hypercube", (), ()),
        "stack:ring4*fc2*switch3": ("stack", (4, 2, 3), ("ring", "fc", "switch")),
        "fred:20": ("fred", (), ()),
        "graph:2,links=0-1": ("graph", (), ()),
    }
    for spec, (name, shape, kinds) in cases.items():
        t = parse_topology(spec)
        assert (t.name, t.shape, t.dim_kinds) == (name, shape, kinds), spec


def test_ring_links() -> None:
    t = parse_topology("ring:5")
    assert set(_pairs(t)) == {(i, (i + 1) % 5) for i in range(5)} | {
        ((i + 1) % 5, i) for i in range(5)
    }
    assert all(lk.dim == -1 for lk in t.links)
    assert all(c == 1 for c in _pairs(t).values())


def test_uniring_is_one_way() -> None:
    t = parse_topology("uniring:5")
    assert set(_pairs(t)) == {(i, (i + 1) % 5) for i in range(5)}


def test_fc_links() -> None:
    t = parse_topology("fc:5")
    assert set(_pairs(t)) == {(a, b) for a in range(5) for b in range(5) if a != b}


def test_switch_links() -> None:
    t = parse_topology("switch:4")
    assert set(_pairs(t)) == {(i, 4) for i in range(4)} | {(4, i) for i in range(4)}
    assert t.is_switch(4) and not t.is_switch(3)


def test_mesh_links_and_dims() -> None:
    t = parse_topology("mesh:3x2")
    # NPU id = x + 3 * y (dimension 0 fastest)
    expected = {(0, 1): 0, (1, 2): 0, (3, 4): 0, (4, 5): 0, (0, 3): 1, (1, 4): 1, (2, 5): 1}
    got = {(lk.src, lk.dst): lk.dim for lk in t.links}
    assert got == expected | {(b, a): d for (a, b), d in expected.items()}


def test_torus_wraparound_links() -> None:
    t = parse_topology("torus:4x3")
    assert t.links_between(3, 0) and t.links_between(0, 3)
    assert t.links_between(0, 8) and t.links_between(8, 0)
    assert {lk.dim for lk in t.links_between(0, 8)} == {1}
    # a size-2 dimension has a single pair of links, not two
    t2 = parse_topology("torus:2x3")
    assert len(t2.links_between(0, 1)) == 1


def test_hypercube_links_differ_in_one_bit() -> None:
    t = parse_topology("hypercube:4")
    for lk in t.links:
        diff = lk.src ^ lk.dst
        assert diff & (diff - 1) == 0
        assert diff == 1 << lk.dim


def test_stack_structure() -> None:
    t = parse_topology("stack:ring4*fc2*switch3")
    # dim 0 ring of 4, dim 1 fc of 2, dim 2 switch of 3 -> 24 NPUs, 8 switches (24..31)
    assert t.num_npus == 24 and t.num_nodes == 32
    assert {lk.dim for lk in t.links_between(0, 1)} == {0}
    assert t.links_between(0, 3)  # ring wraparound
    assert {lk.dim for lk in t.links_between(0, 4)} == {1}
    assert not t.links_between(0, 8)  # switch dimension: no direct link
    # the group of NPU 0 in dim 2 is {0, 8, 16}; its switch is the first one
    assert t.links_between(0, 24) and t.links_between(24, 8) and t.links_between(24, 16)
    # NPU 1 is in the second group
    assert t.links_between(1, 25) and t.links_between(25, 9)
    for sw in range(24, 32):
        assert len(t.out_links(sw)) == 3 and len(t.in_links(sw)) == 3
        assert {lk.dim for lk in t.out_links(sw)} == {2}


def test_stack_switch_numbering_is_by_dimension_then_group() -> None:
    t = parse_topology("stack:switch2*switch3")
    # dim 0 groups (3 of them): switches 6, 7, 8; dim 1 groups (2): switches 9, 10
    assert [lk.dst for lk in t.out_links(0)] == [6, 9]
    assert [lk.dst for lk in t.out_links(5)] == [8, 10]


def test_fred_tree() -> None:
    t = parse_topology("fred:20")
    l2 = 25
    for v in range(20):
        l1 = 20 + v // 4
        (up,) = t.links_between(v, l1)
        (down,) = t.links_between(l1, v)
        assert up.bandwidth_bytes_per_ns == down.bandwidth_bytes_per_ns == 3000.0
        assert up.latency_ns == 500.0
    for l1 in range(20, 25):
        (up,) = t.links_between(l1, l2)
        assert up.bandwidth_bytes_per_ns == 12000.0  # 4 NPUs x 3 TB/s
        assert t.links_between(l2, l1)


def test_fred_partial_group_and_overrides() -> None:
    t = parse_topology("fred:10,bw=100GB/s")
    # L1 switches 10, 11, 12 serve 4, 4, 2 NPUs; L2 is 13
    assert [lk.bandwidth_bytes_per_ns for lk in t.out_links(12) if lk.dst == 13] == [200.0]
    assert t.links_between(10, 13)[0].bandwidth_bytes_per_ns == 400.0
    t2 = parse_topology("fred:10,bw=100GB/s,l2bw=1TB/s")
    assert {lk.bandwidth_bytes_per_ns for lk in t2.in_links(13)} == {1000.0}


def test_defaults() -> None:
    for spec in ("ring:4", "fc:4", "switch:4", "mesh:2x2", "torus:3x3", "stack:ring3*switch2"):
        t = parse_topology(spec)
        assert {lk.bandwidth_bytes_per_ns for lk in t.links} == {50.0}
        assert {lk.latency_ns for lk in t.links} == {500.0}


def test_units() -> None:
    t = parse_topology("ring:4,bw=50GB/s,lat=0.5us")
    assert t.links[0].bandwidth_bytes_per_ns == 50.0 and t.links[0].latency_ns == 500.0
    t = parse_topology("ring:4,bw=50GiB/s,lat=1ms")
    assert t.links[0].bandwidth_bytes_per_ns == pytest.approx(50 * 2**30 / 1e9)
    assert t.links[0].latency_ns == 1e6
    t = parse_topology("ring:4,bw=400MB/s,lat=0ns")
    assert t.links[0].bandwidth_bytes_per_ns == pytest.approx(0.4)
    assert t.links[0].latency_ns == 0.0


def test_per_dimension_values() -> None:
    t = parse_topology("mesh:2x2x2,bw=[200GB/s,100GB/s,50GB/s],lat=[1ns,2ns,3ns]")
    for lk in t.links:
        assert lk.bandwidth_bytes_per_ns == [200.0, 100.0, 50.0][lk.dim]
        assert lk.latency_ns == [1.0, 2.0, 3.0][lk.dim]
    t = parse_topology("stack:ring4*switch2,bw=[100GB/s,25GB/s]")
    assert {lk.bandwidth_bytes_per_ns for lk in t.links if lk.dim == 1} == {25.0}
    t = parse_topology("hypercube:2,bw=[1GB/s,2GB/s]")
    assert t.links_between(0, 2)[0].bandwidth_bytes_per_ns == 2.0


def test_graph_links_with_fields() -> None:
    t = parse_topology("graph:3,bw=10GB/s,lat=1ns,links=0-1;1>2:5GB/s;2>0:7GB/s:3us:4;2>0")
    assert t.links_between(0, 1)[0].bandwidth_bytes_per_ns == 10.0
    assert t.links_between(1, 2)[0].bandwidth_bytes_per_ns == 5.0
    assert not t.links_between(2, 1)
    parallel = sorted(
        (lk.bandwidth_bytes_per_ns, lk.latency_ns, lk.dim) for lk in t.links_between(2, 0)
    )
    assert parallel == [(7.0, 3000.0, 4), (10.0, 1.0, -1)]


def test_large_torus_is_cheap(graph_searches: list[int]) -> None:
    # Building a torus searches the graph twice (connectivity, both ways) and routing it not at
    # all: no work grows with the number of routes asked (the benchmarks measure the speed).
    searches = graph_searches
    t = parse_topology("torus:16x16x16")
    assert t.num_npus == 4096 and len(t.links) == 6 * 4096
    assert searches == [0, 0]
    assert t.hop_distance(0, 4095) == 3
    assert searches == [0, 0]
