"""Output folders: a result written, a folder read back and verified, the topology and the
send-completion rule it records, and the checks of another tool's folder of ET files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chakra_ir.outdir import Manifest, manifest_topology, read_output, write_output
from chakra_ir.verify import VerifyError, VerifyReport, verify, verify_routes
from collc.request import cost_model_for
from topologies import parse_topology
from topologies.errors import CollcError

if TYPE_CHECKING:
    from chakra_ir.program import Program
    from collc.results import Result
    from topologies import Topology


def write(result: Result, out: Path | str) -> list[Path]:
    """Write a result's ET files and manifest atomically into ``out``."""
    return write_output(out, result.program, result.manifest)


def load(out: Path | str, *, check: bool = True) -> tuple[Manifest, Program, VerifyReport | None]:
    """Read an output folder back; with ``check`` verify it (raises VerifyError if wrong),
    its manifest's topology included (OutputError when the spec is bad or too small)."""
    manifest, program = read_output(out)
    report = None
    if check:
        topology = manifest_topology(manifest, out)
        report = verify(program)
        verify_routes(program, topology)
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


def completion_of(manifest: Manifest, override: str | None, *, force: bool = False) -> str:
    """The manifest's send-completion rule, or ``override`` when it agrees (or ``force``)."""
    if override is None or override == manifest.completion:
        return manifest.completion
    cost_model_for(override)  # an unknown rule is refused before the mismatch
    if not force:
        raise CollcError(
            f"--completion {override} differs from the folder's rule {manifest.completion} "
            "(the program was produced and timed under it; pass --force to use the other)"
        )
    return override


@dataclass(frozen=True)
class ForeignReport:
    """What `verify_foreign` could check of another tool's ET files."""

    ranks: int
    tasks: int
    messages: int
    checks: tuple[str, ...] = ("structure", "progress")


def verify_foreign(folder: Path) -> ForeignReport | VerifyReport:
    """Check a folder of ET files that has no manifest.

    Files that carry collc's attributes decode to a Program, which gets every check. Other
    tools' files get the checks that need no meaning: structure (every file parses,
    dependencies name nodes of the same file, every send has its receive, matched by source,
    destination, tag and size in order) and progress (run with unbounded bandwidth on a fully
    connected network, every node finishes). Their semantics cannot be checked: they do not
    say which chunk is where. A deadlock raises VerifyError (the program is wrong).
    """
    import numpy as np

    from backends.sim import SimError, TaskKind, simulate_tasks, tasks_from_et
    from chakra_ir.et import program_from_traces, read_et_folder

    traces = read_et_folder(folder)
    if traces and "collc_collective" in traces[0].metadata:
        return verify(program_from_traces(traces))
    graph = tasks_from_et(traces)
    graph.validate()
    graph.partners()
    n = graph.num_ranks
    try:
        simulate_tasks(graph, parse_topology(f"fc:{max(n, 2)}"), model="analytical")
    except SimError as e:
        if e.message.startswith("deadlock"):
            raise VerifyError("progress", e.message) from None
        raise
    sends = int(np.count_nonzero(graph.kind == TaskKind.SEND))
    return ForeignReport(n, graph.num_tasks, sends)
