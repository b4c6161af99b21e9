"""A checked workload run on a topology under one model: ASTRA-sim's analytical mode (native
collectives, one NPU per class of identical NPUs when that is exact) or collc's collectives
expanded and simulated with contention. ``collc workload simulate`` and ``collc libra
--check`` both run workloads through `run_on_topology`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
) -> ModelRun:
    """Run ``w`` (checked, ``classes`` from `workloads.model.check_workload`) on ``topo``
    under ``model`` ("analytical" or a `backends.sim` model name). Where ``algos`` names
    `registry.TUNED`, each collective's producer is the one ``collc tune`` finds fastest for
    it, and the choices are appended to ``tuned``."""
    if model == "analytical":
        from workloads.analytical import run_analytical

        phase("running by ASTRA-sim's workload rules")
        run, shortcut = run_analytical(
            w, topo, config, classes=classes, roofline=roofline, remote_mem=remote_mem, full=full
        )
        return ModelRun(run, shortcut=shortcut)
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
