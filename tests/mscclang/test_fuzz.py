"""Fuzzing the parser and the interpreter: whatever the input, the only error is CompileError.

Inputs are random token soup, random text, and example programs with random mutations
(deleted or duplicated spans, inserted tokens, changed numbers). A CompileError must carry
a position inside the program and never be one of collc's internal errors.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mscclang_frontend import CompileError, Limits, compile_source
from mscclang_frontend.msccl_api import ApiLimits

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
TEXTS = [p.read_text() for p in EXAMPLES]

LIMITS = Limits(
    max_steps=100_000,
    max_collection=100_000,
    max_alloc=1_000_000,
    max_output=100_000,
    api=ApiLimits(max_ranks=256, max_buffer_slots=100_000, max_instances=8, max_ops=100_000),
)

TOKENS = [
    *[
        "def",
        "class",
        "if",
        "elif",
        "else",
        "for",
        "while",
        "in",
        "not",
        "and",
        "or",
        "is",
        "return",
        "break",
        "continue",
        "pass",
        "with",
        "as",
    ],
    *[
        "import",
        "from",
        "lambda",
        "try",
        "except",
        "yield",
        "global",
        "assert",
        "None",
        "True",
        "False",
    ],
    *[
        "x",
        "y",
        "f",
        "self",
        "chunk",
        "Buffer.input",
        "Buffer.output",
        "MSCCLProgram",
        "AllReduce",
        "range",
        "print",
    ],
    *["fully_connected(4)", "Check()", "XML()", ".copy", ".reduce", ".split", "argparse", "math"],
    "0",
    "1",
    "4",
    "-1",
    "10**9",
    "2.5",
    "0x10",
    "'s'",
    '"t"',
    "f'{x}'",
    "f'{'",
    "'''doc'''",
    "r'\\n'",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "=",
    ";",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "==",
    "!=",
    "<",
    ">=",
    "+=",
    "@",
    "^",
    "~",
    "<<",
    "\n",
    "\n    ",
    "\n        ",
    "\n  ",
    " ",
    " ",
    "# comment\n",
    "\\\n",
    "\t",
    "'",
    '"',
    "$",
    "?",
    'with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):\n    ',
    "chunk(0, Buffer.input, 0)",
    "chunk(1, Buffer.input, 0).copy(0, Buffer.input, 0)",
]


def check(source: str) -> None:
    try:
        compile_source(source, "fuzz.py", limits=LIMITS)
    except CompileError as err:
        assert not err.message.startswith("internal error"), err.message
        assert err.pos is not None and err.pos.file == "fuzz.py"
        lines = source.replace("\r\n", "\n").split("\n")
        assert 0 <= err.pos.line <= len(lines), (err.pos, len(lines))
        if err.pos.line:
            assert err.pos.text == lines[err.pos.line - 1].rstrip("\r")
        err.caret()


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=50))
def test_token_soup(tokens: list[str]) -> None:
    check("".join(tokens))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_after_prelude(tokens: list[str]) -> None:
    check("from msccl.language import *\nfrom msccl.topologies import *\n" + " ".join(tokens))


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    check(text)


_MUTATION = st.tuples(
    st.sampled_from(["delete", "insert", "duplicate", "number", "swap_lines"]),
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.integers(min_value=1, max_value=40),
    st.sampled_from(TOKENS),
)


def mutate(text: str, mutations: list[tuple[str, float, int, str]]) -> str:
    for kind, where, length, token in mutations:
        at = int(where * len(text))
        if kind == "delete":
            text = text[:at] + text[at + length :]
        elif kind == "insert":
            text = text[:at] + token + text[at:]
        elif kind == "duplicate":
            text = text[:at] + text[at : at + length] + text[at:]
        elif kind == "number":
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = digits[int(where * (len(digits) - 1))]
                text = text[:i] + str(length % 10) + text[i + 1 :]
        else:
            lines = text.split("\n")
            i = int(where * (len(lines) - 1))
            j = min(len(lines) - 1, i + length % 3 + 1)
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(TEXTS))), st.lists(_MUTATION, min_size=1, max_size=4))
def test_mutated_examples(index: int, mutations: list[tuple[str, float, int, str]]) -> None:
    check(mutate(TEXTS[index], mutations))


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(range(len(TEXTS))),
    st.lists(
        st.sampled_from(["1", "2", "3", "5", "8", "--inplace", "--chunks", "x", "-h"]), max_size=3
    ),
)
def test_examples_with_random_arguments(index: int, argv: list[str]) -> None:
    try:
        compile_source(TEXTS[index], "fuzz.py", argv, limits=LIMITS)
    except CompileError as err:
        assert not err.message.startswith("internal error"), err.message


_ATOMS = st.sampled_from(
    [
        *[
            "0",
            "1",
            "-3",
            "2.5",
            "'ab'",
            "''",
            "None",
            "True",
            "[]",
            "()",
            "{}",
            "x",
            "y",
            "L",
            "D",
            "int",
            "str",
            "len",
            "print",
            "math",
        ],
        "[1, 'x']",
        "(1, 2)",
        "{'k': 1}",
        "range(3)",
        "Buffer.input",
        "ThreadblockPolicy.auto",
        "fully_connected(2)",
        "AllReduce(2, 1, True)",
        "Chunk(0, 1)",
        "'{}'",
        "'%d'",
        "10**20",
        "[None] * 3",
        "Collective",
        "argparse",
    ]
)
_OPS = st.sampled_from(
    [
        "+",
        "-",
        "*",
        "/",
        "//",
        "%",
        "**",
        "<<",
        ">>",
        "&",
        "|",
        "^",
        "==",
        "<",
        "in",
        "is",
        "and",
        "or",
        "not in",
        "if 1 else",
    ]
)
_SUFFIXES = st.sampled_from(
    [
        "",
        ".append(1)",
        ".items()",
        "[0]",
        "[1:]",
        "[::-1]",
        ".upper()",
        ".format(1)",
        "(1)",
        "()",
        ".copy(1)",
        ".num_nodes()",
        ".input",
        ".bit_length()",
        ".pop()",
        ".get(1)",
        ".join(['a'])",
        ".origin_rank",
        ".log2(8)",
        ".sort()",
        ".__class__",
        ".index(1)",
        ".ArgumentParser()",
    ]
)
_CALLS = st.sampled_from(
    [
        "len",
        "str",
        "int",
        "list",
        "sorted",
        "min",
        "max",
        "abs",
        "sum",
        "tuple",
        "dict",
        "bool",
        "repr",
        "enumerate",
        "reversed",
        "print",
        "chunk",
        "isinstance",
    ]
)
_EXPR = st.recursive(
    st.tuples(_ATOMS, _SUFFIXES).map("".join),
    lambda inner: st.one_of(
        st.tuples(inner, _OPS, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(_CALLS, inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, _SUFFIXES).map(lambda t: f"({t[0]}){t[1]}"),
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        inner.map(lambda e: f"f'{{{e}}}'"),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_EXPR, min_size=1, max_size=3), st.booleans())
def test_random_expressions(exprs: list[str], inside_program: bool) -> None:
    body = "import math\nimport argparse\nx = 3\ny = 'q'\nL = [1, 2]\nD = {1: 'a'}\n"
    if inside_program:
        body += 'with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):\n'
        body += "".join(f"    z = {e}\n" for e in exprs)
    else:
        body += "".join(f"z = {e}\n" for e in exprs)
    check("from msccl.language import *\nfrom msccl.topologies import *\n" + body)
