"""The link-chunk matching on a time-expanded network (TACOS), link-centric.

Time advances from event to event (chunk arrivals and links finishing a serialization). At each
event time every rank that had an event (or every rank at time 0) looks at its free outgoing
first links; for each, it picks a channel whose later hops are free when the chunk reaches them
(switch ports and relays are shared capacity) and a chunk. Channels sharing a first link are
offered in turn, starting after the sender's own rank, so on a switch the senders aim at
different receivers at once; when every channel with a candidate meets a busy shared link, the
message goes on the one that frees soonest and queues there. The candidates:

    candidates = has[u] & ~(has[v] | incoming[v])

A chunk is a candidate only after it has fully arrived at ``u`` (``has`` is updated at arrival
events), and a chunk already travelling to ``v`` is not offered again, so every (chunk, rank)
pair is received exactly once. Chunks are Python integers used as bitsets; the pick among
candidates is seeded random with a preference for chunks that the other in-neighbours of ``v``
cannot deliver sooner (heterogeneous links) or do not hold at all (homogeneous links: only this
link can bring them now, so ``v``'s last chunks do not end up queued on one in-link), then for
chunks few ranks hold. The ``arriving`` rule (`RULES`) counts a chunk already travelling to one
of those neighbours as held too (it will be there soon), the ``held`` rule does not. The seed
changes only the random draws; the rule comes from the topology (`default_rule`): on a ring or
a line the ``arriving`` rule keeps the two directions from carrying the same chunk towards each
other (8 ranks, 4 chunks each: the All-Gather bound instead of 6% above it), while on
higher-degree networks (a 4x4x4 torus: 1.004x the bound against 1.093x) ``held`` does better.

A channel over shared links whose slowest hop is slower than the best channel into its receiver
(FRED's thin L1 up-link, a stack's switch dimension under faster rings; `_thin`) carries only
chunks that the receiver's fast neighbourhood neither holds nor is receiving, and otherwise
waits: a copy across the narrow link would take the place of a chunk only it can bring.

Sends start only at event times of their sender: the arrival of a chunk there or the end of one
of its sends' serialization (its link is free again). A simulator serves each link first come,
first served, so a send queued on its link early starts when the link frees; lowering orders each
link's sends by dependencies on the data of earlier sends (never on a send's completion) and
adds a dependency only for a start that neither its data nor its link explains. For that, each
send records ``tdep``: an operation of the sender completing at its start time under the cost
model's completion rule (a receive's arrival; a send's departure under ``on-departure``, its
delivery under ``on-arrival``).

Two modes: ``spread`` (every rank needs every chunk: All-Gather, Broadcast) and ``sink`` (one
rank needs every chunk: Gather; chunks move only to ranks strictly closer to the sink, and each
copy is forwarded once).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tacos.channels import Channel, Timed
from tacos.errors import TacosError

Progress = Callable[[float], None]

RULES = ("held", "arriving")
"""The matching's two rules for the chunks a receiver's other in-neighbours have (module
docstring): ``held`` counts the chunks they hold, ``arriving`` also those travelling to them."""


def default_rule(channels: Sequence[Channel]) -> str:
    """The rule for a topology: ``arriving`` when every rank has at most two in-neighbour ranks
    (rings, lines), else ``held``."""
    into: dict[int, set[int]] = {}
    for c in channels:
        into.setdefault(c.dst, set()).add(c.src)
    return "arriving" if all(len(s) <= 2 for s in into.values()) else "held"


def trials(channels: Sequence[Channel], seed: int, seeds: int) -> list[tuple[int, str]]:
    """The (seed, rule) pairs ``seeds`` tries: seeds ``seed..seed+seeds-1`` with the topology's
    `default_rule`, except that the last of two or more runs the other rule, so one seed runs
    the default rule and two or more search both."""
    first = default_rule(channels)
    other = RULES[1 - RULES.index(first)]
    return [(seed + i, other if seeds > 1 and i == seeds - 1 else first) for i in range(seeds)]


@dataclass
class Plan:
    """A synthesized schedule of one phase: transfer ``i`` moves chunk ``chunk[i]`` over channel
    ``chan[i]`` starting at ``start[i]`` ps; ``tdep[i]`` is the sender's operation completing at
    that time (``2*j`` the receive of transfer ``j``, ``2*j+1`` its send; -1 none).

    ``makespan`` is the last arrival (ps). Transfers are in decision order, which is also
    nondecreasing start order.
    """

    chunk: npt.NDArray[np.int32]
    chan: npt.NDArray[np.int32]
    start: npt.NDArray[np.int64]
    tdep: npt.NDArray[np.int64]
    makespan: int


def spread(
    num_ranks: int,
    channels: Sequence[Channel],
    timing: Sequence[Timed],
    chunk_src: Sequence[int],
    *,
    seed: int,
    sink: int = -1,
    progress: Progress | None = None,
    on_arrival: bool = False,
    ready: Sequence[int] = (),
    busy_until: dict[int, int] | None = None,
    want: Sequence[int] | None = None,
    rule: str = "held",
) -> Plan:
    """Synthesize the movement of chunks ``k`` (at rank ``chunk_src[k]`` from time ``ready[k]``,
    0 when not given) to every rank (``sink < 0``) or to rank ``sink``; links listed in
    ``busy_until`` are taken until then (ps) by earlier work. ``on_arrival``: sends complete
    when their message has arrived (for ``tdep``). ``want[v]`` (spread only), when given, is the
    bitset of the chunks rank ``v`` needs (process groups: its group's chunks); a chunk is
    offered only to ranks that want it, so the channels must let every rank that wants a chunk
    reach it through ranks that want it too. ``rule`` is one of `RULES`. See the module
    docstring."""
    if rule not in RULES:
        raise TacosError(f"matching rule must be one of {', '.join(RULES)}, got {rule!r}")
    R = num_ranks
    K = len(chunk_src)
    rng = random.Random(seed)
    rand = rng.random
    ch_src = [c.src for c in channels]
    ch_dst = [c.dst for c in channels]
    ch_dur = [tm.dur for tm in timing]
    # Per rank: groups of channels sharing a first link: (link, ser0, ((ch, v, dur, interior), ...)).
    groups_by: list[dict[int, list[tuple[int, int, int, tuple[tuple[int, int, int], ...]]]]] = [
        {} for _ in range(R)
    ]
    ser0_of: dict[int, int] = {}
    max_link = 0
    for i, (c, tm) in enumerate(zip(channels, timing, strict=True)):
        link0, _, ser0 = tm.hops[0]
        ser0_of[link0] = ser0
        max_link = max(max_link, *(h[0] for h in tm.hops))
        groups_by[c.src].setdefault(link0, []).append((i, c.dst, tm.dur, tm.hops[1:]))
    groups: list[
        list[
            tuple[int, int, tuple[tuple[int, int, int, tuple[tuple[int, int, int], ...]], ...], int]
        ]
    ] = [
        [
            (
                link,
                ser0_of[link],
                tuple(sorted(chs, key=lambda x: (x[1], x[0]))),
                min(x[2] for x in chs),
            )
            for link, chs in sorted(g.items())
        ]
        for g in groups_by
    ]
    # Channels sharing a first link (behind a switch) are offered in turn, starting after the
    # sender's own rank: on a switch every sender then aims at a different receiver at once.
    turn: dict[int, int] = {}
    for u, grs in enumerate(groups):
        for link, _, chs, _ in grs:
            after = [j for j, x in enumerate(chs) if x[1] > u]
            turn[link] = after[0] if after else 0
    # Hetero awareness: for each channel into v, the other channels into v that are faster.
    into: list[list[int]] = [[] for _ in range(R)]
    for i, c in enumerate(channels):
        into[c.dst].append(i)
    hetero = len(set(ch_dur)) > 1
    ch_link0 = [tm.hops[0][0] for tm in timing]
    near = _fast_neighbourhood(R, channels, ch_dur) if hetero else [()] * len(channels)
    ch_ser0 = [tm.hops[0][2] for tm in timing]
    thin = _thin(R, channels, timing)
    # Homogeneous links: for each channel u -> v, the other ranks with a channel into v (none
    # past a small in-degree, e.g. behind a switch, where the test costs more than it helps).
    rivals: list[tuple[int, ...]] = [()] * len(channels)
    in_flight_rivals = rule == "arriving"
    if not hetero and sink < 0:
        srcs_into = [sorted({ch_src[e] for e in into[v]}) for v in range(R)]
        rivals = [
            tuple(w for w in srcs_into[c.dst] if w != c.src) if len(srcs_into[c.dst]) <= 8 else ()
            for c in channels
        ]

    busy = [0] * (max_link + 1)
    # Process groups (``want``): a link that is some rank's first link and another group's
    # interior hop may be reserved ahead for that hop; a message that fits in the gap before
    # the reservation (the latest one per link) may still take the link then.
    gap_lo = [0] * (max_link + 1)
    gap_hi = [0] * (max_link + 1)
    has = [0] * R
    events: dict[int, list[int]] = {}
    times: list[int] = []
    pending = [0] * R  # future events at each rank: arrivals to it, ends of its sends
    # Codes of events without a transfer: -1 - k, chunk k becomes available at its source;
    # -1 - K - u, a link of rank u frees from earlier work.
    for k, s in enumerate(chunk_src):
        at = ready[k] if ready else 0
        if at <= 0:
            has[s] |= 1 << k
        else:
            events.setdefault(at, []).append(-1 - k)
            pending[s] += 1
    link_src: dict[int, int] = {}
    for c, tm in zip(channels, timing, strict=True):
        link_src[tm.hops[0][0]] = c.src
    for li, until in (busy_until or {}).items():
        if li < len(busy):
            busy[li] = max(busy[li], until)
            owner = link_src.get(li, -1)
            if owner >= 0 and until > 0:
                events.setdefault(until, []).append(-1 - K - owner)
                pending[owner] += 1
    for at in events:
        heapq.heappush(times, at)
    inc = [0] * R
    fwd: list[int] = []
    dist: list[int] = []
    if sink >= 0:
        fwd = list(has)
        fwd[sink] = 0
        dist = _dist_to(R, channels, ch_dur, sink)
        total = sum(1 for s in chunk_src if s != sink)
    else:
        total = K * (R - 1)
    full = (1 << K) - 1
    masked = want is not None and sink < 0
    wanted = list(want) if want is not None and sink < 0 else [full] * R
    w_lo = [(w & -w).bit_length() - 1 if w else 0 for w in wanted]
    w_span = [max(1, w.bit_length() - lo) for w, lo in zip(wanted, w_lo, strict=True)]
    if masked:
        total = sum(w.bit_count() for w in wanted) - sum(
            1 for k, s in enumerate(chunk_src) if wanted[s] >> k & 1
        )
    rarity = _Rarity(K, R, chunk_src) if sink < 0 else None

    t_chunk: list[int] = []
    t_chan: list[int] = []
    t_start: list[int] = []
    t_tdep: list[int] = []
    last = [-1] * R  # per rank, an operation completing at `done_at` (for tdep)
    done_at = [-1] * R
    mark = [-1] * R  # per rank, the time it was last made active
    served = 0
    makespan = 0
    next_report = 0.0
    active = list(range(R))
    t = 0
    woken = -1
    while True:
        rng.shuffle(active)
        if hetero:
            # Fastest channels first, so slower ones see what the fast ones took.
            work = sorted(
                ((gr[3], i, u, gr) for i, u in enumerate(active) for gr in groups[u]),
                key=lambda w: (w[0], w[1]),
            )
            items = [(w[2], w[3]) for w in work]
        else:
            items = [(u, gr) for u in active for gr in groups[u]]
        for u, (link, ser0, chans, _) in items:
            in_gap = False
            if busy[link] > t:
                if not (masked and gap_lo[link] <= t and t + ser0 <= gap_hi[link]):
                    continue
                in_gap = True
            hu = fwd[u] if sink >= 0 else has[u]
            if not hu:
                continue
            n = len(chans)
            off = turn[link] if n > 1 else 0
            chosen = -1
            late = -1  # the channel whose shared links free soonest, when every one is busy
            late_by = 0
            for j in range(n):
                ch, v, dur, interior = chans[(off + j) % n] if n > 1 else chans[0]
                if sink >= 0:
                    if dist[v] >= dist[u]:
                        continue
                    cand = hu
                else:
                    cand = hu & ~(has[v] | inc[v])
                    if masked:
                        cand &= wanted[v]
                if not cand:
                    continue
                d = 0
                for l2, o2, s2 in interior:
                    at = t + o2 + d
                    if busy[l2] > at and not (
                        masked and gap_lo[l2] <= at and at + s2 <= gap_hi[l2]
                    ):
                        d = busy[l2] - t - o2
                if d:
                    if late < 0 or d < late_by:
                        late, late_by = (off + j) % n, d
                    continue
                if hetero and sink < 0:
                    pick = _unhurried(
                        cand,
                        ch,
                        v,
                        t + dur,
                        into,
                        ch_src,
                        ch_dur,
                        ch_link0,
                        ch_ser0,
                        has,
                        busy,
                        t,
                        inc,
                        wanted[v],
                    )
                    if not pick and pending[u]:
                        continue
                    if pick:
                        cand = pick
                    if near[ch]:
                        m = 0
                        for w in near[ch]:
                            m |= has[w] | inc[w]
                        rest = cand & ~m
                        if rest:
                            cand = rest
                        elif thin[ch] and not masked:
                            # A switched path into v's fast neighbourhood: every candidate is
                            # already there, and a faster channel brings it; do not cross the
                            # shared links with a copy (not with groups: the faster path may
                            # run through ranks that do not want the chunk).
                            continue
                chosen = (off + j) % n
                break
            if chosen < 0:
                if late < 0:
                    continue
                # Every channel with something to carry meets a busy shared link (a switch
                # port): send on the one that frees soonest; the message queues there.
                chosen = late
                ch, v, dur, interior = chans[chosen]
                cand = hu if sink >= 0 else hu & ~(has[v] | inc[v])
                if masked and sink < 0:
                    cand &= wanted[v]
                if hetero and sink < 0 and near[ch] and thin[ch] and not masked:
                    m = 0
                    for w in near[ch]:
                        m |= has[w] | inc[w]
                    cand &= ~m
                    if not cand:
                        continue
            if sink < 0 and rivals[ch]:
                m = 0
                for w in rivals[ch]:
                    m |= has[w] | inc[w] if in_flight_rivals else has[w]
                rest = cand & ~m
                if rest:
                    cand = rest
            if rarity is not None:
                cand = rarity.rarest(cand)
            # With groups, draw over the ids the receiver wants (its group's band of the ids,
            # which a draw over all ids would mostly miss), as a lone group would draw.
            r = w_lo[v] + int(rand() * w_span[v]) if masked else int(rand() * K)
            x = cand >> r
            k = r + (x & -x).bit_length() - 1 if x else (cand & -cand).bit_length() - 1
            bit = 1 << k
            if sink >= 0:
                fwd[u] &= ~bit
                hu &= ~bit
                if v == sink:
                    served += 1
            else:
                inc[v] |= bit
                served += 1
                rarity.add(k)  # type: ignore[union-attr]
            if in_gap:
                gap_lo[link] = t + ser0
            else:
                busy[link] = t + ser0
            if n > 1:
                turn[link] = (chosen + 1) % n
            d = 0
            for l2, o2, s2 in interior:
                st2 = t + o2 + d
                if busy[l2] > st2:
                    if masked and gap_lo[l2] <= st2 and st2 + s2 <= gap_hi[l2]:
                        gap_lo[l2] = st2 + s2
                        continue
                    st2 = busy[l2]
                elif masked and st2 > busy[l2]:
                    gap_lo[l2] = busy[l2]
                    gap_hi[l2] = st2
                busy[l2] = st2 + s2
                d = st2 - t - o2
            tid = len(t_chunk)
            t_chunk.append(k)
            t_chan.append(ch)
            t_start.append(t)
            t_tdep.append(last[u] if done_at[u] == t else -1)
            pending[u] += 1
            pending[v] += 1
            ta = t + dur + d
            if ta > makespan:
                makespan = ta
            for tt, code in ((ta, 2 * tid), (t + ser0, 2 * tid + 1)):
                lst = events.get(tt)
                if lst is None:
                    events[tt] = [code]
                    heapq.heappush(times, tt)
                else:
                    lst.append(code)
        if served >= total:
            break
        if progress is not None and served >= next_report:
            progress(served / total)
            next_report = served + total / 100
        if not times:
            # Every rank with work waits on a shared link (a switch port or relay) and has no
            # event of its own left: wake them all when the next shared link frees. Such sends
            # have no operation to start from (the replay times them as a simulator would).
            if woken != t:
                woken = t
            else:
                later = [b for b in busy if b > t]
                if not later:
                    raise TacosError(
                        "synthesis stalled: some rank cannot receive every chunk it needs"
                    )
                t = woken = min(later)
            active = [u for u in range(R) if (fwd[u] if sink >= 0 else has[u])]
            continue
        t = heapq.heappop(times)
        active = []
        for code in events.pop(t):
            if code < 0:
                if code >= -K:
                    k = -1 - code
                    x = chunk_src[k]
                    if sink >= 0:
                        if x != sink:
                            fwd[x] |= 1 << k
                    else:
                        has[x] |= 1 << k
                else:
                    x = -1 - K - code
                pending[x] -= 1
                if mark[x] != t:
                    mark[x] = t
                    active.append(x)
                continue
            tid = code >> 1
            if code & 1:
                x = ch_src[t_chan[tid]]
                if not on_arrival:
                    last[x] = code
                    done_at[x] = t
            else:
                x = ch_dst[t_chan[tid]]
                b = 1 << t_chunk[tid]
                if sink >= 0:
                    if x != sink:
                        fwd[x] |= b
                else:
                    has[x] |= b
                    inc[x] &= ~b
                last[x] = code
                done_at[x] = t
                if on_arrival:
                    w = ch_src[t_chan[tid]]
                    last[w] = code | 1
                    done_at[w] = t
            pending[x] -= 1
            if mark[x] != t:
                mark[x] = t
                active.append(x)
        active.sort()
    if progress is not None:
        progress(1.0)
    return Plan(
        np.array(t_chunk, dtype=np.int32),
        np.array(t_chan, dtype=np.int32),
        np.array(t_start, dtype=np.int64),
        np.array(t_tdep, dtype=np.int64),
        makespan,
    )


def _thin(num_ranks: int, channels: Sequence[Channel], timing: Sequence[Timed]) -> list[bool]:
    """For each channel: whether it crosses shared links (switches, relays) and its slowest
    hop serializes slower than the slowest hop of the best channel into the same rank. Such a
    channel (FRED's thin L1 up-link, a stack's switch dimension under faster rings) should
    carry only chunks the receiver's fast neighbourhood has not got: a copy of one wastes the
    narrow link."""
    worst = [max(h[2] for h in tm.hops) for tm in timing]
    best = [1 << 62] * num_ranks
    for c, w in zip(channels, worst, strict=True):
        best[c.dst] = min(best[c.dst], w)
    return [
        len(tm.hops) > 1 and w > best[c.dst]
        for c, tm, w in zip(channels, timing, worst, strict=True)
    ]


def _unhurried(
    cand: int,
    ch: int,
    v: int,
    arrive: int,
    into: list[list[int]],
    ch_src: list[int],
    ch_dur: list[int],
    ch_link0: list[int],
    ch_ser0: list[int],
    has: list[int],
    busy: list[int],
    t: int,
    inc: list[int],
    full: int,
) -> int:
    """The candidates for channel ``ch`` into ``v`` that no faster channel into ``v`` could
    deliver before ``arrive``; when every candidate could come sooner another way, all of them
    if the faster channels cannot carry them all by then, else none (the link waits)."""
    sooner = 0
    capacity = 0
    for e in into[v]:
        if e == ch:
            continue
        free = busy[ch_link0[e]]
        if free <= t:
            # Idle now: faster channels were offered first, so it has nothing for v now.
            continue
        slack = arrive - free - ch_dur[e]
        if slack >= 0:
            sooner |= has[ch_src[e]]
            capacity += slack // ch_ser0[e] + 1
    if not sooner:
        return cand
    if (full & ~(has[v] | inc[v])).bit_count() <= capacity:
        return 0  # the busy faster channels can bring v all it lacks before this would land
    rest = cand & ~sooner
    return rest if rest else cand


class _Rarity:
    """Chunks bucketed by how many ranks hold or are receiving them (buckets by bit length)."""

    def __init__(self, num_chunks: int, num_ranks: int, chunk_src: Sequence[int]) -> None:
        self.count = [1] * num_chunks
        self.masks = [0] * (num_ranks.bit_length() + 2)
        self.masks[1] = (1 << num_chunks) - 1

    def add(self, k: int) -> None:
        c = self.count[k]
        self.count[k] = c + 1
        old, new = c.bit_length(), (c + 1).bit_length()
        if old != new:
            bit = 1 << k
            self.masks[old] ^= bit
            self.masks[new] |= bit

    def rarest(self, cand: int) -> int:
        for m in self.masks:
            x = cand & m
            if x:
                return x
        return cand


def _dist_to(
    num_ranks: int, channels: Sequence[Channel], dur: Sequence[int], sink: int
) -> list[int]:
    """Shortest channel time from every rank to ``sink`` (Dijkstra on reversed channels)."""
    back: list[list[tuple[int, int]]] = [[] for _ in range(num_ranks)]
    for i, c in enumerate(channels):
        back[c.dst].append((c.src, dur[i]))
    inf = 1 << 62
    dist = [inf] * num_ranks
    dist[sink] = 0
    heap = [(0, sink)]
    while heap:
        d, x = heapq.heappop(heap)
        if d > dist[x]:
            continue
        for y, w in back[x]:
            if d + w < dist[y]:
                dist[y] = d + w
                heapq.heappush(heap, (d + w, y))
    return dist


def _fast_neighbourhood(
    num_ranks: int, channels: Sequence[Channel], dur: list[int], depth: int = 2
) -> list[tuple[int, ...]]:
    """For each channel into ``v``: the ranks that reach ``v`` within ``depth`` hops over
    channels faster than it. A slow channel should carry chunks none of them holds."""
    into: list[list[int]] = [[] for _ in range(num_ranks)]
    for i, c in enumerate(channels):
        into[c.dst].append(i)
    out: list[tuple[int, ...]] = []
    for i, c in enumerate(channels):
        limit = dur[i]
        seen = {c.dst}
        frontier = [c.dst]
        for _ in range(depth):
            nxt = []
            for x in frontier:
                for e in into[x]:
                    w = channels[e].src
                    if dur[e] < limit and w not in seen:
                        seen.add(w)
                        nxt.append(w)
            frontier = nxt
        seen.discard(c.dst)
        out.append(tuple(sorted(seen)))
    return out
