"""Helpers for the MSCCLang front-end tests: run snippets inside a minimal valid program."""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import dedent

import pytest

from mscclang_frontend import CompiledProgram, CompileError, Limits, compile_source

PRELUDE = "from msccl.language import *\nfrom msccl.topologies import *\n"

# A two-rank in-place all-gather, so that every snippet compiles into a verified program.
TRIVIAL = """
with MSCCLProgram("trivial", fully_connected(2), AllGather(2, 1, True), 1):
    for _r in range(2):
        chunk(_r, Buffer.input, 0).copy(1 - _r, Buffer.output, _r)
"""

SMALL = Limits(max_steps=200_000, max_collection=100_000, max_alloc=2_000_000)


def program(snippet: str, with_trivial: bool = True) -> str:
    """The full program text: prelude, the snippet (dedented), then the trivial program."""
    return PRELUDE + dedent(snippet).strip("\n") + "\n" + (TRIVIAL if with_trivial else "")


def run(snippet: str, argv: Sequence[str] = (), with_trivial: bool = True) -> CompiledProgram:
    return compile_source(program(snippet, with_trivial), "t.py", argv)


def output(snippet: str, argv: Sequence[str] = ()) -> str:
    """What the snippet prints."""
    return run(snippet, argv).stdout


def compile_error(source: str, argv: Sequence[str] = (), filename: str = "t.py") -> CompileError:
    """The CompileError of compiling ``source`` exactly as given."""
    with pytest.raises(CompileError) as info:
        compile_source(source, filename, argv)
    return info.value


def snippet_error(snippet: str, argv: Sequence[str] = ()) -> CompileError:
    return compile_error(program(snippet), argv)


def prelude_lines() -> int:
    return PRELUDE.count("\n")
