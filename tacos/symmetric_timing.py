"""The replay of a `SymmetricProgram` in its own form, under the congestion model.

Every message of a symmetric program crosses one link, ``r -> r + g``, and that link carries
only rank ``r``'s sends on direction ``g``. All ranks run the same template from the same
start, so every rank's times are rank 0's: rank 0's receive from ``-g`` #k gets the message of
rank ``-g``'s send on ``g`` #k, which is timed like rank 0's own send on ``g`` #k. The replay
below times the template alone with the engine's rules (`backends.sim.engine`): FIFO links,
sends requesting their link when their dependencies are done, ties in operation order, a
receive completing when issued and its message is in (plus the reduction time), a send by the
completion rule. It is exact (equal to `backends.sim.simulate` of the expanded program) for
that model without packets and without cut-through switching; the tests compare the two.
`tacos.symmetric` takes it as the estimate, and ``collc simulate`` runs it on symmetric
program files.
"""

from __future__ import annotations

import heapq

import numpy as np

from chakra_ir.program import OpKind
from chakra_ir.symmetric import SymmetricProgram
from tacos.errors import TacosError
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel, to_ps
from topologies.topology import Topology


def replay_symmetric(
    sp: SymmetricProgram,
    topology: Topology,
    chunk_bytes: float,
    *,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> float:
    """The makespan in ns of ``sp`` on ``topology`` with chunks of ``chunk_bytes`` (module
    docstring). Raises TacosError for a missing link, a bad size or a deadlock."""
    if chunk_bytes <= 0:
        raise TacosError(f"the size must be positive: got {chunk_bytes} bytes per chunk")
    if cost.cut_through_router_ns is not None:
        raise TacosError("the symmetric simulation has no cut-through switching")
    t = sp.template_len
    kind = sp.columns["kind"].tolist()
    dirn = sp.columns["direction"].tolist()
    offs, deps = sp.dep_offsets.tolist(), sp.deps.tolist()
    hop: dict[int, tuple[int, int]] = {}
    for g in {d for d in dirn if d >= 0}:
        links = topology.links_between(0, g)
        if links and g not in hop:
            hop[g] = cost.hop_ps(links[0], chunk_bytes)
    red = to_ps(cost.reduction_ns(chunk_bytes))
    send_k, reduce_k = int(OpKind.SEND), int(OpKind.RECV_REDUCE)
    nth: dict[int, list[int]] = {}
    for j in range(t):
        if kind[j] == send_k:
            if dirn[j] not in hop:
                raise TacosError(f"no link from NPU 0 to NPU {dirn[j]} for template op {j}")
            nth.setdefault(dirn[j], []).append(j)
    match: dict[int, int] = {}  # receive -> its send
    seen: dict[int, int] = {}
    for j in range(t):
        if kind[j] in (int(OpKind.RECV), reduce_k):
            g = int(sp.group.neg(dirn[j])[0])
            q = seen.get(g, 0)
            seen[g] = q + 1
            match[j] = nth[g][q]
    waiting = [offs[j + 1] - offs[j] for j in range(t)]
    succ: list[list[int]] = [[] for _ in range(t)]
    for j in range(t):
        for d in deps[offs[j] : offs[j + 1]]:
            succ[d].append(j)
    ready = [0] * t
    done = [-1] * t
    arrival = [-1] * t
    issued = [-1] * t
    listeners: dict[int, int] = {s: r for r, s in match.items()}
    free: dict[int, int] = {}
    # (time, class, op): class 0 = completion, 1 = a send requesting its link
    events: list[tuple[int, int, int]] = []

    def release(j: int, when: int) -> None:
        ready[j] = max(ready[j], when)
        waiting[j] -= 1
        if waiting[j] == 0:
            start(j, ready[j])

    def start(j: int, when: int) -> None:
        issued[j] = when
        k = kind[j]
        if k == send_k:
            heapq.heappush(events, (when, 1, j))
        elif k in (int(OpKind.RECV), reduce_k):
            s = match[j]
            if arrival[s] >= 0:
                heapq.heappush(
                    events, (max(when, arrival[s]) + (red if k == reduce_k else 0), 0, j)
                )
        else:
            heapq.heappush(events, (when, 0, j))

    for j in range(t):
        if waiting[j] == 0:
            start(j, 0)
    finished = 0
    end = 0
    while events:
        when, cls, j = heapq.heappop(events)
        if cls == 1:
            g = dirn[j]
            ser, arr = hop[g]
            begin = max(when, free.get(g, 0))
            free[g] = begin + ser
            arrival[j] = begin + arr
            heapq.heappush(events, (arrival[j] if cost.on_arrival else begin + ser, 0, j))
            r = listeners.get(j)
            if r is not None and issued[r] >= 0:
                extra = red if kind[r] == reduce_k else 0
                heapq.heappush(events, (max(issued[r], arrival[j]) + extra, 0, r))
            continue
        done[j] = when
        finished += 1
        end = max(end, when)
        for v in succ[j]:
            release(v, when)
    if finished != t:
        raise TacosError(f"the symmetric program deadlocks: {t - finished} template ops never ran")
    return float(np.float64(end) / 1000.0)
