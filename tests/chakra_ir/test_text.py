from __future__ import annotations

import os
from pathlib import Path

import pytest

from chakra_ir import Program, format_program, parse_program
from chakra_ir.text import TextFormError
from tests.chakra_ir.helpers import direct_allgather, ring_allreduce

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "ring_allreduce_3.txt": lambda: ring_allreduce(3),
    "ring_allreduce_3_inplace.txt": lambda: ring_allreduce(3, inplace=True),
    "direct_allgather_3_inplace.txt": lambda: direct_allgather(3, inplace=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_text_form(name: str) -> None:
    program: Program = CASES[name]()
    text = format_program(program)
    path = GOLDEN / name
    if os.environ.get("COLLC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    assert parse_program(path.read_text()) == program


def test_bad_text_names_the_line() -> None:
    text = format_program(ring_allreduce(2)).replace("send to=1", "sendd to=1", 1)
    with pytest.raises(TextFormError) as info:
        parse_program(text, "x.txt")
    assert str(info.value).startswith("x.txt:4:1: unknown operation 'sendd'")


def test_missing_collective_line() -> None:
    with pytest.raises(TextFormError, match="no 'collective' line"):
        parse_program("program x\n")
