"""Shared helpers for the TACOS tests."""

from __future__ import annotations

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.verify import verify, verify_routes
from tacos import chunks_for
from tacos.synthesis import Synthesis, lowered
from tacos.timing import replay
from topologies import Topology

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


def check(c: Collective, t: Topology, chunk_bytes: float = 1e6, seed: int = 0) -> Synthesis:
    """Synthesize, verify (semantics and routes) and check the estimate against the replay."""
    syn, low, routes = lowered(c, t, chunk_bytes, seed=seed)
    verify(syn.program)
    verify_routes(syn.program, t)
    rp = replay(low, routes.timed)
    assert abs(rp.finish_ps / 1000 - syn.estimated_ns) <= 1e-6 * max(1.0, syn.estimated_ns)
    return syn
