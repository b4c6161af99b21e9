"""A checked workload run on a topology under one model: ASTRA-sim's analytical mode (native
collectives, one NPU per class of identical NPUs when that is exact) or collc's collectives
expanded and simulated with contention. ``collc workload simulate`` and ``collc libra
--check`` both run workloads through `run_on_topology`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topologies.errors import CollcError

if TYPE_CHECKING:
    from topologies.cost_model import CostModel
    from topologies.topology import Topology
    from workloads.analytical import NativeConfig
    from workloads.engine import Roofline, WorkloadRun
    from workloads.expand import ProgramFor
    from workloads.model import Workload


@dataclass
class ModelRun:
    """What `run_on_topology` measured: the workload ``run``; for the contention models the
    simulator's result ``sim`` and the number of distinct ``programs``; for the analytical
    mode the ``shortcut`` taken (classes of identical NPUs, or "none")."""

    run: WorkloadRun
    sim: Any = None
    programs: int = 0
    shortcut: str = "none"
    notes: list[str] = field(default_factory=list)
    """The analytical mode's notes on inputs ASTRA-sim would not run (`astra_notes`)."""


def run_on_topology(
    w: Workload,
    topo: Topology,
    model: str,
    *,
    config: NativeConfig,
    algos: tuple[str, dict[str, str]],
    classes: list[int],
    completion: str = "on-arrival",
    chunks_per_npu: int = 1,
    seed: int = 0,
    max_transfers: int,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    full: bool = False,
    phase: Callable[[str | None], None] = lambda _m: None,
    tuned: list[dict[str, object]] | None = None,
    strict: bool = False,
) -> ModelRun:
    """Run ``w`` (checked, ``classes`` from `workloads.model.check_workload`) on ``topo``
    under ``model`` ("analytical" or a `backends.sim` model name). Where ``algos`` names
    `registry.TUNED`, each collective's producer is the one ``collc tune`` finds fastest for
    it, and the choices are appended to ``tuned``. With ``strict``, the analytical mode refuses
    what `astra_notes` would note."""
    if model == "analytical":
        from workloads.analytical import run_analytical

        notes = astra_notes(w, topo, config)
        if strict and notes:
            raise CollcError(f"--strict: {notes[0]}")
        phase("running by ASTRA-sim's workload rules")
        run, shortcut = run_analytical(
            w, topo, config, classes=classes, roofline=roofline, remote_mem=remote_mem, full=full
        )
        return ModelRun(run, shortcut=shortcut, notes=notes)
    from collc import pipeline
    from workloads.expand import run_contended

    cost = pipeline.cost_model_for(completion)
    make = program_maker(
        topo,
        algos,
        cost=cost,
        model=model,
        chunks_per_npu=chunks_per_npu,
        seed=seed,
        max_transfers=max_transfers,
        tuned=tuned,
    )
    done = run_contended(
        w, topo, make, model=model, cost=cost, roofline=roofline, remote_mem=remote_mem, phase=phase
    )
    return ModelRun(done.run, done.sim, done.programs)


def program_maker(
    topo: Topology,
    algos: tuple[str, dict[str, str]],
    *,
    cost: CostModel,
    model: str,
    chunks_per_npu: int,
    seed: int,
    max_transfers: int,
    tuned: list[dict[str, object]] | None = None,
) -> ProgramFor:
    """What expands each collective of a workload into a program: the producers ``algos``
    names, or where it names `registry.TUNED` the one ``collc tune`` finds fastest under
    ``model`` (its choices appended to ``tuned``)."""
    from collc import pipeline, registry

    if registry.TUNED in (algos[0], *algos[1].values()):
        from collc.tune import TuneCache, default_cache
        from collc.tune_workload import tuned_program_for

        return tuned_program_for(
            topo,
            algos,
            cost=cost,
            model=model,
            chunks_per_npu=chunks_per_npu,
            seed=seed,
            max_transfers=max_transfers,
            cache=TuneCache(default_cache()),
            choices=[] if tuned is None else tuned,
        )
    return pipeline.program_for(
        topo,
        algos,
        cost=cost,
        chunks_per_npu=chunks_per_npu,
        seed=seed,
        max_transfers=max_transfers,
    )


def astra_notes(w: Workload, topo: Topology, config: NativeConfig) -> list[str]:
    """What ASTRA-sim's congestion-unaware binary would not run of ``w`` on ``topo`` with
    ``config``, as result notes: a network its file cannot state, and an endpoint delay of 0
    with a collective on every NPU (such a collective's ring releases its packets through the
    memory bus with the endpoint delay, ``MemBus::send_from_NPU_to_MA``, and a release at the
    current time aborts the event queue; groups smaller than the cluster release in a fixed
    10 ns and run)."""
    from backends.sim.astra_aware import ASTRA_WOULD_NOT_RUN
    from collc.simulation import astra_network_note
    from workloads.model import CollKind, NodeKind

    notes = []
    net = astra_network_note(topo)
    if net is not None:
        notes.append(net)
    if config.endpoint_delay_ns == 0:
        everyone = {pg for pg, m in w.groups.items() if len(set(m)) == w.num_npus} | {"", "0"}
        if any(
            nd.kind == NodeKind.COLL
            and nd.comm_type != CollKind.BROADCAST
            and nd.pg_name in everyone
            for nodes in w.ranks
            for nd in nodes
        ):
            notes.append(
                f"{ASTRA_WOULD_NOT_RUN}: endpoint-delay 0 with a collective on every NPU; "
                "ASTRA-sim's congestion-unaware binary aborts (its memory bus schedules the "
                "collective's packet releases at the current time)"
            )
    return notes
