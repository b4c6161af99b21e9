"""How commands print: JSON or human text (`emit`), the current phase on a terminal line,
times in microseconds, and the summary of a produced program that ``synthesize``,
``compile``, ``import`` and ``demo`` print.

Like every module `collc.cli` imports, it loads no heavy library (tests/test_cli_startup.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from topologies.units import format_size_bytes

if TYPE_CHECKING:
    from collc.results import Result


def emit(as_json: bool, data: dict[str, Any], human: Callable[[], None]) -> None:
    """Print ``data`` as indented JSON with ``as_json``, else call ``human`` to print text."""
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        human()


def phases(quiet: bool) -> Callable[[str | None], None]:
    """Show the current phase on one stderr line when stderr is a terminal (never in --json
    runs or pipes); ``None`` clears the line."""
    if quiet or not sys.stderr.isatty():
        return lambda _msg: None
    width = [0]

    def show(msg: str | None) -> None:
        text = "" if msg is None else f"  {msg} ..."
        click.echo("\r" + text.ljust(width[0]) + ("\r" if msg is None else ""), err=True, nl=False)
        width[0] = max(width[0], len(text))

    return show


def warn(message: str) -> None:
    """A warning for the user on stderr, one line (``collc: warning: ...``); library writers
    take this as their ``warn`` callback."""
    if sys.stderr.isatty():  # clear a phase line first
        click.echo("\r\033[K", err=True, nl=False)
    click.echo(f"collc: warning: {message}", err=True)


def us(ns: float) -> str:
    """``ns`` nanoseconds as microseconds: ``1,234.57 us``."""
    return f"{ns / 1000:,.2f} us"


def summary(
    result: Result,
    out: Path | None,
    files: list[Path],
    *,
    requested_bytes: int | None = None,
) -> dict[str, Any]:
    """The summary of a produced program; ``requested_bytes`` is the --size asked for (the
    manifest's size is it rounded up to whole chunks)."""
    p, m = result.program, result.manifest
    return {
        "requested_size_bytes": requested_bytes,
        "algorithm": m.algorithm,
        "collective": p.collective.kind.value,
        "ranks": p.num_ranks,
        "groups": [list(g) for g in p.collective.groups] or None,
        "groups_joint": m.extra.get("groups_joint"),
        "chunks_per_rank": p.collective.chunks_per_rank,
        "inplace": p.collective.inplace,
        "topology": m.topology,
        "size_bytes": m.size_bytes,
        "chunk_bytes": m.chunk_bytes,
        "seed": m.seed,
        "tacos_rule": m.extra.get("tacos_rule"),
        "completion": m.completion,
        "operations": p.num_ops,
        "messages": result.report.messages,
        "flows": result.report.flows,
        "verified": list(result.report.checks),
        "estimated_ns": result.estimated_ns,
        "lower_bound_ns": result.bound[1],
        "lower_bound": result.bound[0],
        # TACOS's bound holds for its own chunking; simulate prints the one for any program
        "tacos_chunks_per_npu": result.bounds_chunks,
        "ratio": result.ratio,
        "seconds": {k: round(v, 4) for k, v in result.seconds.items()},
        "output": str(out) if out else None,
        "files": [str(f) for f in files],
    }


def print_summary(s: dict[str, Any]) -> None:
    """Print a `summary` as text: what was produced, then one row per figure."""
    groups = s.get("groups")
    if groups:
        how = "jointly" if s.get("groups_joint") else "each alone"
        click.echo(
            f"{s['algorithm']} {s['collective']} in {len(groups)} groups of {len(groups[0])} at "
            f"once ({how}), {s['ranks']} ranks on {s['topology']}"
        )
    else:
        click.echo(f"{s['algorithm']} {s['collective']} over {s['ranks']} ranks on {s['topology']}")
    size = (
        f"{format_size_bytes(s['size_bytes'])} ({s['chunk_bytes']} B per chunk, "
        f"{s['chunks_per_rank']} chunks per rank)"
    )
    asked = s.get("requested_size_bytes")
    if asked is not None and asked != s["size_bytes"]:
        size += (
            f"; --size {format_size_bytes(asked)} rounded up to whole chunks "
            f"(+{s['size_bytes'] - asked} B)"
        )
    rows = [("size", size)]
    if s["estimated_ns"] is not None:
        how = "simulated, every group at once; " if s.get("groups") else ""
        rows.append(
            ("estimate", f"{us(s['estimated_ns'])} ({how}sends complete {s['completion']})")
        )
    scope = (
        f"for its chunking, {s['tacos_chunks_per_npu']} chunks per NPU"
        if s.get("tacos_chunks_per_npu")
        else "for any program"
    )
    bound = f"{us(s['lower_bound_ns'])} ({s['lower_bound']}, {scope})"
    if s["ratio"] is not None:
        bound += f", ratio {s['ratio']:.3f}"
    if s.get("tacos_rule"):
        rows.append(("rule", f"{s['tacos_rule']} (seed {s['seed']})"))
    rows += [
        ("lower bound", bound),
        (
            "operations",
            f"{s['operations']} ({s['messages']} messages"
            + (
                f", {s['flows']} in-network flow{'s' * (s['flows'] != 1)})"
                if s.get("flows")
                else ")"
            ),
        ),
        ("verified", ", ".join(s["verified"])),
        ("seconds", ", ".join(f"{k} {v:.3f}" for k, v in s["seconds"].items())),
    ]
    if s["output"]:
        ets = [f for f in s["files"] if f.endswith(".et")]
        rows.append(("wrote", f"{s['output']}: {len(ets)} ET files and manifest.json"))
    for k, v in rows:
        click.echo(f"  {k:<12} {v}")
