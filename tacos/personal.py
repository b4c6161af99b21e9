"""Link-chunk matching for personalised chunks (all-to-all): each chunk to one rank.

The time-expanded matching of `tacos.matching`, for chunks that each have one destination. A
chunk moves only along a shortest path toward its destination (over the channels, by their
times): a channel ``u -> v`` may carry chunk ``k`` held by ``u`` when ``v`` lies on a shortest
path from ``u`` to ``k``'s destination. Ranks on the way relay (a chunk is received and sent on
whole, store-and-forward); a chunk is delivered once, never to a rank that does not want it.

Time advances from event to event (arrivals, and links finishing a serialization). At each
event time the ranks with an event, in seeded random order, offer their free first links; for
each link the channels sharing it take turns (behind a switch, every sender aims at a different
receiver at once), and the first with a candidate whose later hops are free gets a chunk: one
of the candidates that has the farthest still to go (so long paths start first), seeded random
among those. When every channel with a candidate meets a busy later hop, the message goes on
the one that frees soonest and queues there.

Chunks are ordered by destination, then source, then index (``k = (dst * n + src) * c + i``),
so "the chunks for destination ``d``" is one bit range; a channel's candidates are the bitwise
AND of what its sender holds and a mask of the destinations it leads toward.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from tacos.channels import Channel, Timed
from tacos.errors import TacosError
from tacos.matching import Plan, _dist_to

Progress = Callable[[float], None]


def shortest_times(
    num_ranks: int, channels: Sequence[Channel], dur: Sequence[int]
) -> list[list[int]]:
    """``dist[d][u]``: the shortest channel time from rank ``u`` to rank ``d`` (ps)."""
    return [_dist_to(num_ranks, channels, dur, d) for d in range(num_ranks)]


def route_personal(
    num_ranks: int,
    channels: Sequence[Channel],
    timing: Sequence[Timed],
    chunks_per_pair: int,
    *,
    seed: int,
    progress: Progress | None = None,
    dims: Sequence[int] | None = None,
    pairs: Sequence[tuple[int, int]] | None = None,
) -> Plan:
    """Move chunk ``(src, dst, i)`` (id ``(dst * n + src) * c + i``) from every rank to every
    other rank; see the module docstring. Plan transfers are in decision order; ``tdep`` is -1
    (the lowering orders each link by data). ``dims[e]``, when given, is the grid dimension
    channel ``e`` moves along (-1: none): where shortest paths fork, a chunk first moves along
    the lowest dimension it may (dimension order, which spreads uniform traffic evenly over a
    mesh's or torus's bisection), then onto the least loaded link. ``pairs``, when given, are
    the ``(src, dst)`` pairs that exchange chunks (process groups: the pairs inside each group);
    by default every ordered pair. Raises TacosError when a rank cannot reach a rank it sends
    to."""
    R, c = num_ranks, chunks_per_pair
    rng = random.Random(seed)
    dur = [tm.dur for tm in timing]
    dist = shortest_times(R, channels, dur)
    inf = 1 << 62
    if pairs is None:
        pairs = [(s, d) for d in range(R) for s in range(R) if s != d]
    for u, d in pairs:
        if dist[d][u] >= inf:
            raise TacosError(f"rank {u} cannot reach rank {d}: no channel path")
    paths, order = _assign_paths(R, c, channels, dist, dur, rng, dims, pairs)
    # Chunks by priority: `order[p]` is the chunk of priority p (lower goes first).
    chunk_of = order.tolist()
    # Per channel, the chunks waiting at its sender for it (a heap of priorities).
    queue: list[list[int]] = [[] for _ in channels]
    hop = [0] * (R * R * c)
    waiting = [0] * R  # chunks queued at each rank
    for p, k in enumerate(chunk_of):
        e = paths[k][0]
        queue[e].append(p)
        waiting[channels[e].src] += 1
    for q in queue:
        heapq.heapify(q)
    groups_by: list[dict[int, list[tuple[int, int, tuple[tuple[int, int, int], ...]]]]] = [
        {} for _ in range(R)
    ]
    ser0_of: dict[int, int] = {}
    max_link = 0
    for i, (chan, tm) in enumerate(zip(channels, timing, strict=True)):
        link0, _, ser0 = tm.hops[0]
        ser0_of[link0] = ser0
        max_link = max(max_link, *(h[0] for h in tm.hops))
        groups_by[chan.src].setdefault(link0, []).append((i, chan.dst, tm.hops[1:]))
    groups = [
        [
            (link, ser0_of[link], tuple(sorted(chs, key=lambda x: (x[1], x[0]))))
            for link, chs in sorted(g.items())
        ]
        for g in groups_by
    ]
    # Channels sharing a first link (behind a switch) take turns, starting after the sender.
    turn: dict[int, int] = {}
    for u, grs in enumerate(groups):
        for link, _, chs in grs:
            after = [j for j, x in enumerate(chs) if x[1] > u]
            turn[link] = after[0] if after else 0
    ch_src = [ch.src for ch in channels]
    ch_dst = [ch.dst for ch in channels]
    total = len(pairs) * c
    delivered = 0
    busy = [0] * (max_link + 1)
    events: dict[int, list[int]] = {}
    times: list[int] = []
    t_chunk: list[int] = []
    t_chan: list[int] = []
    t_start: list[int] = []
    makespan = 0
    next_report = 0.0
    active = list(range(R))
    t = 0
    woken = -1
    pop, push = heapq.heappop, heapq.heappush
    while True:
        rng.shuffle(active)
        for u in active:
            if not waiting[u]:
                continue
            for link, ser0, chans in groups[u]:
                if busy[link] > t:
                    continue
                n = len(chans)
                off = turn[link] if n > 1 else 0
                chosen = -1
                late = -1
                late_by = 0
                for j in range(n):
                    jj = (off + j) % n if n > 1 else 0
                    e, _, interior = chans[jj]
                    if not queue[e]:
                        continue
                    d = 0
                    for l2, o2, _ in interior:
                        if busy[l2] > t + o2 + d:
                            d = busy[l2] - t - o2
                    if d:
                        if late < 0 or d < late_by:
                            late, late_by = jj, d
                        continue
                    chosen = jj
                    break
                if chosen < 0:
                    if late < 0:
                        continue
                    chosen = late
                e, _, interior = chans[chosen]
                p = pop(queue[e])
                waiting[u] -= 1
                busy[link] = t + ser0
                if n > 1:
                    turn[link] = (chosen + 1) % n
                d = 0
                for l2, o2, s2 in interior:
                    st2 = t + o2 + d
                    if busy[l2] > st2:
                        st2 = busy[l2]
                    busy[l2] = st2 + s2
                    d = st2 - t - o2
                tid = len(t_chunk)
                t_chunk.append(p)
                t_chan.append(e)
                t_start.append(t)
                ta = t + dur[e] + d
                if ta > makespan:
                    makespan = ta
                for tt, code in ((ta, 2 * tid), (t + ser0, 2 * tid + 1)):
                    lst = events.get(tt)
                    if lst is None:
                        events[tt] = [code]
                        push(times, tt)
                    else:
                        lst.append(code)
                if not waiting[u]:
                    break
        if delivered >= total:
            break
        if progress is not None and delivered >= next_report:
            progress(delivered / total)
            next_report = delivered + total / 100
        if not times:
            if woken != t:
                woken = t
            else:
                later = [b for b in busy if b > t]
                if not later:
                    raise TacosError("synthesis stalled: some chunk cannot reach its destination")
                t = woken = min(later)
            active = [u for u in range(R) if waiting[u]]
            continue
        t = pop(times)
        seen: set[int] = set()
        for code in events.pop(t):
            tid = code >> 1
            e = t_chan[tid]
            if code & 1:
                seen.add(ch_src[e])
                continue
            v = ch_dst[e]
            p = t_chunk[tid]
            k = chunk_of[p]
            h = hop[k] + 1
            hop[k] = h
            path = paths[k]
            if h == len(path):
                delivered += 1
            else:
                nxt = path[h]
                push(queue[nxt], p)
                waiting[v] += 1
                seen.add(v)
        active = sorted(seen)
    if progress is not None:
        progress(1.0)
    n_t = len(t_chunk)
    return Plan(
        order[np.array(t_chunk, dtype=np.int64)].astype(np.int64),
        np.array(t_chan, dtype=np.int32),
        np.array(t_start, dtype=np.int64),
        np.full(n_t, -1, dtype=np.int64),
        makespan,
    )


def _assign_paths(
    R: int,
    c: int,
    channels: Sequence[Channel],
    dist: list[list[int]],
    dur: Sequence[int],
    rng: random.Random,
    dims: Sequence[int] | None = None,
    pairs: Sequence[tuple[int, int]] = (),
) -> tuple[list[list[int]], npt.NDArray[np.int64]]:
    """A shortest path (channel list) for every chunk ``(dst * R + src) * c + i``, chosen hop
    by hop where shortest paths fork to even out the links' load; and the chunk ids in
    priority order (longest paths first, seeded ties).

    Chunks are routed farthest first, round-robin over sources, so the long paths, which have
    the most choices, settle the balance and the short ones fill in."""
    out_of: list[list[int]] = [[] for _ in range(R)]
    for i, ch in enumerate(channels):
        out_of[ch.src].append(i)
    ser = [tm for tm in dur]
    load = [0] * len(channels)
    ids = [
        (d * R + s) * c + i for s, d in sorted(pairs, key=lambda p: (p[1], p[0])) for i in range(c)
    ]
    rng.shuffle(ids)
    ids.sort(key=lambda k: -dist[(k // c) // R][(k // c) % R])
    paths: list[list[int]] = [[] for _ in range(R * R * c)]
    for k in ids:
        d, u = (k // c) // R, (k // c) % R
        path = paths[k]
        while u != d:
            best = -1
            best_dim = 1 << 30
            for e in out_of[u]:
                v = channels[e].dst
                if dist[d][u] != dur[e] + dist[d][v]:
                    continue
                dim = dims[e] if dims is not None and dims[e] >= 0 else 0
                if best < 0 or dim < best_dim or (dim == best_dim and load[e] < load[best]):
                    best, best_dim = e, dim
            if best < 0:
                raise TacosError(f"no shortest channel from rank {u} toward rank {d}")
            load[best] += ser[best]
            path.append(best)
            u = channels[best].dst
    del ser
    order = np.array(ids, dtype=np.int64)
    lengths = np.array([len(paths[k]) for k in ids], dtype=np.int64)
    order = order[np.argsort(-lengths, kind="stable")]
    return paths, order
