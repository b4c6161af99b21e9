"""Shared helpers for the TACOS tests."""

from __future__ import annotations

from backends.sim import simulate
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.verify import verify, verify_routes
from tacos import chunks_for
from tacos.synthesis import Synthesis, synthesize
from topologies import Topology
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel

ALL_KINDS = (
    CollectiveKind.ALLGATHER,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALLREDUCE,
    CollectiveKind.BROADCAST,
    CollectiveKind.REDUCE,
    CollectiveKind.GATHER,
    CollectiveKind.SCATTER,
)


def collective(
    kind: CollectiveKind,
    n: int,
    c: int = 1,
    *,
    inplace: bool = False,
    root: int = 0,
    placement: tuple[int, ...] = (),
) -> Collective:
    return Collective(
        kind,
        n,
        chunks_for(kind, n, c),
        inplace=inplace,
        root=root if kind.rooted else -1,
        placement=placement,
    )


def check(
    c: Collective,
    t: Topology,
    chunk_bytes: float = 1e6,
    seed: int = 0,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> Synthesis:
    """Synthesize, verify (semantics and routes) and check the estimate against the congestion
    simulator: both keep whole picoseconds, so they agree exactly."""
    assert chunk_bytes == int(chunk_bytes)
    syn = synthesize(c, t, chunk_bytes, seed=seed, cost=cost)
    verify(syn.program)
    verify_routes(syn.program, t)
    if c.num_ranks > 1:
        sim = simulate(syn.program, t, int(chunk_bytes), cost=cost)
        assert sim.finish_ns == syn.estimated_ns, (sim.finish_ns, syn.estimated_ns)
    return syn
