"""Collectives split into process groups, and their programs: conditions per group, the
text form and the ET codec carry the groups, merge/split of group programs, and verify."""

from __future__ import annotations

import pytest

from baselines import ALGORITHMS
from chakra_ir.collective import (
    Buffer,
    Collective,
    CollectiveKind,
    chunk,
    collective_from_dict,
    collective_to_dict,
)
from chakra_ir.et import decode_program, encode_program
from chakra_ir.grouping import merge_groups, split_groups
from chakra_ir.program import Program
from chakra_ir.text import format_program, parse_program
from chakra_ir.verify import VerifyError, verify
from topologies import parse_topology
from topologies.errors import CollcError

K = CollectiveKind
STRIDE = ((0, 2, 4, 6), (1, 3, 5, 7))


def grouped(
    kind: CollectiveKind, groups: tuple[tuple[int, ...], ...] = STRIDE, **kw: object
) -> Program:
    algo = ALGORITHMS["direct"]
    c = Collective(kind, 8, algo.chunks_per_rank(kind, 4), groups=groups, **kw)  # type: ignore[arg-type]
    topo = parse_topology("ring:8")
    return merge_groups(c, [algo.generate(c.group_collective(g), topo) for g in range(2)])


def test_conditions_are_the_groups() -> None:
    c = Collective(K.ALLREDUCE, 8, 4, groups=STRIDE)
    assert c.group_size == 4 and c.num_groups == 2
    assert c.input_chunks(3) == 4
    mask = sum(1 << r for r in (1, 3, 5, 7))
    assert c.expected_output(5) == [((i, mask),) for i in range(4)]
    ag = Collective(K.ALLGATHER, 8, 1, groups=STRIDE)
    assert ag.output_chunks(0) == 4
    assert ag.expected_output(2) == [chunk(r, 0) for r in (0, 2, 4, 6)]
    rs = Collective(K.REDUCE_SCATTER, 8, 1, groups=STRIDE)
    assert rs.expected_output(3) == [((1, mask),)]  # rank 3 is position 1 of its group
    a2a = Collective(K.ALLTOALL, 8, 1, groups=STRIDE)
    assert a2a.expected_output(4) == [chunk(r, 2) for r in (0, 2, 4, 6)]
    inplace = Collective(K.ALLGATHER, 8, 1, inplace=True, groups=STRIDE)
    # Rank 6 is position 3 of its group: its input aliases output slot 3 (group order).
    assert inplace.physical(6, Buffer.INPUT, 0) == (Buffer.OUTPUT, 3)
    sub = c.group_collective(1)
    assert sub.num_ranks == 4 and [sub.npu(r) for r in range(4)] == [1, 3, 5, 7]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"groups": ((0, 1, 2, 3),)}, "at least two groups"),
        ({"groups": ((0, 1), (2, 3, 4))}, "equal sizes"),
        ({"groups": ((0, 1), (1, 2))}, "overlap"),
        ({"groups": ((0, 1), (2, 9))}, "outside the ranks"),
        ({"groups": ((0, 1), (2, 3))}, "rank 4 is in no group"),
    ],
)
def test_bad_groups(kw: dict[str, object], message: str) -> None:
    with pytest.raises(CollcError, match=message):
        Collective(K.ALLREDUCE, 6, 1, **kw)  # type: ignore[arg-type]


def test_rooted_kinds_take_no_groups() -> None:
    with pytest.raises(CollcError, match="broadcast cannot be split"):
        Collective(K.BROADCAST, 4, 1, root=0, groups=((0, 1), (2, 3)))


@pytest.mark.parametrize("kind", [K.ALLREDUCE, K.ALLGATHER, K.REDUCE_SCATTER, K.ALLTOALL])
@pytest.mark.parametrize("inplace", [False, True])
def test_merged_programs_verify_and_round_trip(kind: CollectiveKind, inplace: bool) -> None:
    p = grouped(kind, inplace=inplace)
    report = verify(p)
    assert report.ranks == 8
    assert parse_program(format_program(p)) == p
    assert decode_program(encode_program(p, 1024)) == p
    c = p.collective
    assert collective_from_dict(collective_to_dict(c)) == c
    parts = split_groups(p)
    assert [q.collective.num_ranks for q in parts] == [4, 4]
    assert merge_groups(c, parts) == p


def test_the_text_form_names_the_groups() -> None:
    text = format_program(grouped(K.ALLGATHER))
    assert "groups=0,2,4,6;1,3,5,7" in text.splitlines()[1]


def test_verify_checks_every_group() -> None:
    p = grouped(K.ALLREDUCE)
    # The same operations claimed for other groups: each rank then sums the wrong ranks.
    wrong = Collective(
        K.ALLREDUCE, 8, p.collective.chunks_per_rank, groups=((0, 1, 2, 3), (4, 5, 6, 7))
    )
    with pytest.raises(VerifyError):
        verify(Program.from_columns(
            wrong,
            p.rank_offsets,
            {k: getattr(p, k) for k in ("kind", "peer", "src_buf", "src_index", "dst_buf",
                                        "dst_index", "count", "tag")},
            p.dep_offsets,
            p.deps,
            p.buffer_sizes,
        ))  # fmt: skip


def test_merge_refuses_a_program_of_another_group() -> None:
    c = Collective(K.ALLGATHER, 8, 1, groups=STRIDE)
    topo = parse_topology("ring:8")
    algo = ALGORITHMS["direct"]
    g0 = algo.generate(c.group_collective(0), topo)
    with pytest.raises(CollcError, match="program of group 1"):
        merge_groups(c, [g0, g0])


def test_split_refuses_messages_between_groups() -> None:
    p = grouped(K.ALLGATHER)
    lying = Collective(K.ALLGATHER, 8, 1, groups=((0, 1, 2, 3), (4, 5, 6, 7)))
    bad = Program.from_columns(
        lying, p.rank_offsets,
        {k: getattr(p, k) for k in ("kind", "peer", "src_buf", "src_index", "dst_buf",
                                    "dst_index", "count", "tag")},
        p.dep_offsets, p.deps, p.buffer_sizes,
    )  # fmt: skip
    with pytest.raises(CollcError, match="another group"):
        split_groups(bad)
