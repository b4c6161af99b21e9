"""The classic collective algorithms as Program generators.

`ALGORITHMS` maps each name to its `Baseline` entry; the CLI builds its ``--algorithm``
choices from it. Typical use::

    entry = ALGORITHMS["ring"]
    cf = entry.chunks_per_rank(CollectiveKind.ALLREDUCE, 8)      # 8: one piece per rank
    program = entry.generate(Collective(CollectiveKind.ALLREDUCE, 8, cf), topology)

Every entry raises `BaselineError` (a `CollcError`) when it cannot serve a request.
"""

from __future__ import annotations

from baselines.base import Baseline, BaselineError, program_name
from baselines.dbt import DBT_KINDS, dbt_granularity, dbt_program
from baselines.direct import DIRECT_KINDS, direct_granularity, direct_program
from baselines.order import ring_order
from baselines.rhd import RHD_KINDS, rhd_granularity, rhd_program
from baselines.ring import RING_KINDS, ring_granularity, ring_program
from chakra_ir import Collective, CollectiveKind, Program
from topologies import Topology


def _ring(collective: Collective, topology: Topology) -> Program:
    order = ring_order(collective, topology)
    return ring_program(collective, [order], name=program_name("ring", collective))


def _ring_bidir(collective: Collective, topology: Topology) -> Program:
    order = ring_order(collective, topology)
    return ring_program(
        collective, [order, order[::-1]], name=program_name("ring-bidir", collective)
    )


def _ring_bidir_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    return ring_granularity(kind, num_ranks, rings=2)


def _direct(collective: Collective, topology: Topology) -> Program:
    return direct_program(collective, name=program_name("direct", collective))


def _rhd(collective: Collective, topology: Topology) -> Program:
    return rhd_program(collective, name=program_name("rhd", collective))


def _dbt(collective: Collective, topology: Topology) -> Program:
    return dbt_program(collective, name=program_name("dbt", collective))


ALGORITHMS: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline(
            "ring",
            "unidirectional ring along a Hamiltonian cycle of the placed NPUs, pipelined "
            "over sub-chunks (all-reduce = reduce-scatter + all-gather, 2(N-1) steps)",
            RING_KINDS,
            ring_granularity,
            _ring,
        ),
        Baseline(
            "ring-bidir",
            "two rings in opposite directions, each carrying half of the data",
            RING_KINDS,
            _ring_bidir_granularity,
            _ring_bidir,
        ),
        Baseline(
            "direct",
            "every rank exchanges with every other rank directly, shift-scheduled "
            "(all-reduce = direct reduce-scatter + direct all-gather)",
            DIRECT_KINDS,
            direct_granularity,
            _direct,
        ),
        Baseline(
            "rhd",
            "recursive halving-doubling, log2 N steps per phase; non-powers of two fold "
            "the extra ranks into partners (Rabenseifner)",
            RHD_KINDS,
            rhd_granularity,
            _rhd,
        ),
        Baseline(
            "dbt",
            "double binary tree (NCCL style): two complementary trees, chunks alternate "
            "trees, reduce up then broadcast down, pipelined",
            DBT_KINDS,
            dbt_granularity,
            _dbt,
        ),
    )
}
"""Every baseline by name: ring, ring-bidir, direct, rhd, dbt."""

__all__ = [
    "ALGORITHMS",
    "Baseline",
    "BaselineError",
    "dbt_program",
    "direct_program",
    "rhd_program",
    "ring_order",
    "ring_program",
]
