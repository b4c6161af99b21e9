"""Joint and independent TACOS synthesis of process groups (`tacos.groups`), and the bounds
of groups at once (`tacos.group_bounds`)."""

from __future__ import annotations

import pytest

from backends.sim import simulate
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.verify import verify, verify_routes
from tacos.errors import TacosError
from tacos.group_bounds import group_bounds
from tacos.groups import synthesize_groups
from tacos.synthesis import chunks_for
from topologies import parse_topology
from topologies.groups import parse_groups

K = CollectiveKind
CASES = [
    ("torus:8x8", "stride:8"),
    ("mesh:8x8", "block:2x2"),
    ("torus:4x4x4", "block:4x2x1"),
    ("torus:8x8", "stride:2"),  # members apart: channels cross the other group's NPUs
    ("switch:16", "stride:2"),
    ("stack:ring4*switch4", "stride:4"),
    ("ring:16,fail=3-4", "stride:2"),
]


def collective(kind: CollectiveKind, spec: str, groups: str) -> tuple[Collective, int]:
    topo = parse_topology(spec)
    g = parse_groups(groups, topo)
    c = Collective(kind, topo.num_npus, chunks_for(kind, g.size, 1), groups=g.members)
    return c, (1 << 20) // c.size_chunks


@pytest.mark.parametrize(("spec", "groups"), CASES)
@pytest.mark.parametrize("kind", [K.ALLGATHER, K.REDUCE_SCATTER, K.ALLREDUCE])
@pytest.mark.parametrize("independent", [False, True])
def test_programs_verify_and_respect_the_bounds(
    spec: str, groups: str, kind: CollectiveKind, independent: bool
) -> None:
    c, cb = collective(kind, spec, groups)
    topo = parse_topology(spec)
    syn = synthesize_groups(c, topo, cb, independent=independent)
    p = syn.program
    assert p.collective == c
    verify(p)
    verify_routes(p, topo)
    took = simulate(p, topo, cb).finish_ns
    bounds = group_bounds(kind, topo, cb * c.size_chunks, [[c.npu(r) for r in g] for g in c.groups])
    for name, ns in bounds.items.items():
        assert took >= ns * (1 - 1e-9), (name, ns, took)


def test_the_same_arguments_give_the_same_program() -> None:
    c, cb = collective(K.ALLREDUCE, "torus:8x8", "stride:2")
    topo = parse_topology("torus:8x8")
    assert (
        synthesize_groups(c, topo, cb, seed=3).program
        == synthesize_groups(c, topo, cb, seed=3).program
    )


def test_joint_planning_beats_planning_each_group_alone_where_groups_share_links() -> None:
    # Groups of even and odd NPUs: each group's channels cross the other group's NPUs and
    # links, which a group planned alone takes for free.
    topo = parse_topology("torus:8x8")
    for kind in (K.ALLGATHER, K.ALLREDUCE):
        c, cb = collective(kind, "torus:8x8", "stride:2")
        joint = simulate(synthesize_groups(c, topo, cb).program, topo, cb).finish_ns
        alone = simulate(synthesize_groups(c, topo, cb, independent=True).program, topo, cb)
        assert joint < 0.9 * alone.finish_ns, (kind, joint, alone.finish_ns)


def test_link_disjoint_groups_run_as_fast_as_one_group_alone() -> None:
    topo = parse_topology("torus:8x8")
    c, cb = collective(K.ALLREDUCE, "torus:8x8", "stride:8")
    together = simulate(synthesize_groups(c, topo, cb).program, topo, cb)
    from tacos.synthesis import synthesize

    one = synthesize(c.group_collective(0), topo, cb)
    assert together.finish_ns == pytest.approx(simulate(one.program, topo, cb).finish_ns)
    assert together.group_size == 8


def test_refusals() -> None:
    topo = parse_topology("ring:8")
    with pytest.raises(TacosError, match="split into groups"):
        synthesize_groups(Collective(K.ALLGATHER, 8, 1), topo, 1024)
    c = Collective(K.ALLGATHER, 8, 1, groups=((0, 1, 2, 3), (4, 5, 6, 7)))
    with pytest.raises(TacosError, match="chunk size"):
        synthesize_groups(c, topo, 0)
    with pytest.raises(TacosError, match="seeds"):
        synthesize_groups(c, topo, 1024, seeds=0)


def test_joint_cut_counts_every_group_crossing_a_cut() -> None:
    # Two groups each spread over both halves of a ring: the cut between the halves carries
    # both groups' data, which neither group's own bounds see.
    topo = parse_topology("ring:8")
    groups = [[0, 1, 4, 5], [2, 3, 6, 7]]
    joint = group_bounds(K.ALLGATHER, topo, 1 << 20, groups)
    assert joint.items["joint-cut"] > joint.items["cut"]
    assert joint.best[1] >= max(joint.items[k] for k in joint.items if k != "joint-cut")


def test_bounds_over_a_sample_of_groups_stay_below_all_groups() -> None:
    topo = parse_topology("torus:4x4")
    groups = [list(g) for g in parse_groups("4", topo).members]
    full = group_bounds(K.ALLREDUCE, topo, 1 << 20, groups)
    some = group_bounds(K.ALLREDUCE, topo, 1 << 20, groups, max_groups=2)
    assert "2 of the 4 groups" in some.descriptions["latency"]
    for k, v in some.items.items():
        assert v <= full.items[k] + 1e-9
    assert some.items["joint-cut"] == full.items["joint-cut"]


@pytest.mark.parametrize(
    ("spec", "groups"), [("torus:4x4", "stride:4"), ("torus:4x4", "stride:2"), ("switch:8", "4")]
)
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("independent", [False, True])
def test_alltoall_in_groups(spec: str, groups: str, inplace: bool, independent: bool) -> None:
    topo = parse_topology(spec)
    g = parse_groups(groups, topo)
    c = Collective(K.ALLTOALL, topo.num_npus, 1, inplace=inplace, groups=g.members)
    cb = 4096
    p = synthesize_groups(c, topo, cb, independent=independent).program
    verify(p)
    verify_routes(p, topo)
    took = simulate(p, topo, cb).finish_ns
    bounds = group_bounds(K.ALLTOALL, topo, cb * c.size_chunks, [list(x) for x in g.members])
    assert "joint-hop-bytes" in bounds.items
    for name, ns in bounds.items.items():
        assert took >= ns * (1 - 1e-9), (name, ns, took)
