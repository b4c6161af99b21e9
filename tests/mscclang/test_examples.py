"""Every example in examples/ compiles and verifies; its text form matches a golden file.

Regenerate the golden files with ``COLLC_UPDATE_GOLDEN=1 python -m pytest tests/mscclang``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chakra_ir import format_program, parse_program
from chakra_ir.verify import verify
from mscclang_frontend import compile_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).parent / "golden"

# (example, arguments, golden name): the defaults of every example, plus variants.
CASES: list[tuple[str, tuple[str, ...], str]] = [
    (p.stem, (), p.stem) for p in sorted(EXAMPLES.glob("*.py"))
] + [
    ("allreduce_ring", ("4", "2", "--channels", "2"), "allreduce_ring_4_i2_c2"),
    ("allgather_ring", ("3", "--inplace"), "allgather_ring_3_inplace"),
    ("hierarchical_allreduce", ("2", "2"), "hierarchical_allreduce_2x2"),
    ("alltonext", ("3", "2"), "alltonext_3x2"),
]


def test_every_example_is_covered() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.py")}
    assert len(names) >= 11
    assert names <= {c[0] for c in CASES}


@pytest.mark.parametrize(("example", "argv", "golden"), CASES, ids=[c[2] for c in CASES])
def test_example_golden(example: str, argv: tuple[str, ...], golden: str) -> None:
    compiled = compile_file(EXAMPLES / f"{example}.py", argv)
    verify(compiled.program)
    text = format_program(compiled.program)
    path = GOLDEN / f"{golden}.txt"
    if os.environ.get("COLLC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    assert parse_program(text) == compiled.program


def test_example_options() -> None:
    compiled = compile_file(EXAMPLES / "allreduce_ring.py", ["4", "2", "--protocol", "LL128"])
    assert compiled.name == "allreduce_ring_4x1"
    assert compiled.options == {
        "protocol": "LL128",
        "instances": 2,
        "threadblock_policy": "auto",
        "interleaved_replication": True,
        "instr_fusion": True,
        "check_xml": True,
        "dependence_nop": False,
        "collective": "allreduce",
        "chunk_factor": 4,
        "inplace": True,
        "num_ranks": 4,
        "topology": "fully_connected",
    }
    assert compiled.xml_requested
    assert compiled.recorded_ops == 4 * 3 * 2
    assert compiled.program.num_ops == 4 * 3 * 2 * 2 * 2


def test_manual_example_keeps_threadblocks() -> None:
    compiled = compile_file(EXAMPLES / "allgather_manual_threadblocks.py")
    assert compiled.options["threadblock_policy"] == "manual"
    hints = {(op.hints.channel, op.hints.threadblock) for _, _, op in compiled.program}
    assert hints == {(-1, 2), (0, 0), (1, 1)}


def test_custom_example_postcondition() -> None:
    compiled = compile_file(EXAMPLES / "alltonext.py", ["2", "2"])
    c = compiled.program.collective
    assert c.kind.value == "custom"
    assert c.custom_output[0] == (None, None)
    assert c.custom_output[1] == (((0, 1),), ((1, 1),))
    assert c.custom_input[3] == (None, None)
