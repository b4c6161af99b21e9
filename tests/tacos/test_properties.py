"""Property tests: random small topologies, failures, subsets, seeds and kinds all verify."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chakra_ir.collective import CollectiveKind
from tacos import TacosError
from tests.tacos.helpers import ALL_KINDS, check, collective
from topologies import parse_topology
from topologies.errors import TopologyError

BASES = [
    "mesh:3x3",
    "torus:3x3",
    "ring:6",
    "hypercube:3",
    "switch:4",
    "stack:ring2*switch3",
    "fred:6,l1=3",
    "mesh:2x2x2",
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(BASES),
    fails=st.integers(0, 2),
    fail_seed=st.integers(0, 50),
    kind=st.sampled_from(ALL_KINDS),
    c=st.integers(1, 2),
    seed=st.integers(0, 1000),
    inplace=st.booleans(),
    data=st.data(),
)
def test_random_synthesis_verifies(
    base: str,
    fails: int,
    fail_seed: int,
    kind: CollectiveKind,
    c: int,
    seed: int,
    inplace: bool,
    data: st.DataObject,
) -> None:
    spec = (
        base
        if fails == 0 or base.startswith(("switch", "fred"))
        else f"{base},fail_random={fails},seed={fail_seed}"
    )
    try:
        t = parse_topology(spec)
    except TopologyError:
        return  # random failures disconnected it: parse_topology says so
    n = data.draw(st.integers(2, t.num_npus))
    placement = tuple(sorted(data.draw(st.permutations(range(t.num_npus)))[:n]))
    root = data.draw(st.integers(0, n - 1))
    coll = collective(kind, n, c, inplace=inplace, root=root, placement=placement)
    try:
        check(coll, t, chunk_bytes=data.draw(st.sampled_from([1e3, 1e6, 3.3e7])), seed=seed)
    except (TacosError, TopologyError) as e:
        assert "reach" in str(e) or "no links" in str(e)
