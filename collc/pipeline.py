"""The glue between the CLI and the library: produce, verify, write, read back.

The CLI parses flags and prints; everything it runs is here, so tests and scripts can call the
same steps. Every program passes `verify` before it is written and after it is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from baselines import ALGORITHMS as BASELINES
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.outdir import Manifest, chunk_bytes_for, read_output, write_output
from chakra_ir.program import Program
from chakra_ir.verify import VerifyReport, verify, verify_routes
from topologies import Topology, parse_topology
from topologies.errors import CollcError


class Producer(Protocol):
    """An algorithm that makes a Program for a collective on a topology."""

    name: str
    description: str
    collectives: frozenset[CollectiveKind]

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int: ...

    def generate(self, collective: Collective, topology: Topology) -> Program: ...


def algorithms() -> dict[str, Producer]:
    """Every producer the CLI offers, by name (the CLI builds its choices from this)."""
    registry: dict[str, Producer] = {}
    registry.update(BASELINES)
    return registry


DEFAULT_ALGORITHM = "ring"


def parse_placement(text: str, topology: Topology) -> tuple[int, ...]:
    """``0,2,4-7`` -> the NPUs ranks run on, in rank order."""
    npus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = part.split("-")
                npus.extend(range(int(a), int(b) + 1))
            else:
                npus.append(int(part))
        except ValueError:
            raise CollcError(
                f"--placement: cannot read {part!r} (use NPU ids like 0,2,4-7)"
            ) from None
    for n in npus:
        if not 0 <= n < topology.num_npus:
            raise CollcError(
                f"--placement: NPU {n} is not in the topology (NPUs 0..{topology.num_npus - 1})"
            )
    if len(set(npus)) != len(npus):
        raise CollcError("--placement names an NPU twice")
    return tuple(npus)


@dataclass(frozen=True)
class Request:
    """Everything `synthesize` needs; the CLI fills it from flags."""

    topology: str
    collective: CollectiveKind
    algorithm: str = DEFAULT_ALGORITHM
    size_bytes: int = 1 << 20
    chunks_per_rank: int | None = None
    inplace: bool = False
    root: int = 0
    placement: str = ""
    seed: int | None = None


@dataclass(frozen=True)
class Result:
    program: Program
    manifest: Manifest
    topology: Topology
    report: VerifyReport
    seconds: dict[str, float]


def synthesize(req: Request, *, progress: Callable[[str], None] | None = None) -> Result:
    """Produce, verify and bind a size to a program; nothing is written."""
    say = progress or (lambda _msg: None)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    topology = parse_topology(req.topology)
    registry = algorithms()
    if req.algorithm not in registry:
        raise CollcError(
            f"unknown algorithm {req.algorithm!r} (expected one of {', '.join(registry)})"
        )
    algo = registry[req.algorithm]
    if req.collective not in algo.collectives:
        served = ", ".join(sorted(k.value for k in algo.collectives))
        raise CollcError(
            f"algorithm {algo.name} does not implement {req.collective.value} (it serves {served})"
        )
    placement = parse_placement(req.placement, topology) if req.placement else ()
    n = len(placement) if placement else topology.num_npus
    natural = algo.chunks_per_rank(req.collective, n)
    cf = natural if req.chunks_per_rank is None else req.chunks_per_rank
    if cf < 1:
        raise CollcError(f"--chunks-per-rank must be at least 1, got {cf}")
    collective = Collective(
        req.collective,
        n,
        cf,
        inplace=req.inplace,
        root=req.root if req.collective.rooted else -1,
        placement=placement if placement and placement != tuple(range(n)) else (),
    )
    seconds["parse"] = time.perf_counter() - t0
    say(f"generating {algo.name} {req.collective.value} over {n} ranks")
    t1 = time.perf_counter()
    program = algo.generate(collective, topology)
    seconds["generate"] = time.perf_counter() - t1
    say(f"verifying {program.num_ops} operations")
    t2 = time.perf_counter()
    report = verify(program)
    verify_routes(program, topology)
    seconds["verify"] = time.perf_counter() - t2
    chunk_bytes = chunk_bytes_for(program.collective, req.size_bytes)
    manifest = Manifest(
        collective=program.collective,
        topology=topology.spec,
        size_bytes=chunk_bytes * program.collective.size_chunks,
        chunk_bytes=chunk_bytes,
        et_prefix=req.collective.value,
        algorithm=algo.name,
        seed=req.seed,
    )
    return Result(program, manifest, topology, report, seconds)


def write(result: Result, out: Path | str) -> list[Path]:
    """Write a result's ET files and manifest atomically into ``out``."""
    return write_output(out, result.program, result.manifest)


def load(out: Path | str, *, check: bool = True) -> tuple[Manifest, Program, VerifyReport | None]:
    """Read an output folder back; with ``check`` verify it (raises VerifyError if wrong)."""
    manifest, program = read_output(out)
    report = verify(program) if check else None
    return manifest, program, report


def topology_of(manifest: Manifest, override: str | None, *, force: bool = False) -> Topology:
    """The manifest's topology, or ``override`` when it matches (or ``force`` is set)."""
    recorded = parse_topology(manifest.topology)
    if override is None:
        return recorded
    given = parse_topology(override)
    if given != recorded and not force:
        raise CollcError(
            f"--topology {override!r} differs from the folder's topology {manifest.topology!r} "
            "(pass --force to use it anyway)"
        )
    return given


def ranks_fit(collective: Collective, topology: Topology) -> None:
    """Raise when a collective's placed ranks are not NPUs of ``topology``."""
    npus: Sequence[int] = [collective.npu(r) for r in range(collective.num_ranks)]
    bad = [x for x in npus if x >= topology.num_npus]
    if bad:
        raise CollcError(
            f"rank placed on NPU {bad[0]}, but the topology has only {topology.num_npus} NPUs"
        )
