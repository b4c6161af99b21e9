"""The replay: the cost-model time of a lowered program, as a simulator computes it.

Rules (`topologies.cost_model`): a Send is issued when its dependencies complete and enters its
first link; every link is a FIFO server busy for the serialization time; a message crosses its
route hop by hop, store-and-forward (latency + serialization per hop, plus the switch delay); a
Send completes when its first hop's serialization ends; a Recv completes when its message has
arrived and its own dependencies are done, plus the reduction time for a reducing receive.

Events are processed in the order of the synthesizer's planned times, which is a topological
order of all these dependencies. A link shared by messages of different senders (a switch port,
a relay's link) serves them in planned order; ``fifo_exact`` says whether that order is also the
order in which they reached the link (so a FIFO simulator agrees; ties count as not exact).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tacos.channels import Timed, to_ps
from tacos.lowering import Lowered

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Replay:
    """``finish_ps``: when the last receive completes; per transfer actual ``start``/``done``
    (receive completion) in ps; ``fifo_exact`` as in the module docstring."""

    finish_ps: int
    start: I64
    done: I64
    fifo_exact: bool


def replay(low: Lowered, timed: list[Timed], reduction_ns: float = 0.0) -> Replay:
    """Time ``low`` under the cost model; see the module docstring."""
    G = len(low.src)
    red = to_ps(reduction_ns)
    route = low.route.tolist()
    if G == 0:
        return Replay(0, np.zeros(0, np.int64), np.zeros(0, np.int64), True)
    multi = any(len(tm.hops) > 1 for tm in timed)
    # Events: receives (kind 0) at planned arrival, sends (kind 1) at planned start, and for
    # multi-hop routes every later hop (kind 1, hop index k) at its planned start.
    if multi:
        hop_n = np.array([len(tm.hops) for tm in timed], dtype=np.int64)[low.route]
        hop_off = [tuple(h[1] for h in tm.hops) for tm in timed]
        tg = np.repeat(np.arange(G, dtype=np.int64), hop_n)
        first = np.zeros(G + 1, dtype=np.int64)
        np.cumsum(hop_n, out=first[1:])
        k = np.arange(len(tg), dtype=np.int64) - first[tg]
        offs = np.array([o for tm in timed for o in (h[1] for h in tm.hops)], dtype=np.int64)
        r_first = np.zeros(len(timed) + 1, dtype=np.int64)
        np.cumsum([len(tm.hops) for tm in timed], out=r_first[1:])
        ht = low.start[tg] + offs[r_first[low.route[tg]] + k]
        times = np.concatenate([low.arrive, ht])
        kinds = np.concatenate([np.zeros(G, np.int64), np.ones(len(tg), np.int64)])
        ids = np.concatenate([np.arange(G, dtype=np.int64), tg])
        ks = np.concatenate([np.full(G, -1, np.int64), k])
        order = np.lexsort((ks, ids, kinds, times))
        ev_kind, ev_id, ev_k = kinds[order].tolist(), ids[order].tolist(), ks[order].tolist()
        del hop_off
    else:
        times = np.concatenate([low.arrive, low.start])
        kinds = np.concatenate([np.zeros(G, np.int64), np.ones(G, np.int64)])
        ids = np.concatenate([np.arange(G, dtype=np.int64), np.arange(G, dtype=np.int64)])
        order = np.lexsort((ids, kinds, times))
        ev_kind, ev_id = kinds[order].tolist(), ids[order].tolist()
        ev_k = [0] * len(ev_id)
    hops = [tm.hops for tm in timed]
    durs = [tm.dur for tm in timed]
    travel = []
    for tm in timed:
        offs_l = [h[1] for h in tm.hops] + [tm.dur]
        travel.append([offs_l[i + 1] - offs_l[i] for i in range(len(tm.hops))])
    s_off, s_dep = low.send_dep_off.tolist(), low.send_dep.tolist()
    r_off, r_dep = low.recv_dep_off.tolist(), low.recv_dep.tolist()
    reduce = low.reduce.tolist()
    # done[2g] = receive of g complete, done[2g+1] = send of g complete.
    done = [0] * (2 * G)
    at_node = [0] * G  # arrival at the current node of each message
    start_a = [0] * G
    n_links = 1 + max(h[0] for tm in timed for h in tm.hops)
    free = [0] * n_links
    last_arr = [-1] * n_links
    exact = True
    for kind, g, k in zip(ev_kind, ev_id, ev_k, strict=True):
        rt = route[g]
        if kind == 0:
            t = at_node[g]
            for j in range(r_off[g], r_off[g + 1]):
                d = done[r_dep[j]]
                if d > t:
                    t = d
            if reduce[g]:
                t += red
            done[2 * g] = t
        elif k == 0:
            t = 0
            for j in range(s_off[g], s_off[g + 1]):
                d = done[s_dep[j]]
                if d > t:
                    t = d
            link, _, ser = hops[rt][0]
            if free[link] > t:
                t = free[link]
            start_a[g] = t
            free[link] = t + ser
            done[2 * g + 1] = t + ser
            at_node[g] = t + (travel[rt][0] if multi else durs[rt])
        else:
            link, _, ser = hops[rt][k]
            t = at_node[g]
            f = free[link]
            la = last_arr[link]
            if t < la or (t == la and f > t):
                exact = False
            last_arr[link] = t
            if f > t:
                t = f
            free[link] = t + ser
            at_node[g] = t + travel[rt][k]
    done_r = np.array(done[0::2], dtype=np.int64)
    return Replay(int(done_r.max()), np.array(start_a, dtype=np.int64), done_r, exact)


def replay_single_hop(low: Lowered, timed: list[Timed], reduction_ns: float = 0.0) -> Replay:
    """`replay` for programs whose every route is one link, vectorized: events are processed
    in groups of equal planned time (receives before sends), each group with numpy. With one
    hop per message no link is ever shared by two senders, so no FIFO order is involved."""
    G = len(low.src)
    if G == 0:
        return Replay(0, np.zeros(0, np.int64), np.zeros(0, np.int64), True)
    red = to_ps(reduction_ns)
    dur = np.array([tm.dur for tm in timed], dtype=np.int64)[low.route]
    ser0 = np.array([tm.hops[0][2] for tm in timed], dtype=np.int64)[low.route]
    done = np.zeros(2 * G, dtype=np.int64)
    at = np.zeros(G, dtype=np.int64)
    start = np.zeros(G, dtype=np.int64)
    times = np.concatenate([low.arrive, low.start])
    kinds = np.concatenate([np.zeros(G, np.int64), np.ones(G, np.int64)])
    order = np.lexsort((kinds, times))
    t_sorted = times[order]
    k_sorted = kinds[order]
    cut = np.flatnonzero((t_sorted[1:] != t_sorted[:-1]) | (k_sorted[1:] != k_sorted[:-1])) + 1
    bounds = np.concatenate([[0], cut, [2 * G]])
    ids = np.where(order < G, order, order - G)
    s_off, s_dep = low.send_dep_off, low.send_dep
    r_off, r_dep = low.recv_dep_off, low.recv_dep
    red_add = np.where(low.reduce, red, 0)

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
            st = seg_max(g, s_off, s_dep)
            start[g] = st
            done[2 * g + 1] = st + ser0[g]
            at[g] = st + dur[g]
        else:
            for _ in range(b - a + 1):
                val = np.maximum(at[g], seg_max(g, r_off, r_dep)) + red_add[g]
                if np.array_equal(val, done[2 * g]):
                    break
                done[2 * g] = val
    done_r = done[0::2]
    return Replay(int(done_r.max()), start, done_r.copy(), True)
