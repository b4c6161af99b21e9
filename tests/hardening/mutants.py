"""Mutants of collc output folders and topology specs, and one way to run the CLI on them.

Shared by the hypothesis tests in this folder (a few hundred cases in CI) and by
``benchmarks/bench_mutants.py`` (thousands, with hang and memory figures). A mutant is made
from a seeded `random.Random`, so every case can be rebuilt from its class and seed.

Classes of ET-folder mutants: ``truncate`` (a rank file cut short), ``bitflip`` (1-4 bits of a
rank file flipped), ``swap`` (two rank files exchanged on disk), ``delete`` (a rank file
removed), ``manifest`` (a field of manifest.json edited: wrong type, non-finite, huge, removed,
or the file made non-UTF-8 or truncated).
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from collc.cli import cli

FOLDER_CLASSES = ("truncate", "bitflip", "swap", "delete", "manifest")

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("verify",),
    ("verify", "--json"),
    ("simulate",),
    ("simulate", "--model", "analytical", "--json"),
    ("inspect",),
    ("inspect", "--json"),
)
"""The commands each folder mutant is given (the folder is appended)."""


def make_base(root: Path) -> list[Path]:
    """Small valid output folders to mutate: a TACOS all-reduce and a ring all-gather."""
    made = []
    for name, args in (
        ("tacos", ["-t", "ring:4", "-c", "allreduce", "--size", "4KiB"]),
        ("ring", ["-t", "mesh:2x2", "-c", "allgather", "-a", "ring", "--size", "1KiB"]),
    ):
        out = root / name
        res = CliRunner().invoke(cli, ["synthesize", *args, "-o", str(out), "-q"])
        if res.exit_code != 0:
            raise RuntimeError(f"cannot build the base folder {name}: {res.output}")
        made.append(out)
    return made


_ODD_VALUES: tuple[Any, ...] = (
    None,
    "x",
    "",
    -1,
    0,
    3.5,
    1e308,
    float("nan"),
    float("inf"),
    10**30,
    100_000_000,
    [],
    {},
    [1, 2],
    True,
    "\x00",
    "mesk:8",
    "ring:4",
    "ring:8,bw=1e-10GB/s",
)


def _paths(d: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON value."""
    out: list[tuple[Any, ...]] = [prefix] if prefix else []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(d, list):
        for i, v in enumerate(d[:4]):
            out += _paths(v, (*prefix, i))
    return out


def _mutate_manifest(path: Path, rng: random.Random) -> str:
    raw = path.read_bytes()
    how = rng.choice(["value", "value", "value", "delete", "bytes", "truncate", "extra"])
    if how == "bytes":
        i = rng.randrange(len(raw))
        path.write_bytes(raw[:i] + bytes([rng.choice([0x80, 0xFF, 0xC3, 0x00])]) + raw[i + 1 :])
        return f"manifest byte {i}"
    if how == "truncate":
        i = rng.randrange(len(raw))
        path.write_bytes(raw[:i])
        return f"manifest cut at {i}"
    data = json.loads(raw)
    if how == "extra":
        key = rng.choice(["reduce_micros", "estimated_ns", "lower_bound_ns", "lower_bound"])
        value = rng.choice(_ODD_VALUES)
        data.setdefault("extra", {})[key] = value
        path.write_text(json.dumps(data))
        return f"extra.{key} = {value!r}"
    keys = _paths(data)
    key = rng.choice(keys)
    parent = data
    for k in key[:-1]:
        parent = parent[k]
    if how == "delete":
        if isinstance(parent, dict):
            del parent[key[-1]]
        else:
            parent.pop(key[-1])
        path.write_text(json.dumps(data))
        return f"removed {'.'.join(map(str, key))}"
    value = rng.choice(_ODD_VALUES)
    parent[key[-1]] = value
    path.write_text(json.dumps(data))
    return f"{'.'.join(map(str, key))} = {value!r}"


def mutate_folder(base: Path, dest: Path, kind: str, rng: random.Random) -> str:
    """Copy ``base`` to ``dest`` and apply one mutation of class ``kind``; describe it."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest)
    ets = sorted(dest.glob("*.et"))
    if kind == "truncate":
        f = rng.choice(ets)
        data = f.read_bytes()
        cut = rng.randrange(len(data))
        f.write_bytes(data[:cut])
        return f"{f.name} cut at {cut}"
    if kind == "bitflip":
        f = rng.choice(ets)
        data = bytearray(f.read_bytes())
        flips = [(rng.randrange(len(data)), rng.randrange(8)) for _ in range(rng.randint(1, 4))]
        for i, b in flips:
            data[i] ^= 1 << b
        f.write_bytes(bytes(data))
        return f"{f.name} bits {flips}"
    if kind == "swap":
        a, b = rng.sample(ets, 2)
        da, db = a.read_bytes(), b.read_bytes()
        a.write_bytes(db)
        b.write_bytes(da)
        return f"swapped {a.name} {b.name}"
    if kind == "delete":
        f = rng.choice(ets)
        f.unlink()
        return f"deleted {f.name}"
    if kind == "manifest":
        return _mutate_manifest(dest / "manifest.json", rng)
    raise ValueError(f"unknown mutant class {kind}")


_SPEC_OPTIONS = (
    ",bw=1e400GB/s",
    ",bw=1e-300GB/s",
    ",bw=1e-10GB/s",
    ",bw=1KB/s",
    ",bw=400Gb/s",
    ",bw=25Gbps",
    ",bw=50GBps",
    ",bw=3gb/s",
    ",bw=" + "9" * 5000 + "GB/s",
    ",lat=1e400ns",
    ",lat=999s",
    ",lat=0ns",
    ",lat=" + "9" * 5000 + "ns",
    ",fail=0-1",
    ",fail=1>2",
    ",fail_random=2,seed=3",
    ",fail_random=99999999999999999999",
    ",linkbw=0-1:1e-300GB/s",
    ",linkbw=0-1:10GB/s",
    ",linklat=0-1:1e300s",
    ",bw=[1GB/s,2GB/s]",
    ",lat=[1ns,2ns,3ns]",
)

SPEC_PIECES = (
    "ring:8",
    "mesh:4x4",
    "torus:2x2x2",
    "hypercube:3",
    "switch:8",
    "fc:4",
    "stack:ring4*fc2",
    "fred:8",
    "graph:4,links=0-1;1-2;2-3;3-0",
    "uniring:5",
)
_SPEC_INSERTS = (
    "\x00",
    ",bw=1e400GB/s",
    ",bw=1e-300GB/s",
    ",bw=1e-10GB/s",
    ",bw=" + "9" * 5000 + "GB/s",
    ",lat=" + "9" * 5000 + "ns",
    ",lat=1e400ns",
    ",bw=50Gb/s",
    ",bw=50gb/s",
    ",bw=50GBps",
    ",bw=[1GB/s,2GB/s,3GB/s,4GB/s]",
    ",fail=0-1",
    ",fail_random=99999999999999999999",
    ",linkbw=0-1:1e-300GB/s",
    ",linklat=0-1:1e300s",
    "x" + "9" * 30,
    "9" * 5000,
    ",",
    "[",
    "]",
    ":",
    ";",
    ">",
    "=",
    "*",
)


def mutate_spec(rng: random.Random) -> str:
    """A topology spec with 1-3 random edits: inserted pieces, deleted or replaced characters."""
    s = rng.choice(SPEC_PIECES)
    for _ in range(rng.randint(1, 3)):
        how = rng.choice(["append", "append", "insert", "delete", "replace", "digits"])
        i = rng.randrange(len(s) + 1)
        if how == "append":  # an option at the end: the spec often stays well-formed
            s += rng.choice(_SPEC_OPTIONS)
            continue
        if how == "insert":
            s = s[:i] + rng.choice(_SPEC_INSERTS) + s[i:]
        elif how == "delete" and s:
            s = s[:i] + s[i + 1 :]
        elif how == "replace" and i < len(s):
            s = s[:i] + chr(rng.randrange(32, 127)) + s[i + 1 :]
        else:
            s = s[:i] + str(rng.choice([0, 1, 7, 64, 1000, 10**6, 10**12])) + s[i:]
    return s


SPEC_COMMANDS: tuple[Callable[[str, Path], list[str]], ...] = (
    lambda spec, out: ["bounds", "-t", spec, "-c", "allgather", "--size", "1KiB"],
    lambda spec, out: ["synthesize", "-t", spec, "-c", "allreduce", "-o", str(out), "-q"],
    lambda spec, out: ["synthesize", "-t", spec, "-c", "allgather", "-a", "ring", "-o", str(out)],
)


@dataclass(frozen=True)
class Outcome:
    """How one CLI run ended: its exit status, and the traceback text if it raised."""

    exit_code: int
    output: str
    traceback: str | None


def run_cli(args: list[str]) -> Outcome:
    """Run ``collc ARGS`` in this process, catching what escapes the CLI's error handling."""
    import traceback

    res = CliRunner().invoke(cli, args)
    tb = None
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        exc = res.exception
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Outcome(res.exit_code, res.output, tb)


def acceptable(outcome: Outcome) -> bool:
    """No traceback, and either success, a wrong program (1) or one error line with status 2."""
    if outcome.traceback is not None or "Traceback" in outcome.output:
        return False
    if outcome.exit_code in (0, 1):
        return True
    if outcome.exit_code != 2:
        return False
    lines = [ln for ln in outcome.output.splitlines() if ln.strip()]
    return bool(lines) and (lines[0].startswith("collc: error: ") or lines[0].startswith("Usage:"))
