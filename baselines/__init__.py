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
from baselines.dimensional import DIMENSIONAL_KINDS, dimensional_granularity, dimensional_program
from baselines.direct import DIRECT_KINDS, direct_granularity, direct_program
from baselines.hierarchical import (
    HIERARCHICAL_KINDS,
    Scheduler,
    hierarchical_granularity,
    hierarchical_program,
)
from baselines.innetwork import INNETWORK_KINDS, innetwork_granularity, innetwork_program
from baselines.order import ring_order
from baselines.rhd import RHD_KINDS, rhd_granularity, rhd_program
from baselines.ring import RING_KINDS, ring_granularity, ring_program
from baselines.sparse import (
    SPARSE_KINDS,
    oktopk_granularity,
    oktopk_program,
    rd_granularity,
    rd_program,
    split_granularity,
    split_program,
)
from baselines.swing import (
    SWING_KINDS,
    swing_chunks_on,
    swing_granularity,
    swing_latency_chunks_on,
    swing_latency_granularity,
    swing_program,
)
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


def _swing(collective: Collective, topology: Topology) -> Program:
    return swing_program(collective, topology, name=program_name("swing", collective))


def _swing_latency(collective: Collective, topology: Topology) -> Program:
    name = program_name("swing-latency", collective)
    return swing_program(collective, topology, latency=True, name=name)


def _ring_bidir_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    return ring_granularity(kind, num_ranks, rings=2)


def _direct(collective: Collective, topology: Topology) -> Program:
    return direct_program(collective, name=program_name("direct", collective))


def _rhd(collective: Collective, topology: Topology) -> Program:
    return rhd_program(collective, name=program_name("rhd", collective))


def _dbt(collective: Collective, topology: Topology) -> Program:
    return dbt_program(collective, name=program_name("dbt", collective))


def _dimensional(collective: Collective, topology: Topology) -> Program:
    return dimensional_program(collective, topology, name=program_name("dimensional", collective))


def _hierarchical(collective: Collective, topology: Topology) -> Program:
    name = program_name("hierarchical", collective)
    return hierarchical_program(collective, topology, Scheduler.BASELINE, name=name)


def _innetwork(collective: Collective, topology: Topology) -> Program:
    name = program_name("fred-innetwork", collective)
    return innetwork_program(collective, topology, name=name)


def _themis(collective: Collective, topology: Topology) -> Program:
    name = program_name("themis", collective)
    return hierarchical_program(collective, topology, Scheduler.THEMIS, name=name)


SPARCML_RD = (
    "SparCML sparse recursive doubling all-reduce: log2 N exchanges of the whole partial sum "
    "(sparse messages turn dense under --payload's auto format once dense is smaller)"
)
SPARCML_SPLIT = (
    "SparCML split all-gather all-reduce: direct sparse reduce-scatter, then recursive "
    "doubling all-gather of the reduced regions"
)
OKTOPK = (
    "Ok-Topk all-reduce: split-and-reduce, then a balanced all-gather of each region's "
    "top-k after the reduction (the payload keeps one rank's density, not the fill-in)"
)


def _sparcml_rd(collective: Collective, topology: Topology) -> Program:
    return rd_program(collective, name=program_name("sparcml-rd", collective))


def _sparcml_split(collective: Collective, topology: Topology) -> Program:
    return split_program(collective, name=program_name("sparcml-split", collective))


def _oktopk(collective: Collective, topology: Topology) -> Program:
    return oktopk_program(collective, name=program_name("oktopk", collective))


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
            pipeline_default=16,
        ),
        Baseline(
            "dimensional",
            "all-to-all dimension by dimension on a grid topology: a direct all-to-all inside "
            "every line of one dimension, then the next (chunks for each peer sent together)",
            DIMENSIONAL_KINDS,
            dimensional_granularity,
            _dimensional,
        ),
        Baseline(
            "hierarchical",
            "multi-dimensional on a grid topology, every NPU one rank (ASTRA-sim localBWAware): "
            "reduce-scatter along dims 0..n-1, all-gather back n-1..0; ring on ring/mesh dims, "
            "direct on fc/switch dims; chunks_per_rank/natural streams pipelined through "
            "per-dimension queues",
            HIERARCHICAL_KINDS,
            hierarchical_granularity,
            _hierarchical,
            pipeline_default=8,
        ),
        Baseline(
            "themis",
            "hierarchical with Themis (offlineGreedy) scheduling: each stream its own dimension "
            "order, chosen to keep heterogeneous dimensions equally busy",
            HIERARCHICAL_KINDS,
            hierarchical_granularity,
            _themis,
            pipeline_default=8,
        ),
        Baseline(
            "swing",
            "Swing (NSDI 2024), bandwidth-optimal: reduce-scatter + all-gather over peers at "
            "distance 1, -1, 3, -5, 11, ..., dimensions alternating, one instance per torus "
            "port (2D on a D-dim torus); tori of 1-4 dims (meshes outside the paper's claim)",
            SWING_KINDS,
            swing_granularity,
            _swing,
            placed_granularity=swing_chunks_on,
        ),
        Baseline(
            "swing-latency",
            "Swing, latency-optimal: the whole part exchanged and reduced at every step "
            "(log2 N steps), one instance per torus port",
            SWING_KINDS,
            swing_latency_granularity,
            _swing_latency,
            placed_granularity=swing_latency_chunks_on,
        ),
        Baseline(
            "fred-innetwork",
            "in-network (FRED): the switches reduce and multicast while forwarding; all-reduce "
            "is one flow in which every NPU sends and receives the buffer once, reduce-scatter "
            "and all-gather one flow per rank (needs fred:N or switch:N,innet=yes)",
            INNETWORK_KINDS,
            innetwork_granularity,
            _innetwork,
        ),
        Baseline(
            "sparcml-rd",
            SPARCML_RD,
            SPARSE_KINDS,
            rd_granularity,
            _sparcml_rd,
        ),
        Baseline(
            "sparcml-split",
            SPARCML_SPLIT,
            SPARSE_KINDS,
            split_granularity,
            _sparcml_split,
        ),
        Baseline("oktopk", OKTOPK, SPARSE_KINDS, oktopk_granularity, _oktopk, topk=True),
    )
}
"""Every baseline by name: ring, ring-bidir, direct, rhd, dbt, dimensional, hierarchical,
themis, swing, swing-latency, fred-innetwork, sparcml-rd, sparcml-split, oktopk."""

__all__ = [
    "ALGORITHMS",
    "Baseline",
    "BaselineError",
    "dbt_program",
    "dimensional_program",
    "direct_program",
    "hierarchical_program",
    "innetwork_program",
    "rhd_program",
    "ring_order",
    "ring_program",
    "swing_program",
]
