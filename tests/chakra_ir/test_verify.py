from __future__ import annotations

import pytest

from chakra_ir import Collective, CollectiveKind, ProgramBuilder, Slice
from chakra_ir.verify import VerifyError, verify
from tests.chakra_ir.helpers import I, O, S, direct_allgather, ring_allreduce


@pytest.mark.parametrize("n", [2, 3, 4, 7])
@pytest.mark.parametrize("inplace", [False, True])
def test_ring_allreduce_verifies(n: int, inplace: bool) -> None:
    report = verify(ring_allreduce(n, inplace=inplace))
    assert report.ranks == n
    assert report.messages == 2 * n * (n - 1)


@pytest.mark.parametrize("inplace", [False, True])
def test_direct_allgather_verifies(inplace: bool) -> None:
    verify(direct_allgather(5, inplace=inplace))


def _fail(builder: ProgramBuilder) -> VerifyError:
    with pytest.raises(VerifyError) as info:
        verify(builder.build())
    return info.value


def test_missing_chunk_is_reported_with_rank_and_slot() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(0, Slice(I, 0), Slice(O, 0))
    b.copy(1, Slice(I, 0), Slice(O, 1))
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(O, 0))
    err = _fail(b)
    assert err.check == "semantics"
    assert "rank 0 output[1] ends with empty, expected chunk(1,0)" in str(err)


def test_chunk_reduced_twice() -> None:
    c = Collective(CollectiveKind.ALLREDUCE, 2, 1)
    b = ProgramBuilder(c, auto_deps=True)
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(I, 0), reduce=True)
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(I, 0), reduce=True)
    err = _fail(b)
    assert err.check == "semantics"
    assert err.rank == 1 and err.op == 1
    assert "chunk(0,0)" in str(err) and "count twice" in str(err)


def test_two_unordered_reductions_into_one_slot_race() -> None:
    c = Collective(CollectiveKind.REDUCE, 3, 1, root=0)
    b = ProgramBuilder(c)  # no automatic ordering: the two receives are unordered
    b.recv(0, 1, Slice(I, 0), reduce=True)
    b.recv(0, 2, Slice(I, 0), reduce=True)
    b.copy(0, Slice(I, 0), Slice(O, 0), deps=(0, 1))
    b.send(1, 0, Slice(I, 0))
    b.send(2, 0, Slice(I, 0))
    err = _fail(b)
    assert err.check == "race"
    assert err.rank == 0 and err.op == 1
    assert "rank 0 input[0]" in str(err) and "rank 0 op 0" in str(err)


def test_ordered_reductions_into_one_slot_are_fine() -> None:
    c = Collective(CollectiveKind.REDUCE, 3, 1, root=0)
    b = ProgramBuilder(c)
    b.recv(0, 1, Slice(I, 0), reduce=True)
    b.recv(0, 2, Slice(I, 0), reduce=True, deps=(0,))
    b.copy(0, Slice(I, 0), Slice(O, 0), deps=(1,))
    b.send(1, 0, Slice(I, 0))
    b.send(2, 0, Slice(I, 0))
    verify(b.build())


def test_ordering_through_messages_counts() -> None:
    # Rank 0 reads its slot, then overwrites it after a round trip through rank 1: the
    # write is ordered after the read only through the messages.
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(I, 0))  # 0
    b.recv(0, 1, Slice(O, 1))  # 1
    b.copy(0, Slice(I, 0), Slice(O, 0), deps=(0,))  # 2
    b.recv(1, 0, Slice(O, 0))  # 0
    b.send(1, 0, Slice(I, 0), deps=(0,))  # 1
    b.copy(1, Slice(I, 0), Slice(O, 1))
    verify(b.build())


def test_overwritten_input_still_needed_in_place() -> None:
    # In-place all-reduce on 2 ranks: rank 1 overwrites its input with rank 0's sum before
    # sending its own contribution, so rank 0 never sees chunk(1,0).
    c = Collective(CollectiveKind.ALLREDUCE, 2, 1, inplace=True)
    b = ProgramBuilder(c, auto_deps=True)
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(O, 0))  # overwrites rank 1's input slot (aliased)
    b.send(1, 0, Slice(I, 0))
    b.recv(0, 1, Slice(O, 0), reduce=True)
    err = _fail(b)
    assert err.check == "semantics"
    assert "output[0]" in str(err)


def test_unmatched_send() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c, auto_deps=True)
    b.send(0, 1, Slice(I, 0), tag=3)
    err = _fail(b)
    assert err.check == "structure"
    assert err.rank == 0 and err.op == 0
    assert "no matching receive on rank 1 from rank 0 with tag 3" in str(err)


def test_unmatched_recv() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c, auto_deps=True)
    b.recv(1, 0, Slice(O, 0), tag=1)
    b.send(0, 1, Slice(I, 0), tag=2)
    err = _fail(b)
    assert err.check == "structure"
    assert "no matching" in str(err)


def test_count_mismatch() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2, 2)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(I, 0, 2))
    b.recv(1, 0, Slice(O, 0, 1))
    err = _fail(b)
    assert "receives 1 slots but its send" in str(err)


def test_dependency_cycle() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.copy(0, Slice(I, 0), Slice(O, 0), deps=(1,))
    b.copy(0, Slice(I, 0), Slice(S, 0), deps=(0,))
    b.copy(1, Slice(I, 0), Slice(O, 1))
    err = _fail(b)
    assert err.check == "progress"
    assert "dependency cycle on rank 0" in str(err)


def test_deadlock_between_ranks() -> None:
    # Both ranks receive before they send.
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.recv(0, 1, Slice(O, 1))
    b.send(0, 1, Slice(I, 0), deps=(0,))
    b.recv(1, 0, Slice(O, 0))
    b.send(1, 0, Slice(I, 0), deps=(0,))
    err = _fail(b)
    assert err.check == "progress"
    assert "deadlock" in str(err) and "can never be issued" in str(err)


def test_read_of_empty_slot() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(S, 0))
    b.recv(1, 0, Slice(O, 0))
    err = _fail(b)
    assert "reads rank 0 scratch[0], which holds no chunk" in str(err)


def test_slot_out_of_range() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.copy(0, Slice(I, 0, 2), Slice(O, 1, 2))
    err = _fail(b)
    assert err.check == "structure"
    assert "outside input of 1 chunks" in str(err)


def test_missing_dependency_id() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.copy(0, Slice(I, 0), Slice(O, 0), deps=(5,))
    err = _fail(b)
    assert "depends on operation 5, which does not exist" in str(err)


def test_send_to_self_is_rejected() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c)
    b.send(0, 0, Slice(I, 0))
    b.recv(0, 0, Slice(O, 0))
    err = _fail(b)
    assert "its own rank" in str(err)


def test_rooted_collectives() -> None:
    # Broadcast from root 1 over 3 ranks, a chain 1 -> 0 -> 2.
    c = Collective(CollectiveKind.BROADCAST, 3, 1, root=1)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(1, Slice(I, 0), Slice(O, 0))
    b.send(1, 0, Slice(I, 0))
    b.recv(0, 1, Slice(O, 0))
    b.send(0, 2, Slice(O, 0))
    b.recv(2, 0, Slice(O, 0))
    verify(b.build())


def test_wrong_buffer_sizes() -> None:
    p = direct_allgather(3)
    p.buffer_sizes[1, 1] = 7
    with pytest.raises(VerifyError, match="rank 1 has input/output of 1/7 chunks"):
        verify(p)
