"""The glue between the CLI and the library: produce, verify, write, read back.

The CLI parses flags and prints; everything it runs is here, so tests and scripts can call the
same steps. Every program passes `verify` before it is written and after it is read.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.outdir import (
    MANIFEST,
    Manifest,
    chunk_bytes_for,
    manifest_topology,
    read_output,
    write_output,
)
from chakra_ir.verify import VerifyError, VerifyReport, verify, verify_routes
from collc import registry
from topologies import parse_topology
from topologies.cost_model import DEFAULT_COMPLETION, Completion, CostModel
from topologies.errors import CollcError
from topologies.units import check_time_range

# Start-up (issue 12): the producers, the bounds, the simulator and the ET codec are imported
# by the functions that use them, so each command loads only what it runs (`collc compile`
# loads no baseline, no TACOS synthesis of process groups and no simulation model: only the
# gates' simulation).
if TYPE_CHECKING:
    from backends.sim import SimResult
    from baselines.base import Baseline
    from chakra_ir.program import Program
    from tacos.bounds import Bounds
    from topologies import Topology
    from topologies.groups import Groups


class Producer(Protocol):
    """An algorithm that makes a Program for a collective on a topology."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def collectives(self) -> frozenset[CollectiveKind]: ...

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int: ...

    def generate(self, collective: Collective, topology: Topology) -> Program: ...


Progress = Callable[[float], None]
ProducerFactory = Callable[["Request", Progress | None], Producer]


@dataclass(frozen=True)
class _Pipelined:
    """A baseline at its default pipelining, cut ``factor`` times finer (``--chunks-per-npu``)."""

    base: Baseline
    factor: int

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def description(self) -> str:
        return self.base.description

    @property
    def collectives(self) -> frozenset[CollectiveKind]:
        return self.base.collectives

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int:
        natural = self.base.chunks_per_rank(kind, num_ranks)
        return natural * self.base.pipeline_default * self.factor

    def generate(self, collective: Collective, topology: Topology) -> Program:
        return self.base.generate(collective, topology)


def _tacos(req: Request, progress: Progress | None) -> Producer:
    from tacos import Tacos

    return Tacos(
        size_bytes=req.size_bytes,
        chunks_per_npu=req.chunks_per_npu,
        seed=req.seed,
        seeds=req.seeds,
        cost=req.cost_model(),
        progress=progress,
        groups_independent=req.groups_independent,
    )


def _baseline(name: str) -> ProducerFactory:
    def make(req: Request, _progress: Progress | None) -> Producer:
        from baselines import ALGORITHMS as BASELINES

        return _Pipelined(BASELINES[name], req.chunks_per_npu)

    return make


ALGORITHMS: dict[str, ProducerFactory] = {
    "tacos": _tacos,
    **{name: _baseline(name) for name in registry.ALGORITHMS if name != "tacos"},
}
"""Every producer the CLI offers, by name; the CLI builds its choices from this dict. The
names are `collc.registry`'s static copy (TACOS, then `baselines.ALGORITHMS` in order), so
that a producer's package is imported only when it is used; ``tests/test_cli_startup.py``
holds that copy equal to the real registries."""

DEFAULT_ALGORITHM = "tacos"

if TYPE_CHECKING:
    DESCRIPTIONS: dict[str, str]
    """Every producer's description, by name (`descriptions`)."""


def descriptions() -> dict[str, str]:
    """Every producer's description, by name, as the producers themselves state it (imports
    TACOS and every baseline); also the module attribute ``DESCRIPTIONS``."""
    from baselines import ALGORITHMS as BASELINES
    from tacos import Tacos

    return {"tacos": Tacos.description, **{name: b.description for name, b in BASELINES.items()}}


def __getattr__(name: str) -> Any:
    if name == "DESCRIPTIONS":
        return descriptions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_placement(text: str, topology: Topology) -> tuple[int, ...]:
    """``0,2,4-7`` -> the NPUs ranks run on, in rank order."""
    npus: list[int] = []
    last = topology.num_npus - 1
    for part in text.split(","):
        part = part.strip()
        try:
            ends = [int(x) for x in part.split("-")] if "-" in part else [int(part)]
            if len(ends) > 2:
                raise ValueError
        except ValueError:
            raise CollcError(
                f"--placement: cannot read {part!r} (use NPU ids like 0,2,4-7)"
            ) from None
        for n in ends:  # each end checked before a range is built
            if not 0 <= n <= last:
                raise CollcError(f"--placement: NPU {n} is not in the topology (NPUs 0..{last})")
        if ends[0] > ends[-1]:
            raise CollcError(f"--placement: {part!r} is an empty range (write {ends[1]}-{ends[0]})")
        npus.extend(range(ends[0], ends[-1] + 1))
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
    chunks_per_npu: int = 1
    inplace: bool = False
    root: int = 0
    placement: str = ""
    seed: int = 0
    seeds: int = 1
    completion: str = DEFAULT_COMPLETION.value
    """The send-completion rule (`topologies.cost_model.Completion`)."""
    groups: str = ""
    """Process groups (`topologies.groups`): every group runs the collective at once."""
    groups_independent: bool = False
    """With ``groups``: TACOS synthesizes each group alone (else all jointly)."""
    max_transfers: int = 0
    """Refuse programs of more chunk transfers than this (`check_work`); 0: the default
    `MAX_TRANSFERS`."""
    max_work: int = 0
    """Refuse a synthesis of more estimated work than this (`check_work`, `estimate_work`); 0:
    the default `MAX_WORK`."""

    def cost_model(self) -> CostModel:
        """The cost model this request produces and times under."""
        return cost_model_for(self.completion)


def cost_model_for(completion: str) -> CostModel:
    """The default cost model with send completion ``completion``; CollcError naming the
    choices for an unknown rule."""
    try:
        return CostModel(completion=Completion.parse(completion))
    except ValueError as e:
        raise CollcError(f"--completion: {e}") from None


@dataclass(frozen=True)
class Result:
    program: Program
    manifest: Manifest
    topology: Topology
    report: VerifyReport
    seconds: dict[str, float]
    estimated_ns: float | None
    """The producer's own estimate of the collective time (TACOS), if it makes one."""
    bounds: Bounds
    bound: tuple[str, float]
    """The tightest lower bound that applies to this program: (name, ns)."""
    bounds_chunks: int | None = None
    """TACOS's chunks per NPU when ``bounds`` assume its chunking (tighter than the bounds
    for any program, which ``collc simulate`` prints); None when they hold for any program."""

    @property
    def ratio(self) -> float | None:
        """Estimate over the best lower bound."""
        if self.estimated_ns is None or self.bound[1] <= 0:
            return None
        return self.estimated_ns / self.bound[1]


def bounds_for(
    req: Request,
    topology: Topology,
    n: int,
    placement: Sequence[int],
    *,
    any_chunking: bool = False,
) -> Bounds:
    """The lower bounds of a request's collective (rooted kinds use ``req.root``; process
    groups, the joint bounds of `tacos.group_bounds`).

    Without ``any_chunking`` they assume TACOS's chunking (``req.chunks_per_npu``); with it
    they hold for any program (see `tacos.bounds.lower_bounds`).
    """
    from tacos.bounds import lower_bounds
    from tacos.group_bounds import group_bounds

    if req.groups:
        groups = call_groups(req.groups, topology, placement)
        return group_bounds(
            req.collective,
            topology,
            req.size_bytes,
            groups.members,
            chunks_per_npu=req.chunks_per_npu,
            any_chunking=any_chunking,
        )
    return lower_bounds(
        req.collective,
        topology,
        req.size_bytes,
        placement=placement or tuple(range(n)),
        chunks_per_npu=req.chunks_per_npu,
        root=req.root if req.collective.rooted else 0,
        any_chunking=any_chunking,
    )


def synthesize(req: Request, *, progress: Progress | None = None) -> Result:
    """Produce, verify and bind a size to a program; nothing is written."""
    from tacos import Tacos

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    topology = parse_topology(req.topology)
    if req.algorithm not in ALGORITHMS:
        raise CollcError(
            f"unknown algorithm {req.algorithm!r} (expected one of {', '.join(ALGORITHMS)})"
        )
    if req.chunks_per_npu < 1:
        raise CollcError(f"--chunks-per-npu must be at least 1, got {req.chunks_per_npu}")
    if req.size_bytes <= 0:
        raise CollcError(f"--size must be positive, got {req.size_bytes} bytes")
    check_times(topology, req.size_bytes)
    algo = ALGORITHMS[req.algorithm](req, progress)
    if req.collective not in algo.collectives:
        served = ", ".join(sorted(k.value for k in algo.collectives))
        raise CollcError(
            f"algorithm {algo.name} does not implement {req.collective.value} (it serves {served})"
        )
    collective = make_collective(req, algo, topology)
    check_work(
        collective,
        req.max_transfers or MAX_TRANSFERS,
        work=estimate_work(collective, topology, tacos=isinstance(algo, Tacos), seeds=req.seeds),
        max_work=req.max_work or MAX_WORK,
    )
    cost = req.cost_model()
    seconds["parse"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    program = generate(algo, collective, topology)
    seconds["generate"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    report = verify(program)
    verify_routes(program, topology)
    seconds["verify"] = time.perf_counter() - t2
    estimate = algo.last.estimated_ns if isinstance(algo, Tacos) and algo.last else None
    seed = req.seed if isinstance(algo, Tacos) else None
    # TACOS's all-to-all keeps no chunk-level schedule of its own in ASTRA-sim's order: it is
    # gated like any other program, and bounded as any chunking.
    alltoall = collective.kind is CollectiveKind.ALLTOALL
    tacos_chunks = req.chunks_per_npu if isinstance(algo, Tacos) and not alltoall else None
    extra: dict[str, Any] = {}
    if isinstance(algo, Tacos):
        # seed and seeds together reproduce a TACOS program (each phase keeps its best seed)
        extra["seeds"] = req.seeds
    if collective.groups:
        extra["groups"] = req.groups
        extra["groups_joint"] = isinstance(algo, Tacos) and not req.groups_independent
    if collective.groups or (alltoall and isinstance(algo, Tacos)):
        # Groups share links, and TACOS's all-to-all plan is a planning figure: the estimate
        # is the simulated time (of every group at once).
        from backends.sim import simulate

        t3 = time.perf_counter()
        estimate = simulate(
            program, topology, chunk_bytes_for(collective, req.size_bytes), cost=cost
        ).finish_ns
        seconds["estimate"] = time.perf_counter() - t3
    return _finish(
        program,
        topology,
        req.size_bytes,
        algo.name,
        report,
        seconds,
        estimate,
        seed,
        tacos_chunks,
        extra or None,
        completion=cost.completion,
    )


def call_groups(spec: str, topology: Topology, placement: Sequence[int] = ()) -> Groups:
    """The groups ``spec`` names on ``topology``, checked for one collective call: disjoint,
    of equal size, and holding exactly the ``placement`` NPUs when one is given."""
    from topologies.groups import parse_groups

    groups = parse_groups(spec, topology)
    groups.check_disjoint()
    if placement:
        groups.check_covers(placement)
    return groups


def make_collective(req: Request, producer: Producer, topology: Topology) -> Collective:
    """The collective a request asks of ``producer`` on ``topology``: its ranks on the
    ``--placement`` NPUs (all by default) or, with ``--groups``, on the groups' NPUs in
    ascending order, split into those groups; chunks per rank as ``producer`` cuts them.
    Raises CollcError for a bad placement, groups that overlap, differ in size or do not
    cover the placement, and kinds that take no groups."""
    placement = parse_placement(req.placement, topology) if req.placement else ()
    members: tuple[tuple[int, ...], ...] = ()
    if req.groups:
        groups = call_groups(req.groups, topology, placement)
        placement = groups.npus
        rank_of = {x: r for r, x in enumerate(placement)}
        members = tuple(tuple(rank_of[x] for x in g) for g in groups.members)
    n = len(placement) if placement else topology.num_npus
    per_group = len(members[0]) if members else n
    return Collective(
        req.collective,
        n,
        producer.chunks_per_rank(req.collective, per_group),
        inplace=req.inplace,
        root=req.root if req.collective.rooted else -1,
        placement=placement if placement and placement != tuple(range(n)) else (),
        groups=members,
    )


def generate(producer: Producer, collective: Collective, topology: Topology) -> Program:
    """``producer``'s program for ``collective``. Process groups: TACOS plans them together
    (unless told to plan each alone); any other producer makes each group's program alone and
    they are merged (`chakra_ir.grouping.merge_groups`)."""
    from chakra_ir.grouping import merge_groups
    from tacos import Tacos

    if not collective.groups or isinstance(producer, Tacos):
        return producer.generate(collective, topology)
    programs = [
        producer.generate(collective.group_collective(g), topology)
        for g in range(collective.num_groups)
    ]
    return merge_groups(collective, programs, programs[0].name)


MAX_TRANSFERS = 50_000_000
"""Default limit of `check_work` on chunk transfers: about 5 GB of program columns."""

MAX_WORK = 4_000_000
"""Default limit of `check_work` on the work estimate (`estimate_work`): 4 to 13 s to
synthesize, verify and write on one core of a busy machine (`benchmarks/bench_work.py`), well
under the 20 s the mutation campaigns count as a hang."""

WORK_PER_TRANSFER = 32
"""Work units of one chunk transfer besides TACOS's look over channels (`estimate_work`)."""


@dataclass(frozen=True)
class Work:
    """A work estimate (`estimate_work`): ``units``, and ``terms``, how they were counted."""

    units: int
    terms: str


def estimate_work(
    collective: Collective, topology: Topology, *, tacos: bool, seeds: int = 1
) -> Work:
    """The work of producing, verifying and writing ``collective``'s program on ``topology``,
    estimated in O(links) before anything is produced: its chunk transfers (ranks x chunks),
    twice for an all-reduce (two phases), times ``seeds`` for TACOS (one synthesis per seed),
    for an all-to-all times the mean hops of a block's route (`tacos.channels.mean_route_hops`:
    every hop is a message to produce or simulate), each weighing `WORK_PER_TRANSFER` units
    plus, for TACOS, the hops of the channels a rank looks over at every step
    (`tacos.channels.channel_hops`: all-to-all-like on switches and fully connected networks,
    a few on grids). A unit takes one to three microseconds (`benchmarks/bench_work.py`)."""
    from tacos.channels import channel_hops, mean_route_hops

    npus = [collective.npu(r) for r in range(collective.num_ranks)]
    transfers = collective.num_ranks * collective.size_chunks
    phases = 2 if collective.kind is CollectiveKind.ALLREDUCE else 1
    runs = seeds if tacos else 1
    hops = mean_route_hops(topology, npus) if collective.kind is CollectiveKind.ALLTOALL else 1.0
    scan = channel_hops(topology, npus) if tacos else 0.0
    units = round(transfers * phases * runs * hops * (WORK_PER_TRANSFER + scan))
    factors = [f"{collective.num_ranks} ranks", f"{collective.size_chunks} chunks"]
    factors += [f"{phases} phases"] if phases > 1 else []
    factors += [f"{runs} seeds"] if runs > 1 else []
    factors += [f"{hops:.1f} hops a block"] if hops != 1.0 else []
    weight = f"({WORK_PER_TRANSFER} + {scan:.0f} channel hops)"
    factors.append(weight if tacos else str(WORK_PER_TRANSFER))
    return Work(units, " x ".join(factors))


def check_work(
    collective: Collective, limit: int, *, work: Work | None = None, max_work: int = MAX_WORK
) -> None:
    """Refuse, before anything is allocated, a collective whose program would need more than
    ``limit`` chunk transfers (ranks x chunks of the sized buffer: about as many operations
    as every rank handling every chunk once), or whose estimated ``work`` (`estimate_work`) is
    more than ``max_work``, in one line naming the value and the flag that raises the limit."""
    transfers = collective.num_ranks * collective.size_chunks
    if transfers > limit:
        raise CollcError(
            f"{collective.num_ranks} ranks x {collective.size_chunks} chunks = {transfers:,} "
            f"chunk transfers is more than the limit of {limit:,} (a program that large takes "
            "more memory and time than a run should); lower --chunks-per-npu, or raise the "
            "limit with --max-transfers"
        )
    if work is not None and work.units > max_work:
        raise CollcError(
            f"estimated work {work.units:,} ({work.terms}) is more than the limit of "
            f"{max_work:,} (a unit is one to three microseconds); raise the limit with --max-work"
        )


def check_times(topology: Topology, size_bytes: int) -> None:
    """Refuse, before any work, a size whose times the topology's slowest link would push past
    what collc can compute exactly (`topologies.units.check_time_range`)."""
    if topology.links:
        check_time_range(
            size_bytes,
            min(lk.bandwidth_bytes_per_ns for lk in topology.links),
            max(lk.latency_ns for lk in topology.links),
            topology.num_nodes,
        )


def _finish(
    program: Program,
    topology: Topology,
    size_bytes: int,
    algorithm: str,
    report: VerifyReport,
    seconds: dict[str, float],
    estimate: float | None = None,
    seed: int | None = None,
    tacos_chunks: int | None = None,
    extra: dict[str, Any] | None = None,
    *,
    completion: Completion = DEFAULT_COMPLETION,
) -> Result:
    """Bind a size to a verified program: lower bound, manifest, result.

    ``tacos_chunks`` is TACOS's chunks per NPU: its estimate is compared with the bounds for
    its own chunking. Any other program cuts the buffer its own way, so only the bounds that
    hold for any chunking apply to it; and it gets the ``after`` hints that keep its sends
    released together in order in ASTRA-sim (`backends.sim.gates`).
    """
    c = program.collective
    t = time.perf_counter()
    bounds = program_bounds(program, topology, size_bytes, tacos_chunks)
    seconds["bounds"] = time.perf_counter() - t
    bound = bounds.best if bounds.items else ("none", 0.0)
    chunk_bytes = chunk_bytes_for(c, size_bytes)
    if tacos_chunks is None and program.num_ops:
        # TACOS gates its sends itself; any other program is gated from one simulation.
        from backends.sim.gates import gate_ties

        t = time.perf_counter()
        program = gate_ties(program, topology, chunk_bytes, CostModel(completion=completion))
        seconds["gates"] = time.perf_counter() - t
    info: dict[str, Any] = {"lower_bound_ns": bound[1], "lower_bound": bound[0], "reduce_micros": 0}
    if estimate is not None:
        info["estimated_ns"] = estimate
    info.update(extra or {})
    manifest = Manifest(
        collective=c,
        topology=topology.spec,
        size_bytes=chunk_bytes * c.size_chunks,
        chunk_bytes=chunk_bytes,
        et_prefix=c.kind.value,
        algorithm=algorithm,
        seed=seed,
        extra=info,
        completion=completion.value,
    )
    return Result(
        program, manifest, topology, report, seconds, estimate, bounds, bound, tacos_chunks
    )


def program_bounds(
    program: Program, topology: Topology, size_bytes: int, tacos_chunks: int | None = None
) -> Bounds:
    """Lower bounds on ``program``'s collective at ``size_bytes``: for TACOS's chunking when
    ``tacos_chunks`` is given, else those that hold for any program. None for custom ones."""
    from tacos.bounds import Bounds, lower_bounds
    from tacos.group_bounds import group_bounds

    c = program.collective
    if c.kind is CollectiveKind.CUSTOM:
        return Bounds({})
    if c.groups:
        return group_bounds(
            c.kind,
            topology,
            size_bytes,
            [[c.npu(r) for r in g] for g in c.groups],
            chunks_per_npu=tacos_chunks or 1,
            any_chunking=tacos_chunks is None,
        )
    return lower_bounds(
        c.kind,
        topology,
        size_bytes,
        placement=[c.npu(r) for r in range(c.num_ranks)],
        chunks_per_npu=tacos_chunks or 1,
        root=max(c.root, 0),
        any_chunking=tacos_chunks is None,
    )


def _adopt(
    program: Program,
    topology: str | None,
    size_bytes: int,
    algorithm: str,
    seconds: dict[str, float],
    extra: dict[str, Any],
) -> Result:
    """Verify a program that came from outside (MSCCLang, XML) on its topology and bind its
    size. The topology is ``topology``, or a fully connected network of its ranks (what
    MSCCLang programs assume)."""
    topo = parse_topology(topology if topology else f"fc:{max(program.num_ranks, 2)}")
    t = time.perf_counter()
    report = verify(program)
    verify_routes(program, topo)
    seconds["verify"] = time.perf_counter() - t
    return _finish(program, topo, size_bytes, algorithm, report, seconds, extra=extra)


def compile_msccl(
    path: Path,
    argv: Sequence[str],
    *,
    size_bytes: int,
    topology: str | None = None,
    program: str | None = None,
    as_custom: bool = False,
    limits: Any = None,
) -> tuple[Result, str]:
    """Compile an MSCCLang program; returns the result and what the program printed.

    A file that builds several MSCCLPrograms needs ``program`` (a name or 1-based number);
    ``as_custom`` and ``limits`` (a `mscclang_frontend.Limits`) as in `compile_all`.
    """
    results, printed = compile_msccl_all(
        path,
        argv,
        size_bytes=size_bytes,
        topology=topology,
        program=program,
        as_custom=as_custom,
        limits=limits,
    )
    if len(results) > 1:
        from mscclang_frontend import CompileError

        names = ", ".join(name for name, _ in results)
        raise CompileError(f"{path}: the file builds {len(results)} MSCCLPrograms ({names})")
    return results[0][1], printed


def compile_msccl_all(
    path: Path,
    argv: Sequence[str],
    *,
    size_bytes: int,
    topology: str | None = None,
    program: str | None = None,
    as_custom: bool = False,
    limits: Any = None,
) -> tuple[list[tuple[str, Result]], str]:
    """Compile every MSCCLProgram an MSCCLang file builds (or the one ``program`` names);
    returns (name, result) per program and what the file printed."""
    import collc.exporters  # noqa: F401  (registers the emitter of the programs' XML())
    from mscclang_frontend import compile_file_all, select_program

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    compiled = compile_file_all(path, argv, limits=limits, as_custom=as_custom)
    if program is not None:
        compiled = [select_program(compiled, program, str(path))]
    seconds["compile"] = time.perf_counter() - t
    results: list[tuple[str, Result]] = []
    for c in compiled:
        msccl = {k: v for k, v in c.options.items() if isinstance(v, (str, int, bool))}
        if as_custom:
            msccl["as_custom"] = True
        extra = {"source": str(path), "argv": list(argv), "msccl": msccl}
        result = _adopt(c.program, topology, size_bytes, "mscclang", dict(seconds), extra)
        results.append((c.name, result))
    return results, compiled[-1].stdout


def import_xml(
    path: Path,
    *,
    size_bytes: int,
    topology: str | None = None,
    root: int | None = None,
    limits: Any = None,
) -> Result:
    """Read MSCCL-IR XML (msccl-tools, TACCL, ForestColl) into a verified result; ``limits``
    (a `mscclang_frontend.xml.XmlLimits`) bound the file. What the MSCCL runtime would refuse
    is listed in ``manifest.extra["warnings"]``; verification failures name the step."""
    from mscclang_frontend.xml import locate_xml_error, read_xml

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    imported = read_xml(path, root=root, limits=limits)
    seconds["import"] = time.perf_counter() - t
    o = imported.options
    msccl = {"protocol": o.proto, "instr_fusion": o.fusion, "name": o.name}
    extra = {"source": str(path), "msccl": msccl, "notes": list(imported.notes)}
    if imported.warnings:
        extra["warnings"] = list(imported.warnings)
    try:
        return _adopt(imported.program, topology, size_bytes, "msccl-xml", seconds, extra)
    except VerifyError as e:
        raise locate_xml_error(e, imported, path) from None


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


@dataclass(frozen=True)
class SimRequest:
    """What ``collc simulate`` needs; the CLI fills it from flags."""

    folder: Path
    topology: str | None = None
    size_bytes: int | None = None
    force: bool = False
    model: str = "congestion"
    packet_bytes: int | None = None
    timeline: bool = False
    completion: str | None = None
    """The send-completion rule; None: the folder's (ASTRA-sim's for foreign ETs)."""
    cut_through_ns: float | None = None
    """Virtual cut-through with this router delay (`CostModel.cut_through_router_ns`); None:
    store-and-forward, the producers' rule."""


def simulate_folder(req: SimRequest) -> tuple[SimResult, Topology, float | None]:
    """Simulate an output folder (or a folder of another tool's ET files).

    Returns the result (with the lower bound attached for collc folders), the topology, and
    the producer's own estimate from the manifest when it made one. A collc folder is read,
    verified and simulated with the manifest's topology and size; a different ``--topology``
    or ``--size`` is refused unless ``force``. Another tool's ET files need ``--topology`` and
    are timed without checking their semantics.
    """
    from backends.sim import MODELS as SIM_MODELS
    from backends.sim import simulate, simulate_et
    from chakra_ir.et import read_et_folder

    if req.model not in SIM_MODELS:
        raise CollcError(f"unknown model {req.model!r} (expected one of {', '.join(SIM_MODELS)})")
    fixed = SIM_MODELS[req.model].completion
    if fixed is not None and req.completion is not None:
        if req.completion != fixed.value:
            raise CollcError(
                f"--completion {req.completion} does not apply to --model {req.model}, whose "
                f"sends complete {fixed.value} as ASTRA-sim's do"
            )
        req = dataclasses.replace(req, completion=None)
    if req.packet_bytes is not None and req.packet_bytes <= 0:
        raise CollcError(f"--packet-size must be positive, got {req.packet_bytes}")
    folder = Path(req.folder)
    if folder.is_dir() and not (folder / MANIFEST).exists():
        if req.topology is None:
            raise CollcError(
                f"{folder} has no {MANIFEST}: pass --topology to time its ET files "
                "(their semantics cannot be checked)"
            )
        topology = parse_topology(req.topology)
        traces = read_et_folder(folder)
        result = simulate_et(
            traces,
            topology,
            model=req.model,
            cost=dataclasses.replace(
                cost_model_for(req.completion or DEFAULT_COMPLETION.value),
                cut_through_router_ns=req.cut_through_ns,
            ),
            packet_bytes=req.packet_bytes,
            keep_timeline=req.timeline,
        )
        return result, topology, None
    manifest, program, _ = load(folder)
    topology = topology_of(manifest, req.topology, force=req.force)
    cost = dataclasses.replace(
        cost_model_for(completion_of(manifest, req.completion, force=req.force)),
        cut_through_router_ns=req.cut_through_ns,
    )
    verify_routes(program, topology)
    chunk_bytes = manifest.chunk_bytes
    if req.size_bytes is not None and req.size_bytes != manifest.size_bytes:
        if not req.force:
            raise CollcError(
                f"--size {req.size_bytes} B differs from the folder's size {manifest.size_bytes} B "
                "(the program was produced for that size; pass --force to simulate it anyway)"
            )
        chunk_bytes = chunk_bytes_for(program.collective, req.size_bytes)
    check_times(topology, chunk_bytes * program.collective.size_chunks)
    reduce_micros = manifest.extra.get("reduce_micros")
    if program.collective.groups:
        result = simulate_groups(
            program,
            topology,
            chunk_bytes,
            model=req.model,
            cost=cost,
            packet_bytes=req.packet_bytes,
            keep_timeline=req.timeline,
        )
    else:
        result = simulate(
            program,
            topology,
            chunk_bytes,
            model=req.model,
            cost=cost,
            packet_bytes=req.packet_bytes,
            keep_timeline=req.timeline,
            reduce_micros=None if reduce_micros is None else int(reduce_micros),
        )
    b = program_bounds(program, topology, chunk_bytes * program.collective.size_chunks)
    if b.items:
        result.lower_bound_name, result.lower_bound_ns = b.best
    estimate = manifest.extra.get("estimated_ns")
    same_size = (
        chunk_bytes == manifest.chunk_bytes
        and topology == parse_topology(manifest.topology)
        and cost.completion.value == manifest.completion
        and cost.cut_through_router_ns is None
    )
    return result, topology, float(estimate) if estimate is not None and same_size else None


def simulate_groups(
    program: Program,
    topology: Topology,
    chunk_bytes: int,
    *,
    model: str = "congestion",
    cost: CostModel | None = None,
    packet_bytes: int | None = None,
    keep_timeline: bool = False,
) -> SimResult:
    """Simulate a program split into process groups as one instance per group, all at once
    (`backends.sim.concurrent`): the same time as the whole program, with each group's finish.
    """
    from backends.sim.concurrent import Instance, simulate_instances
    from chakra_ir.grouping import split_groups

    c = program.collective
    parts = split_groups(program)
    result = simulate_instances(
        [Instance(f"group {g}", p, chunk_bytes) for g, p in enumerate(parts)],
        topology,
        model=model,
        cost=cost or CostModel(),
        packet_bytes=packet_bytes,
        keep_timeline=keep_timeline,
    )
    return dataclasses.replace(
        result,
        collective=c.kind.value,
        size_bytes=c.size_chunks * chunk_bytes,
        chunk_bytes=chunk_bytes,
        group_size=c.group_size,
    )
