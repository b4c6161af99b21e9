"""Runaway programs stop with an error naming their line, not a hang or exhausted memory."""

from __future__ import annotations

import pytest

from mscclang_frontend import CompileError, Limits, compile_source
from mscclang_frontend.msccl_api import ApiLimits
from tests.mscclang.helpers import PRELUDE

FAST = Limits(max_steps=100_000)


def error(body: str, limits: Limits | None = FAST) -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_source(PRELUDE + body, "t.py", limits=limits)
    return info.value


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        (
            "x = 0\nwhile True:\n    x += 1\n",
            "the program ran more than 100,000 evaluation steps",
            4,
        ),
        ("def f(n):\n    return f(n + 1)\nf(0)\n", "calls nested more than 64 deep", 4),
        ("for i in range(10 ** 9):\n    pass\n", "the program ran more than 100,000", 4),
        ("x = sum(range(10 ** 12))\n", "the program ran more than 100,000", 3),
        ("x = [0] * 10 ** 9\n", "a collection of 1,000,000,000 elements is larger than", 3),
        ("x = 'ab' * 10 ** 8\n", "a collection of 200,000,000 elements", 3),
        ("x = 10 ** 10 ** 6\n", "an integer of more than 65536 bits", 3),
        ("x = 1 << 10 ** 7\n", "an integer of more than 65536 bits", 3),
        ("x = f'{1:>999999999}'\n", "a collection of 999,999,999 elements", 3),
        ("x = '%999999999d' % 1\n", "a collection of 999,999,999 elements", 3),
        ("x = [1]\nwhile True:\n    x = x + x\n", "elements is larger than the limit", 5),
        ("x = list(range(10 ** 8))\n", "a collection of 100,000,000 elements", 3),
        ("while True:\n    print('spam' * 1000)\n", "the program printed more than", 4),
        ("x = 'a'.ljust(10 ** 9)\n", "a collection of 1,000,000,000 elements", 3),
        # Builtins are charged by the work they do, not one step per call.
        ("x = [0] * 10 ** 6\nwhile True:\n    x.count(1)\n", "evaluation steps", 5),
        ("x = [0] * 10 ** 6\nwhile True:\n    y = 1 in x\n", "evaluation steps", 5),
        ("x = [0] * 10 ** 6\nwhile True:\n    y = x == x\n", "evaluation steps", 5),
        ("x = [0] * 10 ** 6\nwhile True:\n    y = sorted(x)\n", "evaluation steps", 5),
        ("x = 'a' * 10 ** 6\nwhile True:\n    y = x.find('b')\n", "evaluation steps", 5),
    ],
)
def test_runaway_programs(body: str, message: str, line: int) -> None:
    err = error(body)
    assert message in err.message
    assert err.pos is not None and err.pos.line == line


def test_default_step_limit_is_two_million() -> None:
    # About as many steps as the 200,000 recorded operations take; a runaway loop stops in
    # seconds (issue 10: no input may run for 20 s).
    assert Limits().max_steps == 2_000_000


def test_recorded_operations_are_capped() -> None:
    assert ApiLimits().max_ops == 200_000
    body = (
        'with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 2):\n'
        "    c = chunk(0, Buffer.input, 0)\n"
        "    while True:\n"
        "        c.copy(1, 'tmp', 0)\n"
    )
    err = error(body, Limits(api=ApiLimits(max_ops=2000)))
    assert err.message.startswith(
        "the program records more than 2,000 operations (501 copy/reduce calls x 2 instances "
        "x send and receive)"
    )
    assert "--max-ops" in err.message
    assert err.pos is not None and err.pos.line == 6


def test_builtin_charge_counts_elements() -> None:
    # 1,000 calls of count() on 3,200 elements walk 3.2 M elements: 100,000 steps' worth.
    body = "x = [0] * 3200\nfor i in range(1000):\n    x.count(1)\n"
    with pytest.raises(CompileError, match="evaluation steps"):
        compile_source(PRELUDE + body, "t.py", limits=Limits(max_steps=100_000))
    # Constant-time builtins are not charged by size.
    body = "x = [0] * 3200\nfor i in range(1000):\n    n = len(x)\n" + TRIVIAL_PROGRAM
    compile_source(PRELUDE + body, "t.py", limits=Limits(max_steps=100_000))


TRIVIAL_PROGRAM = (
    'with MSCCLProgram("t", fully_connected(2), AllGather(2, 1, True), 1):\n'
    "    for r in range(2):\n"
    "        chunk(r, Buffer.input, 0).copy(1 - r, Buffer.output, r)\n"
)


def test_source_size_and_tokens_are_capped() -> None:
    big = PRELUDE + "x = 1\n" * 200_000
    with pytest.raises(CompileError, match=r"more than the limit of 1,048,576 .*--max-source"):
        compile_source(big, "t.py")
    many = PRELUDE + "x = [" + "1, " * 150_000 + "]\n"
    err = error(many, Limits(max_tokens=100_000))
    assert "more than 100,000 tokens" in err.message and "--max-tokens" in err.message
    assert err.pos is not None and err.pos.file == "t.py"


def test_buffer_limits() -> None:
    err = error(
        'with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):\n'
        "    chunk(0, Buffer.input, 0).copy(1, 'huge', 10 ** 9)\n"
    )
    assert "out of range for a scratch buffer" in err.message
    err = error("x = AllReduce(10 ** 6, 1, True)\n")
    assert "collectives are limited to 65536 ranks" in err.message
    err = error("x = fully_connected(10 ** 6)\n")
    assert "topologies are limited to 65536 nodes" in err.message


def test_growing_a_list_is_charged_per_element() -> None:
    from tests.mscclang.helpers import TRIVIAL

    body = "x = []\nfor i in range(200_000):\n    x.append(i)\nx += [1] * 1000\nprint(len(x))\n"
    limits = Limits(max_steps=3_000_000, max_alloc=500_000)
    assert compile_source(PRELUDE + body + TRIVIAL, "t.py", limits=limits).stdout == "201000\n"
