"""collc's timings against ASTRA-sim: a matrix of topologies, algorithms, collectives and sizes.

    python benchmarks/bench_astra_matrix.py [--quick] [--json FILE] [--jobs 2] [--timeout 120]
                                            [--topologies ring:8,switch:8] [--sizes 1MiB]

Every cell produces a program (``collc synthesize``, or ``collc compile`` of an MSCCLang
example) and prints:

- ``estimate``: the producer's own estimate (TACOS only);
- ``congestion``: ``collc simulate`` under collc's default model;
- ``astra-model``: ``collc simulate --model astra-aware`` (ASTRA-sim's congestion-aware
  backend as collc models it);
- ``analytical``: ``collc simulate --model analytical`` (ASTRA-sim's congestion-unaware one);
- ``aware`` and ``unaware``: what ASTRA-sim itself measures on the bundle ``collc export
  --target astra-sim`` writes (the largest ``sys[i] finished, T cycles``), when the
  environment variables ``COLLC_ASTRA_SIM_AWARE`` and ``COLLC_ASTRA_SIM_UNAWARE`` name the
  congestion-aware and congestion-unaware binaries;
- the relative errors (predicted - measured) / measured of collc's figure (the estimate, or
  the congestion model when there is none) and of the astra-aware model against ASTRA-sim
  aware, and of the analytical model against ASTRA-sim unaware.

All times are in ns (ASTRA-sim's cycles are ns). The matrix: topologies ring:8, ring:16, fc:8,
switch:8, switch:16 and switch:64, each with ``bw=50GiB/s,lat=500ns``; sizes 1000B, 1MiB and
64MiB; all-reduce by TACOS with 1, 2 and 4 chunks per NPU, ring, ring-bidir, direct, rhd, dbt
and three MSCCLang examples (ring, all-pairs, recursive doubling, compiled for the topology's
rank count); all-gather and reduce-scatter by TACOS (1 chunk per NPU) and ring. A cell that
cannot apply says why in its row; an ASTRA-sim run that fails or exceeds ``--timeout`` seconds
is reported in its row. The summary counts, per comparison, the cells within 1% and lists the
worst. ``--quick`` runs 1 MiB on ring:8 and switch:8 only. Work happens in a temporary
directory, removed at the end; cells run in ``--jobs`` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chakra_ir.collective import CollectiveKind
from collc import pipeline
from collc.exporters import EXPORTERS, ExportOptions
from topologies import parse_topology
from topologies.errors import CollcError
from topologies.units import parse_size_bytes

ROOT = Path(__file__).resolve().parent.parent
LINK = "bw=50GiB/s,lat=500ns"
TOPOLOGIES = ("ring:8", "ring:16", "fc:8", "switch:8", "switch:16", "switch:64")
SIZES = ("1000B", "1MiB", "64MiB")
QUICK_TOPOLOGIES = ("ring:8", "switch:8")
QUICK_SIZES = ("1MiB",)
AWARE_ENV = "COLLC_ASTRA_SIM_AWARE"
UNAWARE_ENV = "COLLC_ASTRA_SIM_UNAWARE"
EXAMPLES_DIR = ROOT / "examples"
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")
WITHIN = 0.01
AR, AG, RS = CollectiveKind.ALLREDUCE, CollectiveKind.ALLGATHER, CollectiveKind.REDUCE_SCATTER


@dataclass(frozen=True)
class Example:
    """An MSCCLang all-reduce in ``examples/``: its file and its arguments for ``n`` ranks."""

    file: str
    extra_args: tuple[str, ...] = ()
    power_of_two: bool = False

    def argv(self, n: int) -> list[str]:
        return [str(n), *self.extra_args]


EXAMPLES = (
    Example("allreduce_ring.py", ("1",)),
    Example("allreduce_allpairs.py", ("1",)),
    Example("allreduce_recursive_doubling.py", power_of_two=True),
)


@dataclass(frozen=True)
class Cell:
    """One program to time: ``algorithm`` through ``collc synthesize`` with ``chunks`` per NPU,
    or, when ``example`` is set, that MSCCLang example through ``collc compile``."""

    topology: str
    collective: str
    label: str
    size: str
    algorithm: str = ""
    chunks: int = 1
    example: str = ""

    @property
    def spec(self) -> str:
        return f"{self.topology},{LINK}"

    @property
    def name(self) -> str:
        return f"{self.topology} {self.collective} {self.label} {self.size}"


def matrix(topologies: Sequence[str], sizes: Sequence[str]) -> list[Cell]:
    """Every cell, by topology, then size, then collective and algorithm."""
    cells: list[Cell] = []
    for topo in topologies:
        for size in sizes:
            for c in (1, 2, 4):
                cells.append(Cell(topo, AR.value, f"tacos c={c}", size, "tacos", c))
            for algo in ("ring", "ring-bidir", "direct", "rhd", "dbt"):
                cells.append(Cell(topo, AR.value, algo, size, algo))
            for ex in EXAMPLES:
                label = f"msccl {ex.file.removesuffix('.py')}"
                cells.append(Cell(topo, AR.value, label, size, example=ex.file))
            for kind in (AG, RS):
                cells.append(Cell(topo, kind.value, "tacos c=1", size, "tacos", 1))
                cells.append(Cell(topo, kind.value, "ring", size, "ring"))
    return cells


@dataclass
class Row:
    """What one cell measured, in ns. ``note`` says why a cell produced no program (skipped
    or failed); ``model_notes`` why a model gave no time; the ASTRA-sim notes why a run gave
    none."""

    cell: Cell
    produced: bool = False
    note: str = ""
    model_notes: list[str] = field(default_factory=list)
    estimate: float | None = None
    congestion: float | None = None
    astra_model: float | None = None
    analytical: float | None = None
    aware: int | None = None
    unaware: int | None = None
    aware_note: str = ""
    unaware_note: str = ""
    seconds: float = 0.0

    @property
    def collc(self) -> float | None:
        """collc's own figure: the producer's estimate, else the congestion model."""
        return self.estimate if self.estimate is not None else self.congestion


@dataclass(frozen=True)
class Comparison:
    name: str
    short: str
    predicted: Callable[[Row], float | None]
    measured: Callable[[Row], int | None]

    def error(self, row: Row) -> float | None:
        """(predicted - measured) / measured, or None when either is missing."""
        p, m = self.predicted(row), self.measured(row)
        if p is None or m is None or m <= 0:
            return None
        return (p - m) / m


COMPARISONS = (
    Comparison(
        "collc (estimate, else congestion) vs ASTRA-sim aware",
        "collc/aware",
        lambda r: r.collc,
        lambda r: r.aware,
    ),
    Comparison(
        "astra-aware model vs ASTRA-sim aware",
        "model/aware",
        lambda r: r.astra_model,
        lambda r: r.aware,
    ),
    Comparison(
        "analytical model vs ASTRA-sim unaware",
        "anal/unaware",
        lambda r: r.analytical,
        lambda r: r.unaware,
    ),
)


def binary(var: str) -> str | None:
    """The executable the environment variable ``var`` names, or None."""
    path = os.environ.get(var, "")
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    return None


def run_astra(bundle: Path, exe: str, npus: int, timeout: float) -> tuple[int | None, str]:
    """Run a bundle's run.sh with ``exe``; the largest finished time, or None and why. A run
    past ``timeout`` seconds is killed with everything it started."""
    try:
        proc = subprocess.Popen(
            ["sh", str(bundle / "run.sh")],
            env={**os.environ, "ASTRA_SIM": exe},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        return None, f"could not run: {e}"
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, f"timed out after {timeout:g} s"
    finished: dict[int, int] = {}
    for m in FINISHED.finditer(stdout):
        finished[int(m.group(1))] = int(m.group(2))
    if proc.returncode != 0:
        return None, _failure(proc.returncode, stderr.strip() or stdout.strip())
    if len(finished) < npus:
        return None, f"{len(finished)} of {npus} NPUs finished"
    return max(finished.values()), ""


def _failure(returncode: int, output: str) -> str:
    """Why a run failed: its exit status or signal, and its failed assertion or last line."""
    status = f"exit {returncode}"
    if returncode < 0:
        try:
            status = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            status = f"killed by signal {-returncode}"
    m = re.search(r"Assertion `.*' failed", output)
    lines = output.splitlines()
    detail = m.group(0) if m else lines[-1] if lines else ""
    return f"{status}: {detail[:120]}" if detail else status


def _produce(cell: Cell) -> pipeline.Result:
    size = parse_size_bytes(cell.size)
    if cell.example:
        n = parse_topology(cell.spec).num_npus
        ex = next(e for e in EXAMPLES if e.file == cell.example)
        if ex.power_of_two and n & (n - 1):
            raise CollcError(f"{ex.file} needs a power-of-two number of ranks, not {n}")
        result, _ = pipeline.compile_msccl(
            EXAMPLES_DIR / ex.file, ex.argv(n), size_bytes=size, topology=cell.spec
        )
        return result
    req = pipeline.Request(
        cell.spec, CollectiveKind(cell.collective), cell.algorithm, size, cell.chunks
    )
    return pipeline.synthesize(req)


def _simulate(folder: Path, model: str) -> float:
    result, _, _ = pipeline.simulate_folder(pipeline.SimRequest(folder, model=model))
    return float(result.finish_ns)


def run_cell(
    cell: Cell, workdir: Path, aware: str | None, unaware: str | None, timeout: float
) -> Row:
    """Produce, simulate under the three models, export and run ASTRA-sim; never raises."""
    t0 = time.perf_counter()
    row = Row(cell)
    out = Path(tempfile.mkdtemp(dir=workdir))
    try:
        _fill(row, out, aware, unaware, timeout)
    except CollcError as e:
        row.note = f"{'failed' if row.produced else 'skipped'}: {e.message}"
    except Exception as e:
        row.note = f"error: {type(e).__name__}: {e}"
    finally:
        shutil.rmtree(out, ignore_errors=True)
    row.seconds = time.perf_counter() - t0
    return row


def _fill(row: Row, out: Path, aware: str | None, unaware: str | None, timeout: float) -> None:
    result = _produce(row.cell)
    row.produced = True
    folder = out / "program"
    pipeline.write(result, folder)
    row.estimate = result.estimated_ns
    for model in ("congestion", "analytical", "astra-aware"):
        try:
            finish: float | None = _simulate(folder, model)
        except CollcError as e:
            finish = None
            row.model_notes.append(f"{model}: {e.message}")
        if model == "congestion":
            row.congestion = finish
        elif model == "analytical":
            row.analytical = finish
        else:
            row.astra_model = finish
    if aware is None and unaware is None:
        return
    bundle = out / "bundle"
    try:
        manifest, program, _ = pipeline.load(folder)
        topology = pipeline.topology_of(manifest, None)
        EXPORTERS["astra-sim"](program, topology, manifest, bundle, ExportOptions())
    except CollcError as e:
        row.aware_note = row.unaware_note = f"export failed: {e.message}"
        return
    npus = topology.num_npus
    if aware is not None:
        row.aware, row.aware_note = run_astra(bundle, aware, npus, timeout)
    if unaware is not None:
        row.unaware, row.unaware_note = run_astra(bundle, unaware, npus, timeout)


def _ns(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _err(e: float | None) -> str:
    if e is None:
        return "-"
    return "exact" if e == 0 else f"{e:+.3%}"


COLUMNS = (
    ("topology", 9),
    ("collective", 14),
    ("algorithm", 34),
    ("size", 6),
    ("estimate", 13),
    ("congestion", 13),
    ("astra-model", 13),
    ("analytical", 13),
    ("aware", 13),
    ("unaware", 13),
    *((c.short, 12) for c in COMPARISONS),
    ("s", 6),
)


def _line(fields: Sequence[str]) -> str:
    cells = [
        f.ljust(w) if i < 4 else f.rjust(w)
        for i, (f, (_, w)) in enumerate(zip(fields, COLUMNS, strict=True))
    ]
    return " ".join(cells).rstrip()


def header() -> str:
    return _line([name for name, _ in COLUMNS])


def format_row(row: Row) -> str:
    c = row.cell
    head = [c.topology, c.collective, c.label, c.size]
    if not row.produced:
        return _line([*head, *([""] * (len(COLUMNS) - 5)), f"{row.seconds:.1f}"]) + f"  {row.note}"
    figures = [
        row.estimate,
        row.congestion,
        row.astra_model,
        row.analytical,
        row.aware,
        row.unaware,
    ]
    errors = [_err(cmp.error(row)) for cmp in COMPARISONS]
    text = _line([*head, *map(_ns, figures), *errors, f"{row.seconds:.1f}"])
    notes = ([row.note] if row.note else []) + row.model_notes
    if row.aware_note and row.aware_note == row.unaware_note:
        notes.append(f"ASTRA-sim: {row.aware_note}")
    else:
        notes += [f"aware: {row.aware_note}"] if row.aware_note else []
        notes += [f"unaware: {row.unaware_note}"] if row.unaware_note else []
    return text + (f"  {'; '.join(notes)}" if notes else "")


def summarize(rows: Sequence[Row], worst: int) -> dict[str, Any]:
    """Per comparison: cells compared, exact, within 1%, beyond, and the worst cells that are
    not exact; the cells skipped or failed, and the model and ASTRA-sim runs without a time,
    counted by reason."""
    skipped: Counter[str] = Counter(r.note for r in rows if r.note)
    failures: Counter[str] = Counter()
    for r in rows:
        for which, note in (("aware", r.aware_note), ("unaware", r.unaware_note)):
            if note:
                failures[f"{which}: {note}"] += 1
    out: dict[str, Any] = {
        "cells": len(rows),
        "skipped": dict(skipped.most_common()),
        "model_failures": dict(Counter(n for r in rows for n in r.model_notes).most_common()),
        "astra_failures": dict(failures.most_common()),
        "comparisons": {},
    }
    for cmp in COMPARISONS:
        errs = [(e, r) for r in rows if (e := cmp.error(r)) is not None]
        errs.sort(key=lambda er: -abs(er[0]))
        out["comparisons"][cmp.name] = {
            "compared": len(errs),
            "exact": sum(1 for e, _ in errs if e == 0),
            "within_1pct": sum(1 for e, _ in errs if abs(e) <= WITHIN),
            "beyond_1pct": sum(1 for e, _ in errs if abs(e) > WITHIN),
            "worst": [
                {
                    "cell": r.cell.name,
                    "predicted_ns": cmp.predicted(r),
                    "measured_ns": cmp.measured(r),
                    "error": e,
                }
                for e, r in errs[:worst]
                if e != 0
            ],
        }
    return out


def print_summary(summary: dict[str, Any]) -> None:
    print(f"\nsummary: {summary['cells']} cells")
    for what, counts in (
        ("cells skipped or failed", summary["skipped"]),
        ("model runs without a time", summary["model_failures"]),
        ("ASTRA-sim runs without a time", summary["astra_failures"]),
    ):
        print(f"  {sum(counts.values())} {what}" + (":" if counts else ""))
        for note, k in counts.items():
            print(f"    {k:>4} x {note}")
    for name, s in summary["comparisons"].items():
        print(
            f"  {name}: {s['within_1pct']} of {s['compared']} within 1% "
            f"({s['exact']} exact), {s['beyond_1pct']} beyond"
        )
    for name, s in summary["comparisons"].items():
        if not s["compared"]:
            continue
        print(f"\nworst cells, {name}:")
        if not s["worst"]:
            print(f"  none: all {s['compared']} compared cells are exact")
        for w in s["worst"]:
            print(
                f"  {w['cell']:<58} predicted {_ns(w['predicted_ns']):>13} "
                f"measured {_ns(w['measured_ns']):>13}  {_err(w['error'])}"
            )


def _rows(
    cells: Sequence[Cell],
    workdir: Path,
    aware: str | None,
    unaware: str | None,
    timeout: float,
    jobs: int,
) -> Iterator[Row]:
    """The cells' rows in matrix order, computed in ``jobs`` processes."""
    if jobs <= 1:
        for cell in cells:
            yield run_cell(cell, workdir, aware, unaware, timeout)
        return
    n = len(cells)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(
            run_cell, cells, [workdir] * n, [aware] * n, [unaware] * n, [timeout] * n
        )


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="1 MiB on ring:8 and switch:8 only")
    ap.add_argument("--json", type=Path, default=None, help="also write every row and the summary")
    ap.add_argument("--topologies", default=None, help="comma-separated (default: the matrix's)")
    ap.add_argument("--sizes", default=None, help="comma-separated (default: the matrix's)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per ASTRA-sim run")
    ap.add_argument("--worst", type=int, default=10, help="worst cells listed per comparison")
    args = ap.parse_args()
    topologies = _list(args.topologies) if args.topologies else None
    sizes = _list(args.sizes) if args.sizes else None
    if args.quick:
        topologies = topologies or list(QUICK_TOPOLOGIES)
        sizes = sizes or list(QUICK_SIZES)
    cells = matrix(topologies or TOPOLOGIES, sizes or SIZES)
    aware, unaware = binary(AWARE_ENV), binary(UNAWARE_ENV)
    for var, exe in ((AWARE_ENV, aware), (UNAWARE_ENV, unaware)):
        given = os.environ.get(var)
        if exe is None:
            why = f"{given!r} is not an executable file" if given else "not set"
            print(f"{var} {why}: no ASTRA-sim runs with that binary")
        else:
            print(f"{var} = {exe}")
    print(f"{len(cells)} cells, links {LINK}, {args.jobs} job(s); times in ns\n")
    print(header(), flush=True)
    t0 = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="collc-astra-matrix-") as tmp:
        for row in _rows(cells, Path(tmp), aware, unaware, args.timeout, args.jobs):
            rows.append(row)
            print(format_row(row), flush=True)
    summary = summarize(rows, args.worst)
    print_summary(summary)
    if aware is None or unaware is None:
        print(f"\nset {AWARE_ENV} and {UNAWARE_ENV} to compare with ASTRA-sim")
    wall = time.perf_counter() - t0
    print(f"\n{len(rows)} cells in {wall:.0f} s")
    if args.json is not None:
        data = {
            "link": LINK,
            "aware_binary": aware,
            "unaware_binary": unaware,
            "seconds": wall,
            "rows": [{**asdict(r), "cell": asdict(r.cell)} for r in rows],
            "summary": summary,
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
