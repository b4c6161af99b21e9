"""Lowering: phases of transfers -> a column-wise `Program`, with every dependency it needs.

Each transfer becomes one Send (on the sender, its route as a hint, the route's tag) and one Recv
(on the receiver; reducing in reduction phases). Operations of a rank are ordered by their
planned time (receives before sends at equal times), and each depends on:

- Send: the operation that made its source data (the receive that brought the chunk, or the last
  reducing receive into the partial sum); in forward phases, when the planned start is later
  than both that data and the end of the previous send on the same first link, the sender's
  operation that completes at exactly that time (``tdep``); and the link's order (below).
- Reducing receive: the previous receive into the same slot (by planned arrival), or the copy of
  the rank's own contribution into the accumulator.
- Receive of the second phase of an All-Reduce: the first-phase send that read the same slot.

A link serves its sends first come, first served, and a simulator (collc's or ASTRA-sim's)
issues the nodes that become ready at one instant in ascending id order. So the planned order of
the sends on a first link travels as dependencies that never wait for a send to complete (under
``on-arrival`` that would cost a whole delivery): each send also depends on every operation that
the earlier sends on its link wait for and that completes last (all of them on a tie), by the
times of the replay (`tacos.timing`), which these dependencies do not change. A send then
becomes ready no earlier than the sends before it on its link and, at the same instant, after
them in id order, so it joins the link's queue behind them, and the link keeps the planned
order without idling.

Forward phases (All-Gather, Broadcast, Gather, the second half of All-Reduce) write received
chunks into the output slot of the chunk. Reverse phases (Reduce-Scatter, Reduce, Scatter, the
first half of All-Reduce) accumulate partial sums in the output slot of the chunk (All-Reduce,
Reduce), the rank's output (the owner in Reduce-Scatter) or scratch; a rank that receives
nothing for a chunk sends straight from its input. Scatter relays hold chunks in scratch.
The result is built with numpy in time linear in the number of operations (plus sorts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.program import OpKind, Program

I64 = npt.NDArray[np.int64]
IN, OUT, SCR = int(Buffer.INPUT), int(Buffer.OUTPUT), int(Buffer.SCRATCH)
NONE = -1


@dataclass
class Phase:
    """Transfers of one phase (arrays from `reversal`), its direction, reduction and time shift."""

    transfers: dict[str, I64]
    forward: bool
    reduce: bool
    shift: int = 0
    timing: tuple[I64, I64] | None = None
    """Per route id, ``(dur, ser0)`` at the size this phase was planned with, when it differs
    from the routes' own (a payload's message sizes, `tacos.sized`)."""


@dataclass
class Transfers:
    """The transfer graph the replay times: per transfer ``src``, ``dst``, ``route``, planned
    ``start``/``arrive`` (ps), ``reduce``, and ``key``, the position of its send in the program
    (rank by rank, then program order: a simulator's task order); dependencies as CSR over
    *events* (``2g`` = receive of transfer g completes, ``2g+1`` = send of g completes):
    ``send_dep_*`` for what a send waits on, ``recv_dep_*`` for what a receive waits on. The
    dependencies that keep each link's planned order are not among them (the replay keeps that
    order itself)."""

    src: I64
    dst: I64
    route: I64
    start: I64
    arrive: I64
    reduce: npt.NDArray[np.bool_]
    key: I64
    send_dep_off: I64
    send_dep: I64
    recv_dep_off: I64
    recv_dep: I64


Timer = Callable[[Transfers], tuple[I64, I64]]
"""Times a transfer graph: the completion time (ps) of every event (``2g`` and ``2g+1``), and
the start of every send."""


@dataclass
class Lowered:
    """The program, its transfer graph, and the time of every event by the timer."""

    program: Program
    transfers: Transfers
    events: I64


def _ordered(perm: I64, parts: list[I64], dtype: type) -> npt.NDArray[Any]:
    """The concatenated column, in program order, narrowed to ``dtype``."""
    return np.concatenate(parts)[perm].astype(dtype)


def _csr(owner: npt.ArrayLike, value: npt.ArrayLike, n: int) -> tuple[I64, npt.NDArray[Any]]:
    """CSR of the (owner, value) pairs over owners 0..n-1, values sorted, duplicates dropped.

    Values come back as int32 when they fit (op ids of tens of millions of ops do).
    """
    owner = np.asarray(owner, dtype=np.int64)
    value = np.asarray(value, dtype=np.int64)
    width = int(max(int(value.max()) + 1, 1)) if len(value) else 1
    if len(owner) and n * width < (1 << 62):
        key = owner * width
        key += value
        del owner, value
        key.sort()
        if len(key) > 1:
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        owner, value = np.divmod(key, width)
        del key
    else:
        order = np.lexsort((value, owner))
        owner, value = owner[order], value[order]
        if len(owner):
            keep = np.ones(len(owner), dtype=bool)
            keep[1:] = (owner[1:] != owner[:-1]) | (value[1:] != value[:-1])
            owner, value = owner[keep], value[keep]
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=off[1:])
    if width <= np.iinfo(np.int32).max:
        return off, value.astype(np.int32)
    return off, value


def lower(
    collective: Collective,
    phases: list[Phase],
    routes: dict[str, I64],
    num_chunks: int,
    origin: I64,
    *,
    name: str,
    timer: Timer,
    on_arrival: bool = False,
) -> Lowered:
    """Lower ``phases`` (in order) into a Program for ``collective``; see the module docstring.

    ``num_chunks`` is the number of chunk ids; ``origin[X]`` is the rank chunk ``X`` starts at in
    forward phases (or ends at, in reverse phases: its owner, -1 for a Reduce's root chunk).
    ``timer`` times the transfer graph (`tacos.timing`); the link-order dependencies are
    chosen by its times. ``on_arrival``: sends complete when their message has arrived (for
    timing dependencies)."""
    c = collective
    R, cf, kind = c.num_ranks, c.chunks_per_rank, c.kind
    K = num_chunks
    dur, link0, ser0 = routes["dur"], routes["link0"], routes["ser0"]
    cols = {
        k: np.concatenate([p.transfers[k] for p in phases])
        for k in ("chunk", "src", "dst", "route")
    }
    X, src, dst, route = cols["chunk"], cols["src"], cols["dst"], cols["route"]
    del cols
    start = np.concatenate([p.transfers["start"] + p.shift for p in phases])
    arrive = start + dur[route]
    G = len(X)
    sizes = [len(p.transfers["chunk"]) for p in phases]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    t_ser0: I64 | None = None  # per transfer, when some phase was planned at its own size
    for pi, p in enumerate(phases):
        if p.timing is not None:
            sl = slice(int(offs[pi]), int(offs[pi + 1]))
            if t_ser0 is None:
                t_ser0 = ser0[route]
            arrive[sl] = start[sl] + p.timing[0][route[sl]]
            t_ser0[sl] = p.timing[1][route[sl]]

    def ser0_of(g: I64) -> I64:
        return ser0[route[g]] if t_ser0 is None else t_ser0[g]

    reduce = np.repeat(np.array([p.reduce for p in phases], dtype=bool), sizes)
    gidx = np.arange(G, dtype=np.int64)

    # Provisional op ids: send of g = g, recv of g = G + g, copies from 2G.
    dep_op: list[I64] = []
    dep_on: list[I64] = []
    # What each send waits for, with the planned completion time: (send, op, time).
    waits: list[tuple[I64, I64, I64]] = []

    def add(ops: I64, on: I64) -> None:
        # Op ids stay below 2**31 (tens of millions of ops); int32 halves the largest arrays.
        m = on >= 0
        dep_op.append(ops[m].astype(np.int32))
        dep_on.append(on[m].astype(np.int32))

    def add_send(g: I64, on: I64, at: I64) -> None:
        add(g, on)
        m = on >= 0
        waits.append((g[m], on[m], at[m]))

    send_src_buf = np.full(G, NONE, dtype=np.int64)
    send_src_idx = np.full(G, NONE, dtype=np.int64)
    recv_buf = np.full(G, NONE, dtype=np.int64)
    recv_idx = np.full(G, NONE, dtype=np.int64)
    copies: list[tuple[I64, I64, I64, I64, I64, I64]] = []  # rank, sbuf, sidx, dbuf, didx, count
    copy_key_first = np.full(0, 0, dtype=np.int64)
    last_rev = np.full(R * K, -1, dtype=np.int64) if any(not p.forward for p in phases) else None
    rev_send = None
    timing_ops: list[tuple[I64, I64, I64]] = []

    for pi, p in enumerate(phases):
        sl = slice(int(offs[pi]), int(offs[pi + 1]))
        g = gidx[sl]
        x, s, d = X[sl], src[sl], dst[sl]
        if p.forward:
            own = s == origin[x]
            # Source slots.
            if kind is CollectiveKind.ALLREDUCE:
                sb, si = np.full(len(g), OUT), x.copy()
            else:
                local = x - origin[x] * cf if kind is not CollectiveKind.BROADCAST else x
                sb = np.where(own, IN, OUT)
                si = np.where(own, local, x)
            send_src_buf[sl], send_src_idx[sl] = sb, si
            recv_buf[sl], recv_idx[sl] = OUT, x
            # Data: the receive that brought the chunk, or the last reduction into it.
            deliv = np.full(R * K, -1, dtype=np.int64)
            deliv[d * K + x] = g
            data = deliv[s * K + x]
            if last_rev is not None:
                data = np.where(own, last_rev[s * K + x], data)
            add_send(g, np.where(data >= 0, G + data, -1), arrive[np.maximum(data, 0)])
            if rev_send is not None:
                war = rev_send[d * K + x]
                add(G + g, war)
            # Timing dependencies (forward plans start sends only at the sender's events).
            tdep = p.transfers["tdep"]
            tg = np.where(tdep >= 0, 2 * (offs[pi] + (tdep >> 1)) + (tdep & 1), -1)
            natural = np.where(data >= 0, arrive[np.maximum(data, 0)], 0)
            timing_ops.append((g, tg, natural))
        else:
            # Reverse: receives into accumulators, chained by planned arrival.
            key = d * K + x
            order = np.lexsort((g, arrive[sl], key))
            ks = key[order]
            gs = g[order]
            first = np.ones(len(gs), dtype=bool)
            first[1:] = ks[1:] != ks[:-1]
            lastm = np.ones(len(gs), dtype=bool)
            lastm[:-1] = ks[1:] != ks[:-1]
            prev = np.where(first, -1, np.roll(gs, 1))
            add(G + gs, np.where(prev >= 0, G + prev, -1))
            assert last_rev is not None
            last_rev[ks[lastm]] = gs[lastm]
            # Slots.
            holder = last_rev[s * K + x] >= 0  # the sender received partials for x
            if kind is CollectiveKind.SCATTER:
                final = d == origin[x]
                recv_buf[sl] = np.where(final, OUT, SCR)
                recv_idx[sl] = np.where(final, x - d * cf, x)
                send_src_buf[sl] = np.where(holder, SCR, IN)
                send_src_idx[sl] = x
            else:
                acc_b, acc_i = _accumulator(c, d, x, origin)
                recv_buf[sl], recv_idx[sl] = acc_b, acc_i
                hb, hi = _accumulator(c, s, x, origin)
                send_src_buf[sl] = np.where(holder, hb, IN)
                send_src_idx[sl] = np.where(holder, hi, x)
                # Copy own contribution into the accumulator before the first receive.
                fr = gs[first]
                cr, cx = dst[fr], X[fr]
                ab, ai = _accumulator(c, cr, cx, origin)
                need = ~((ab == IN) & (ai == cx)) & (not c.inplace)
                if np.any(need):
                    copies.append(
                        (
                            cr[need],
                            np.full(int(need.sum()), IN),
                            cx[need],
                            ab[need],
                            ai[need],
                            np.ones(int(need.sum()), dtype=np.int64),
                        )
                    )
                    copy_key_first = np.concatenate([copy_key_first, fr[need]])
            held = last_rev[s * K + x]
            add_send(g, np.where(holder, G + held, -1), arrive[np.maximum(held, 0)])
            rev_send = np.full(R * K, -1, dtype=np.int64)
            rev_send[s * K + x] = g
    # The schedule on each first link.
    lk = link0[route]
    order = np.lexsort((gidx, start, lk))
    chain = np.full(G, -1, dtype=np.int64)
    same = lk[order][1:] == lk[order][:-1]
    chain[order[1:][same]] = order[:-1][same]
    # Timing deps when neither the data nor the link explains the start.
    for g, tg, natural in timing_ops:
        ch = chain[g]
        ch_done = np.where(ch >= 0, start[np.maximum(ch, 0)] + ser0_of(np.maximum(ch, 0)), 0)
        need_t = (tg >= 0) & (start[g] > np.maximum(ch_done, natural))
        j = tg >> 1
        op = np.where(tg & 1, j, G + j)
        done = arrive[j] if on_arrival else np.where(tg & 1, start[j] + ser0_of(j), arrive[j])
        add_send(g[need_t], op[need_t], np.where(tg & 1, done, arrive[j])[need_t])
    del timing_ops, chain, same, X
    # Initial copies of the collective (not in place).
    if not c.inplace:
        init = _initial_copies(c)
        if init is not None:
            copies.insert(0, init)
    if copies:
        crank = np.concatenate([x[0] for x in copies])
        csb = np.concatenate([x[1] for x in copies])
        csi = np.concatenate([x[2] for x in copies])
        cdb = np.concatenate([x[3] for x in copies])
        cdi = np.concatenate([x[4] for x in copies])
        ccnt = np.concatenate([x[5] for x in copies])
    else:
        crank = csb = csi = cdb = cdi = ccnt = np.zeros(0, dtype=np.int64)
    C = len(crank)
    # Accumulator copies come last among the copies; the first receive depends on its copy.
    n_acc = len(copy_key_first)
    if n_acc:
        add(G + copy_key_first, 2 * G + np.arange(C - n_acc, C, dtype=np.int64))

    # Ops: sends (ids 0..G-1), receives (G..2G-1), copies (2G..). Each column is built,
    # put in program order and narrowed one at a time, so that a 30-million-op program never
    # holds more than a few full-width temporaries.
    n_ops = 2 * G + C
    o_rank = np.concatenate([src, dst, crank])
    o_time = np.concatenate([start, arrive, np.full(C, -1, dtype=np.int64)])
    o_ord = np.concatenate([np.ones(G, np.int64), np.zeros(G, np.int64), np.full(C, -1, np.int64)])
    tkey = (o_time + 1) * 4 + (o_ord + 1)
    del o_time
    tmax = int(tkey.max()) + 1 if n_ops else 1
    if R * tmax < (1 << 62):
        perm = np.argsort(o_rank * tmax + tkey, kind="stable")
    else:
        perm = np.lexsort((np.arange(n_ops), o_ord, tkey, o_rank))
    del tkey, o_ord
    pos = np.empty(n_ops, dtype=np.int32)
    pos[perm] = np.arange(n_ops, dtype=np.int32)
    rank_offsets = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(np.bincount(o_rank, minlength=R), out=rank_offsets[1:])
    o_rank32 = o_rank.astype(np.int32)
    scr_top = np.zeros(R, dtype=np.int64)

    tag = routes["tag"]
    columns = {
        "kind": _ordered(
            perm,
            [
                np.full(G, int(OpKind.SEND)),
                np.where(reduce, int(OpKind.RECV_REDUCE), int(OpKind.RECV)),
                np.full(C, int(OpKind.COPY)),
            ],
            np.int8,
        ),
        "peer": _ordered(perm, [dst, src, np.full(C, -1)], np.int32),
        "count": _ordered(perm, [np.ones(2 * G, np.int64), ccnt], np.int32),
        "tag": _ordered(perm, [tag[route], tag[route], np.zeros(C, np.int64)], np.int32),
    }
    for name_, parts in (
        ("src_buf", [send_src_buf, np.full(G, -1), csb]),
        ("src_index", [send_src_idx, np.full(G, -1), csi]),
        ("dst_buf", [np.full(G, -1), recv_buf, cdb]),
        ("dst_index", [np.full(G, -1), recv_idx, cdi]),
    ):
        columns[name_] = _ordered(perm, parts, np.int8 if name_.endswith("buf") else np.int32)
    # Big per-transfer arrays are dropped as soon as their last use is behind: at tens of
    # millions of operations every full-width array costs hundreds of megabytes.
    del send_src_buf, send_src_idx, recv_buf, recv_idx, csb, csi, cdb, cdi, crank, copies
    # Scratch sizes: the highest scratch slot each rank touches.
    for b, i in (("src_buf", "src_index"), ("dst_buf", "dst_index")):
        m = columns[b] == SCR
        if np.any(m):
            top = columns[i][m].astype(np.int64) + columns["count"][m]
            np.maximum.at(scr_top, o_rank[perm[m]], top)
    d_op = np.concatenate(dep_op) if dep_op else np.zeros(0, np.int32)
    d_on = np.concatenate(dep_on) if dep_on else np.zeros(0, np.int32)
    del dep_op[:], dep_on[:]
    # The transfer graph, timed; then the dependencies that keep each link's order, by the
    # times the replay found (which they do not change).
    ev_of = np.concatenate([2 * gidx + 1, 2 * gidx, np.full(C, -1, np.int64)])
    ev_dep = ev_of[d_on]
    keep = ev_dep >= 0
    is_s = d_op < G
    is_r = keep & ~is_s & (d_op < 2 * G)
    s_off, s_dep = _csr(d_op[keep & is_s], ev_dep[keep & is_s], G)
    r_off, r_dep = _csr(d_op[is_r] - G, ev_dep[is_r], G)
    del ev_dep, keep, is_s, is_r
    transfers = Transfers(
        src,
        dst,
        route,
        start,
        arrive,
        reduce,
        pos[:G].astype(np.int64),
        s_off,
        s_dep.astype(np.int64),
        r_off,
        r_dep.astype(np.int64),
    )
    events, started = timer(transfers)
    actual = [(w, op, events[ev_of[op]]) for w, op, _ in waits]
    actual.append(_last_before_start(order, lk, src, dst, events, started, pos))
    o_op, o_on, tied, before_it = _link_order(order, lk, actual, G)
    after = np.full(n_ops, -1, dtype=np.int32)
    after[pos[tied]] = pos[before_it] - rank_offsets[src[before_it]]
    columns["after"] = after
    waits.clear()
    del actual, order, lk
    d_op = np.concatenate([d_op, o_op.astype(np.int32)])
    d_on = np.concatenate([d_on, o_on.astype(np.int32)])
    local_on = pos[d_on] - rank_offsets[o_rank32[d_on]].astype(np.int32)
    dep_off, deps = _csr(pos[d_op], local_on, n_ops)
    del local_on
    # Routes of sends.
    node_off, nodes = routes["node_off"], routes["nodes"]
    rlen = np.zeros(n_ops, dtype=np.int64)
    rlen[pos[:G]] = node_off[route + 1] - node_off[route]
    route_off = np.zeros(n_ops + 1, dtype=np.int64)
    np.cumsum(rlen, out=route_off[1:])
    del rlen
    sends_sorted = perm[perm < G]  # transfer ids in program order of their sends
    starts = node_off[route[sends_sorted]]
    lens = node_off[route[sends_sorted] + 1] - starts
    flat = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(
        int(lens.sum())
    )
    route_nodes = nodes[flat]
    del perm, pos, flat, starts, lens, sends_sorted
    sizes_arr = np.zeros((R, 3), dtype=np.int64)
    for r in range(R):
        sizes_arr[r, 0] = c.input_chunks(r)
        sizes_arr[r, 1] = c.output_chunks(r)
    sizes_arr[:, 2] = scr_top
    program = Program.from_columns(
        c, rank_offsets, columns, dep_off, deps, sizes_arr, route_off, route_nodes, name=name
    )
    return Lowered(program, transfers, events)


def _last_before_start(
    order: I64,
    link: I64,
    src: I64,
    dst: I64,
    events: I64,
    start: I64,
    pos: npt.NDArray[np.int32],
) -> tuple[I64, I64, I64]:
    """For every send but the first on its link: the operation of its rank that completes
    last no later than the send starts (by the replay) and comes before it in program order,
    as ``(sends, ops, times)`` (ops as provisional ids).

    Waiting for it costs the send nothing, and it usually completes after the previous send on
    the link was queued, so the two sends are not released by one completion: ASTRA-sim's
    custom collective issues the nodes released together in hash-set order, not id order.
    """
    G = len(src)
    empty = np.zeros(0, dtype=np.int64)
    if G == 0:
        return empty, empty, empty
    gidx = np.arange(G, dtype=np.int64)
    # Every completion of a rank: receives into it (op G + j) and its sends (op j).
    c_rank = np.concatenate([dst, src])
    c_time = np.concatenate([events[0::2], events[1::2]])
    c_op = np.concatenate([G + gidx, gidx])
    span = int(max(int(c_time.max()), int(start.max()))) + 2
    key = c_rank * span + c_time
    by = np.argsort(key, kind="stable")
    key, c_op, c_time = key[by], c_op[by], c_time[by]
    later = np.zeros(G, dtype=bool)
    later[order[1:]] = link[order[1:]] == link[order[:-1]]
    g = gidx[later]
    at = np.searchsorted(key, src[g] * span + start[g], side="right") - 1
    ok = at >= 0
    at = np.maximum(at, 0)
    ok &= c_rank[by][at] == src[g]
    ok &= pos[c_op[at]] < pos[g]
    return g[ok], c_op[at][ok], c_time[at][ok]


def _link_order(
    order: I64, link: I64, waits: list[tuple[I64, I64, I64]], G: int
) -> tuple[I64, I64, I64, I64]:
    """The dependencies that keep each first link's sends in planned order (module docstring).

    ``order`` lists the transfers link by link in planned order; ``waits`` holds, per send, the
    operations it waits for with their completion times (the replay's). Along each link, the latest
    planned time waited for so far is a running maximum; a send depends on every operation
    that an earlier-or-same send of its link waits for at exactly that maximum. Returns
    ``(sends, ops)`` pairs (duplicates of existing dependencies are dropped later), and the
    ``(sends, previous)`` pairs of sends that become ready at the same instant as the send
    before them on their link: released together, which order a simulator issues them in is
    its own choice, so they get an ``after`` hint (a gate in the ET).
    """
    empty = np.zeros(0, dtype=np.int64)
    if G == 0:
        return empty, empty, empty, empty
    w_send = np.concatenate([w[0] for w in waits] + [empty]).astype(np.int64)
    w_op = np.concatenate([w[1] for w in waits] + [empty]).astype(np.int64)
    w_at = np.concatenate([w[2] for w in waits] + [empty]).astype(np.int64)
    pos = np.empty(G, dtype=np.int64)
    pos[order] = np.arange(G, dtype=np.int64)
    seq_link = link[order]
    # Per position, the latest time its send waits for (-1: nothing), then the running maximum
    # along each link (links are contiguous in `order`; an offset per link keeps them apart).
    own = np.full(G, -1, dtype=np.int64)
    np.maximum.at(own, pos[w_send], w_at)
    starts = np.flatnonzero(np.concatenate([[True], seq_link[1:] != seq_link[:-1]]))
    group = np.cumsum(np.isin(np.arange(G), starts)) - 1
    span = int(max(int(own.max()), 0)) + 2
    run_max = np.maximum.accumulate(own + group * span) - group * span
    # A run: consecutive positions of one link with the same running maximum.
    new_run = np.ones(G, dtype=bool)
    new_run[1:] = (seq_link[1:] != seq_link[:-1]) | (run_max[1:] != run_max[:-1])
    run_end = np.empty(G, dtype=np.int64)
    ends = np.concatenate([np.flatnonzero(new_run)[1:], [G]])
    run_end[np.flatnonzero(new_run)] = ends
    run_end = np.maximum.accumulate(np.where(new_run, run_end, 0))
    tied = np.flatnonzero(~new_run)
    ties = (order[tied], order[tied - 1])
    # Each wait at its position's running maximum binds every send from there to the run's end.
    p = pos[w_send]
    at_max = (w_at == run_max[p]) & (w_at >= 0)
    p, op = p[at_max], w_op[at_max]
    lens = run_end[p] - p
    total = int(lens.sum())
    if total == 0:
        return empty, empty, *ties
    first = np.cumsum(lens) - lens
    targets = np.repeat(p - first, lens) + np.arange(total, dtype=np.int64)
    return order[targets], np.repeat(op, lens), *ties


def _accumulator(c: Collective, rank: I64, x: I64, origin: I64) -> tuple[I64, I64]:
    """Where ``rank`` accumulates its partial sum of chunk ``x`` (reverse phases)."""
    kind = c.kind
    if kind is CollectiveKind.REDUCE_SCATTER:
        if c.inplace:
            return np.full(len(x), IN), x
        owner = rank == origin[x]
        return np.where(owner, OUT, SCR), np.where(owner, x - rank * c.chunks_per_rank, x)
    # All-Reduce and Reduce accumulate in the chunk's output slot (aliased in place).
    return np.full(len(x), OUT), x


def _initial_copies(c: Collective) -> tuple[I64, I64, I64, I64, I64, I64] | None:
    """The copies of a rank's own input into its output (not in place)."""
    R, cf, kind, root = c.num_ranks, c.chunks_per_rank, c.kind, c.root
    one = np.ones(1, dtype=np.int64)
    if kind is CollectiveKind.ALLGATHER:
        r = np.arange(R, dtype=np.int64)
        return (r, np.full(R, IN), np.zeros(R, np.int64), np.full(R, OUT), r * cf, np.full(R, cf))
    if kind is CollectiveKind.BROADCAST:
        return (root * one, IN * one, 0 * one, OUT * one, 0 * one, cf * one)
    if kind is CollectiveKind.GATHER:
        return (root * one, IN * one, 0 * one, OUT * one, root * cf * one, cf * one)
    if kind is CollectiveKind.SCATTER:
        return (root * one, IN * one, root * cf * one, OUT * one, 0 * one, cf * one)
    return None
