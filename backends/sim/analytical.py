"""ASTRA-sim's congestion-unaware analytical model, applied to any task graph.

This answers "what would ASTRA-sim's ``AstraSim_Analytical_Congestion_Unaware`` report for
this program run as a custom collective", by the rules of its analytical network backend and
its custom-collective ET feeder:

- A message between NPUs ``a`` and ``b`` costs ``hops_d * latency_d + bytes / bandwidth_d``
  for the LOWEST dimension ``d`` in which ``a`` and ``b`` differ, and nothing for the others
  (ASTRA-sim has no multi-dimensional route). Hops: Ring ``min(|Δ|, p - |Δ|)`` of the local
  coordinates (a one-way ring the forward distance), FullyConnected 1, Switch 2. Serialization
  is counted once (cut-through) and there is no contention: every message gets the full
  bandwidth. Latency and bandwidth are those of the first link of the topology's route, which
  is the link of dimension ``d`` on a stack.
- Rounding: ASTRA-sim computes that sum in double precision and casts it to its integer tick
  (``static_cast<uint64_t>``), so each message's whole delay is truncated to whole ns once
  (not per hop). All times of this model are whole ns.
- A send completes when its message arrives (ASTRA-sim invokes the send handler on arrival);
  a receive completes when it is issued and its message has arrived.
- COMP nodes take ``duration_us`` whole microseconds; 0 becomes 1 ns (ASTRA-sim's rule). The
  reduction of a reducing receive that takes 0 µs is no node in the ET, so it costs nothing.
  Foreign INVALID/METADATA nodes take no time.
- All ready nodes issue at once: no throttling, no endpoint delay (custom collectives send
  directly).

Topologies that are not stacks of Ring/FullyConnected/Switch dimensions (meshes, hypercubes,
FRED, graphs, files, anything with failed links) have no ASTRA-sim counterpart; for them a
message costs the latencies of all links on its route plus its size over the slowest link's
bandwidth, once. The result notes say which rule applied.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from backends.sim.engine_run import EngineRun, deadlock, roots
from backends.sim.errors import SimError
from backends.sim.routes import route_link_table
from backends.sim.tasks import Detail, TaskGraph, TaskKind
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

ASTRA_DIM_KINDS = ("ring", "uniring", "fc", "switch")
"""Layout kinds that are ASTRA-sim dimensions (Ring, one-way Ring, FullyConnected, Switch)."""

_SEND, _RECV = int(TaskKind.SEND), int(TaskKind.RECV)


def astra_hops(kind: str, size: int, a: int, b: int) -> int:
    """ASTRA-sim's hop count between local coordinates ``a`` and ``b`` of a dimension."""
    if kind == "ring":
        d = abs(b - a)
        return min(d, size - d)
    if kind == "uniring":
        return (b - a) % size
    if kind == "fc":
        return 1
    if kind == "switch":
        return 2
    raise SimError(
        f"ASTRA-sim has no {kind!r} dimension (expected one of {', '.join(ASTRA_DIM_KINDS)})"
    )


def astra_delay_ns(hops: int, latency_ns: float, bandwidth_bytes_per_ns: float, nbytes: int) -> int:
    """One message's delay as ASTRA-sim's analytical backend computes it: the double
    ``hops * latency + bytes / bandwidth``, truncated to whole ns."""
    return int(hops * latency_ns + nbytes / bandwidth_bytes_per_ns)


def astra_comp_ns(graph: TaskGraph) -> I64:
    """Per task, what ASTRA-sim charges for it as a COMP node: ``duration_micros`` whole µs, 0
    becoming 1 ns; nothing for a foreign node that is no work (INVALID, METADATA) and for the
    reduction of a reducing receive that takes 0 µs, which the ET writes as no node."""
    us = graph.duration_us.astype(np.int64)
    comp = np.maximum(us * 1000, 1)
    comp[(graph.detail == Detail.NOOP) | ((graph.detail == Detail.REDUCE_RECEIVED) & (us == 0))] = 0
    return comp


def is_astra_stack(topology: Topology) -> bool:
    """Whether ``topology`` is a stack of ASTRA-sim dimensions without failed links."""
    lay = topology.layout
    return (
        lay is not None
        and not topology.failed
        and all(k in ASTRA_DIM_KINDS for k in lay.kinds)
        and lay.num_npus == topology.num_npus
    )


def message_delays(graph: TaskGraph, topology: Topology) -> tuple[I64, I64, list[str]]:
    """Per task, the ASTRA-sim delay (ns) and hop count of its message (0 for non-sends),
    and the notes saying which rule applied."""
    n = graph.num_tasks
    delays = np.zeros(n, dtype=np.int64)
    hop_col = np.zeros(n, dtype=np.int64)
    notes: list[str] = []
    sends = np.flatnonzero(graph.kind == TaskKind.SEND)
    if sends.size == 0:
        return delays, hop_col, notes
    npus = np.asarray(graph.npus, dtype=np.int64)
    src = npus[graph.task_rank()[sends]]
    dst = npus[graph.peer[sends]]
    nn = topology.num_nodes
    pairs, inverse = np.unique(src * nn + dst, return_inverse=True)
    inverse = inverse.reshape(-1)
    lat_term = np.zeros(len(pairs), dtype=np.float64)
    bw = np.ones(len(pairs), dtype=np.float64)
    hops = np.zeros(len(pairs), dtype=np.int64)
    spans = np.zeros(len(pairs), dtype=np.bool_)
    stacked = is_astra_stack(topology)
    lay = topology.layout
    links = topology.links
    pair_list = [divmod(c, nn) for c in pairs.tolist()]
    routes = route_link_table(topology, pair_list)
    for i, (a, b) in enumerate(pair_list):
        if a == b:
            continue
        route = routes[i]
        if stacked:
            assert lay is not None
            differ = [d for d in range(len(lay.shape)) if lay.coord(a, d) != lay.coord(b, d)]
            d = differ[0]
            h = astra_hops(lay.kinds[d], lay.shape[d], lay.coord(a, d), lay.coord(b, d))
            first = links[route[0]]
            hops[i] = h
            lat_term[i] = h * first.latency_ns
            bw[i] = first.bandwidth_bytes_per_ns
            spans[i] = len(differ) > 1
        else:
            hops[i] = len(route)
            lat_term[i] = sum(links[li].latency_ns for li in route)
            bw[i] = min(links[li].bandwidth_bytes_per_ns for li in route)
    nbytes = graph.nbytes[sends].astype(np.float64)
    pi = inverse
    raw = lat_term[pi] + nbytes / bw[pi]
    delays[sends] = np.where(src == dst, 0, np.floor(raw)).astype(np.int64)
    hop_col[sends] = hops[pi]
    if stacked:
        multi = int(spans[pi].sum())
        if multi:
            notes.append(
                f"{multi} messages cross several dimensions; ASTRA-sim charges only the lowest "
                "dimension in which their NPUs differ"
            )
    else:
        why = (
            f"{topology.name} has failed links"
            if topology.failed
            else f"{topology.name} is not a stack of Ring/FullyConnected/Switch dimensions"
        )
        notes.append(
            f"{why}, which ASTRA-sim cannot express: each message costs the latencies of the "
            "links on its route plus its size over the slowest of them, once (cut-through, no "
            "contention)"
        )
    if len(graph.route_nodes):
        notes.append("route hints are ignored: ASTRA-sim routes by dimension")
    return delays, hop_col, notes


def run_analytical(graph: TaskGraph, topology: Topology) -> EngineRun:
    """Simulate ``graph`` under ASTRA-sim's congestion-unaware rules (module docstring).

    Without contention nothing competes for anything, so times follow from dependencies
    alone: a task's finish is computed as soon as its inputs are known (a longest path over
    dependencies and messages), with no event queue. ``events`` counts message arrivals.
    Times are whole ns. Raises SimError on unmatched messages and deadlocks.
    """
    n = graph.num_tasks
    partner = graph.partners().tolist()
    kind = graph.kind.tolist()
    so_arr, succ_arr = graph.successors()
    so = so_arr.tolist()
    succ = succ_arr.tolist()
    remaining = np.diff(graph.dep_offsets).tolist()
    delay_col, hop_col, notes = message_delays(graph, topology)
    delay = delay_col.tolist()
    comp_ns = astra_comp_ns(graph).tolist()

    ready = [0] * n
    finish = [-1] * n
    arrived = [-1] * n  # per receive: when its message arrived
    waiting = [False] * n
    messages = 0
    work: list[int] = roots(graph)
    for e in work:
        at = ready[e]
        k = kind[e]
        if k == _SEND:
            messages += 1
            f = at + delay[e]  # the send handler runs on arrival
            r = partner[e]
            arrived[r] = f
            if waiting[r]:
                waiting[r] = False
                work.append(r)  # issued again, it finishes on arrival
        elif k == _RECV:
            f = arrived[e]
            if f < 0:
                waiting[e] = True
                continue
            if f < at:
                f = at
        else:
            f = at + comp_ns[e]
        # Pass f on to the dependants (the order tasks are handled in cannot change a time:
        # nothing contends).
        finish[e] = f
        for d in succ[so[e] : so[e + 1]]:
            if ready[d] < f:
                ready[d] = f
            r = remaining[d] - 1
            remaining[d] = r
            if r == 0:
                work.append(d)
    if n and min(finish) < 0:
        raise deadlock(graph, [float(f) for f in finish], remaining, waiting)
    notes.insert(
        0,
        "ASTRA-sim congestion-unaware model: each message costs hops x latency + size / "
        "bandwidth of one dimension, truncated to whole ns; no contention; sends complete on "
        "arrival; COMP nodes take whole µs (0 -> 1 ns)",
    )
    return EngineRun(
        issue_ns=np.array(ready, dtype=np.float64),
        finish_ns=np.array(finish, dtype=np.float64),
        link_busy_ns=np.zeros(0, dtype=np.float64),
        messages=messages,
        hops=int(hop_col.sum()),
        events=messages,
        notes=notes,
    )
