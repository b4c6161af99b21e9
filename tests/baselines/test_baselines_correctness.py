"""Every baseline x served collective x rank count x in place or not, on several topologies
with placements on subsets of the NPUs: the program verifies."""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines import ALGORITHMS
from chakra_ir import Collective, CollectiveKind, format_program, parse_program
from tests.baselines.baseline_checker import check, writes_input
from topologies import Topology, parse_topology

TOPOLOGIES = ["ring:16", "mesh:4x4", "torus:4x4", "switch:16"]
RANKS = [1, 2, 3, 4, 5, 7, 8, 12]
# hierarchical, themis and dimensional run over a grid's rows and need the whole topology, and
# swing a (sub-)torus: they have their own tests (test_hierarchical.py, tests/alltoall,
# test_swing.py); these cases place ranks on arbitrary NPU subsets.
WHOLE_GRID_ONLY = {"hierarchical", "themis", "dimensional", "swing", "swing-latency"}
CASES = [
    (name, kind)
    for name, entry in ALGORITHMS.items()
    if name not in WHOLE_GRID_ONLY
    for kind in sorted(entry.collectives)
]


# The in-network algorithms need switches that reduce: each grid above has an in-network
# stand-in of the same NPU count and a different shape of tree.
IN_NETWORK = {
    "ring:16": "fred:16",
    "mesh:4x4": "fred:16,l1=2",
    "torus:4x4": "switch:16,innet=yes",
    "switch:16": "fred:16,l1=8,l2bw=750GB/s",
}


@cache
def topology(spec: str, name: str = "") -> Topology:
    if name == "fred-innetwork":
        spec = IN_NETWORK[spec]
    return parse_topology(spec)


def make(
    name: str,
    kind: CollectiveKind,
    n: int,
    inplace: bool,
    placement: tuple[int, ...] = (),
    mult: int = 1,
    root: int = 0,
) -> Collective:
    cf = ALGORITHMS[name].chunks_per_rank(kind, n) * mult
    return Collective(kind, n, cf, inplace, root % n if kind.rooted else -1, placement)


def subset(spec: str, n: int, seed: int) -> tuple[int, ...]:
    npus = topology(spec).num_npus
    return tuple(random.Random(seed).sample(range(npus), n))


@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.parametrize("inplace", [False, True], ids=["outofplace", "inplace"])
@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{a}-{k.value}" for a, k in CASES])
def test_verifies(name: str, kind: CollectiveKind, n: int, inplace: bool, spec: str) -> None:
    placement = subset(spec, n, seed=n * 31 + len(spec))
    mult = 1 + (n + len(spec)) % 2
    c = make(name, kind, n, inplace, placement, mult, root=n // 2)
    program = ALGORITHMS[name].generate(c, topology(spec, name))
    assert program.collective == c
    assert program.name == f"{name}-{kind.value}"
    check(program)
    if not inplace:
        assert not writes_input(program), "an out-of-place program must not write its input"


@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{a}-{k.value}" for a, k in CASES])
def test_whole_topology(name: str, kind: CollectiveKind, spec: str) -> None:
    n = topology(spec).num_npus
    c = make(name, kind, n, inplace=False, placement=subset(spec, n, seed=7))
    check(ALGORITHMS[name].generate(c, topology(spec, name)))
    c = make(name, kind, n, inplace=True)
    check(ALGORITHMS[name].generate(c, topology(spec, name)))


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{a}-{k.value}" for a, k in CASES])
def test_text_round_trip(name: str, kind: CollectiveKind) -> None:
    c = make(name, kind, 6, inplace=False, mult=2)
    program = ALGORITHMS[name].generate(c, topology("mesh:4x4", name))
    assert parse_program(format_program(program)) == program


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_requests(data: st.DataObject) -> None:
    name, kind = data.draw(st.sampled_from(CASES))
    spec = data.draw(st.sampled_from(TOPOLOGIES))
    n = data.draw(st.integers(1, 11))
    placement = tuple(data.draw(st.permutations(range(16)))[:n])
    inplace = data.draw(st.booleans())
    mult = data.draw(st.integers(1, 3))
    root = data.draw(st.integers(0, n - 1))
    c = make(name, kind, n, inplace, placement, mult, root)
    check(ALGORITHMS[name].generate(c, topology(spec, name)))
