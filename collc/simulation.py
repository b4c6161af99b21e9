"""Simulating a folder: a collc output folder verified and timed under the cost model it was
produced for (or a flag's override), another tool's ET files timed on a given topology, and a
program of process groups run as one instance per group."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chakra_ir.outdir import MANIFEST, chunk_bytes_for
from chakra_ir.verify import verify_routes
from collc.folders import completion_of, load, topology_of
from collc.limits import check_times
from collc.request import cost_model_for
from collc.results import program_bounds
from topologies import parse_topology
from topologies.cost_model import DEFAULT_COMPLETION, CostModel
from topologies.errors import CollcError

if TYPE_CHECKING:
    from backends.sim import SimResult
    from chakra_ir.outdir import Manifest
    from chakra_ir.program import Program
    from payloads.describe import Payload
    from payloads.sizes import MessageSizes
    from topologies import Topology


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
    payload: str | None = None
    """A payload spec (`payloads.describe`): messages weigh their contributions' supports."""
    converter: str | None = None
    """Format conversion at the endpoints: ``sw`` or ``hw`` (`payloads.endpoint`); None: the
    folder's (recorded with its payload), else ``sw``."""
    strict: bool = False
    """Refuse, instead of noting, an input ASTRA-sim's binary would not run (the ASTRA-sim
    models only)."""


def simulate_folder(req: SimRequest) -> tuple[SimResult, Topology, float | None]:
    """`_simulate_folder`, with the notes of an ASTRA-sim model on inputs ASTRA-sim would
    not run (refused with ``req.strict``)."""
    result, topology, estimate = _simulate_folder(req)
    if req.model in ("astra-aware", "analytical"):
        from backends.sim.astra_aware import ASTRA_WOULD_NOT_RUN

        note = astra_network_note(topology)
        if note is not None:
            result.notes.append(note)
        refused = [n for n in result.notes if n.startswith(ASTRA_WOULD_NOT_RUN)]
        if req.strict and refused:
            raise CollcError(f"--strict: {refused[0]}")
    return result, topology, estimate


def astra_network_note(topology: Topology) -> str | None:
    """The note for a stack that ASTRA-sim's network file cannot state (per-link bandwidths
    or latencies, lines), which the ASTRA-sim models still time; None when it can (or when
    the topology is no stack, which the models refuse or note themselves)."""
    from backends.astrasim.errors import AstraExportError
    from backends.astrasim.network import astra_dimensions
    from backends.sim.analytical import is_astra_stack
    from backends.sim.astra_aware import ASTRA_WOULD_NOT_RUN

    if not is_astra_stack(topology):
        return None
    try:
        astra_dimensions(topology)
    except AstraExportError as e:
        return (
            f"{ASTRA_WOULD_NOT_RUN}: {e.message} (the ASTRA-sim bundle refuses it; this time "
            "is collc's reading of it)"
        )
    return None


def _simulate_folder(req: SimRequest) -> tuple[SimResult, Topology, float | None]:
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
    payload = None
    if req.payload is not None:
        from payloads.describe import parse_payload

        payload = parse_payload(req.payload)
        if req.model != "congestion" and not payload.dense:
            raise CollcError(
                f"--payload applies to the congestion model, not {req.model} (ASTRA-sim's "
                "models time messages by their chunks)"
            )
    if folder.is_dir() and not (folder / MANIFEST).exists():
        if payload is not None:
            raise CollcError(
                f"{folder}: --payload needs a collc folder (another tool's ETs carry no contents)"
            )
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
    if payload is None and manifest.extra.get("payload"):
        # A folder synthesized for a payload is weighed under it unless told otherwise.
        from payloads.describe import parse_payload

        payload = parse_payload(str(manifest.extra["payload"]))
        if req.model != "congestion" and not payload.dense:
            payload = None
    if req.converter is None:
        req = dataclasses.replace(req, converter=str(manifest.extra.get("converter", "sw")))
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
    sizes = None
    if payload is not None:
        chunk_bytes, sizes = _payload_sizes(program, payload, manifest, chunk_bytes, req, topology)
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
            sizes=sizes,
        )
    b = program_bounds(program, topology, chunk_bytes * program.collective.size_chunks)
    if sizes is not None and payload is not None and not payload.dense:
        from payloads.bounds import sparse_bound

        result.lower_bound_name, result.lower_bound_ns = sparse_bound(
            program, payload, chunk_bytes, topology
        )
        result.notes.append(f"payload {payload.spec}: {_formats_note(sizes, program)}")
    elif b.items:
        result.lower_bound_name, result.lower_bound_ns = b.best
    estimate = manifest.extra.get("estimated_ns")
    same_size = (
        chunk_bytes == manifest.chunk_bytes
        and topology == parse_topology(manifest.topology)
        and cost.completion.value == manifest.completion
        and cost.cut_through_router_ns is None
        and (sizes is None or _as_planned(manifest, payload, req))
    )
    return result, topology, float(estimate) if estimate is not None and same_size else None


def _payload_sizes(
    program: Program,
    payload: Payload,
    manifest: Manifest,
    chunk_bytes: int,
    req: SimRequest,
    topology: Topology,
) -> tuple[int, MessageSizes]:
    """The chunk size (a tensor payload's own) and the per-message sizes of ``payload``."""
    from baselines import ALGORITHMS as BASELINES
    from payloads.sizes import message_sizes, payload_chunk_bytes

    if program.collective.groups:
        raise CollcError("--payload does not apply to a program of process groups yet")
    own = payload_chunk_bytes(payload, program.collective)
    if own is not None and own != chunk_bytes:
        if not req.force:
            raise CollcError(
                f"--payload {payload.spec}: the tensors make chunks of {own} B, the folder's are "
                f"{chunk_bytes} B (pass --force to simulate the program at the tensors' size)"
            )
        chunk_bytes = own
    base = BASELINES.get(manifest.algorithm)
    if base is not None and base.topk:
        payload = payload.with_topk()
    return chunk_bytes, message_sizes(
        program, payload, chunk_bytes, converter=req.converter or "sw", topology=topology
    )


def _as_planned(manifest: Manifest, payload: Payload | None, req: SimRequest) -> bool:
    """Whether the folder's estimate was made under this payload and converter."""
    return (
        payload is not None
        and manifest.extra.get("payload") == payload.spec
        and manifest.extra.get("converter", "sw") == req.converter
    )


def _formats_note(sizes: MessageSizes, program: Program) -> str:
    used = ", ".join(f"{k} {v}" for k, v in sizes.formats_used(program).items())
    return f"{int(sizes.sent(program).sum()):,} bytes sent; messages by format: {used}"


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
