"""The glue between the CLI and the library: produce, verify, write, read back.

The CLI parses flags and prints; every step it runs is here, so tests and scripts can call the
same steps. Every program passes `verify` before it is written and after it is read. This
module holds the producing steps (`synthesize`; `program_for`, the programs of a workload's
collectives) and re-exports the others from the modules that hold them: `collc.request`,
`collc.producers`, `collc.limits`, `collc.results`, `collc.adopt`, `collc.folders` and
`collc.simulation`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.verify import verify, verify_routes
from collc.adopt import compile_msccl, compile_msccl_all, import_xml
from collc.folders import (
    ForeignReport,
    completion_of,
    load,
    topology_of,
    verify_foreign,
    write,
)
from collc.limits import (
    MAX_TRANSFERS,
    MAX_WORK,
    WORK_PER_TRANSFER,
    Work,
    check_times,
    check_work,
    estimate_work,
)
from collc.producers import ALGORITHMS, Producer, ProducerFactory, Progress, descriptions
from collc.request import (
    DEFAULT_ALGORITHM,
    Request,
    call_groups,
    cost_model_for,
    parse_placement,
    payload_of,
)
from collc.results import Result, bind_size, bounds_for, program_bounds
from collc.simulation import SimRequest, simulate_folder, simulate_groups
from topologies import parse_topology
from topologies.errors import CollcError

# Start-up (issue 12): the producers, the bounds, the simulator and the ET codec are imported
# by the functions that use them, so each command loads only what it runs (`collc compile`
# loads no baseline, no TACOS synthesis of process groups and no simulation model: only the
# gates' simulation).
if TYPE_CHECKING:
    from chakra_ir.program import Program
    from payloads.describe import Payload
    from topologies import Topology
    from topologies.cost_model import CostModel
    from workloads.engine import CollCall
    from workloads.expand import Expansion, ProgramFor

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "MAX_TRANSFERS",
    "MAX_WORK",
    "WORK_PER_TRANSFER",
    "ForeignReport",
    "Producer",
    "ProducerFactory",
    "Progress",
    "Request",
    "Result",
    "SimRequest",
    "Work",
    "bounds_for",
    "call_groups",
    "check_times",
    "check_work",
    "compile_msccl",
    "compile_msccl_all",
    "completion_of",
    "cost_model_for",
    "descriptions",
    "estimate_work",
    "generate",
    "import_xml",
    "load",
    "make_collective",
    "parse_placement",
    "payload_of",
    "program_bounds",
    "program_for",
    "simulate_folder",
    "simulate_groups",
    "synthesize",
    "topology_of",
    "verify_foreign",
    "write",
]

if TYPE_CHECKING:
    DESCRIPTIONS: dict[str, str]
    """Every producer's description, by name (`descriptions`)."""


def __getattr__(name: str) -> Any:
    if name == "DESCRIPTIONS":
        return descriptions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    payload = payload_of(req.payload) if req.payload else None
    if payload is not None and not payload.dense:
        if req.groups:
            raise CollcError("--payload does not apply to process groups yet")
        if payload.tensors is not None:
            # Real tensors fix the size (as in `collc bench`).
            req = dataclasses.replace(
                req, size_bytes=payload.tensors.elements * payload.tensors.itemsize
            )
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
        if algo.last is not None and algo.last.rule:
            extra["tacos_rule"] = algo.last.rule
    if req.payload:
        # `collc simulate` of the folder weighs its messages under this payload by default.
        extra["payload"] = payload.spec if payload is not None else req.payload
        extra["converter"] = req.converter
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
    result = bind_size(
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
    if payload is not None and not payload.dense:
        result = _sparse_bound(result, payload)
    return result


def _sparse_bound(result: Result, payload: Payload) -> Result:
    """``result`` measured against the sparse payload's bound (`payloads.bounds`): the dense
    bounds do not hold for messages that weigh less than their chunks."""
    from payloads.bounds import sparse_bound

    m = result.manifest
    bound = sparse_bound(result.program, payload, m.chunk_bytes, result.topology)
    extra = {**m.extra, "lower_bound": bound[0], "lower_bound_ns": bound[1]}
    return dataclasses.replace(
        result, bound=bound, manifest=dataclasses.replace(m, extra=extra), bounds_chunks=None
    )


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
    npus = placement or tuple(range(n))
    first = tuple(npus[r] for r in members[0]) if members else npus
    return Collective(
        req.collective,
        n,
        producer.chunks_on(req.collective, first, topology),
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


def program_for(
    topology: Topology,
    algorithms: tuple[str, dict[str, str]],
    *,
    cost: CostModel,
    chunks_per_npu: int,
    seed: int,
    max_transfers: int = 0,
) -> ProgramFor:
    """Expands a workload's collective with the chosen producer on the group's NPUs, verified
    (`chakra_ir.verify`); one program per call (the caller caches). A collective of more than
    ``max_transfers`` chunk transfers (0: `MAX_TRANSFERS`) is refused."""
    from workloads.expand import Expansion
    from workloads.model import COLL_NAMES, CollKind

    default, over = algorithms

    def make(call: CollCall) -> Expansion:
        kind = CollectiveKind(COLL_NAMES[call.kind])
        algo = over.get(f"pg:{call.pg_name}", over.get(kind.value, default))
        members = call.members
        size = call.comm_size * len(members) if call.kind == CollKind.ALL_GATHER else call.comm_size
        req = Request(
            topology=topology.spec,
            collective=kind,
            algorithm=algo,
            size_bytes=size,
            chunks_per_npu=chunks_per_npu,
            placement=",".join(str(x) for x in members),
            seed=seed,
            completion=cost.completion.value,
        )
        producer = ALGORITHMS[algo](req, None)
        if kind not in producer.collectives:
            raise CollcError(f"--algorithm: {algo} does not make {kind.value}")
        collective = make_collective(req, producer, topology)
        check_work(collective, max_transfers or MAX_TRANSFERS)
        program = generate(producer, collective, topology)
        verify(program)
        return Expansion(program, chunk_bytes_for(collective, size))

    return make
