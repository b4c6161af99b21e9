"""ASTRA-sim's congestion-aware analytical backend, applied to any task graph.

This answers "what would ASTRA-sim's ``AstraSim_Analytical_Congestion_Aware`` report for this
program run as a custom collective". It is the congestion engine (`backends.sim.engine`) under
ASTRA-sim's rules, read from its sources (network frontend, ``congestion_aware`` backend and
the custom-collective algorithm):

- Every directed link is a FIFO server; a message crosses its route hop by hop,
  store-and-forward. A hop keeps its link busy for ``trunc(bytes / bandwidth)`` ns and the
  message's last byte arrives ``trunc(latency + bytes / bandwidth)`` ns after the hop
  started: each quantity is truncated to whole ns separately, per hop (`AstraAwareCost`).
- Routes are ASTRA-sim's, whatever the program's route hints say: dimension by dimension in
  ascending order; inside a Ring the shorter way (ties in the increasing direction), a
  FullyConnected dimension directly, a Switch dimension up to its switch and down. That is
  `topologies.Topology.route` on a stack without failed links.
- A send completes when its message has arrived (both callbacks fire at the arrival); a
  receive posted after its message arrived completes when it is posted.
- COMP nodes take ``duration_micros`` whole microseconds, 0 becoming 1 ns; a reducing receive
  is a RECV followed by its COMP node when reductions take time, and a RECV alone when they
  take 0 µs, as the ET writes it.
- Ready nodes are issued at once, the ones a completion releases in ascending id order; events
  of one instant are handled in the order they were queued (ASTRA-sim's event queue). A link
  that is free takes a message at once and queues its arrival, then its own free event; a
  message that finds it busy waits in the link's pending list until that free event. A
  delivered message completes its send, then its receive (ASTRA-sim's two handlers).

ASTRA-sim's main congestion-aware backend accepts one dimension only ("only support 1-dim
topology"); several dimensions follow the public branch ``will/congestion-multidim`` of
astra-network-analytical, which routes as above. Topologies that are not stacks of Ring,
FullyConnected and Switch dimensions (or that have failed links) are refused.

One difference is known: ASTRA-sim's current custom collective keeps its ready nodes in a hash
set, so nodes released together may be issued out of id order there (the 2024 version and the
workload layer issue in ascending order). Only sends released at one instant onto the same link
can notice; collc gates them (an ``after`` hint, a 1 ns COMP node in the ET, which this model
counts: TACOS from its replay, other producers by `backends.sim.gates`), so its folders agree
exactly; another tool's ETs may take longer in ASTRA-sim than here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from backends.sim.analytical import astra_comp_ns, is_astra_stack
from backends.sim.engine import run_congestion
from backends.sim.engine_run import EngineRun
from backends.sim.errors import SimError
from backends.sim.tasks import TaskGraph, TaskKind
from topologies.cost_model import PS_PER_NS, Completion, CostModel, LinkLike
from topologies.topology import Topology

F64 = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class AstraAwareCost(CostModel):
    """The cost model of ASTRA-sim's congestion-aware links: whole ns, truncated per hop."""

    completion: Completion = Completion.ON_ARRIVAL

    def hop_ps(self, link: LinkLike, nbytes: float, into_switch: bool = False) -> tuple[int, int]:
        ser = nbytes / link.bandwidth_bytes_per_ns
        return int(ser) * PS_PER_NS, int(link.latency_ns + ser) * PS_PER_NS


ASTRA_AWARE_COST = AstraAwareCost()


def astra_graph(graph: TaskGraph) -> TaskGraph:
    """``graph`` as ASTRA-sim runs it: no route hints, COMP nodes in whole µs (0 -> 1 ns),
    receives without work of their own."""
    dur = np.zeros(graph.num_tasks, dtype=np.float64)
    comp = graph.kind == TaskKind.COMP
    dur[comp] = astra_comp_ns(graph)[comp]
    return dataclasses.replace(
        graph,
        duration_ns=dur,
        route_offsets=np.zeros(graph.num_tasks + 1, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
    )


def check_astra_aware_topology(topology: Topology) -> None:
    """Raise SimError unless ASTRA-sim's congestion-aware backend can build ``topology``."""
    if not is_astra_stack(topology):
        why = "has failed links" if topology.failed else "is not a stack of Ring, FullyConnected "
        why += "" if topology.failed else "and Switch dimensions"
        raise SimError(
            f"{topology.spec} {why}: ASTRA-sim's congestion-aware backend cannot build it "
            "(use --model congestion)"
        )


def run_astra_aware(graph: TaskGraph, topology: Topology, keep_records: bool) -> EngineRun:
    """Simulate ``graph`` under ASTRA-sim's congestion-aware rules (module docstring).

    Raises SimError for a topology ASTRA-sim cannot build, unmatched messages and deadlocks.
    """
    check_astra_aware_topology(topology)
    run = run_congestion(
        astra_graph(graph),
        topology,
        ASTRA_AWARE_COST,
        keep_records=keep_records,
        task_order=False,
    )
    fast = sub_ns_hop(graph, topology)
    if fast is not None:
        run.notes.append(fast)
    lay = topology.layout
    if lay is not None and sum(1 for s in lay.shape if s > 1) > 1:
        run.notes.append(
            "several dimensions: routed dimension by dimension as astra-network-analytical's "
            "will/congestion-multidim branch does (ASTRA-sim's main congestion-aware backend "
            "accepts one dimension only)"
        )
    return run


ASTRA_WOULD_NOT_RUN = "ASTRA-sim would not run this"
"""How a result note starts when ASTRA-sim's binary would refuse or abort on the input, so
that the time printed is one ASTRA-sim cannot produce (``collc simulate --strict`` refuses)."""


def sub_ns_hop(graph: TaskGraph, topology: Topology) -> str | None:
    """The note for a message that serializes in under 1 ns on a link of its route, or None.
    ASTRA-sim's congestion-aware backend truncates a hop's serialization time to whole ns
    (``Link::serialization_delay``) and schedules the link's release at that time; at 0 ns
    the event lands at the current time and ``EventQueue::proceed`` aborts on its assertion
    that time moves forward."""
    sends = np.flatnonzero(graph.kind == int(TaskKind.SEND))
    if not len(sends):
        return None
    rank = graph.task_rank()[sends]
    npus = np.asarray(graph.npus, dtype=np.int64)
    src, dst = npus[rank], npus[graph.peer[sends]]
    seen: set[tuple[int, int, int]] = set()
    for a, b, m in zip(src.tolist(), dst.tolist(), graph.nbytes[sends].tolist(), strict=True):
        if (a, b, m) in seen or a == b:
            continue
        seen.add((a, b, m))
        for li in topology.route_links(a, b):
            bw = topology.links[li].bandwidth_bytes_per_ns
            if int(m / bw) == 0:
                return (
                    f"{ASTRA_WOULD_NOT_RUN}: a message of {m} B serializes in under 1 ns on "
                    f"link {topology.links[li].src}->{topology.links[li].dst} ({bw:g} B/ns); "
                    "ASTRA-sim's congestion-aware binary aborts on such a hop (its event queue "
                    "asserts that time moves forward)"
                )
    return None
