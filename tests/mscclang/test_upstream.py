"""The constructs msccl-tools' example programs use, each held by a program of our own
(tests/mscclang/programs/) and golden text: in-place aliasing as msccl-tools defines it, every
import line, topology helpers, custom collectives in place, SendRecv, comprehensions, several
programs per file, programs compiled ``--as-custom``, and errors that point at the program.

Regenerate the golden files with ``COLLC_UPDATE_GOLDEN=1 python -m pytest tests/mscclang``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chakra_ir import format_program, parse_program
from chakra_ir.collective import Buffer, CollectiveKind
from chakra_ir.program import Recv
from chakra_ir.verify import verify
from mscclang_frontend import CompileError, compile_file, compile_file_all, compile_source
from tests.mscclang.helpers import PRELUDE

PROGRAMS = Path(__file__).parent / "programs"
GOLDEN = Path(__file__).parent / "golden"

CASES: list[tuple[str, tuple[str, ...], str]] = [
    ("inplace_allgather_pairs", ("3", "2"), "up_inplace_allgather_pairs_3x2"),
    ("upstream_imports", (), "up_upstream_imports"),
    ("custom_inplace_shift", (), "up_custom_inplace_shift"),
    ("sendrecv_swap", (), "up_sendrecv_swap"),
    ("sendrecv_swap", ("--inplace",), "up_sendrecv_swap_inplace"),
]


@pytest.mark.parametrize(("name", "argv", "golden"), CASES, ids=[c[2] for c in CASES])
def test_program_golden(name: str, argv: tuple[str, ...], golden: str) -> None:
    compiled = compile_file(PROGRAMS / f"{name}.py", argv)
    verify(compiled.program)
    text = format_program(compiled.program)
    path = GOLDEN / f"{golden}.txt"
    if os.environ.get("COLLC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    assert parse_program(text) == compiled.program


def test_inplace_copy_uses_the_senders_offset() -> None:
    # Rank s copies "into Buffer.input" of rank d: the chunk lands in d's output[s * cf + j].
    p = compile_file(PROGRAMS / "inplace_allgather_pairs.py", ["4", "2"]).program
    for d in range(4):
        landed = sorted(
            (op.peer, op.dst.index) for op in p.ops(d) if isinstance(op, Recv) and not op.reduce
        )
        assert landed == [(s, s * 2 + j) for s in range(4) if s != d for j in range(2)]
        assert all(op.dst.buffer is Buffer.OUTPUT for op in p.ops(d) if isinstance(op, Recv))


def test_custom_collective_in_place_keeps_buffers_apart() -> None:
    compiled = compile_file(PROGRAMS / "custom_inplace_shift.py")
    assert compiled.options["inplace"] is True
    c = compiled.program.collective
    assert (c.kind, c.inplace) == (CollectiveKind.CUSTOM, False)
    assert c.custom_output[2] == (((0, 2),), ((1, 2),))


def test_custom_collective_overriding_aliases_is_refused() -> None:
    body = (
        "class C(Collective):\n"
        "    def init_buffers(self):\n"
        "        return [{Buffer.input: [Chunk(r, 0)], Buffer.output: [None]} for r in range(2)]\n"
        "    def get_buffer_index(self, rank, buffer, index):\n"
        "        return buffer, index\n"
        'with MSCCLProgram("c", fully_connected(2), C(2, 1, True), 1):\n'
        "    pass\n"
    )
    with pytest.raises(CompileError, match="defines get_buffer_index"):
        compile_source(PRELUDE + body, "t.py")


def test_sendrecv_in_place_aliases_output_to_input() -> None:
    c = compile_file(PROGRAMS / "sendrecv_swap.py", ["--inplace"]).program.collective
    assert (c.kind, c.inplace, c.name) == (CollectiveKind.CUSTOM, True, "sendrecv")
    assert c.physical(1, Buffer.OUTPUT, 1) == (Buffer.INPUT, 1)
    assert c.custom_output == ((((0, 2),), ((1, 2),)), (((0, 1),), ((1, 1),)))


def test_several_programs_and_comprehensions() -> None:
    compiled = compile_file_all(PROGRAMS / "two_programs.py")
    assert [c.name for c in compiled] == ["direct", "relay"]
    direct, relay = (c.program for c in compiled)
    for p in (direct, relay):
        verify(p)
    # direct: every pair directly (2 sends per rank); relay: one hop of the two goes via
    # the next rank, which forwards what it received.
    assert [sum(isinstance(o, Recv) for o in direct.ops(r)) for r in range(3)] == [2, 2, 2]
    assert relay.num_ops == direct.num_ops


def test_as_custom_compiles_what_the_program_computes() -> None:
    path = PROGRAMS / "partial_allreduce.py"
    with pytest.raises(CompileError) as info:
        compile_file(path)
    assert "never calls Check()" in info.value.message
    assert "--as-custom" in info.value.message
    compiled = compile_file(path, as_custom=True)
    c = compiled.program.collective
    assert (c.kind, c.inplace) == (CollectiveKind.CUSTOM, True)
    # Rank 0 ends with the sum of all three; the others keep their own chunk.
    assert c.custom_output == ((((0, 7),),), (((0, 2),),), (((0, 4),),))
    verify(compiled.program)


def test_as_custom_refuses_what_a_custom_collective_cannot_alias() -> None:
    body = (
        'with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, True), 1):\n'
        "    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)\n"
    )
    with pytest.raises(CompileError, match="in-place allgather aliases slots at per-rank"):
        compile_source(PRELUDE + body, "t.py", as_custom=True)


def test_verify_failure_names_the_programs_own_index() -> None:
    # With 4 instances, output slot 5 of instance 0 is the replicated output[20], and the
    # chunk it misses, chunk(1,2), is the replicated chunk(1,8).
    body = (
        'with MSCCLProgram("ag", fully_connected(2), AllGather(2, 3, False), 4):\n'
        "    for r in range(2):\n"
        "        for j in range(3):\n"
        "            chunk(r, Buffer.input, j).copy(r, Buffer.output, r * 3 + j)\n"
        "    for j in range(2):\n"
        "        chunk(0, Buffer.input, j).copy(1, Buffer.output, j)\n"
        "        chunk(1, Buffer.input, j).copy(0, Buffer.output, 3 + j)\n"
    )
    with pytest.raises(CompileError) as info:
        compile_source(PRELUDE + body, "t.py")
    message = info.value.message
    assert message.startswith(
        "the program does not compute allgather: rank 0 output chunk 5 holds nothing instead "
        "of chunk(1,2); no copy or reduce wrote it (1 more output chunk is wrong)"
    )
    assert "output[20]" not in message and "chunk(1,8)" not in message and "20" not in message
