"""The collectives TACOS synthesizes: a module of its own, so that `tacos.bounds` (which
`collc compile` runs) has the set without loading the synthesizer (start-up time, issue 12)."""

from __future__ import annotations

from chakra_ir.collective import CollectiveKind

SUPPORTED = frozenset(
    {
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLREDUCE,
        CollectiveKind.BROADCAST,
        CollectiveKind.REDUCE,
        CollectiveKind.GATHER,
        CollectiveKind.SCATTER,
        CollectiveKind.ALLTOALL,
    }
)
