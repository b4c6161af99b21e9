"""What collc says about a program that computes the wrong thing (issue 27, item 1): the
wrong output slot in the program's own indices, what it holds instead of what, the line that
wrote it, and ``--as-custom`` only for a program that never calls ``Check()``. Programs that
call ``XML()`` before ``Check()`` (every msccl-tools example) get ``Check()``'s verdict, not
the lowering's; ``.copy`` on the None of an empty slot says which ``chunk()`` returned it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from collc.cli import cli
from tests.mscclang.helpers import PRELUDE, compile_error

RING = Path(__file__).parent / "programs" / "ring_allreduce_xml_first.py"


def _compile_cli(tmp_path: Path, *args: str) -> str:
    res = CliRunner().invoke(cli, ["compile", str(RING), "-o", str(tmp_path / "out"), "--", *args])
    assert res.exit_code == (2 if "--short" in args else 0), res.output
    assert "Traceback" not in res.output
    return res.output


def test_xml_before_check_reports_what_check_finds(tmp_path: Path) -> None:
    # The CLI installs the XML writer, so XML() lowers the (wrong) program before Check().
    out = _compile_cli(tmp_path, "8", "8", "4", "--short")
    first = [line for line in out.splitlines() if line.startswith("collc: error")]
    assert first == [
        f"collc: error: {RING}:35:13: Check() at line 44 failed: rank 0 output chunk 2 holds "
        "sum of 7 chunks at index 2 from ranks 0,2-7 instead of sum of 8 chunks at index 2 "
        "from ranks 0-7 (chunk(1,2) is missing); the reduce from rank 7 at line 35 wrote it "
        "last (7 more output chunks are wrong)"
    ]
    assert "--as-custom" not in out and "never calls Check()" not in out
    # Logical indices only: with 4 instances the physical slot would be 8.
    assert "index 8" not in out and "instance" not in out
    assert "<algo" in _compile_cli(tmp_path, "8", "8", "4")  # unmutated: compiles, prints XML


def test_empty_slot_read_says_which_chunk_call_returned_none() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    c = chunk(0, Buffer.output, 1)
    c.copy(1, Buffer.output, 1)
"""
    err = compile_error(PRELUDE + body)
    assert err.message == (
        "'NoneType' object has no attribute 'copy'; chunk() returns None for a slot that holds "
        "no chunk, and the last one that did (line 5) asked for rank 0's output[1], which no "
        "copy or reduce has written yet"
    )
    assert err.pos is not None and err.pos.line == 6


def test_empty_scratch_slot_is_named() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    chunk(0, "tmp", 0).reduce(chunk(1, Buffer.input, 0))
"""
    err = compile_error(PRELUDE + body)
    assert err.message.endswith(
        "(line 5) asked for rank 0's scratch buffer 'tmp'[0], "
        "which no copy or reduce has written yet"
    )


def test_none_from_elsewhere_gets_no_chunk_hint() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    x = None
    x.name
"""
    assert compile_error(PRELUDE + body).message == "'NoneType' object has no attribute 'name'"


def test_copy_to_the_wrong_slot_points_at_the_copy() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    for r in range(2):
        chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 0)
    Check()
"""
    err = compile_error(PRELUDE + body)
    assert err.message == (
        "Check() at line 9 failed: rank 0 output chunk 0 holds chunk(1,0) instead of "
        "chunk(0,0); the copy from rank 1 at line 8 wrote it last (1 more output chunk is wrong)"
    )
    assert err.pos is not None and (err.pos.line, err.pos.column) == (8, 5)
    assert err.stdout.splitlines() == [
        "Rank 0 chunk 0 is incorrect: expected chunk(0,0), found chunk(1,0)",
        "Rank 0 chunk 1 is incorrect: expected chunk(1,0), found empty",
    ]


def test_partial_sum_names_the_missing_chunk() -> None:
    # The full sum is made on rank 0 and sent to rank 2 only: rank 1 keeps its partial sum,
    # which lacks rank 0's chunk.
    body = """
with MSCCLProgram("ar", fully_connected(3), AllReduce(3, 1, True), 1):
    chunk(1, Buffer.input, 0).reduce(chunk(2, Buffer.input, 0))
    chunk(0, Buffer.input, 0).reduce(chunk(1, Buffer.input, 0))
    chunk(0, Buffer.input, 0).copy(2, Buffer.input, 0)
    Check()
"""
    err = compile_error(PRELUDE + body)
    assert err.message == (
        "Check() at line 8 failed: rank 1 output chunk 0 holds sum of 2 chunks at index 0 "
        "from ranks 1-2 instead of sum of 3 chunks at index 0 from ranks 0-2 (chunk(0,0) is "
        "missing); the reduce from rank 2 at line 5 wrote it last"
    )


def test_program_without_check_is_told_about_as_custom_with_logical_indices() -> None:
    # Two instances: the wrong slot is named as the program writes it (output chunk 1 of
    # rank 0), and the hint appears because the program never calls Check().
    body = """
with MSCCLProgram("a2a", fully_connected(2), AllToAll(2, 1, False), 2):
    for r in range(2):
        chunk(r, Buffer.input, r).copy(r, Buffer.output, r)
    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 0)
    chunk(0, Buffer.input, 1).copy(1, Buffer.output, 0)
"""
    err = compile_error(PRELUDE + body)
    assert err.message == (
        "the program does not compute alltoall: rank 0 output chunk 0 holds chunk(1,0) instead "
        "of chunk(0,0); the copy from rank 1 at line 7 wrote it last (1 more output chunk is "
        "wrong) (the program never calls Check(); if it is meant to compute something other "
        "than alltoall, --as-custom compiles it as a custom collective whose postcondition is "
        "what it computes)"
    )
