"""How large a run may be, checked before anything is produced: its chunk transfers, its
estimated work, and the times collc can compute exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chakra_ir.collective import Collective, CollectiveKind
from topologies.errors import CollcError
from topologies.units import check_time_range

if TYPE_CHECKING:
    from topologies import Topology

MAX_TRANSFERS = 50_000_000
"""Default limit of `check_work` on chunk transfers: about 5 GB of program columns."""

MAX_WORK = 4_000_000
"""Default limit of `check_work` on the work estimate (`estimate_work`): 4 to 13 s to
synthesize, verify and write on one core of a busy machine (`benchmarks/bench_work.py`), well
under the 20 s the mutation campaigns count as a hang."""

WORK_PER_TRANSFER = 32
"""Work units of one chunk transfer besides TACOS's look over channels (`estimate_work`)."""


@dataclass(frozen=True)
class Work:
    """A work estimate (`estimate_work`): ``units``, and ``terms``, how they were counted."""

    units: int
    terms: str


def estimate_work(
    collective: Collective, topology: Topology, *, tacos: bool, seeds: int = 1
) -> Work:
    """The work of producing, verifying and writing ``collective``'s program on ``topology``,
    estimated in O(links) before anything is produced: its chunk transfers (ranks x chunks),
    twice for an all-reduce (two phases), times ``seeds`` for TACOS (one synthesis per seed),
    for an all-to-all times the mean hops of a block's route (`tacos.channels.mean_route_hops`:
    every hop is a message to produce or simulate), each weighing `WORK_PER_TRANSFER` units
    plus, for TACOS, the hops of the channels a rank looks over at every step
    (`tacos.channels.channel_hops`: all-to-all-like on switches and fully connected networks,
    a few on grids). A unit takes one to three microseconds (`benchmarks/bench_work.py`)."""
    from tacos.channels import channel_hops, mean_route_hops

    npus = [collective.npu(r) for r in range(collective.num_ranks)]
    transfers = collective.num_ranks * collective.size_chunks
    phases = 2 if collective.kind is CollectiveKind.ALLREDUCE else 1
    runs = seeds if tacos else 1
    hops = mean_route_hops(topology, npus) if collective.kind is CollectiveKind.ALLTOALL else 1.0
    scan = channel_hops(topology, npus) if tacos else 0.0
    units = round(transfers * phases * runs * hops * (WORK_PER_TRANSFER + scan))
    factors = [f"{collective.num_ranks} ranks", f"{collective.size_chunks} chunks"]
    factors += [f"{phases} phases"] if phases > 1 else []
    factors += [f"{runs} seeds"] if runs > 1 else []
    factors += [f"{hops:.1f} hops a block"] if hops != 1.0 else []
    weight = f"({WORK_PER_TRANSFER} + {scan:.0f} channel hops)"
    factors.append(weight if tacos else str(WORK_PER_TRANSFER))
    return Work(units, " x ".join(factors))


def check_work(
    collective: Collective, limit: int, *, work: Work | None = None, max_work: int = MAX_WORK
) -> None:
    """Refuse, before anything is allocated, a collective whose program would need more than
    ``limit`` chunk transfers (ranks x chunks of the sized buffer: about as many operations
    as every rank handling every chunk once), or whose estimated ``work`` (`estimate_work`) is
    more than ``max_work``, in one line naming the value and the flag that raises the limit."""
    transfers = collective.num_ranks * collective.size_chunks
    if transfers > limit:
        raise CollcError(
            f"{collective.num_ranks} ranks x {collective.size_chunks} chunks = {transfers:,} "
            f"chunk transfers is more than the limit of {limit:,} (a program that large takes "
            "more memory and time than a run should); lower --chunks-per-npu, or raise the "
            "limit with --max-transfers"
        )
    if work is not None and work.units > max_work:
        raise CollcError(
            f"estimated work {work.units:,} ({work.terms}) is more than the limit of "
            f"{max_work:,} (a unit is one to three microseconds); raise the limit with --max-work"
        )


def check_times(topology: Topology, size_bytes: int) -> None:
    """Refuse, before any work, a size whose times the topology's slowest link would push past
    what collc can compute exactly (`topologies.units.check_time_range`)."""
    if topology.links:
        check_time_range(
            size_bytes,
            min(lk.bandwidth_bytes_per_ns for lk in topology.links),
            max(lk.latency_ns for lk in topology.links),
            topology.num_nodes,
        )
