"""All-to-all synthesis: personalised chunks moved by link-chunk matching, lowered to a Program.

`synthesize_alltoall` builds the channels of the ranks (`tacos.channels`), plans every chunk
``(src, dst, i)`` with `tacos.personal.route_personal` (each chunk along a shortest path, relays
store-and-forward, links shared as the matching hands them out) and lowers the plan:

- every transfer is a Send on its sender (its channel's route as a hint) and a Recv on its
  receiver; a chunk starts from its source's input slot ``dst * c + i`` (with process groups,
  ``dst``'s and ``src``'s positions in their group); a relay receives it
  into a scratch slot of its own (one per chunk it relays) and sends it on from there; the
  destination receives it into output slot ``src * c + i``;
- in place (output slot ``j`` is input slot ``j``), the destination receives into scratch and
  copies into the output once its own block in that slot has left (copies take no time);
- a rank's own block is copied from its input to its output (out of place);
- each rank's operations are in planned time order (receives before sends at equal times), and
  a send depends on the receive that brought its chunk and, to keep each link's planned order,
  on what the previous send on the same link waited for (never on a send's completion).

The estimate is the planned makespan; the CLI prints the simulated time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.program import OpKind, Program
from tacos.channels import (
    Channel,
    Net,
    build_channels,
    check_placement,
    group_channels,
    time_channel,
)
from tacos.errors import TacosError
from tacos.personal import route_personal
from tacos.result import Progress, Synthesis, check_arguments
from tacos.routes import Routes
from topologies.cost_model import DEFAULT_COST_MODEL, PS_PER_NS, CostModel
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]
IN, OUT, SCR = int(Buffer.INPUT), int(Buffer.OUTPUT), int(Buffer.SCRATCH)


def synthesize_alltoall(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int = 0,
    seeds: int = 1,
    cost: CostModel = DEFAULT_COST_MODEL,
    progress: Progress | None = None,
) -> Synthesis:
    """Synthesize ``collective`` (an all-to-all; ``chunks_per_rank`` chunks per pair) on
    ``topology``; see the module docstring. Process groups are planned jointly: each group's
    pairs over its own channels (`tacos.channels.group_channels`), all links shared. With ``seeds=K`` the plans of seeds
    ``seed..seed+K-1`` are made and the shortest kept. Raises TacosError for another kind,
    groups, a bad chunk size or seed count, ranks that are not NPUs of the topology and ranks
    that cannot reach each other."""
    t0 = time.perf_counter()
    c = collective
    if c.kind is not CollectiveKind.ALLTOALL:
        raise TacosError(f"synthesize_alltoall serves alltoall, not {c.kind.value}")
    check_arguments(chunk_bytes, seeds)
    npus = check_placement(c, topology)
    R, cf = c.num_ranks, c.chunks_per_rank
    say = progress or (lambda _f: None)
    net = Net.of(topology)
    if c.groups:
        channels = group_channels(net, c)
        pairs = [(s, d) for g in c.groups for d in g for s in g if s != d]
    else:
        channels = build_channels(net, npus) if R > 1 else []
        pairs = [(s, d) for d in range(R) for s in range(R) if s != d]
    timing = [time_channel(net, ch, chunk_bytes, cost) for ch in channels]
    best = None
    used = seed
    for i in range(seeds if R > 1 else 0):
        plan = route_personal(
            R,
            channels,
            timing,
            cf,
            seed=seed + i,
            progress=_part(say, i, seeds),
            dims=_line_dims(topology, channels),
            pairs=pairs,
        )
        if best is None or plan.makespan < best.makespan:
            best, used = plan, seed + i
    routes = Routes(net, chunk_bytes, cost)
    rid = routes.add_all(channels) if channels else np.zeros(0, dtype=np.int64)
    dur = np.array([tm.dur for tm in timing], dtype=np.int64)
    if best is None:
        chunk = chan = start = np.zeros(0, dtype=np.int64)
        makespan = 0
    else:
        chunk = best.chunk.astype(np.int64)
        chan = best.chan.astype(np.int64)
        start = best.start
        makespan = best.makespan
    program = lower_alltoall(c, chunk, chan, start, channels_src_dst(channels), rid, dur, routes)
    say(1.0)
    return Synthesis(
        program,
        makespan / PS_PER_NS,
        time.perf_counter() - t0,
        used,
        chunk_bytes,
        {CollectiveKind.ALLTOALL.value: makespan / PS_PER_NS},
        len(chunk),
        plan_exact=False,
    )


def channels_src_dst(channels: list[Channel]) -> tuple[I64, I64]:
    """The ranks at both ends of every channel."""
    src = np.array([ch.src for ch in channels], dtype=np.int64)
    dst = np.array([ch.dst for ch in channels], dtype=np.int64)
    return src, dst


def lower_alltoall(
    c: Collective,
    chunk: I64,
    chan: I64,
    start: I64,
    ends: tuple[I64, I64],
    route_of_chan: I64,
    dur: I64,
    routes: Routes,
) -> Program:
    """The Program of an all-to-all plan: transfer ``g`` moves chunk ``chunk[g]`` (``(dst * n
    + src) * c + i``) over channel ``chan[g]`` from ``start[g]`` (ps); see the module
    docstring."""
    R, cf = c.num_ranks, c.chunks_per_rank
    G = len(chunk)
    ch_src, ch_dst = ends
    u = ch_src[chan] if G else np.zeros(0, dtype=np.int64)
    v = ch_dst[chan] if G else np.zeros(0, dtype=np.int64)
    pair, idx = np.divmod(chunk, cf)
    dst, src = np.divmod(pair, R)
    arrive = start + dur[chan] if G else np.zeros(0, dtype=np.int64)
    route = route_of_chan[chan] if G else np.zeros(0, dtype=np.int64)
    g = np.arange(G, dtype=np.int64)
    # Each chunk's transfers in path order: the one before brought the data.
    by_chunk = np.lexsort((start, chunk))
    prev = np.full(G, -1, dtype=np.int64)
    same = chunk[by_chunk][1:] == chunk[by_chunk][:-1]
    prev[by_chunk[1:][same]] = by_chunk[:-1][same]
    final = v == dst
    pos = np.array([c.group_position(r) for r in range(R)], dtype=np.int64)
    # Receive slots: the output at the destination (scratch first, in place); scratch at a
    # relay, one slot per chunk, numbered by arrival.
    via_scratch = ~final | c.inplace
    scr_slot = np.full(G, -1, dtype=np.int64)
    sel = np.flatnonzero(via_scratch)
    order = sel[np.lexsort((sel, arrive[sel], v[sel]))]
    counts = np.bincount(v[order], minlength=R)
    first_of = np.concatenate([[0], np.cumsum(counts)[:-1]])
    scr_slot[order] = np.arange(len(order)) - first_of[v[order]]
    scratch = counts
    recv_buf = np.where(via_scratch, SCR, OUT)
    recv_idx = np.where(via_scratch, scr_slot, pos[src] * cf + idx)
    send_buf = np.where(prev >= 0, SCR, IN)
    send_idx = np.where(prev >= 0, scr_slot[np.maximum(prev, 0)], pos[dst] * cf + idx)
    # Ops: sends 0..G-1, receives G..2G-1, then copies.
    dep_op: list[I64] = [g[prev >= 0]]
    dep_on: list[I64] = [G + prev[prev >= 0]]
    # Link order: a send waits for the latest data any send before it on its link waited for,
    # so it joins the link's queue behind them.
    if G:
        timed_link0 = np.array([tm.hops[0][0] for tm in routes.timed], dtype=np.int64)
        first_link = timed_link0[route]
        seq = np.lexsort((g, start, first_link))
        lk = first_link[seq]
        seg = np.concatenate([[0], np.cumsum(lk[1:] != lk[:-1])])
        w = prev[seq]
        val = np.where(w >= 0, arrive[np.maximum(w, 0)], -1)
        big = int(val.max()) + 2
        shifted = val + seg * big
        run = np.maximum.accumulate(shifted)
        at = np.where((shifted == run) & (w >= 0), np.arange(G), -1)
        at = np.maximum.accumulate(at)
        ok = at >= 0
        ok[ok] = seg[at[ok]] == seg[ok]
        latest = np.where(ok, w[np.maximum(at, 0)], -1)  # per position: the latest wait so far
        p_before = latest[:-1]
        same_seg = seg[1:] == seg[:-1]
        after = seq[1:]
        m = same_seg & (p_before >= 0) & (p_before != prev[after])
        dep_op.append(after[m])
        dep_on.append(G + p_before[m])
    # Copies: own blocks (out of place); in place, scratch into the output once the slot's own
    # block has left (its first-hop send: the send of chunk (v -> src) from v).
    c_rank: list[I64] = []
    c_sbuf: list[I64] = []
    c_sidx: list[I64] = []
    c_didx: list[I64] = []
    c_time: list[I64] = []
    c_deps: list[tuple[I64, I64]] = []
    base = 2 * G
    if not c.inplace:
        r = np.arange(R, dtype=np.int64)
        c_rank.append(r)
        c_sbuf.append(np.full(R, IN))
        c_sidx.append(pos * cf)
        c_didx.append(pos * cf)
        c_time.append(np.full(R, -1, dtype=np.int64))
    else:
        fin = np.flatnonzero(final)
        # The first-hop send of the block that sat in the slot: chunk (dst = src of g,
        # src = v of g, same index), sent first from v.
        first_send = np.full(R * R * cf, -1, dtype=np.int64)
        starts_here = np.flatnonzero(prev < 0)
        first_send[chunk[starts_here]] = starts_here
        owner_chunk = (src[fin] * R + v[fin]) * cf + idx[fin]
        war = first_send[owner_chunk]
        c_rank.append(v[fin])
        c_sbuf.append(np.full(len(fin), SCR))
        c_sidx.append(scr_slot[fin])
        c_didx.append(pos[src[fin]] * cf + idx[fin])
        c_time.append(np.maximum(arrive[fin], np.where(war >= 0, start[np.maximum(war, 0)], 0)))
        ids = base + np.arange(len(fin), dtype=np.int64)
        c_deps.append((ids, G + fin))
        ok = war >= 0
        c_deps.append((ids[ok], war[ok]))
    crank = np.concatenate(c_rank) if c_rank else np.zeros(0, dtype=np.int64)
    C = len(crank)
    counts_c = np.ones(C, dtype=np.int64) * (cf if not c.inplace else 1)
    for a, b in c_deps:
        dep_op.append(a)
        dep_on.append(b)
    n_ops = 2 * G + C
    o_rank = np.concatenate([u, v, crank])
    o_time = np.concatenate([start, arrive, np.concatenate(c_time) if C else np.zeros(0, np.int64)])
    o_ord = np.concatenate([np.ones(G, np.int64), np.zeros(G, np.int64), np.full(C, 2, np.int64)])
    perm = np.lexsort((np.arange(n_ops), o_ord, o_time, o_rank))
    pos = np.empty(n_ops, dtype=np.int64)
    pos[perm] = np.arange(n_ops, dtype=np.int64)
    rank_offsets = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(np.bincount(o_rank, minlength=R), out=rank_offsets[1:])
    tag = routes.arrays()["tag"] if len(routes.channels) else np.zeros(0, dtype=np.int64)

    def col(parts: Sequence[npt.ArrayLike]) -> I64:
        return np.concatenate([np.asarray(x, dtype=np.int64) for x in parts])[perm]

    c_sbuf_a = np.concatenate(c_sbuf) if C else np.zeros(0, np.int64)
    c_sidx_a = np.concatenate(c_sidx) if C else np.zeros(0, np.int64)
    c_didx_a = np.concatenate(c_didx) if C else np.zeros(0, np.int64)
    columns = {
        "kind": col(
            [
                np.full(G, int(OpKind.SEND)),
                np.full(G, int(OpKind.RECV)),
                np.full(C, int(OpKind.COPY)),
            ]
        ),
        "peer": col([v, u, np.full(C, -1)]),
        "src_buf": col([send_buf, np.full(G, -1), c_sbuf_a]),
        "src_index": col([send_idx, np.full(G, -1), c_sidx_a]),
        "dst_buf": col([np.full(G, -1), recv_buf, np.full(C, OUT)]),
        "dst_index": col([np.full(G, -1), recv_idx, c_didx_a]),
        "count": col([np.ones(2 * G, np.int64), counts_c]),
        "tag": col([tag[route] if G else np.zeros(0, np.int64)] * 2 + [np.zeros(C, np.int64)]),
    }
    d_op = np.concatenate(dep_op) if dep_op else np.zeros(0, np.int64)
    d_on = np.concatenate(dep_on) if dep_on else np.zeros(0, np.int64)
    owner = pos[d_op]
    local = pos[d_on] - rank_offsets[o_rank[d_on]]
    key = np.lexsort((local, owner))
    owner, local = owner[key], local[key]
    if len(owner):
        keep = np.ones(len(owner), dtype=bool)
        keep[1:] = (owner[1:] != owner[:-1]) | (local[1:] != local[:-1])
        owner, local = owner[keep], local[keep]
    dep_offsets = np.zeros(n_ops + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_ops), out=dep_offsets[1:])
    # Routes of sends.
    arrays = routes.arrays() if len(routes.channels) else None
    rlen = np.zeros(n_ops, dtype=np.int64)
    nodes = np.zeros(0, dtype=np.int64)
    if arrays is not None and G:
        node_off, all_nodes = arrays["node_off"], arrays["nodes"]
        rlen[pos[:G]] = node_off[route + 1] - node_off[route]
        sends_sorted = perm[perm < G]
        st = node_off[route[sends_sorted]]
        ln = node_off[route[sends_sorted] + 1] - st
        flat = np.repeat(st - np.concatenate([[0], np.cumsum(ln)[:-1]]), ln) + np.arange(
            int(ln.sum())
        )
        nodes = all_nodes[flat]
    route_offsets = np.zeros(n_ops + 1, dtype=np.int64)
    np.cumsum(rlen, out=route_offsets[1:])
    sizes = np.zeros((R, 3), dtype=np.int64)
    sizes[:, 0] = c.input_chunks(0)
    sizes[:, 1] = c.output_chunks(0)
    sizes[:, 2] = scratch
    return Program.from_columns(
        c,
        rank_offsets,
        columns,
        dep_offsets,
        local,
        sizes,
        route_offsets,
        nodes,
        name="tacos-alltoall",
    )


def _part(say: Progress, i: int, n: int) -> Progress:
    """Progress of seed ``i`` of ``n``, within the first 85% of the work."""
    return lambda f: say(0.85 * (i + f) / n)


def _line_dims(topology: Topology, channels: list[Channel]) -> list[int]:
    """Per channel, the mesh (line) dimension it moves along, else -1. On a line the links near
    the middle carry the most, and dimension order spreads uniform traffic evenly over them; on
    rings every link is alike and the least loaded choice does better."""
    kinds = topology.dim_kinds
    out = []
    for ch in channels:
        dim = topology.links[ch.links[0]].dim if len(ch.links) == 1 else -1
        out.append(dim if 0 <= dim < len(kinds) and kinds[dim] == "line" else -1)
    return out
