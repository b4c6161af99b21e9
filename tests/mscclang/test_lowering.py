"""Lowering: replication of instances, scratch layout, hints, in-place slots, dependencies."""

from __future__ import annotations

import pytest

from chakra_ir import Buffer, CollectiveKind
from chakra_ir.program import Copy, Op, Recv, Send
from mscclang_frontend import CompiledProgram, compile_source
from tests.mscclang.helpers import PRELUDE, compile_error


def prog(body: str) -> CompiledProgram:
    return compile_source(PRELUDE + body, "t.py")


def slots(ops: list[Op]) -> list[tuple[str, int, int]]:
    out = []
    for op in ops:
        s = op.src if isinstance(op, Send) else op.dst  # type: ignore[union-attr]
        out.append((s.buffer.short, s.index, s.count))
    return out


ALLGATHER = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 2, False), INSTANCES,
                  interleaved_replication=INTERLEAVED):
    for r in range(2):
        for i in range(2):
            c = chunk(r, Buffer.input, i)
            c.copy(r, Buffer.output, r * 2 + i)
            c.copy(1 - r, Buffer.output, r * 2 + i)
    Check()
"""


def allgather(instances: int, interleaved: bool) -> CompiledProgram:
    return prog(
        ALLGATHER.replace("INSTANCES", str(instances)).replace("INTERLEAVED", str(interleaved))
    )


def test_interleaved_instances() -> None:
    compiled = allgather(2, True)
    c = compiled.program.collective
    assert (c.kind, c.chunks_per_rank) == (CollectiveKind.ALLGATHER, 4)
    sends = [op for op in compiled.program.ops(1) if isinstance(op, Send)]
    # Input slot i of clone k is i * 2 + k.
    assert slots(sends) == [("i", 0, 1), ("i", 1, 1), ("i", 2, 1), ("i", 3, 1)]
    recvs = [op for op in compiled.program.ops(1) if isinstance(op, Recv)]
    assert slots(recvs) == [("o", 0, 1), ("o", 1, 1), ("o", 2, 1), ("o", 3, 1)]
    assert compiled.recorded_ops == 8
    assert compiled.program.num_ops == 2 * 2 * 6  # instances x ranks x (2 copies, 2 sends, 2 recvs)


def test_blocked_instances_keep_the_layout_as_a_custom_collective() -> None:
    compiled = allgather(2, False)
    c = compiled.program.collective
    assert c.kind is CollectiveKind.CUSTOM and c.name == "allgather-blocked"
    sends = [op for op in compiled.program.ops(1) if isinstance(op, Send)]
    # Input slot i of clone k is len(input) * k + i.
    assert slots(sends) == [("i", 0, 1), ("i", 2, 1), ("i", 1, 1), ("i", 3, 1)]
    # Rank 1's output slot len(output) * 1 + 0 holds rank 0's input slot 2.
    assert c.custom_output[1][4] == ((2, 1),)


def test_blocked_allreduce_stays_an_allreduce() -> None:
    body = """
with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 2, True), 3,
                  interleaved_replication=False):
    for i in range(2):
        acc = chunk(1, Buffer.input, i).reduce(chunk(0, Buffer.input, i))
        acc.copy(0, Buffer.input, i)
"""
    compiled = prog(body)
    c = compiled.program.collective
    assert (c.kind, c.chunks_per_rank, c.inplace) == (CollectiveKind.ALLREDUCE, 6, True)
    recvs = [op for op in compiled.program.ops(1) if isinstance(op, Recv)]
    assert [op.dst.index for op in recvs] == [0, 2, 4, 1, 3, 5]


def test_blocked_inplace_allgather_is_refused() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, True), 2,
                  interleaved_replication=False):
    for r in range(2):
        chunk(r, Buffer.input, 0).copy(1 - r, Buffer.output, r)
"""
    err = compile_error(PRELUDE + body)
    assert "interleaved_replication=False with 2 instances changes the allgather" in err.message
    assert err.pos is not None and err.pos.line == 4


def test_multi_slot_references_replicate_in_blocks() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 2, False), 2):
    for r in range(2):
        c = chunk(r, Buffer.input, 0, size=2)
        c.copy(r, Buffer.output, r * 2)
        c.copy(1 - r, Buffer.output, r * 2)
    Check()
"""
    ops = prog(body).program.ops(0)
    copies = [op for op in ops if isinstance(op, Copy)]
    assert [(op.src.index, op.dst.index, op.src.count) for op in copies] == [(0, 0, 2), (2, 2, 2)]


def test_named_scratch_buffers_are_concatenated() -> None:
    body = """
with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, False), 2):
    chunk(0, Buffer.input, 0).copy(1, "first", 1)
    chunk(0, Buffer.input, 0).copy(1, "second")
    acc = chunk(1, Buffer.input, 0).reduce(chunk(1, "second", 0))
    acc.copy(1, Buffer.output, 0).copy(0, Buffer.output, 0)
"""
    compiled = prog(body)
    # "first" has 2 slots, "second" 1: x 2 instances -> first at 0..3, second at 4..5.
    assert int(compiled.program.buffer_sizes[1, 2]) == 6
    recvs = [op for op in compiled.program.ops(1) if isinstance(op, Recv)]
    assert [(op.dst.buffer, op.dst.index) for op in recvs] == [
        (Buffer.SCRATCH, 1),
        (Buffer.SCRATCH, 3),
        (Buffer.SCRATCH, 4),
        (Buffer.SCRATCH, 5),
    ]


CHANNELS = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, True), INSTANCES,
                  threadblock_policy=POLICY):
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0, sendtb=3, recvtb=4, ch=1)
    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 1, sendtb=5)
"""


@pytest.mark.parametrize(
    ("instances", "policy", "send_hints", "recv_hints"),
    [
        (1, "auto", [(1, -1), (-1, -1)], [(-1, -1), (1, -1)]),
        (1, "manual", [(1, 3), (-1, 5)], [(-1, -1), (1, 4)]),
        (2, "manual", [(1, 6), (3, 7), (0, 10), (2, 11)], [(0, -1), (2, -1), (1, 8), (3, 9)]),
        (2, "auto", [(1, -1), (3, -1), (0, -1), (2, -1)], [(0, -1), (2, -1), (1, -1), (3, -1)]),
    ],
)
def test_channel_and_threadblock_hints(
    instances: int,
    policy: str,
    send_hints: list[tuple[int, int]],
    recv_hints: list[tuple[int, int]],
) -> None:
    body = CHANNELS.replace("INSTANCES", str(instances)).replace(
        "POLICY", f"ThreadblockPolicy.{policy}"
    )
    p = prog(body).program
    ops = [op for r in range(2) for op in p.ops(r)]
    sends = [(op.hints.channel, op.hints.threadblock) for op in ops if isinstance(op, Send)]
    recvs = [(op.hints.channel, op.hints.threadblock) for op in ops if isinstance(op, Recv)]
    assert sends == send_hints
    assert recvs == recv_hints


def test_per_slot_dependencies_on_physical_slots() -> None:
    body = """
with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, True), 1):
    chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))
    chunk(1, Buffer.output, 0).copy(0, Buffer.output, 0)
"""
    p = prog(body).program
    # In place, output 0 is input 0: rank 0's receive waits for its send (WAR) ...
    assert p.ops(0)[1].deps == (0,)
    # ... and rank 1's send waits for the reducing receive (RAW).
    assert p.ops(1)[1].deps == (0,)
    assert all(op.dst.buffer is Buffer.INPUT for op in p.ops(0) if isinstance(op, Recv))


def test_position_of_operations() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, True), 1):
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 1)
"""
    compiled = prog(body)
    pos = compiled.position_of(0, 1)
    assert pos is not None and (pos.line, pos.column) == (6, 5)
    assert pos.text == "    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 1)"
    assert compiled.position_of(0, 9) is None
    assert compiled.position_of(7, 0) is None
