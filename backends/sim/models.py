"""The simulation models and the entry points `simulate` and `simulate_tasks`.

``MODELS`` maps a model name to its `Model`; the CLI builds ``--model`` choices from it:

- ``congestion``: collc's cost model, every link a FIFO server (`backends.sim.engine`).
- ``analytical``: what ASTRA-sim's congestion-unaware backend reports for the program run as a
  custom collective (`backends.sim.analytical`).
- ``astra-aware``: what ASTRA-sim's congestion-aware backend reports for it
  (`backends.sim.astra_aware`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backends.sim.analytical import run_analytical
from backends.sim.astra_aware import run_astra_aware
from backends.sim.engine import run_congestion
from backends.sim.engine_run import EngineRun
from backends.sim.errors import SimError
from backends.sim.results import SimResult, Timeline
from backends.sim.tasks import TaskGraph, TaskKind, tasks_from_program
from chakra_ir.collective import Collective
from chakra_ir.program import Program
from payloads.sizes import MessageSizes
from topologies.cost_model import DEFAULT_COST_MODEL, Completion, CostModel
from topologies.topology import Topology

Runner = Callable[[TaskGraph, Topology, CostModel, int | None, bool], EngineRun]
"""An engine: (graph, topology, cost model, packet bytes, keep link records) -> measurements."""


@dataclass(frozen=True)
class Model:
    """A simulation model: ``name``, a one-line ``description`` and its engine ``run``."""

    name: str
    description: str
    run: Runner
    supports_packets: bool = False
    supports_cut_through: bool = False
    """Whether it honours the cost model's ``cut_through_router_ns``."""
    fold_reductions: bool = False
    """Whether the engine takes a reducing receive as one RECV task (see `tasks_from_program`)."""
    completion: Completion | None = None
    """The send-completion rule the model always applies (an ASTRA-sim model: on arrival);
    None when it follows the cost model's."""


def _congestion(
    g: TaskGraph, t: Topology, cost: CostModel, packet_bytes: int | None, keep: bool
) -> EngineRun:
    return run_congestion(g, t, cost, packet_bytes=packet_bytes, keep_records=keep)


def _analytical(
    g: TaskGraph, t: Topology, cost: CostModel, packet_bytes: int | None, keep: bool
) -> EngineRun:
    return run_analytical(g, t)


def _astra_aware(
    g: TaskGraph, t: Topology, cost: CostModel, packet_bytes: int | None, keep: bool
) -> EngineRun:
    return run_astra_aware(g, t, keep)


MODELS: dict[str, Model] = {
    "congestion": Model(
        "congestion",
        "links as FIFO servers, store-and-forward hop by hop, under collc's cost model",
        _congestion,
        supports_packets=True,
        supports_cut_through=True,
        fold_reductions=True,
    ),
    "analytical": Model(
        "analytical",
        "ASTRA-sim's congestion-unaware analytical backend running the program as a custom "
        "collective",
        _analytical,
        completion=Completion.ON_ARRIVAL,
    ),
    "astra-aware": Model(
        "astra-aware",
        "ASTRA-sim's congestion-aware analytical backend running the program as a custom "
        "collective (per-link FIFO, whole ns per hop, ASTRA-sim's routes)",
        _astra_aware,
        completion=Completion.ON_ARRIVAL,
    ),
}


MAX_PACKETS = 10_000_000
"""The most packets a run with ``packet_bytes`` may cut its messages into: about a gigabyte
and half a minute of simulation."""


def get_model(name: str) -> Model:
    """The model called ``name``; SimError naming the choices otherwise."""
    model = MODELS.get(name)
    if model is None:
        raise SimError(f"unknown model {name!r} (expected one of {', '.join(MODELS)})")
    return model


def check_placement(graph: TaskGraph, topology: Topology) -> None:
    """Raise SimError unless every rank sits on its own NPU of ``topology`` (ranks of different
    instances of a merged graph may share one)."""
    n = topology.num_npus
    if graph.num_ranks - len(graph.switch_ranks) > n and not graph.merged:
        raise SimError(
            f"the program has {graph.num_ranks} ranks but {topology.spec} has only {n} NPUs"
        )
    seen: dict[int, int] = {}
    switch_ranks = set(graph.switch_ranks)
    for r, npu in enumerate(graph.npus):
        if r in switch_ranks:
            if not (n <= npu < topology.num_nodes):
                raise SimError(
                    f"switch rank {r} sits on node {npu}, not a switch of {topology.spec}"
                )
            continue
        if not 0 <= npu < n:
            raise SimError(
                f"rank {r} is placed on NPU {npu}, which {topology.spec} does not have "
                f"(NPUs 0..{n - 1})"
            )
        if npu in seen and not graph.merged:
            raise SimError(f"ranks {seen[npu]} and {r} are both placed on NPU {npu}")
        seen[npu] = r


def simulate(
    program: Program,
    topology: Topology,
    chunk_bytes: int,
    *,
    model: str = "congestion",
    cost: CostModel = DEFAULT_COST_MODEL,
    packet_bytes: int | None = None,
    keep_timeline: bool = False,
    reduce_micros: int | None = None,
    sizes: MessageSizes | None = None,
) -> SimResult:
    """Simulate ``program`` on ``topology`` with chunks of ``chunk_bytes`` under ``model``.

    ``sizes`` is a payload's per-message size table (`payloads.sizes.message_sizes`): each
    message weighs its entry instead of its chunks, and receives do its endpoint work.

    Ranks sit on NPUs per ``program.collective.npu``. ``packet_bytes`` cuts messages into
    packets (congestion model only). ``keep_timeline`` keeps the events `write_timeline` and
    `plot_gantt` need. ``reduce_micros`` is the reduction time the ET was (or will be) written
    with, for the analytical model's COMP nodes (default: the cost model's time, rounded to
    whole µs). The program is not verified here: run ``chakra_ir.verify`` first.

    Raises SimError (a CollcError) for a chunk size below 1 byte, an unknown model, a bad
    packet size, ranks that do not fit the topology, unmatched messages and deadlocks.
    """
    m = get_model(model)
    if chunk_bytes <= 0:
        raise SimError(f"the size must be positive: got {chunk_bytes} bytes per chunk")
    if program.has_flows and model != "congestion":
        raise SimError(
            f"the {model} model cannot run in-network flows (ASTRA-sim has no reducing "
            "switches); use the congestion model"
        )
    graph = tasks_from_program(
        program,
        chunk_bytes,
        cost,
        reduce_micros=reduce_micros,
        fold_reductions=m.fold_reductions,
        topology=topology,
        message_bytes=None if sizes is None else sizes.op_bytes,
        receive_work_ns=None if sizes is None else sizes.compute_ns,
    )
    c = program.collective
    return simulate_tasks(
        graph,
        topology,
        model=model,
        cost=cost,
        packet_bytes=packet_bytes,
        keep_timeline=keep_timeline,
        collective=c,
        size_bytes=c.size_chunks * chunk_bytes,
        chunk_bytes=chunk_bytes,
    )


def simulate_tasks(
    graph: TaskGraph,
    topology: Topology,
    *,
    model: str = "congestion",
    cost: CostModel = DEFAULT_COST_MODEL,
    packet_bytes: int | None = None,
    keep_timeline: bool = False,
    collective: Collective | None = None,
    size_bytes: int | None = None,
    chunk_bytes: int | None = None,
) -> SimResult:
    """Simulate a task graph (from a Program or an ET); see `simulate`.

    ``collective`` and ``size_bytes`` (nccl-tests size) give the bandwidth figures; without
    them the result has none.
    """
    m = get_model(model)
    if packet_bytes is not None:
        if not m.supports_packets:
            raise SimError(f"packets apply to the congestion model only, not {model!r}")
        if packet_bytes <= 0:
            raise SimError(f"the packet size must be at least 1 byte, got {packet_bytes}")
        sent = graph.nbytes[graph.kind == TaskKind.SEND]
        packets = int(np.maximum(1, -(-sent // packet_bytes)).sum())
        if packets > MAX_PACKETS:
            raise SimError(
                f"{packets:,} packets of {packet_bytes} B is more than the limit of "
                f"{MAX_PACKETS:,} (each costs memory and time); use larger packets"
            )
    if cost.cut_through_router_ns is not None and not m.supports_cut_through:
        raise SimError(f"cut-through switching applies to the congestion model only, not {model!r}")
    if size_bytes is not None and size_bytes <= 0:
        raise SimError(f"the size must be positive, got {size_bytes} bytes")
    graph.validate()
    check_placement(graph, topology)
    t0 = time.perf_counter()
    run = m.run(graph, topology, cost, packet_bytes, keep_timeline)
    wall = time.perf_counter() - t0
    return make_result(
        run,
        graph,
        topology,
        model=model,
        completion=(m.completion or cost.completion).value,
        collective=collective,
        size_bytes=size_bytes,
        chunk_bytes=chunk_bytes,
        packet_bytes=packet_bytes,
        keep_timeline=keep_timeline,
        wall_seconds=wall,
    )


def make_result(
    run: EngineRun,
    graph: TaskGraph,
    topology: Topology,
    *,
    model: str,
    collective: Collective | None,
    size_bytes: int | None,
    chunk_bytes: int | None,
    packet_bytes: int | None,
    keep_timeline: bool,
    wall_seconds: float,
    completion: str = "",
) -> SimResult:
    """Assemble a `SimResult` from an engine's measurements."""
    R = graph.num_ranks
    finish = run.finish_ns
    rank_finish = np.zeros(R, dtype=np.float64)

    counts = np.diff(graph.rank_offsets)
    nonempty = counts > 0
    if finish.size:
        starts = graph.rank_offsets[:-1][nonempty]
        rank_finish[nonempty] = np.maximum.reduceat(finish, starts)
    total = float(rank_finish.max()) if R else 0.0
    link_ends = tuple((lk.src, lk.dst) for lk in topology.links)
    notes = list(graph.notes) + list(run.notes)
    if not graph.semantics_checked and not any("semantics not checked" in n for n in notes):
        notes.append("the ET carries no collc attributes: timing only, semantics not checked")
    timeline = None
    if keep_timeline:
        timeline = Timeline(
            npus=graph.npus,
            rank=graph.task_rank(),
            kind=graph.kind,
            detail=graph.detail,
            peer=graph.peer,
            nbytes=graph.nbytes,
            origin=graph.origin,
            issue_ns=run.issue_ns,
            finish_ns=run.finish_ns,
            records=run.records,
            link_ends=link_ends,
            source=graph.source,
        )
    return SimResult(
        model=model,
        topology=topology.spec,
        finish_ns=total,
        num_ranks=R - len(graph.switch_ranks),
        rank_finish_ns=rank_finish,
        link_busy_ns=run.link_busy_ns,
        link_ends=link_ends,
        messages=run.messages,
        hops=run.hops,
        events=run.events,
        collective=None if collective is None else collective.kind.value,
        size_bytes=size_bytes,
        chunk_bytes=chunk_bytes,
        packet_bytes=packet_bytes,
        semantics_checked=graph.semantics_checked,
        notes=notes,
        wall_seconds=wall_seconds,
        timeline=timeline,
        completion=completion,
        group_size=collective.group_size if collective is not None and collective.groups else None,
    )
