"""Errors carry file:line:column, the source line and a caret; unsupported constructs are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from mscclang_frontend import CompileError, compile_file
from tests.mscclang.helpers import PRELUDE, compile_error

# (program, "line:column: message", caret line): the caret line is the line under the source.
SYNTAX: list[tuple[str, str, str]] = [
    ("if x\n    y = 1\n", "1:5: invalid syntax: unexpected end of line, expected ':'", "    ^"),
    ("x = (1,\ny = 2\n", "1:5: '(' was never closed", "    ^"),
    ("x = [1, 2)\n", "1:10: closing ')' does not match opening '[' on line 1", "         ^"),
    ("x = 1)\n", "1:6: unmatched ')'", "     ^"),
    ("def f():\nreturn 1\n", "2:1: expected an indented block", "^"),
    ("x = 1\n    y = 2\n", "2:5: unexpected indent", "    ^"),
    (
        "if x:\n    y = 1\n  z = 2\n",
        "3:3: unindent does not match any outer indentation level",
        "  ^",
    ),
    ("x = 'abc\n", "1:5: unterminated string literal", "    ^"),
    (
        "x = 1 +\n",
        "1:8: invalid syntax: unexpected end of line, expected an expression",
        "       ^",
    ),
    ("x = $y\n", "1:5: invalid syntax: unexpected character '$'", "    ^"),
    ("f(a=1, 2)\n", "1:8: positional argument follows keyword argument", "       ^"),
    ("f() = 1\n", "1:1: cannot assign to a function call", "^"),
    (
        "def f(a=1, b):\n    pass\n",
        "1:12: a parameter without a default follows one with a default",
        "           ^",
    ),
    ("x = f'{}'\n", "1:7: f-string: empty expression not allowed", "      ^"),
    (
        "x = f'{1 +}'\n",
        "1:11: f-string: invalid syntax: unexpected '}', expected an expression",
        "          ^",
    ),
    ("break\n", "1:1: 'break' outside a loop", "^"),
    ("return 3\n", "1:1: 'return' outside a function", "^"),
    ("print 'x'\n", "1:7: invalid syntax: unexpected string 'x'", "      ^"),
]


@pytest.mark.parametrize(("source", "where_message", "caret"), SYNTAX)
def test_syntax_errors(source: str, where_message: str, caret: str) -> None:
    err = compile_error(source)
    assert str(err) == f"t.py:{where_message}"
    lines = err.caret().split("\n")
    assert lines[0] == "    " + source.split("\n")[int(where_message.split(":")[0]) - 1]
    assert lines[1] == "    " + caret


UNSUPPORTED: list[tuple[str, str, tuple[int, int]]] = [
    ("f = lambda x: x + 1\n", "lambda expressions are", (1, 5)),
    ("y = {1, 2}\n", "set displays are", (1, 5)),
    ("y = {i for i in range(3)}\n", "set comprehensions are", (1, 5)),
    ("try:\n    pass\nexcept Exception:\n    pass\n", "try statements are", (1, 1)),
    ("def g():\n    yield 1\n", "yield expressions are", (2, 5)),
    ("@decorator\ndef g():\n    pass\n", "decorators are", (1, 1)),
    ("def g():\n    global x\n", "global statements are", (2, 5)),
    ("def g():\n    def h():\n        nonlocal x\n", "nonlocal statements are", (3, 9)),
    ("del x\n", "del statements are", (1, 1)),
    ("def g(*args):\n    pass\n", "*args parameters are", (1, 7)),
    ("def g(**kw):\n    pass\n", "**kwargs parameters are", (1, 7)),
    ("print(*[1])\n", "*args in calls are", (1, 7)),
    ("a, *b = [1, 2]\n", "starred expressions (*x) are", (1, 4)),
    ("if (n := 3):\n    pass\n", "assignment expressions (:=) are", (1, 5)),
    ("x: int = 3\n", "type annotations are", (1, 1)),
    ("def g(x: int):\n    pass\n", "type annotations are", (1, 8)),
    ("async def g():\n    pass\n", "async statements are", (1, 1)),
    ("x = b'bytes'\n", "bytes literals are", (1, 5)),
    ("x = 1j\n", "complex numbers are", (1, 5)),
    ("from . import x\n", "relative imports are", (1, 6)),
    ("x = a @ b\n", "the @ operator is", (1, 7)),
]


@pytest.mark.parametrize(("source", "what", "where"), UNSUPPORTED)
def test_unsupported_constructs_are_named(source: str, what: str, where: tuple[int, int]) -> None:
    err = compile_error(source)
    assert err.message == f"{what} not supported in MSCCLang programs"
    assert err.pos is not None and (err.pos.line, err.pos.column) == where


def test_first_unsupported_construct_is_reported() -> None:
    err = compile_error("x = 1\ny = {i for i in z}\nf = lambda: 0\n")
    assert err.message.startswith("set comprehensions")


RUNTIME: list[tuple[str, str, str]] = [
    # (program body after the prelude, message, the text under the caret)
    ("print(undefined_name)\n", "name 'undefined_name' is not defined", "undefined_name"),
    (
        "def f(a, b):\n    return a\nf(1)\n",
        "f() missing required argument 'b'",
        "f(1)",
    ),
    (
        "def f(a):\n    return a\nf(1, 2)\n",
        "f() takes 1 positional argument but 2 were given",
        "f(1, 2)",
    ),
    ("def f(a):\n    return a\nf(b=1)\n", "f() got an unexpected keyword argument 'b'", "f(b=1)"),
    ("x = [1, 2][5]\n", "list index 5 out of range (it has 2 items)", "5]"),
    ("x = {'a': 1}['b']\n", "key 'b' not found", "'b']"),
    ("x = 1 + 'a'\n", "unsupported operand type(s) for +: 'int' and 'str'", "1 + 'a'"),
    ("x = 1 // 0\n", "division by zero", "1 // 0"),
    ("x = len(5)\n", "object of type 'int' has no len()", "5)"),
    ("x = (1).foo\n", "'int' object has no attribute 'foo'", "(1).foo"),
    ("x = [].__class__\n", "'list' object has no attribute '__class__'", "[].__class__"),
    ("for a, b in [1]:\n    pass\n", "cannot unpack non-iterable int object", "a, b in [1]:"),
    ("for x in 5:\n    pass\n", "'int' object is not iterable", "5:"),
    ("import os\n", "module 'os' is not available in MSCCLang programs", "os"),
    (
        "from msccl.language import Nope\nNope(1)\n",
        "'Nope' (from msccl.language) is not provided by collc",
        "Nope(1)",
    ),
    (
        "from msccl.topologies.nvidia import *\nt = nvlink_only()\n",
        "'nvlink_only' (from msccl.topologies.nvidia) is not provided by collc: it runs nvidia-smi",
        "nvlink_only()",
    ),
    (
        "from msccl.collectives import *\nx = allreduce(4).name\n",
        "'allreduce' (from msccl.collectives) is not provided by collc",
        "allreduce(4)",
    ),
    ("import msccl.nothing.here\nmsccl.nothing.here.f()\n", "'f' (from", "msccl.nothing"),
    (
        "total_ranks = 3\nx = total_rank + 1\n",
        "name 'total_rank' is not defined (did you mean 'total_ranks'?)",
        "total_rank",
    ),
    (
        "import json\n",
        "module 'json' is not available in MSCCLang programs (collc provides",
        "json",
    ),
    ("assert 1 == 2, 'one is not two'\n", "assertion failed: one is not two", "assert"),
    ("range(1, 2, 3, 4)\n", "range expected 1 to 3 arguments, got 4", "range("),
    ("'{0.__class__}'.format(1)\n", "str.format(): field {0.__class__} is not supported", "'{0"),
    ("x = 1\nprint(f'a {x} b {undefined + 1}')\n", "name 'undefined' is not defined", "undefined"),
    (
        "def f():\n    x = y\n    y = 1\nf()\n",
        "local variable 'y' is used before it is assigned",
        "y\n",
    ),
]


@pytest.mark.parametrize(("body", "message", "under_caret"), RUNTIME)
def test_runtime_errors(body: str, message: str, under_caret: str) -> None:
    err = compile_error(PRELUDE + body)
    assert err.message.startswith(message)
    assert err.pos is not None and err.pos.file == "t.py"
    source_line = (PRELUDE + body).split("\n")[err.pos.line - 1]
    assert err.pos.text == source_line
    assert (source_line[err.pos.column - 1 :] + "\n").startswith(under_caret)
    assert err.caret().endswith("^")


MSCCL = """with MSCCLProgram("p", fully_connected(4), AllReduce(4, 2, True), 1):
    c = chunk(0, Buffer.input, 0)
    {line}
"""

API: list[tuple[str, str, str]] = [
    ("chunk(0, Buffer.input, 7)", "index 7 out of range: rank 0's input buffer has 2 chunks", "7)"),
    ("chunk(4, Buffer.input, 0)", "rank 4 does not exist (the program has ranks 0..3)", "4,"),
    ("chunk(0, Buffer.input, 1, size=2)", "chunks 1..2 out of range: rank 0's input buffer", "1,"),
    ("c.copy(9)", "rank 9 does not exist (the program has ranks 0..3)", "9)"),
    ("c.copy(1, Buffer.output)", "copy() into Buffer.output needs an index", "c.copy"),
    ("c.copy(1, Buffer.input, index=2)", "index 2 out of range: rank 1's input buffer", "2)"),
    ("c.copy(1, Buffer.input, 'one')", "index must be an int, got str 'one'", "'one')"),
    ("c.copy(1, [1], 0)", "a scratch buffer name must be hashable, got list", "[1]"),
    ("c.copy(1, ch='x')", "ch must be an int, got str 'x'", "'x')"),
    ("c.reduce(c)", "reduce() of a chunk with itself", "c)"),
    ("c.split(3)", "split(3): a reference of 1 chunks does not split evenly", "3)"),
    ("c.copy(1, 'tmp', -5)", "index must be at least -1, got -5", "-5)"),
    ("chunk(0, Buffer.scratch, 0).copy(1)", "'NoneType' object has no attribute 'copy'", "chunk"),
    ("c.get_origin_rank(3)", "get_origin_rank(3): the reference holds 1 chunks", "3)"),
    (
        "c.copy(1, 'tmp').reduce(chunk(1, 'other', 0))",
        "reduce() needs a chunk reference",
        "chunk(1",
    ),
    ("chunk(0, Buffer.input, 0, 0)", "the chunk size must be at least 1, got 0", "0)"),
    ("c.copy(1, Buffer.input, 0, sendtb=-2)", "sendtb must be at least -1, got -2", "-2)"),
    (
        "c.copy(1, Buffer.input, 0, sendtb=10**20)",
        "sendtb must be at most 2147483647, got 100000000000000000000",
        "10**20",
    ),
    ("c.reduce(chunk(1, Buffer.input, 0), ch=2**31)", "ch must be at most 2147483647", "2**31"),
    (
        "c.copy(1, Buffer.input, 0, bogus=1)",
        "copy(): got an unexpected keyword argument 'bogus'",
        "c.copy",
    ),
]


@pytest.mark.parametrize(("line", "message", "under_caret"), API)
def test_api_errors_point_at_the_argument(line: str, message: str, under_caret: str) -> None:
    source = PRELUDE + MSCCL.format(line=line)
    err = compile_error(source)
    assert err.message.startswith(message)
    assert err.pos is not None and err.pos.line == 5
    assert err.pos.text == "    " + line
    assert err.pos.text[err.pos.column - 1 :].startswith(under_caret)


def test_error_in_a_function_points_into_it() -> None:
    body = """def send(r):
    return chunk(r, Buffer.input, 5)

with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):
    send(0)
"""
    err = compile_error(PRELUDE + body)
    assert str(err) == "t.py:4:35: index 5 out of range: rank 0's input buffer has 1 chunks"
    assert err.caret() == ("        return chunk(r, Buffer.input, 5)\n" + " " * 4 + " " * 34 + "^")


def test_compile_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text("x = (\n")
    with pytest.raises(CompileError) as info:
        compile_file(path)
    assert str(info.value) == f"{path}:1:5: '(' was never closed"
    with pytest.raises(CompileError, match="cannot read the program"):
        compile_file(tmp_path / "missing.py")
    (tmp_path / "bad.py").write_bytes(b"x = '\xff'\n")
    with pytest.raises(CompileError, match="not UTF-8"):
        compile_file(tmp_path / "bad.py")
