"""Mutants of MSCCLang programs and MSCCL-IR XML files, and one way to run the CLI on them.

Shared by the hypothesis tests (``test_mutants.py``, a few hundred cases in CI) and by
``benchmarks/bench_msccl_mutants.py`` (thousands, with hang and memory figures). A mutant is
made from a seeded `random.Random`, so every case can be rebuilt from its class and seed.

MSCCLang classes (over collc's examples and the test programs): ``delete`` (a span cut
out), ``insert`` (a token or a construct inserted), ``duplicate`` (a span repeated),
``number`` (a number replaced by an extreme one: 0, -1, 2**31, a 20-digit count, 1e400, a
5,000-digit number), ``swap_lines``, ``truncate``.

XML classes (over the reader's test files and the writer's output for the test programs):
``attribute`` (one attribute set to an extreme or malformed value), ``step_type`` (a step's
type changed, e.g. ``rrcs`` to ``rrs``), ``delete_element``, ``duplicate_element``,
``swap_steps``, ``truncate``, ``bitflip`` (bytes of the file changed).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from collc.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SOURCE_CLASSES = ("delete", "insert", "duplicate", "number", "swap_lines", "truncate")
XML_CLASSES = (
    "attribute",
    "step_type",
    "delete_element",
    "duplicate_element",
    "swap_steps",
    "truncate",
    "bitflip",
)

EXTREMES = (
    "0",
    "-1",
    "2147483648",
    "4294967296",
    "100000000000000000000",
    "99999999999999999999",
    "1e400",
    "-100000000000000000000",
    "9" * 5000,
    "3.5",
    "",
    "x",
    "nan",
)
"""Values that overflow, underflow or are not numbers at all."""

TOKENS = (
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    "\n",
    "\n    ",
    "    ",
    " if ",
    " for x in range(3)",
    " while True:\n        pass\n",
    "chunk(0, Buffer.input, 0)",
    ".copy(1, Buffer.output, 0)",
    ".reduce(chunk(1, Buffer.input, 0))",
    "Check()",
    "XML()",
    "[0] * 10 ** 7",
    "x.count(1)",
    "10 ** 10 ** 6",
    "'s' * 10 ** 9",
    "f'{1:>999999999}'",
    "import os\n",
    "from msccl.topologies.nvidia import *\n",
    "raise ValueError('m')\n",
    "[i for i in range(10 ** 6)]",
    "lambda: 0",
    "None",
)
"""What ``insert`` puts into a program."""

STEP_TYPES = ("s", "r", "rrc", "rrs", "rrcs", "rcs", "cpy", "re", "nop", "x", "")


def source_bases() -> list[tuple[str, str]]:
    """(name, text) of the MSCCLang programs mutants start from."""
    paths = sorted((ROOT / "examples").glob("*.py"))
    paths += sorted((ROOT / "tests" / "mscclang" / "programs").glob("*.py"))
    return [(p.name, p.read_text()) for p in paths]


def xml_bases() -> list[tuple[str, str]]:
    """(name, text) of the MSCCL-IR XML files mutants start from."""
    from backends.msccl_xml import XmlOptions, program_to_xml
    from tests.msccl_xml.programs import alltoall, manual_ring_allgather, ring_allreduce

    out = [(p.name, p.read_text()) for p in sorted((ROOT / "tests/msccl_xml/data").glob("*.xml"))]
    for name, program in (
        ("ring_allreduce_fused", ring_allreduce(4, inplace=True)),
        ("alltoall", alltoall(4)),
        ("manual_allgather", manual_ring_allgather(3)),
    ):
        out.append((name, program_to_xml(program, XmlOptions(fusion=True))))
    return out


def mutate_source(text: str, kind: str, rng: random.Random) -> tuple[str, str]:
    """One mutation of class ``kind`` of a program; returns (mutant, description)."""
    n = len(text)
    at = rng.randrange(n + 1)
    length = rng.randint(1, 60)
    if kind == "delete":
        return text[:at] + text[at + length :], f"delete {length} at {at}"
    if kind == "insert":
        tok = rng.choice(TOKENS)
        return text[:at] + tok + text[at:], f"insert {tok!r} at {at}"
    if kind == "duplicate":
        return text[:at] + text[at : at + length] + text[at:], f"duplicate {length} at {at}"
    if kind == "number":
        numbers = [m.span() for m in re.finditer(r"\b\d+\b", text)]
        if not numbers:
            return text, "no number"
        a, b = rng.choice(numbers)
        value = rng.choice(EXTREMES)
        return text[:a] + value + text[b:], f"number at {a} -> {value[:25]!r}"
    if kind == "swap_lines":
        lines = text.split("\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"swap lines {i + 1} and {j + 1}"
    if kind == "truncate":
        return text[:at], f"truncate at {at}"
    raise ValueError(f"unknown MSCCLang mutant class {kind}")


_ELEMENT = re.compile(r"^\s*<(step|tb|gpu|/tb|/gpu)\b.*$", re.M)
_ATTR = re.compile(r'\b([a-zA-Z_]+)="([^"]*)"')


def mutate_xml(text: str, kind: str, rng: random.Random) -> tuple[str, str]:
    """One mutation of class ``kind`` of an XML file; returns (mutant, description)."""
    if kind == "attribute":
        attrs = list(_ATTR.finditer(text))
        m = rng.choice(attrs)
        value = rng.choice(EXTREMES)
        a, b = m.span(2)
        return text[:a] + value + text[b:], f"{m.group(1)}={value[:25]!r} at {a}"
    if kind == "step_type":
        types = [m for m in re.finditer(r'type="([a-z]*)"', text)]
        if not types:
            return text, "no step"
        m = rng.choice(types)
        new = rng.choice(STEP_TYPES)
        a, b = m.span(1)
        return text[:a] + new + text[b:], f"step type {m.group(1)} -> {new} at {a}"
    lines = text.split("\n")
    elements = [i for i, line in enumerate(lines) if _ELEMENT.match(line)]
    if kind in ("delete_element", "duplicate_element") and elements:
        i = rng.choice(elements)
        if kind == "delete_element":
            del lines[i]
        else:
            lines.insert(i, lines[i])
        return "\n".join(lines), f"{kind} line {i + 1}"
    if kind == "swap_steps":
        steps = [i for i, line in enumerate(lines) if "<step" in line]
        if len(steps) < 2:
            return text, "too few steps"
        i, j = rng.sample(steps, 2)
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"swap lines {i + 1} and {j + 1}"
    if kind == "truncate":
        at = rng.randrange(len(text) + 1)
        return text[:at], f"truncate at {at}"
    if kind == "bitflip":
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(data))
            data[k] ^= 1 << rng.randrange(8)
        return data.decode("utf-8", errors="surrogateescape"), "bitflip"
    if kind in ("delete_element", "duplicate_element"):
        return text, "no element"
    raise ValueError(f"unknown XML mutant class {kind}")


def write_mutant(path: Path, text: str) -> None:
    """Write a mutant byte for byte (bit flips may leave it invalid UTF-8)."""
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))


def run_cli(args: Sequence[str]) -> tuple[int, str]:
    """Run ``collc ARGS`` in-process; (exit status, output). An exception that escapes the
    CLI is a traceback: status 1 with the exception in the output."""
    res = CliRunner().invoke(cli, list(args))
    out = res.output
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return 1, f"{out}Traceback: {type(res.exception).__name__}: {res.exception}"
    return res.exit_code, out


def classify(status: int, output: str) -> str:
    """``ok`` (0), ``refused`` (2 with one ``collc: error:`` line), else ``traceback``."""
    if "Traceback" in output:
        return "traceback"
    if status == 0:
        return "ok"
    if status == 2 and "collc: error:" in output:
        return "refused"
    return "traceback"
