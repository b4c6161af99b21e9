"""Hamiltonian cycles: constructions per kind, odd meshes, failures, search."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies import Topology, TopologyError, hamiltonian_cycle, parse_topology


def _joined(t: Topology, a: int, b: int) -> bool:
    if t.links_between(a, b):
        return True
    return any(t.is_switch(s) and t.links_between(s, b) for s in t.successors(a))


def _assert_cycle(t: Topology, cycle: list[int] | None) -> None:
    assert cycle is not None, t.spec
    assert sorted(cycle) == list(range(t.num_npus))
    for i, a in enumerate(cycle):
        assert _joined(t, a, cycle[(i + 1) % len(cycle)]), (t.spec, a, cycle)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("ring:6", [0, 1, 2, 3, 4, 5]),
        ("uniring:5", [0, 1, 2, 3, 4]),
        ("fc:4", [0, 1, 2, 3]),
        ("switch:4", [0, 1, 2, 3]),
        ("hypercube:3", [0, 1, 3, 2, 6, 7, 5, 4]),
        ("mesh:2", [0, 1]),
    ],
)
def test_known_orders(spec: str, expected: list[int]) -> None:
    assert hamiltonian_cycle(parse_topology(spec)) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "mesh:4x4",
        "mesh:3x4",
        "mesh:4x3",
        "mesh:3x3x2",
        "mesh:2x2x2x2",
        "torus:3x3",
        "torus:3x5x7",
        "torus:5",
        "torus:2x3",
        "hypercube:6",
        "stack:ring4*fc4*switch8",
        "stack:ring3*ring3",
        "stack:switch3*switch3*fc3",
        "stack:ring3*switch3",
    ],
)
def test_valid_cycles(spec: str) -> None:
    t = parse_topology(spec)
    _assert_cycle(t, hamiltonian_cycle(t))


@pytest.mark.parametrize("spec", ["mesh:3x3", "mesh:3x5x3", "mesh:3", "mesh:5"])
def test_all_odd_mesh_has_none(spec: str) -> None:
    assert hamiltonian_cycle(parse_topology(spec)) is None


def test_fred_has_a_cycle_only_within_one_l1() -> None:
    t = parse_topology("fred:4")
    _assert_cycle(t, hamiltonian_cycle(t))
    assert hamiltonian_cycle(parse_topology("fred:20")) is None


def test_failures_are_respected() -> None:
    for spec in ("mesh:4x4,fail=5-6", "mesh:4x4,fail=1-2", "torus:4x4,fail=0-1;5-6;10>11"):
        t = parse_topology(spec)
        cycle = hamiltonian_cycle(t)
        _assert_cycle(t, cycle)
        assert cycle is not None
        assert all((x, cycle[(i + 1) % len(cycle)]) not in t.failed for i, x in enumerate(cycle))
    t = parse_topology("ring:6,fail=2>3")
    # the forward ring is broken but the reverse order survives
    assert hamiltonian_cycle(t) == [5, 4, 3, 2, 1, 0]


def test_failure_that_leaves_no_cycle() -> None:
    # corner 0 of a 4x4 mesh keeps one neighbour: it cannot sit on a cycle
    assert hamiltonian_cycle(parse_topology("mesh:4x4,fail=0-1")) is None
    # a bipartite grid with an odd node count has none either
    assert hamiltonian_cycle(parse_topology("torus:3x3,fail=0-2;3-5;6-8;0-6;1-7;2-8")) is None


def test_switch_failure_leaves_no_cycle() -> None:
    # NPU 2 can no longer send: no cycle. (Still connected? no: so the spec itself fails.)
    with pytest.raises(TopologyError):
        parse_topology("switch:4,fail=2>4")


def test_graph_search() -> None:
    # a 6-cycle with chords, listed out of order
    t = parse_topology("graph:6,links=0-3;3-1;1-4;4-2;2-5;5-0;0-1")
    _assert_cycle(t, hamiltonian_cycle(t))
    # a star has none
    assert hamiltonian_cycle(parse_topology("graph:4,links=0-1;0-2;0-3")) is None


def test_large_torus_cycle_is_fast() -> None:
    t = parse_topology("torus:16x16x16")
    _assert_cycle(t, hamiltonian_cycle(t))
    t = parse_topology("torus:15x15x15")
    _assert_cycle(t, hamiltonian_cycle(t))


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["mesh", "torus"]),
    st.lists(st.integers(2, 6), min_size=1, max_size=3),
)
def test_grid_cycles_property(kind: str, dims: list[int]) -> None:
    t = parse_topology(f"{kind}:{'x'.join(map(str, dims))}")
    cycle = hamiltonian_cycle(t)
    has_even = any(d % 2 == 0 for d in dims)
    if kind == "torus" or (has_even and (len(dims) > 1 or dims[0] == 2)):
        _assert_cycle(t, cycle)
    else:
        assert cycle is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["ring", "fc", "switch"]), st.integers(2, 5)),
        min_size=1,
        max_size=3,
    )
)
def test_stack_cycles_property(dims: list[tuple[str, int]]) -> None:
    t = parse_topology("stack:" + "*".join(f"{k}{n}" for k, n in dims))
    _assert_cycle(t, hamiltonian_cycle(t))


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 5), st.integers(3, 5), st.integers(0, 3), st.integers(0, 100))
def test_cycles_under_random_failures_are_valid(a: int, b: int, k: int, seed: int) -> None:
    try:
        t = parse_topology(f"torus:{a}x{b},fail_random={k},seed={seed}")
    except TopologyError:
        return
    cycle = hamiltonian_cycle(t)
    if cycle is not None:
        _assert_cycle(t, cycle)
        for i, x in enumerate(cycle):
            assert (x, cycle[(i + 1) % len(cycle)]) not in t.failed
