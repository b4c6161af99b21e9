"""Failed links and per-link overrides."""

from __future__ import annotations

import pytest

from topologies import SpecError, TopologyError, parse_topology


def test_fail_both_directions() -> None:
    t = parse_topology("torus:4x4,fail=0-1")
    assert t.failed == ((0, 1), (1, 0))
    assert not t.links_between(0, 1) and not t.links_between(1, 0)
    assert len(t.links) == 64 - 2
    assert all(lk.index == i for i, lk in enumerate(t.links))


def test_fail_one_direction() -> None:
    t = parse_topology("torus:4x4,fail=5>6")
    assert t.failed == ((5, 6),)
    assert not t.links_between(5, 6) and t.links_between(6, 5)


def test_fail_several_and_switch_links() -> None:
    t = parse_topology("stack:ring4*switch2,fail=0-1;2>10;8>0")
    # switches are 8..11 (one per dim-1 group); 8 serves NPUs 0 and 4, 10 serves 2 and 6
    assert t.failed == ((0, 1), (1, 0), (2, 10), (8, 0))
    assert not t.links_between(8, 0) and t.links_between(0, 8)


def test_fail_on_one_way_link_with_both_form() -> None:
    t = parse_topology("graph:3,links=0>1;1-2;2>0;0-2")
    t2 = parse_topology("graph:3,links=0>1;1-2;2>0;0-2,fail=0-1")
    assert t2.failed == ((0, 1),)
    assert len(t2.links) == len(t.links) - 1


def test_fail_removes_parallel_links() -> None:
    t = parse_topology("graph:3,links=0-1;0-1;1-2;2-0,fail=0>1")
    assert not t.links_between(0, 1)
    assert len(t.links_between(1, 0)) == 2


def test_fail_random_is_reproducible() -> None:
    a = parse_topology("torus:8x8,fail_random=5,seed=42")
    b = parse_topology("torus:8x8,fail_random=5,seed=42")
    assert a.failed == b.failed and a == b
    assert len(a.failed) == 10  # both directions of 5 pairs
    assert all((v, u) in a.failed for u, v in a.failed)
    assert all(u < 64 and v < 64 for u, v in a.failed)
    c = parse_topology("torus:8x8,fail_random=5,seed=43")
    assert c.failed != a.failed


def test_fail_random_default_seed_is_zero() -> None:
    assert (
        parse_topology("torus:8x8,fail_random=3").failed
        == parse_topology("torus:8x8,fail_random=3,seed=0").failed
    )


def test_fail_random_never_picks_switch_links() -> None:
    t = parse_topology("stack:ring8*switch4,fail_random=3,seed=1")
    assert all(u < t.num_npus and v < t.num_npus for u, v in t.failed)


def test_fail_random_comes_after_fail() -> None:
    base = parse_topology("torus:4x4,fail=0-1,fail_random=1,seed=0")
    # 32 pairs exist, 0-1 is already gone, so one of the other 31 fails at random
    assert len(base.failed) == 4 and (0, 1) in base.failed
    with pytest.raises(SpecError, match="only 31 NPU-NPU link pairs"):
        parse_topology("torus:4x4,fail=0-1,fail_random=32")


def test_fail_names_missing_link() -> None:
    with pytest.raises(SpecError, match="fail: no link between 0 and 5") as info:
        parse_topology("mesh:4x4,fail=0-5")
    assert info.value.pos is not None and info.value.pos.column == 15


def test_failures_that_disconnect_name_a_pair() -> None:
    with pytest.raises(TopologyError, match=r"NPU 0 cannot reach NPU 1 \(failed links: 0>1"):
        parse_topology("ring:5,fail=0-1;2-3")
    with pytest.raises(TopologyError, match="NPU 3 cannot reach NPU 0"):
        parse_topology("ring:4,fail=3>0;3>2")
    with pytest.raises(TopologyError, match="NPU 2 has no links"):
        parse_topology("mesh:3,fail=1-2")


def test_linkbw_and_linklat_overrides() -> None:
    t = parse_topology("mesh:4x4,linkbw=0-1:10GB/s;2>3:5GB/s,linklat=4-5:2us")
    assert t.links_between(0, 1)[0].bandwidth_bytes_per_ns == 10.0
    assert t.links_between(1, 0)[0].bandwidth_bytes_per_ns == 10.0
    assert t.links_between(2, 3)[0].bandwidth_bytes_per_ns == 5.0
    assert t.links_between(3, 2)[0].bandwidth_bytes_per_ns == 50.0
    assert t.links_between(5, 4)[0].latency_ns == 2000.0
    assert t.links_between(0, 4)[0].latency_ns == 500.0


def test_later_linkbw_entries_win() -> None:
    t = parse_topology("ring:4,linkbw=0-1:1GB/s;1>0:2GB/s")
    assert t.links_between(0, 1)[0].bandwidth_bytes_per_ns == 1.0
    assert t.links_between(1, 0)[0].bandwidth_bytes_per_ns == 2.0


def test_overrides_change_equality() -> None:
    assert parse_topology("ring:4,linkbw=0-1:1GB/s") != parse_topology("ring:4")
    assert parse_topology("ring:4,fail=0>1") != parse_topology("ring:4")
