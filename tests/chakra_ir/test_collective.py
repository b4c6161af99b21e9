from __future__ import annotations

import pytest

from chakra_ir.collective import (
    Buffer,
    Collective,
    CollectiveKind,
    chunk,
    collective_from_dict,
    collective_to_dict,
    custom_collective,
    describe,
    merge,
    parse_collective_kind,
)
from topologies.errors import CollcError

K = CollectiveKind


@pytest.mark.parametrize(
    ("kind", "inp", "out"),
    [
        (K.ALLGATHER, 2, 8),
        (K.REDUCE_SCATTER, 8, 2),
        (K.ALLREDUCE, 2, 2),
        (K.ALLTOALL, 8, 8),
        (K.BROADCAST, 2, 2),
        (K.REDUCE, 2, 2),
        (K.GATHER, 2, 8),
        (K.SCATTER, 8, 2),
    ],
)
def test_buffer_sizes_follow_msccl(kind: CollectiveKind, inp: int, out: int) -> None:
    c = Collective(kind, 4, 2, root=0 if kind.rooted else -1)
    assert (c.input_chunks(), c.output_chunks()) == (inp, out)
    assert c.size_chunks == max(inp, out)


def test_inplace_aliases() -> None:
    ag = Collective(K.ALLGATHER, 4, 2, inplace=True)
    assert ag.physical(3, Buffer.INPUT, 1) == (Buffer.OUTPUT, 7)
    assert ag.physical(3, Buffer.OUTPUT, 1) == (Buffer.OUTPUT, 1)
    rs = Collective(K.REDUCE_SCATTER, 4, 2, inplace=True)
    assert rs.physical(2, Buffer.OUTPUT, 1) == (Buffer.INPUT, 5)
    ar = Collective(K.ALLREDUCE, 4, 2, inplace=True)
    assert ar.physical(2, Buffer.OUTPUT, 1) == (Buffer.INPUT, 1)
    assert ar.physical(2, Buffer.SCRATCH, 1) == (Buffer.SCRATCH, 1)
    assert Collective(K.ALLREDUCE, 4, 2).physical(2, Buffer.OUTPUT, 1) == (Buffer.OUTPUT, 1)


def test_postconditions() -> None:
    assert Collective(K.ALLGATHER, 3, 1).expected_output(1) == [
        chunk(0, 0),
        chunk(1, 0),
        chunk(2, 0),
    ]
    assert Collective(K.ALLREDUCE, 3, 2).expected_output(0) == [((0, 0b111),), ((1, 0b111),)]
    assert Collective(K.REDUCE_SCATTER, 3, 1).expected_output(2) == [((2, 0b111),)]
    assert Collective(K.ALLTOALL, 2, 1).expected_output(1) == [chunk(0, 1), chunk(1, 1)]
    assert Collective(K.REDUCE, 2, 1, root=1).expected_output(0) == [None]
    assert Collective(K.SCATTER, 3, 1, root=2).expected_output(1) == [chunk(2, 1)]
    assert Collective(K.SCATTER, 3, 1, root=2).initial_input(1) == [None, None, None]


def test_merge_detects_double_counting() -> None:
    a = merge(chunk(0, 3), chunk(1, 3))
    assert a == ((3, 0b11),)
    assert merge(a, chunk(1, 3)) is None
    mixed = merge(chunk(0, 1), chunk(0, 2))
    assert mixed == ((1, 1), (2, 1))
    assert describe(a) == "sum of 2 chunks at index 3 from ranks 0-1"
    assert describe(None) == "empty"


def test_validation() -> None:
    with pytest.raises(CollcError, match="root 5 is outside"):
        Collective(K.BROADCAST, 4, root=5)
    with pytest.raises(CollcError, match="takes no root"):
        Collective(K.ALLREDUCE, 4, root=1)
    with pytest.raises(CollcError, match="placement names 2 NPUs for 3 ranks"):
        Collective(K.ALLREDUCE, 3, placement=(0, 1))
    with pytest.raises(CollcError, match="chunks per rank"):
        Collective(K.ALLREDUCE, 3, 0)
    with pytest.raises(CollcError, match="unknown collective 'allreduced'"):
        parse_collective_kind("allreduced")
    assert parse_collective_kind("All-Reduce") is K.ALLREDUCE
    assert parse_collective_kind("reducescatter") is K.REDUCE_SCATTER


def test_dict_round_trip() -> None:
    cs = [
        Collective(K.GATHER, 4, 2, inplace=True, root=3, placement=(7, 5, 3, 1), name="g"),
        custom_collective(
            2, [[chunk(0, 0)], [chunk(1, 0)]], [[None, chunk(1, 0)], [chunk(0, 0), None]]
        ),
    ]
    for c in cs:
        assert collective_from_dict(collective_to_dict(c)) == c
    with pytest.raises(CollcError, match="malformed collective"):
        collective_from_dict({"kind": "nope"})
