"""``collc workload simulate --algorithm tuned``: every collective of a workload expanded by
the producer that is fastest for its kind, communicator group and size (`collc.tune` run on
the group's NPUs alone, at that one size, through the same cache)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_ir.collective import CollectiveKind
from collc.pipeline import program_for
from collc.registry import TUNED
from collc.tune import TuneCache, TuneSpec, run_tune

if TYPE_CHECKING:
    from topologies import Topology
    from topologies.cost_model import CostModel
    from workloads.engine import CollCall
    from workloads.expand import Expansion, ProgramFor


def tuned_program_for(
    topology: Topology,
    algorithms: tuple[str, dict[str, str]],
    *,
    cost: CostModel,
    model: str,
    chunks_per_npu: int,
    seed: int,
    max_transfers: int = 0,
    cache: TuneCache | None = None,
    choices: list[dict[str, object]] | None = None,
) -> ProgramFor:
    """`collc.pipeline.program_for` where a collective whose producer is `TUNED` (by default,
    for its kind or for its group) gets the fastest candidate under ``model`` and ``cost``'s
    completion rule: TACOS at ``chunks_per_npu`` and ``seed``, every other producer at
    ``chunks_per_npu``. Each choice is appended to ``choices`` (group, kind, bytes, producer)."""
    from workloads.model import COLL_NAMES, CollKind

    default, over = algorithms

    def make(call: CollCall) -> Expansion:
        kind = CollectiveKind(COLL_NAMES[call.kind])
        algo = over.get(f"pg:{call.pg_name}", over.get(kind.value, default))
        chunks = chunks_per_npu
        if algo == TUNED:
            members = call.members
            size = (
                call.comm_size * len(members)
                if call.kind == CollKind.ALL_GATHER
                else call.comm_size
            )
            spec = TuneSpec(
                topology.spec,
                kind,
                (size,),
                placement=",".join(str(x) for x in members),
                tacos_chunks=(chunks_per_npu,),
                tacos_seeds=(seed,),
                baseline_chunks=(chunks_per_npu,),
                model=model,
                completion=cost.completion.value,
                max_transfers=max_transfers,
            )
            report = run_tune(spec, cache)
            best = report.candidate(report.best[size])
            algo, chunks = best.algorithm, best.chunks_per_npu
            if choices is not None:
                choices.append(
                    {"group": call.pg_name, "kind": kind.value, "bytes": size, "algorithm": algo}
                )
        expand = program_for(
            topology,
            (algo, {}),
            cost=cost,
            chunks_per_npu=chunks,
            seed=seed,
            max_transfers=max_transfers,
        )
        return expand(call)

    return make
