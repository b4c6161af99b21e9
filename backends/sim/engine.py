"""The congestion-aware engine: every directed link a FIFO server, messages hop by hop.

Rules (all from `topologies.cost_model`, whose methods give every number):

- A task is issued when its dependencies have finished; tasks with none are issued at 0.
- A SEND puts its message on the first link of its route (the send's route hint when it has
  one, else ``topology.route``). A link serves requests in the order they arrive, ties by
  sequence number: a message starts crossing at ``max(arrival, link free)`` and keeps the link
  busy for ``cost.serialization_ns(link, bytes)``; its last byte reaches the far end
  ``cost.hop_ns(link, bytes)`` after it started (latency is propagation, so the link takes the
  next message while this one is in flight), plus ``cost.switch_delay_ns`` when the far end is
  a switch. Store-and-forward: the next hop is requested when the whole message has arrived.
- With ``packet_bytes``, a message is cut into packets of that size (the last one shorter),
  all queued on the first link at once; each packet hops store-and-forward on its own, so
  consecutive hops pipeline. The message has arrived when its last packet has.
- A SEND completes when its last byte has left the sender (the first hop's serialization
  ends); a RECV completes when it has been issued and its message has arrived, plus its
  ``duration_ns`` (a folded reduction, see `backends.sim.tasks`); a COMP takes its
  ``duration_ns``.

Link requests are handled in time order, so a link serves them FIFO knowing only when it
becomes free. Its arrivals at the far end then come in the order it served them: each link
keeps them in a FIFO and the heap holds only each link's earliest arrival (and sends ready
later), so each hop costs one small-heap operation. Everything else (completions, issues)
propagates through dependencies without events, because no finish time is ever before the
current time.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from backends.sim.errors import SimError
from backends.sim.tasks import TaskGraph, TaskKind
from topologies.cost_model import CostModel
from topologies.errors import TopologyError
from topologies.topology import Link, Topology

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

_SEND, _RECV = int(TaskKind.SEND), int(TaskKind.RECV)


@dataclass
class LinkRecords:
    """One entry per link occupancy: ``link`` busy from ``start_ns`` for ``dur_ns`` carrying
    (a packet of) the message of send task ``task``."""

    link: I64
    start_ns: F64
    dur_ns: F64
    task: I64


@dataclass
class EngineRun:
    """What an engine measured. Times in ns; ``issue_ns``/``finish_ns`` per task."""

    issue_ns: F64
    finish_ns: F64
    link_busy_ns: F64
    messages: int
    hops: int
    events: int
    notes: list[str] = field(default_factory=list)
    records: LinkRecords | None = None


def pick_link(links: tuple[Link, ...]) -> Link:
    """Among parallel links, the one `Topology.route_links` would take: the highest
    bandwidth, then the lowest latency, then the lowest index."""
    return min(links, key=lambda lk: (-lk.bandwidth_bytes_per_ns, lk.latency_ns, lk.index))


def best_links(topology: Topology) -> dict[tuple[int, int], int]:
    """``(u, v) -> index`` of the link `pick_link` takes between each linked pair."""
    best: dict[tuple[int, int], Link] = {}
    for lk in topology.links:
        key = (lk.src, lk.dst)
        cur = best.get(key)
        if cur is None or pick_link((cur, lk)) is lk:
            best[key] = lk
    return {k: lk.index for k, lk in best.items()}


def route_link_table(topology: Topology, pairs: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    """Link indices along ``topology.route(a, b)`` for each pair (parallel links resolved as
    `Topology.route_links` does). Raises SimError when a pair has no route."""
    best = best_links(topology)
    out = []
    for a, b in pairs:
        try:
            path = topology.route(a, b)
        except TopologyError as e:
            raise SimError(f"no route from NPU {a} to NPU {b}: {e.message}") from None
        out.append(tuple(best[uv] for uv in itertools.pairwise(path)))
    return out


def message_routes(graph: TaskGraph, topology: Topology) -> list[tuple[int, ...]]:
    """Per task, the link indices its message crosses (empty for other tasks).

    A route hint is followed as given (between parallel links, the one `route_links` would
    pick); otherwise ``topology.route`` between the two ranks' NPUs. Raises SimError when
    a hint crosses a missing link or when there is no route.
    """
    n = graph.num_tasks
    out: list[tuple[int, ...]] = [()] * n
    sends = np.flatnonzero(graph.kind == TaskKind.SEND)
    if sends.size == 0:
        return out
    npus = np.asarray(graph.npus, dtype=np.int64)
    src = npus[graph.task_rank()[sends]]
    dst = npus[graph.peer[sends]]
    hinted = np.diff(graph.route_offsets)[sends] > 0
    plain = sends[~hinted]
    if plain.size:
        nn = topology.num_nodes
        code = src[~hinted] * nn + dst[~hinted]
        pairs, inverse = np.unique(code, return_inverse=True)
        table = route_link_table(topology, [divmod(c, nn) for c in pairs.tolist()])
        for t, i in zip(plain.tolist(), inverse.reshape(-1).tolist(), strict=True):
            out[t] = table[i]
    cache: dict[tuple[int, ...], tuple[int, ...]] = {}
    best = best_links(topology)
    for t in sends[hinted].tolist():
        path = tuple(
            graph.route_nodes[graph.route_offsets[t] : graph.route_offsets[t + 1]].tolist()
        )
        links = cache.get(path)
        if links is None:
            chosen = []
            for u, v in itertools.pairwise(path):
                li = best.get((u, v))
                if li is None:
                    raise SimError(
                        f"{graph.describe(t)}: its route hint crosses {u}>{v}, a link the "
                        f"topology does not have"
                    )
                chosen.append(li)
            links = tuple(chosen)
            cache[path] = links
        out[t] = links
    return out


Costs = list[float] | dict[int, float]
"""Per link index, a time: a full row over all links, or only the links of one route."""


class HopCosts:
    """Per message size, the serialization and arrival times of every link, from the cost
    model: ``ser[l] = cost.serialization_ns(link, bytes)`` and ``arr[l] = cost.hop_ns(link,
    bytes)`` plus ``cost.switch_delay_ns`` when the link ends at a switch.

    Rows over all links are cached for the first `MAX_ROWS` sizes; beyond that, each message
    gets the entries of its own route only (cached per size and route).
    """

    MAX_ROWS = 64

    def __init__(self, topology: Topology, cost: CostModel) -> None:
        self.links = topology.links
        self.cost = cost
        self.extra = [
            cost.switch_delay_ns if topology.is_switch(lk.dst) else 0.0 for lk in self.links
        ]
        self.full: dict[int, tuple[Costs, Costs]] = {}
        self.partial: dict[tuple[int, tuple[int, ...]], tuple[Costs, Costs]] = {}

    def rows(self, nbytes: int, route: tuple[int, ...]) -> tuple[Costs, Costs]:
        """``(ser, arr)`` indexable by the link indices of ``route`` (at least)."""
        v = self.full.get(nbytes)
        if v is not None:
            return v
        cost, links, extra = self.cost, self.links, self.extra
        if len(self.full) < self.MAX_ROWS:
            ser = [cost.serialization_ns(lk, nbytes) for lk in links]
            arr = [cost.hop_ns(lk, nbytes) + x for lk, x in zip(links, extra, strict=True)]
            v = (ser, arr)
            self.full[nbytes] = v
            return v
        key = (nbytes, route)
        v = self.partial.get(key)
        if v is None:
            v = (
                {li: cost.serialization_ns(links[li], nbytes) for li in route},
                {li: cost.hop_ns(links[li], nbytes) + extra[li] for li in route},
            )
            self.partial[key] = v
        return v


def roots(graph: TaskGraph) -> list[int]:
    """Tasks without dependencies, in task order."""
    return np.flatnonzero(np.diff(graph.dep_offsets) == 0).tolist()


def deadlock(
    graph: TaskGraph, finish: list[float], remaining: list[int], waiting: list[bool]
) -> SimError:
    """The error for a run that stopped with tasks unfinished, naming the first one."""
    left = [t for t, f in enumerate(finish) if f < 0]
    for t in left:
        if waiting[t]:
            return SimError(
                f"deadlock: {graph.describe(t)} waits for a message that is never sent "
                f"({len(left)} tasks never finished)"
            )
    t = left[0]
    why = "waits on tasks that never finish" if remaining[t] > 0 else "never finished"
    return SimError(f"deadlock: {graph.describe(t)} {why} ({len(left)} tasks never finished)")


def run_congestion(
    graph: TaskGraph,
    topology: Topology,
    cost: CostModel,
    *,
    packet_bytes: int | None = None,
    keep_records: bool = False,
) -> EngineRun:
    """Simulate ``graph`` on ``topology`` under the module's rules; see `EngineRun`.

    Raises SimError on unmatched messages, impossible routes and deadlocks.

    Implementation: finish times propagate through dependencies as soon as they are known
    (they never lie before the current time); only link requests wait for their time. Each
    link keeps its pending arrivals in a FIFO (arrivals on a link come in the order the link
    served them), and the global heap holds each link's earliest arrival plus the sends that
    become ready later. Ties in the heap go by sequence number.
    """
    n = graph.num_tasks
    partner = graph.partners().tolist()
    kind = graph.kind.tolist()
    nbytes = graph.nbytes.tolist()
    dur = graph.duration_ns.tolist()
    so_arr, succ_arr = graph.successors()
    so = so_arr.tolist()
    succ = succ_arr.tolist()
    remaining = np.diff(graph.dep_offsets).tolist()
    routes = message_routes(graph, topology)
    hop_costs = HopCosts(topology, cost)
    rows = hop_costs.rows
    full_rows = hop_costs.full

    pb = packet_bytes or 0
    nlinks = len(topology.links)
    free = [0.0] * nlinks
    busy = [0.0] * nlinks
    lq: list[deque[tuple[float, int]]] = [deque() for _ in range(nlinks)]
    ready = [0.0] * n
    finish = [-1.0] * n
    arrived = [-1.0] * n  # per receive: when its message arrived
    waiting = [False] * n
    hop_at = [0] * n
    m_rows: list[tuple[Costs, Costs] | None] = [None] * n
    pk_msg: list[int] = []
    pk_hop: list[int] = []
    pk_rows: list[tuple[Costs, Costs]] = []
    msg_left: dict[int, int] = {}
    rec_link: list[int] = []
    rec_start: list[float] = []
    rec_dur: list[float] = []
    rec_task: list[int] = []
    keep = keep_records

    # Heap entries (time, seq, code): code = link << 2 (the head of that link's FIFO),
    # task << 2 | 1 (a send becomes ready), event << 2 | 2 (an arrival out of FIFO order).
    # Arrival events: message << 2 or packet << 2 | 1, plus 2 when it is the last hop.
    heap: list[tuple[float, int, int]] = []
    push = heapq.heappush
    pop = heapq.heappop
    replace = heapq.heapreplace
    seq = 0  # every heap entry is popped once: the event count in the end
    now = 0.0
    # Work at `now`: e >= 0 issues task e at ready[e] (the latest finish among its
    # dependencies, which is its issue time); ~t propagates finish[t].
    work: list[int] = roots(graph)

    while True:
        for e in work:
            if e < 0:
                t = ~e
                f = finish[t]
                for d in succ[so[t] : so[t + 1]]:
                    if ready[d] < f:
                        ready[d] = f
                    r = remaining[d] - 1
                    remaining[d] = r
                    if r == 0:
                        work.append(d)
                continue
            at = ready[e]  # = its issue time
            k = kind[e]
            if k == _RECV:
                a = arrived[e]
                if a >= 0.0:
                    finish[e] = (a if a > at else at) + dur[e]
                    work.append(~e)
                else:
                    waiting[e] = True
                continue
            if k != _SEND:
                finish[e] = at + dur[e]
                work.append(~e)
                continue
            if at > now:
                push(heap, (at, seq, (e << 2) | 1))
                seq += 1
                continue
            # Put the message on its first link.
            rt = routes[e]
            b = nbytes[e]
            if not rt:  # same NPU: nothing to cross
                finish[e] = now
                work.append(~e)
                r = partner[e]
                arrived[r] = now
                if waiting[r]:
                    waiting[r] = False
                    finish[r] = (ready[r] if ready[r] > now else now) + dur[r]
                    work.append(~r)
                continue
            li = rt[0]
            q = lq[li]
            last = 2 if len(rt) == 1 else 0
            if pb and b > pb:
                npk = -(-b // pb)
                msg_left[e] = npk
                end = now
                for i in range(npk):
                    size = pb if i < npk - 1 else b - pb * (npk - 1)
                    pr = rows(size, rt)
                    c = pr[0][li]
                    st = free[li]
                    if st < now:
                        st = now
                    end = st + c
                    free[li] = end
                    busy[li] += c
                    if keep:
                        rec_link.append(li)
                        rec_start.append(st)
                        rec_dur.append(c)
                        rec_task.append(e)
                    pid = len(pk_msg)
                    pk_msg.append(e)
                    pk_hop.append(0)
                    pk_rows.append(pr)
                    arr = st + pr[1][li]
                    code = (pid << 2) | last | 1
                    if not q:
                        q.append((arr, code))
                        push(heap, (arr, seq, li << 2))
                        seq += 1
                    elif arr >= q[-1][0]:
                        q.append((arr, code))
                    else:
                        push(heap, (arr, seq, (code << 2) | 2))
                        seq += 1
            else:
                mr = full_rows.get(b) or rows(b, rt)
                if not last:
                    m_rows[e] = mr
                c = mr[0][li]
                st = free[li]
                if st < now:
                    st = now
                end = st + c
                free[li] = end
                busy[li] += c
                if keep:
                    rec_link.append(li)
                    rec_start.append(st)
                    rec_dur.append(c)
                    rec_task.append(e)
                arr = st + mr[1][li]
                code = (e << 2) | last
                if not q:
                    q.append((arr, code))
                    push(heap, (arr, seq, li << 2))
                    seq += 1
                elif arr >= q[-1][0]:
                    q.append((arr, code))
                else:
                    push(heap, (arr, seq, (code << 2) | 2))
                    seq += 1
            finish[e] = end
            if so[e + 1] != so[e]:
                work.append(~e)
        work.clear()
        if not heap:
            break
        now, _, hc = heap[0]
        how = hc & 3
        if how == 0:
            q = lq[hc >> 2]
            code = q.popleft()[1]
            if q:
                replace(heap, (q[0][0], seq, hc))
                seq += 1
            else:
                pop(heap)
        elif how == 1:
            pop(heap)
            t = hc >> 2
            ready[t] = now
            work.append(t)
            continue
        else:
            pop(heap)
            code = hc >> 2
        # An arrival at the far end of a hop: delivery after the last hop, else the next hop.
        if code & 2:
            if code & 1:
                m = pk_msg[code >> 2]
                left = msg_left[m] - 1
                msg_left[m] = left
                if left:
                    continue
            else:
                m = code >> 2
            r = partner[m]
            arrived[r] = now
            if waiting[r]:
                waiting[r] = False
                finish[r] = (ready[r] if ready[r] > now else now) + dur[r]
                if so[r + 1] != so[r]:
                    work.append(~r)
            continue
        if code & 1:
            pid = code >> 2
            m = pk_msg[pid]
            h = pk_hop[pid] + 1
            pk_hop[pid] = h
            mr = pk_rows[pid]
        else:
            m = code >> 2
            h = hop_at[m] + 1
            hop_at[m] = h
            mr = m_rows[m]  # type: ignore[assignment]
        rt = routes[m]
        if h == len(rt) - 1:
            code |= 2
        li = rt[h]
        c = mr[0][li]
        st = free[li]
        if st < now:
            st = now
        free[li] = st + c
        busy[li] += c
        if keep:
            rec_link.append(li)
            rec_start.append(st)
            rec_dur.append(c)
            rec_task.append(m)
        arr = st + mr[1][li]
        q = lq[li]
        if not q:
            q.append((arr, code))
            push(heap, (arr, seq, li << 2))
            seq += 1
        elif arr >= q[-1][0]:
            q.append((arr, code))
        else:
            push(heap, (arr, seq, (code << 2) | 2))
            seq += 1

    if n and min(finish) < 0.0:
        raise deadlock(graph, finish, remaining, waiting)
    records = None
    if keep:
        records = LinkRecords(
            np.array(rec_link, dtype=np.int64),
            np.array(rec_start, dtype=np.float64),
            np.array(rec_dur, dtype=np.float64),
            np.array(rec_task, dtype=np.int64),
        )
    sends = graph.kind == TaskKind.SEND
    route_len = np.array([len(rt) for rt in routes], dtype=np.int64)[sends]
    if pb:
        route_len = route_len * np.maximum(1, -(-graph.nbytes[sends] // pb))
    notes = []
    if pb:
        notes.append(f"messages cut into packets of {pb} B; hops pipeline packet by packet")
    return EngineRun(
        issue_ns=np.array(ready, dtype=np.float64),
        finish_ns=np.array(finish, dtype=np.float64),
        link_busy_ns=np.array(busy, dtype=np.float64),
        messages=int(sends.sum()),
        hops=int(route_len.sum()),
        events=seq,
        notes=notes,
        records=records,
    )
