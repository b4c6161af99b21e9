"""``collc tune``: the fastest algorithm per message size, over every producer that serves the
collective.

`run_tune` produces, verifies and simulates every *candidate* (`Candidate`: TACOS at each
chunk count and seed asked for, every baseline, MSCCLang or MSCCL-XML program files) at every
size of a sweep under one simulator model, keeps the fastest per size and merges neighbouring
sizes with the same winner into ranges (`TuneRange`). A range's runtime bounds split the gap
between two sweep sizes at their geometric mean, the first range starts at 0 and the last has
no upper bound (`maxBytes` 0, as the MSCCL runtime reads it): see docs/tuning.md.

Results are cached (`TuneCache`, one JSON file) under a key of everything that determines
them: collc's version, the topology's canonical spec, the placement, the collective, the
model, the send-completion rule, the packet size, the candidate (a program file by the
SHA-256 of its bytes) and the size. A re-run with a wider sweep or more candidates simulates
only what is new. Refusals (a producer that does not serve the case) are not cached: they
cost nothing to find again, and raising a work limit may lift them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.version import VERSION
from collc.bench import produce as produce_named
from collc.producers import ALGORITHMS
from collc.request import Request, parse_placement
from topologies.atomic import write_text_atomically
from topologies.errors import CollcError, SourcePos
from topologies.jsonfile import load_json

if TYPE_CHECKING:
    from chakra_ir.program import Program
    from topologies import Topology

CACHE_FORMAT = 1


@dataclass(frozen=True)
class Candidate:
    """One way to make the program: a producer (``algorithm``) at ``chunks_per_npu`` and, for
    TACOS, ``seed``; or a program file (``path``, ``program`` the MSCCLProgram's name in it,
    ``digest`` the SHA-256 of the file's bytes)."""

    algorithm: str
    chunks_per_npu: int = 1
    seed: int = 0
    path: str = ""
    program: str = ""
    digest: str = ""

    @property
    def label(self) -> str:
        """``tacos/c2/s1``, ``ring``, ``ring/c2``, ``file:allreduce.py:name``."""
        if self.path:
            name = Path(self.path).name
            return f"file:{name}:{self.program}" if self.program else f"file:{name}"
        parts = [self.algorithm]
        if self.algorithm == "tacos" or self.chunks_per_npu != 1:
            parts.append(f"c{self.chunks_per_npu}")
        if self.algorithm == "tacos":
            parts.append(f"s{self.seed}")
        return "/".join(parts)

    @property
    def size_free(self) -> bool:
        """Whether its program is the same at every size (all but TACOS)."""
        return self.algorithm != "tacos"

    def key(self) -> dict[str, Any]:
        if self.path:
            return {"file": self.digest, "program": self.program}
        key: dict[str, Any] = {"algorithm": self.algorithm, "chunks": self.chunks_per_npu}
        if self.algorithm == "tacos":
            key["seed"] = self.seed
        return key


@dataclass(frozen=True)
class TuneSpec:
    """What to tune: the case, the candidates and the model."""

    topology: str
    collective: CollectiveKind
    sizes: tuple[int, ...]
    placement: str = ""
    algorithms: tuple[str, ...] = ()
    """Producers to try (empty: every one that serves the collective)."""
    tacos_chunks: tuple[int, ...] = (1, 2, 4)
    tacos_seeds: tuple[int, ...] = (0, 1)
    baseline_chunks: tuple[int, ...] = (1,)
    programs: tuple[Path, ...] = ()
    model: str = "congestion"
    completion: str = "on-arrival"
    packet_bytes: int | None = None
    max_work: int = 0
    max_transfers: int = 0

    def request(self, cand: Candidate, size: int) -> Request:
        """The run that makes ``cand``'s program for this case at ``size`` bytes."""
        return Request(
            self.topology,
            self.collective,
            algorithm=cand.algorithm,
            size_bytes=size,
            chunks_per_npu=cand.chunks_per_npu,
            placement=self.placement,
            seed=cand.seed,
            completion=self.completion,
            max_work=self.max_work,
            max_transfers=self.max_transfers,
        )


@dataclass
class TuneCell:
    """One candidate at one size: its time, or why it did not run."""

    label: str
    size_bytes: int
    time_ns: float | None = None
    chunk_bytes: int | None = None
    error: str = ""
    cached: bool = False


@dataclass(frozen=True)
class TuneRange:
    """Sweep sizes ``first..last`` (bytes) won by ``label``; the runtime selects it for byte
    counts ``min_bytes..max_bytes``, both inclusive (``max_bytes`` 0: no upper bound)."""

    label: str
    first: int
    last: int
    min_bytes: int
    max_bytes: int


@dataclass
class TuneReport:
    topology: str
    collective: str
    ranks: int
    model: str
    completion: str
    packet_bytes: int | None
    sizes: list[int]
    candidates: list[Candidate]
    cells: list[TuneCell] = field(default_factory=list)
    bounds_ns: dict[int, float] = field(default_factory=dict)
    best: dict[int, str] = field(default_factory=dict)
    ranges: list[TuneRange] = field(default_factory=list)
    hits: int = 0
    runs: int = 0
    seconds: float = 0.0

    def cell(self, label: str, size: int) -> TuneCell | None:
        for c in self.cells:
            if c.label == label and c.size_bytes == size:
                return c
        return None

    def candidate(self, label: str) -> Candidate:
        return next(c for c in self.candidates if c.label == label)

    def to_json(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "collective": self.collective,
            "ranks": self.ranks,
            "model": self.model,
            "completion": self.completion,
            "packet_bytes": self.packet_bytes,
            "sizes": self.sizes,
            "candidates": [c.label for c in self.candidates],
            "lower_bounds_ns": {str(k): v for k, v in self.bounds_ns.items()},
            "best": {str(k): v for k, v in self.best.items()},
            "ranges": [r.__dict__ for r in self.ranges],
            "results": [c.__dict__ for c in self.cells],
            "cache": {"hits": self.hits, "runs": self.runs},
            "seconds": self.seconds,
        }


class TuneCache:
    """Results by key in one JSON file; `save` writes it atomically. A file that is not a
    cache of this format is refused in one line naming it."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        self.dirty = False
        if path is not None and path.exists():
            data = load_json(path, CollcError)
            ok = isinstance(data, dict) and data.get("format") == CACHE_FORMAT
            entries = data.get("results") if ok else None
            if not isinstance(entries, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("time_ns"), int | float)
                for v in entries.values()
            ):
                raise CollcError(
                    f"not a collc tune cache of format {CACHE_FORMAT} (delete it, or give "
                    "another --cache)",
                    SourcePos(str(path)),
                )
            self.entries = entries

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.entries[key] = value
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": CACHE_FORMAT, "results": self.entries}
        write_text_atomically(self.path, json.dumps(data, sort_keys=True, indent=0) + "\n")
        self.dirty = False


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/collc/tune.json`` (``~/.cache`` when the variable is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "collc" / "tune.json"


def file_candidates(paths: tuple[Path, ...], spec: TuneSpec) -> list[tuple[Candidate, Program]]:
    """Every program of the given files (MSCCL-IR ``.xml`` imported, anything else compiled as
    MSCCLang), verified on the topology; a file that does not compile or verify is an error."""
    from collc.adopt import compile_msccl_all, import_xml

    out = []
    for path in paths:
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as e:
            raise CollcError(
                f"--program: cannot read: {e.strerror}", SourcePos(str(path))
            ) from None
        if path.suffix.lower() == ".xml":
            result = import_xml(path, size_bytes=1 << 20, topology=spec.topology)
            out.append((Candidate("msccl-xml", path=str(path), digest=digest), result.program))
            continue
        named, _ = compile_msccl_all(path, [], size_bytes=1 << 20, topology=spec.topology)
        several = len(named) > 1
        for name, result in named:
            cand = Candidate(
                "mscclang", path=str(path), program=name if several else "", digest=digest
            )
            out.append((cand, result.program))
    return out


def candidates_for(spec: TuneSpec) -> list[Candidate]:
    """The producers' candidates: TACOS at every chunk count and seed, every other producer
    at every baseline chunk count, in registry order; those that do not make the collective
    are left out. Raises CollcError for an unknown name."""
    from collc import registry

    names = list(spec.algorithms) or list(registry.ALGORITHMS)
    for name in names:
        if name not in ALGORITHMS:
            raise CollcError(
                f"--algorithms: unknown producer {name!r} (known: {', '.join(ALGORITHMS)})"
            )
    out = []
    for name in names:
        probe = ALGORITHMS[name](Request(spec.topology, spec.collective, algorithm=name), None)
        if spec.collective not in probe.collectives:
            continue
        if name == "tacos":
            out += [Candidate(name, c, s) for c in spec.tacos_chunks for s in spec.tacos_seeds]
        else:
            out += [Candidate(name, c) for c in spec.baseline_chunks]
    return out


def produce(cand: Candidate, req: Request, topology: Topology) -> Program | str:
    """The verified program of a producer's candidate at ``req``'s size, or why it cannot
    serve this case (refusals of the work limits included)."""
    return produce_named(cand.algorithm, req, topology)


def _context(spec: TuneSpec, topology: Topology, npus: tuple[int, ...]) -> dict[str, Any]:
    return {
        "collc": VERSION,
        "topology": topology.spec,
        "placement": list(npus),
        "collective": spec.collective.value,
        "model": spec.model,
        "completion": spec.completion,
        "packet_bytes": spec.packet_bytes,
    }


def run_tune(
    spec: TuneSpec, cache: TuneCache | None = None, say: Callable[[str], None] | None = None
) -> TuneReport:
    """Time every candidate at every size of ``spec`` (reusing ``cache``), pick the fastest
    per size and merge sizes into ranges. Raises CollcError when no size is given, when no
    producer makes the collective, or when no candidate runs at any size (the line names
    why each one did not)."""
    from backends.sim import simulate
    from collc.results import bounds_for
    from topologies import parse_topology

    start = time.perf_counter()
    if not spec.sizes:
        raise CollcError("--sizes: the sweep is empty")
    topology = parse_topology(spec.topology)
    npus = parse_placement(spec.placement, topology) if spec.placement else ()
    n = len(npus) or topology.num_npus
    files = file_candidates(spec.programs, spec)
    candidates = candidates_for(spec) + [c for c, _ in files]
    if not candidates:
        raise CollcError(
            f"no producer makes {spec.collective.value} (and no --program file was given)"
        )
    cost = Request(spec.topology, spec.collective, completion=spec.completion).cost_model()
    cache = cache or TuneCache(None)
    context = _context(spec, topology, npus or tuple(range(n)))
    report = TuneReport(
        topology.spec,
        spec.collective.value,
        n,
        spec.model,
        cost.completion.value,
        spec.packet_bytes,
        sorted(set(spec.sizes)),
        candidates,
    )
    programs: dict[str, Program | str] = {c.label: p for c, p in files}
    for size in report.sizes:
        req = Request(
            spec.topology,
            spec.collective,
            size_bytes=size,
            placement=spec.placement,
            completion=spec.completion,
            max_work=spec.max_work,
            max_transfers=spec.max_transfers,
        )
        report.bounds_ns[size] = bounds_for(req, topology, n, npus, any_chunking=True).best[1]
        for cand in candidates:
            key = json.dumps([context, cand.key(), size], sort_keys=True)
            hit = cache.get(key)
            if hit is not None:
                report.hits += 1
                report.cells.append(
                    TuneCell(cand.label, size, hit["time_ns"], hit.get("chunk_bytes"), cached=True)
                )
                continue
            if say:
                say(f"{cand.label} at {size} B")
            program = programs.get(cand.label) if cand.size_free else None
            if program is None:
                program = produce(cand, spec.request(cand, size), topology)
                if cand.size_free:
                    programs[cand.label] = program
            cell = TuneCell(cand.label, size)
            if isinstance(program, str):
                cell.error = program
            elif program.collective.kind is not spec.collective or program.num_ranks != n:
                cell.error = f"makes {program.collective.kind.value} over {program.num_ranks} ranks"
            else:
                chunk = chunk_bytes_for(program.collective, size)
                try:
                    result = simulate(
                        program,
                        topology,
                        chunk,
                        model=spec.model,
                        cost=cost,
                        packet_bytes=spec.packet_bytes,
                    )
                except CollcError as e:
                    cell.error = e.message
                else:
                    report.runs += 1
                    cell.time_ns, cell.chunk_bytes = result.finish_ns, chunk
                    cache.put(key, {"time_ns": cell.time_ns, "chunk_bytes": chunk})
            report.cells.append(cell)
    cache.save()
    _choose(report)
    report.seconds = time.perf_counter() - start
    return report


def _choose(report: TuneReport) -> None:
    """The fastest candidate per size (ties: the earlier candidate), and the ranges."""
    order = {c.label: i for i, c in enumerate(report.candidates)}
    for size in report.sizes:
        timed = [c for c in report.cells if c.size_bytes == size and c.time_ns is not None]
        if timed:
            best = min(timed, key=lambda c: (c.time_ns, order[c.label]))
            report.best[size] = best.label
    if not report.best:
        reasons = sorted({f"{c.label}: {c.error}" for c in report.cells if c.error})
        raise CollcError(
            f"no producer runs {report.collective} on {report.topology} ({'; '.join(reasons)})"
        )
    report.ranges = merge_ranges([(s, report.best[s]) for s in report.sizes if s in report.best])


def merge_ranges(winners: list[tuple[int, str]]) -> list[TuneRange]:
    """Neighbouring sweep sizes with the same winner as one range. Between two ranges the
    boundary is the geometric mean of the sizes on either side: the upper range starts there;
    the first starts at 0 and the last has no upper bound."""
    runs: list[list[Any]] = []
    for size, label in winners:
        if runs and runs[-1][0] == label:
            runs[-1][2] = size
        else:
            runs.append([label, size, size])
    starts = [0] + [math.isqrt(runs[i - 1][2] * runs[i][1]) + 1 for i in range(1, len(runs))]
    out = []
    for i, (label, first, last) in enumerate(runs):
        upper = starts[i + 1] - 1 if i + 1 < len(runs) else 0
        out.append(TuneRange(label, first, last, starts[i], upper))
    return out


def choice_at(ranges: list[TuneRange], size: int) -> str:
    """The label whose range holds ``size`` bytes (as the runtime selects)."""
    for r in ranges:
        if size >= r.min_bytes and (r.max_bytes == 0 or size <= r.max_bytes):
            return r.label
    raise CollcError(f"no tuned range holds {size} bytes")


def format_report(report: TuneReport) -> str:
    """The chosen ranges, then per size the fastest and the runner-up."""
    from topologies.units import format_size_bytes as fmt

    lines = [
        f"{report.collective} over {report.ranks} ranks on {report.topology}, model "
        f"{report.model} (sends complete {report.completion}"
        + (f", packets of {fmt(report.packet_bytes)}" if report.packet_bytes else "")
        + f"); {len(report.candidates)} candidates",
        "",
        "chosen ranges (runtime bytes, both ends inclusive)",
        f"  {'algorithm':<24}{'minBytes':>14}{'maxBytes':>14}   sweep sizes",
    ]
    for r in report.ranges:
        upper = str(r.max_bytes) if r.max_bytes else "no limit"
        lines.append(f"  {r.label:<24}{r.min_bytes:>14}{upper:>14}   {fmt(r.first)}..{fmt(r.last)}")
    lines += [
        "",
        f"  {'size':>8}  {'fastest':<24}{'time us':>13}{'x bound':>9}  {'runner-up':<24}"
        f"{'slower by':>10}",
    ]
    for size in report.sizes:
        timed = sorted(
            (c for c in report.cells if c.size_bytes == size and c.time_ns is not None),
            key=lambda c: c.time_ns or 0.0,
        )
        if not timed:
            lines.append(f"  {fmt(size):>8}  (no candidate ran)")
            continue
        first = timed[0]
        assert first.time_ns is not None
        bound = report.bounds_ns.get(size, 0.0)
        ratio = f"{first.time_ns / bound:.3f}" if bound > 0 else "-"
        second, margin = "-", "-"
        if len(timed) > 1 and timed[1].time_ns is not None:
            second = timed[1].label
            margin = f"{(timed[1].time_ns / first.time_ns - 1) * 100:.1f}%"
        lines.append(
            f"  {fmt(size):>8}  {report.best[size]:<24}{first.time_ns / 1000:>13,.2f}{ratio:>9}"
            f"  {second:<24}{margin:>10}"
        )
    refused = sorted({(c.label, c.error) for c in report.cells if c.error})
    if refused:
        lines += ["", "not run:"]
        lines += [f"  {label}: {err}" for label, err in refused]
    lines += [
        "",
        f"{report.runs} simulated, {report.hits} from the cache; {report.seconds:.1f} s",
    ]
    return "\n".join(lines) + "\n"
