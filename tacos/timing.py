"""The replay: the cost-model time of a lowered program, as a simulator computes it.

Rules (`topologies.cost_model`): a Send is issued when its dependencies complete and joins the
queue of its first link; every link is a FIFO server busy for the serialization time; a message
crosses its route hop by hop, store-and-forward (latency + serialization per hop, plus the switch
delay); a Send completes by the completion rule (its first hop's serialization ends, or its
message has arrived); a Recv completes when its message has arrived and its own dependencies are
done, plus the reduction time for a reducing receive.

Two things the program's dependencies leave to the simulator are fixed here as the simulator
fixes them (`backends.sim.engine`):

- A first link serves its sends in planned order: lowering adds the dependencies that make a
  simulator queue them so (see `tacos.lowering`), and the replay runs before those exist, so
  it holds each send until the one planned before it on its link has been queued.
- Ties: at one instant, messages reaching the end of a hop (a shared link: a switch port, a
  relay's link) or their destination are handled first, in the order of their sends' positions
  in the program (``Transfers.key``, the simulator's task order); then the sends that became
  ready at that instant join their links' queues, in the same order.

The replay is event-driven in time order, so it stays exact when the actual times differ from
the planned ones. Times are integer picoseconds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tacos.channels import Timed
from tacos.lowering import Transfers
from topologies.cost_model import to_ps

I64 = npt.NDArray[np.int64]

_HOP, _ENQ = 0, 1  # at one instant, hops and deliveries before sends joining their queues


@dataclass(frozen=True)
class Replay:
    """``finish_ps``: when the last receive completes; per transfer the actual ``start`` in
    ps; ``events``: the completion time of every event (``2g`` the receive of transfer g,
    ``2g+1`` its send)."""

    finish_ps: int
    start: I64
    events: I64


def _empty() -> Replay:
    z = np.zeros(0, np.int64)
    return Replay(0, z, z)


def _link_successors(link0: I64, start: I64) -> tuple[I64, I64]:
    """Per transfer, the next transfer planned on its first link (-1: none), and per transfer
    whether it is the first on its link."""
    G = len(link0)
    order = np.lexsort((np.arange(G, dtype=np.int64), start, link0))
    nxt = np.full(G, -1, dtype=np.int64)
    same = link0[order][1:] == link0[order][:-1]
    nxt[order[:-1][same]] = order[1:][same]
    head = np.ones(G, dtype=np.int64)
    head[order[1:][same]] = 0
    return nxt, head


def replay(
    tr: Transfers,
    timed: list[Timed],
    reduction_ns: float = 0.0,
    on_arrival: bool = False,
    recv_ps: I64 | None = None,
) -> Replay:
    """Time the transfer graph ``tr`` under the cost model; see the module docstring.
    ``on_arrival``: a Send completes when its message has arrived (else when its last byte
    has left). ``recv_ps``, when given, is every receive's work after its message has arrived
    (ps), in place of ``reduction_ns`` on the reducing ones."""
    G = len(tr.src)
    if G == 0:
        return _empty()
    red = to_ps(reduction_ns)
    route = tr.route.tolist()
    key = tr.key.tolist()
    hops = [tm.hops for tm in timed]
    travel = []
    for tm in timed:
        offs = [h[1] for h in tm.hops] + [tm.dur]
        travel.append([offs[i + 1] - offs[i] for i in range(len(tm.hops))])
    link0_np = np.array([tm.hops[0][0] for tm in timed], dtype=np.int64)[tr.route]
    nxt_np, head_np = _link_successors(link0_np, tr.start)
    nxt = nxt_np.tolist()
    link0 = link0_np.tolist()
    n_links = 1 + max(h[0] for tm in timed for h in tm.hops)
    turn = [-1] * n_links  # per first link, the transfer whose turn it is to be queued
    for g in np.flatnonzero(head_np).tolist():
        turn[link0[g]] = g
    free = [0] * n_links
    # Successors of every event (2g: receive of g, 2g+1: send of g), sends and receives apart.
    s_off, s_dep = tr.send_dep_off, tr.send_dep
    r_off, r_dep = tr.recv_dep_off, tr.recv_dep
    need_s = np.diff(s_off).tolist()
    need_r = (np.diff(r_off) + 1).tolist()  # the message itself, then the dependencies
    s_owner = np.repeat(np.arange(G, dtype=np.int64), np.diff(s_off))
    r_owner = np.repeat(np.arange(G, dtype=np.int64), np.diff(r_off))
    so = np.argsort(s_dep, kind="stable")
    ro = np.argsort(r_dep, kind="stable")
    s_succ_off = np.zeros(2 * G + 1, dtype=np.int64)
    np.cumsum(np.bincount(s_dep, minlength=2 * G), out=s_succ_off[1:])
    r_succ_off = np.zeros(2 * G + 1, dtype=np.int64)
    np.cumsum(np.bincount(r_dep, minlength=2 * G), out=r_succ_off[1:])
    s_succ, s_so = s_owner[so].tolist(), s_succ_off.tolist()
    r_succ, r_so = r_owner[ro].tolist(), r_succ_off.tolist()
    work = [red if r else 0 for r in tr.reduce.tolist()] if recv_ps is None else recv_ps.tolist()

    ready_s = [0] * G
    ready_r = [0] * G
    parked = [-1] * G  # a send whose dependencies are done, waiting for its turn on its link
    events = [-1] * (2 * G)
    start = [0] * G
    heap: list[tuple[int, int, int, int, int]] = [
        (0, _ENQ, key[g], g, 0) for g in range(G) if need_s[g] == 0
    ]
    heapq.heapify(heap)
    push = heapq.heappush

    def complete(e: int, at: int) -> None:
        # Event e happens at `at` (never before the current time): pass it on.
        stack = [(e, at)]
        while stack:
            ev, t = stack.pop()
            events[ev] = t
            for i in range(s_so[ev], s_so[ev + 1]):
                g = s_succ[i]
                if ready_s[g] < t:
                    ready_s[g] = t
                need_s[g] -= 1
                if need_s[g] == 0:
                    push(heap, (ready_s[g], _ENQ, key[g], g, 0))
            for i in range(r_so[ev], r_so[ev + 1]):
                g = r_succ[i]
                if ready_r[g] < t:
                    ready_r[g] = t
                need_r[g] -= 1
                if need_r[g] == 0:
                    stack.append((2 * g, ready_r[g] + work[g]))

    def hop(g: int, k: int, t: int) -> None:
        # Message g requests hop k of its route at t.
        link, _, ser = hops[route[g]][k]
        st = free[link]
        if st < t:
            st = t
        free[link] = st + ser
        if k == 0:
            start[g] = st
            if not on_arrival:
                complete(2 * g + 1, st + ser)
        push(heap, (st + travel[route[g]][k], _HOP, key[g], g, k + 1))

    while heap:
        t, typ, _, g, k = heapq.heappop(heap)
        if typ == _ENQ:
            ln = link0[g]
            if turn[ln] != g:
                parked[g] = t
                continue
            while True:
                hop(g, 0, t)
                g = nxt[g]
                turn[ln] = g
                if g < 0 or parked[g] < 0:
                    break
        elif k < len(hops[route[g]]):
            hop(g, k, t)
        else:  # delivered
            if on_arrival:
                complete(2 * g + 1, t)
            if ready_r[g] < t:
                ready_r[g] = t
            need_r[g] -= 1
            if need_r[g] == 0:
                complete(2 * g, ready_r[g] + work[g])
    ev = np.array(events, dtype=np.int64)
    return Replay(int(ev[0::2].max()), np.array(start, dtype=np.int64), ev)


def replay_single_hop(
    tr: Transfers,
    timed: list[Timed],
    reduction_ns: float = 0.0,
    on_arrival: bool = False,
    recv_ps: I64 | None = None,
) -> Replay:
    """`replay` for programs whose every route is one link, vectorized: events are processed
    in groups of equal planned time (receives before sends), each group with numpy. With one
    hop per message a link carries the sends of one rank only, in planned order, and no two
    sends of a group share a link; every dependency was planned no later than what waits on
    it, so planned order is a valid order of work."""
    G = len(tr.src)
    if G == 0:
        return _empty()
    red = to_ps(reduction_ns)
    dur = np.array([tm.dur for tm in timed], dtype=np.int64)[tr.route]
    ser0 = np.array([tm.hops[0][2] for tm in timed], dtype=np.int64)[tr.route]
    link = np.array([tm.hops[0][0] for tm in timed], dtype=np.int64)[tr.route]
    free = np.zeros(int(link.max()) + 1, dtype=np.int64)
    done = np.zeros(2 * G, dtype=np.int64)
    at = np.zeros(G, dtype=np.int64)
    start = np.zeros(G, dtype=np.int64)
    times = np.concatenate([tr.arrive, tr.start])
    kinds = np.concatenate([np.zeros(G, np.int64), np.ones(G, np.int64)])
    order = np.lexsort((kinds, times))
    t_sorted = times[order]
    k_sorted = kinds[order]
    cut = np.flatnonzero((t_sorted[1:] != t_sorted[:-1]) | (k_sorted[1:] != k_sorted[:-1])) + 1
    bounds = np.concatenate([[0], cut, [2 * G]])
    ids = np.where(order < G, order, order - G)
    s_off, s_dep = tr.send_dep_off, tr.send_dep
    r_off, r_dep = tr.recv_dep_off, tr.recv_dep
    red_add = np.where(tr.reduce, red, 0) if recv_ps is None else recv_ps

    def seg_max(g: I64, off: I64, dep: I64) -> I64:
        lens = off[g + 1] - off[g]
        out = np.zeros(len(g), dtype=np.int64)
        total = int(lens.sum())
        if total == 0:
            return out
        csum = np.cumsum(lens)
        first = csum - lens
        idx = np.repeat(off[g] - first, lens) + np.arange(total)
        vals = done[dep[idx]]
        nz = lens > 0
        out[nz] = np.maximum.reduceat(vals, first[nz])
        return out

    for i in range(len(bounds) - 1):
        a, b = int(bounds[i]), int(bounds[i + 1])
        g = ids[a:b]
        if k_sorted[a] == 1:
            st = np.maximum(seg_max(g, s_off, s_dep), free[link[g]])
            free[link[g]] = st + ser0[g]
            start[g] = st
            at[g] = st + dur[g]
            done[2 * g + 1] = at[g] if on_arrival else st + ser0[g]
        else:
            for _ in range(b - a + 1):
                val = np.maximum(at[g], seg_max(g, r_off, r_dep)) + red_add[g]
                if np.array_equal(val, done[2 * g]):
                    break
                done[2 * g] = val
    return Replay(int(done[0::2].max()), start, done)
