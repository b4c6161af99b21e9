"""The congestion-aware engine: every directed link a FIFO server, messages hop by hop.

Rules (all from `topologies.cost_model`, whose methods give every number):

- A task is issued when its dependencies have finished; tasks with none are issued at 0.
- A SEND puts its message on the first link of its route (the send's route hint when it has
  one, else ``topology.route``). A link serves requests in the order they arrive (ties as
  below): a message starts crossing at ``max(arrival, link free)`` and keeps the link
  busy for ``cost.serialization_ns(link, bytes)``; its last byte reaches the far end
  ``cost.hop_ns(link, bytes)`` after it started (latency is propagation, so the link takes the
  next message while this one is in flight), plus ``cost.switch_delay_ns`` when the far end is
  a switch. Store-and-forward: the next hop is requested when the whole message has arrived.
- With ``packet_bytes``, a message is cut into packets of that size (the last one shorter),
  all queued on the first link at once; each packet hops store-and-forward on its own, so
  consecutive hops pipeline. The message has arrived when its last packet has.
- A SEND completes by the cost model's completion rule: when its message has arrived at the
  receiver (``on-arrival``), or when its last byte has left the sender, the first hop's
  serialization end (``on-departure``); a message to the sender's own NPU crosses nothing and
  is delivered when sent. A RECV completes when it has been issued and its message has
  arrived, plus its ``duration_ns`` (a folded reduction, see `backends.sim.tasks`); a COMP
  takes its ``duration_ns``.

Times are whole picoseconds inside (`topologies.cost_model.to_ps`: every hop's serialization
and arrival, every duration rounded once), reported in ns. Requests are handled in time order.
At one instant, first its events (a message reaching the end of a hop requests the next link,
a message delivered completes its receive and, on arrival, its send) are handled in the order
of their tasks (a message's is its send's), with what they complete at once; then the sends
that became ready at that instant request their first links, in task order. So ties resolve
by task order alone, the same inputs always give the same figures, and a producer can predict
them (`tacos.timing` does). ASTRA-sim's rule (events in the order they were queued, a send
requesting its link as soon as it is ready, a busy link's messages pending until its free
event) is the other choice (``task_order=False``).

Under the cost model's cut-through switching (``cut_through_router_ns``), a message requests
its next link when its head has passed the router rather than when it has wholly arrived, and
starts on it no earlier than its tail allows; everything else is as above. With
``packet_bytes`` too, each packet moves by this rule on its own.

Only two things wait in the event queue: a send whose dependencies finish later, and the
arrival of a message (or packet) at the far end of a hop. The queue is
a heap of distinct times, each with its events in the order they were queued, so events
sharing a time cost one heap operation in all. Everything else (completions, issues)
propagates through dependencies without events, because no finish time is ever before the
current time.

This module holds that loop (`run_congestion`). What it reads around it lives beside it: the
links of each message's route in `backends.sim.routes`, per-link costs and ASTRA-sim's link
queues in `backends.sim.links`, and `EngineRun` with the helpers the analytical engine shares
in `backends.sim.engine_run` (the names other modules import from here are re-exported).
"""

from __future__ import annotations

import heapq
from array import array

import numpy as np

from backends.sim.engine_run import EngineRun as EngineRun
from backends.sim.engine_run import LinkRecords as LinkRecords
from backends.sim.engine_run import deadlock as deadlock
from backends.sim.engine_run import float_array, int_array
from backends.sim.engine_run import roots as roots
from backends.sim.errors import SimError
from backends.sim.links import AstraLinks, Costs, HopCosts
from backends.sim.routes import message_routes as message_routes
from backends.sim.routes import route_link_table as route_link_table
from backends.sim.tasks import TaskGraph, TaskKind
from topologies.cost_model import PS_PER_NS, CostModel, to_ps
from topologies.topology import Topology

_SEND, _RECV = int(TaskKind.SEND), int(TaskKind.RECV)


def run_congestion(
    graph: TaskGraph,
    topology: Topology,
    cost: CostModel,
    *,
    packet_bytes: int | None = None,
    keep_records: bool = False,
    task_order: bool = True,
    routes: list[tuple[int, ...]] | None = None,
) -> EngineRun:
    """Simulate ``graph`` on ``topology`` under the module's rules; see `EngineRun`.

    ``task_order`` (collc's rule): an instant's events are handled in task order and the
    sends that become ready at an instant request their first links after them, in task
    order. Without it (ASTRA-sim's rule), events are handled in the order they were queued and
    a send requests its link as soon as it is ready.

    ``routes`` is `message_routes` of ``graph``, for a caller that has it already.

    Raises SimError on unmatched messages, impossible routes and deadlocks.

    Implementation: finish times propagate through dependencies as soon as they are known
    (they never lie before the current time); only link requests wait for their time: a send
    ready later, and the arrival of a message (or packet) at the far end of a hop, which
    requests the next link or delivers the message. Events at the same time are handled in
    the order they were queued.
    """
    n = graph.num_tasks
    # Per-task columns as flat arrays: the loop below reads them in no particular order, and
    # compact storage keeps that cheap for large graphs.
    partner = int_array(graph.partners())
    kind = array("b", np.ascontiguousarray(graph.kind, dtype=np.int8).tobytes())
    nbytes = int_array(graph.nbytes)
    dur = float_array(np.rint(np.asarray(graph.duration_ns, dtype=np.float64) * PS_PER_NS))
    so_arr, succ_arr = graph.successors()
    so = int_array(so_arr)
    succ = int_array(succ_arr)
    # Per task, its first and second successors, so that the loop needs no slice for most
    # tasks: one[t] is -1 without successors; two[t] is -1 with fewer than two, -2 with more.
    nsucc = np.diff(so_arr)
    one_np = np.full(n, -1, dtype=np.int64)
    two_np = np.where(nsucc > 2, -2, -1)
    has = np.flatnonzero(nsucc >= 1)
    one_np[has] = succ_arr[so_arr[has]]
    has = np.flatnonzero(nsucc == 2)
    two_np[has] = succ_arr[so_arr[has] + 1]
    one = int_array(one_np)
    two = int_array(two_np)
    remaining = int_array(np.diff(graph.dep_offsets))
    if routes is None:
        routes = message_routes(graph, topology)
    hop_costs = HopCosts(topology, cost)
    rows = hop_costs.rows
    full_rows = hop_costs.full

    pb = packet_bytes or 0
    nlinks = len(topology.links)
    free = [0.0] * nlinks
    busy = [0.0] * nlinks
    ready = float_array(np.zeros(n))
    finish = float_array(np.full(n, -1.0))
    arrived = float_array(np.full(n, -1.0))  # per receive: when its message arrived
    waiting = bytearray(n)  # per receive: issued, its message not yet arrived
    hop_at = int_array(np.zeros(n, dtype=np.int64))  # per message: the hop it is on
    m_rows: list[tuple[Costs, Costs] | None] = [None] * n  # per multi-hop message
    pk_msg: list[int] = []  # per packet: its message, hop and hop costs
    pk_hop: list[int] = []
    pk_rows: list[tuple[Costs, Costs]] = []
    msg_left: dict[int, int] = {}  # per packetized message: packets not yet delivered
    rec_link: list[int] = []
    rec_start: list[float] = []
    rec_dur: list[float] = []
    rec_task: list[int] = []
    keep = keep_records
    on_arrival = cost.on_arrival
    # ASTRA-sim's links (``task_order=False``): a link takes a message at once when it is free,
    # scheduling its arrival and then its own free time; a message finding it busy waits in
    # the link's pending list, and the link's free event starts the next one. Times are those of
    # the FIFO above; only the order in which events of one instant were queued differs.
    astra = not task_order
    if astra and (pb or not on_arrival):
        raise SimError("ASTRA-sim's rules take whole messages that complete on arrival")
    # Cut-through (`topologies.cost_model`): the next hop is requested when the message's head
    # has passed the router; `tail_at[m]` is when its tail has, so no hop starts before
    # `tail_at[m] - serialization`.
    ct = cost.cut_through_router_ns is not None
    rr = to_ps(cost.cut_through_router_ns or 0.0)
    if ct and (astra or cost.latency_holds_link or rr < 0):
        raise SimError(
            "cut-through switching takes collc's rules, pipelined links and a router delay of "
            "at least 0 ns"
        )
    tail_at = float_array(np.zeros(n if ct else 0))
    pk_tail: list[float] = []  # per packet under cut-through: when its tail passed the router
    pid = 0

    # Pending events: a heap of their distinct times and, per time, the codes of its events
    # in the order they were queued. Codes: message << 2 (it reaches the end of a hop before
    # its last), task << 2 | 1 (a send is ready), message << 2 | 2 (it reaches the end of its
    # route), packet << 2 | 3 (it reaches the end of a hop).
    times: list[float] = []
    buckets: dict[float, list[int]] = {}
    push = heapq.heappush
    pop = heapq.heappop
    alinks = AstraLinks(
        nlinks, busy, buckets, times, (rec_link, rec_start, rec_dur, rec_task) if keep else None
    )
    events = 0
    now = 0.0
    bucket: list[int] = []  # the events at `now`, handled up to index `bi`
    bi = 0
    # Tasks to issue at `now`, in order; each is issued at ready[e], the latest finish among
    # its dependencies. A task that finishes when issued (a COMP, a RECV whose message is in,
    # a SEND once on its first link) passes its finish time on to its dependants at once.
    work: list[int] = roots(graph)
    due: list[int] = []  # sends ready at `now`, to request their links after its events
    releasing = False  # handling `due`: its sends request their links at once

    # The loop is written out flat (a link occupied in three places, a finish passed on in
    # two): it runs once per task and per hop, and in CPython a call there costs more than
    # the work it would wrap.
    while True:
        if work:
            for e in work:
                at = ready[e]
                k = kind[e]
                if k == _RECV:
                    a = arrived[e]
                    if a < 0.0:
                        waiting[e] = 1
                        continue
                    f = (a if a > at else at) + dur[e]
                elif k != _SEND:
                    f = at + dur[e]
                elif at > now:
                    bk = buckets.get(at)
                    if bk is None:
                        buckets[at] = [(e << 2) | 1]
                        push(times, at)
                    else:
                        bk.append((e << 2) | 1)
                    continue
                elif task_order and not releasing:
                    due.append((e << 2) | 1)
                    continue
                else:
                    # Put the message (or its packets) on its first link.
                    rt = routes[e]
                    b = nbytes[e]
                    if not rt:  # same NPU: nothing to cross, delivered at once
                        f = now
                        r = partner[e]
                        arrived[r] = now
                        if waiting[r]:
                            waiting[r] = 0
                            work.append(r)
                    elif pb and b > pb:
                        li = rt[0]
                        npk = -(-b // pb)
                        msg_left[e] = npk
                        f = now
                        for i in range(npk):
                            pr = rows(pb if i < npk - 1 else b - pb * (npk - 1), rt)
                            c = pr[0][li]
                            st = free[li]
                            if st < now + rr:
                                st = now + rr
                            f = st + c
                            free[li] = f
                            busy[li] += c
                            if keep:
                                rec_link.append(li)
                                rec_start.append(st)
                                rec_dur.append(c)
                                rec_task.append(e)
                            code = (len(pk_msg) << 2) | 3
                            pk_msg.append(e)
                            pk_hop.append(0)
                            pk_rows.append(pr)
                            arr = st + pr[1][li]
                            if ct:
                                head = arr - c + rr
                                pk_tail.append(head + c)
                                arr = head if len(rt) > 1 else head + c
                            bk = buckets.get(arr)
                            if bk is None:
                                buckets[arr] = [code]
                                push(times, arr)
                            else:
                                bk.append(code)
                        if on_arrival:
                            continue
                    elif astra:
                        li = rt[0]
                        mr = full_rows.get(b) or rows(b, rt)
                        if len(rt) == 1:
                            code = (e << 2) | 2
                        else:
                            code = e << 2
                            m_rows[e] = mr
                        alinks.request(li, code, mr, now)
                        continue
                    else:
                        li = rt[0]
                        mr = full_rows.get(b) or rows(b, rt)
                        c = mr[0][li]
                        st = free[li]
                        if st < now + rr:  # rr: the source router's pipeline (cut-through)
                            st = now + rr
                        f = st + c
                        free[li] = f
                        busy[li] += c
                        if keep:
                            rec_link.append(li)
                            rec_start.append(st)
                            rec_dur.append(c)
                            rec_task.append(e)
                        if len(rt) == 1:
                            code = (e << 2) | 2
                        else:
                            code = e << 2
                            m_rows[e] = mr
                        arr = st + mr[1][li]
                        if ct:  # the head's arrival past the next router, or delivery
                            head = arr - c + rr
                            tail_at[e] = head + c
                            arr = head if len(rt) > 1 else head + c
                        bk = buckets.get(arr)
                        if bk is None:
                            buckets[arr] = [code]
                            push(times, arr)
                        else:
                            bk.append(code)
                        if on_arrival:
                            continue
                finish[e] = f
                # Pass f on; the first two successors inline, the rest from the slice.
                d = one[e]
                if d >= 0:
                    if ready[d] < f:
                        ready[d] = f
                    x = remaining[d] - 1
                    remaining[d] = x
                    if x == 0:
                        work.append(d)
                    d = two[e]
                    if d >= 0:
                        if ready[d] < f:
                            ready[d] = f
                        x = remaining[d] - 1
                        remaining[d] = x
                        if x == 0:
                            work.append(d)
                    elif d == -2:
                        for d in succ[so[e] + 1 : so[e + 1]]:
                            if ready[d] < f:
                                ready[d] = f
                            x = remaining[d] - 1
                            remaining[d] = x
                            if x == 0:
                                work.append(d)
            work.clear()
        if bi == len(bucket):
            if due:
                # The sends that became ready at `now`, after its events, in task order.
                due.sort()
                bucket, due, bi = due, [], 0
                releasing = True
            else:
                releasing = False
                if not times:
                    break
                now = pop(times)
                bucket = buckets.pop(now)
                if task_order:
                    bucket.sort()  # an instant's events in task order (module docstring)
                events += len(bucket)
                bi = 0
        hc = bucket[bi]
        bi += 1
        if hc < 0:  # an ASTRA-sim link is free: it starts its next pending message
            alinks.freed(-hc - 1, now)
            continue
        how = hc & 3
        if how == 1:
            work.append(hc >> 2)
            continue
        if how == 3:  # a packet reaches the end of a hop
            pid = hc >> 2
            m = pk_msg[pid]
            rt = routes[m]
            h = pk_hop[pid]
            if h == len(rt) - 1:
                left = msg_left[m] - 1
                msg_left[m] = left
                if left:
                    continue
                how = 2  # the last packet: the message is delivered
            else:
                h += 1
                pk_hop[pid] = h
                mr = pk_rows[pid]
                code = hc
        elif how == 2:
            m = hc >> 2
        if how == 2:  # a message delivered: its receive finishes if it was waiting
            r = partner[m]
            arrived[r] = now
            if waiting[r] and not astra:
                waiting[r] = 0
                work.append(r)  # issued again, it finishes now
            if on_arrival:  # the send completes now: pass that on
                finish[m] = now
                for d in range(so[m], so[m + 1]):
                    d = succ[d]
                    if ready[d] < now:
                        ready[d] = now
                    x = remaining[d] - 1
                    remaining[d] = x
                    if x == 0:
                        work.append(d)
            if waiting[r] and astra:  # ASTRA-sim runs the send's handler, then the receive's
                waiting[r] = 0
                work.append(r)
            continue
        if how == 0:  # a message reaches the end of a hop before its last
            m = hc >> 2
            h = hop_at[m] + 1
            hop_at[m] = h
            rt = routes[m]
            mr = m_rows[m]  # type: ignore[assignment]
            code = hc | 2 if h == len(rt) - 1 else hc
        # The next hop.
        li = rt[h]
        if astra:
            alinks.request(li, code, mr, now)
            continue
        c = mr[0][li]
        st = free[li]
        if st < now:
            st = now
        if ct:
            tail = pk_tail[pid] if how == 3 else tail_at[m]
            if st < tail - c:
                st = tail - c
        free[li] = st + c
        busy[li] += c
        if keep:
            rec_link.append(li)
            rec_start.append(st)
            rec_dur.append(c)
            rec_task.append(m)
        arr = st + mr[1][li]
        if ct:
            head = arr - c + rr
            if how == 3:
                pk_tail[pid] = head + c
                arr = head + c if h == len(rt) - 1 else head
            else:
                tail_at[m] = head + c
                arr = head + c if code & 2 else head
        bk = buckets.get(arr)
        if bk is None:
            buckets[arr] = [code]
            push(times, arr)
        else:
            bk.append(code)

    finish_ns = np.frombuffer(finish, dtype=np.float64).copy()
    if n and finish_ns.min() < 0.0:
        raise deadlock(graph, finish, remaining, waiting)
    finish_ns /= PS_PER_NS
    records = None
    if keep:
        records = LinkRecords(
            np.array(rec_link, dtype=np.int64),
            np.array(rec_start, dtype=np.float64) / PS_PER_NS,
            np.array(rec_dur, dtype=np.float64) / PS_PER_NS,
            np.array(rec_task, dtype=np.int64),
        )
    sends = graph.kind == TaskKind.SEND
    route_len = np.array([len(rt) for rt in routes], dtype=np.int64)[sends]
    if pb:
        route_len = route_len * np.maximum(1, -(-graph.nbytes[sends] // pb))
    notes = []
    if pb:
        notes.append(f"messages cut into packets of {pb} B; hops pipeline packet by packet")
    if ct:
        notes.append(
            f"virtual cut-through, router delay {rr / PS_PER_NS:g} ns: a message moves on once "
            "its head has passed the router"
        )
    return EngineRun(
        issue_ns=np.frombuffer(ready, dtype=np.float64) / PS_PER_NS,
        finish_ns=finish_ns,
        link_busy_ns=np.array(busy, dtype=np.float64) / PS_PER_NS,
        messages=int(sends.sum()),
        hops=int(route_len.sum()),
        events=events,
        notes=notes,
        records=records,
    )
