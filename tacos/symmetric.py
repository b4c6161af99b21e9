"""Symmetric synthesis: TACOS's link-chunk matching over orbits, for translation-invariant networks.

When a translation group maps the network onto itself (`symmetry_of`: rings, one-way rings,
tori, hypercubes, fully connected; no switches, no failed links, identity placement), the
state of every rank is rank 0's state translated. The matching then runs on rank 0 alone: its
links are the link *orbits* (one per direction ``g``: the links ``r -> r + g``) and its chunks
the chunk orbits (offset ``d``: rank ``r`` holding the block of rank ``r - d``). Rank 0 may send
offset ``d`` on direction ``g`` when it holds ``d`` and does not hold or expect ``d + g`` (what
rank ``g`` would receive, seen from rank 0); the send makes every rank send at once, so rank 0
receives offset ``d + g`` from ``-g``. Each event costs O(directions x chunks) numpy work
instead of O(ranks x links x chunks).

All-Gather is matched forward; All-Reduce is its time reversal (a Reduce-Scatter with reducing
receives, needing every direction's reverse at equal cost) followed by the All-Gather, with
every chunk taken as ready when the Reduce-Scatter ends. The result is a
`chakra_ir.symmetric.SymmetricProgram`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.program import OpKind
from chakra_ir.symmetric import TEMPLATE_COLUMNS, SymmetricProgram, TranslationGroup
from tacos.errors import TacosError
from tacos.symmetric_timing import replay_symmetric
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]
SYMMETRIC_KINDS = (CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE)


@dataclass(frozen=True)
class Symmetry:
    """A topology's translation group and its link orbits: ``directions[j]`` (a group element)
    with one link's ``(serialization, arrival)`` ps per chunk in ``hop[j]``."""

    group: TranslationGroup
    directions: tuple[int, ...]
    links: tuple[int, ...]
    """The index of rank 0's link of each direction in `Topology.links`."""


def symmetry_of(topology: Topology, collective: Collective) -> Symmetry | None:
    """The translation symmetry that makes ``collective`` on ``topology`` symmetric, or None.

    Needs: All-Gather or All-Reduce without process groups and with identity placement over
    every NPU; no switches; at most one link per ordered pair; every link ``u -> v`` matched by
    ``u + e -> v + e`` with the same latency and bandwidth for each unit translation ``e``.
    """
    c = topology
    if collective.kind not in SYMMETRIC_KINDS or collective.groups:
        return None
    if c.num_switches or collective.num_ranks != c.num_npus:
        return None
    if collective.placement and collective.placement != tuple(range(c.num_npus)):
        return None
    shape = c.layout.shape if c.layout is not None else (c.num_npus,)
    if int(np.prod(shape)) != c.num_npus:
        return None
    group = TranslationGroup(tuple(int(s) for s in shape))
    table: dict[tuple[int, int], tuple[float, float]] = {}
    for link in c.links:
        key = (link.src, link.dst)
        if key in table:
            return None
        table[key] = (link.latency_ns, link.bandwidth_bytes_per_ns)
    if not table:
        return None
    src = np.fromiter((k[0] for k in table), dtype=np.int64, count=len(table))
    dst = np.fromiter((k[1] for k in table), dtype=np.int64, count=len(table))
    costs = list(table.values())
    for dim, size in enumerate(shape):
        if size == 1:
            continue
        e = np.zeros((1, len(shape)), dtype=np.int64)
        e[0, dim] = 1
        unit = int(group.ravel(e)[0])
        s2, d2 = group.add(src, unit).tolist(), group.add(dst, unit).tolist()
        for a, b, cost in zip(s2, d2, costs, strict=True):
            if table.get((a, b)) != cost:
                return None
    out = c.out_links(0)
    return Symmetry(group, tuple(lk.dst for lk in out), tuple(lk.index for lk in out))


@dataclass(frozen=True)
class OrbitPlan:
    """Rank 0's transfers, in planned order: start ps, direction index, offset sent (an
    index ``d * k + i`` of chunk ``i`` of offset ``d``), and the planned makespan."""

    start: I64
    direction: I64
    offset: I64
    arrival: I64
    makespan_ps: int


def _targets(group: TranslationGroup, k: int, g: int) -> I64:
    """Offset index of ``(d + g, i)`` for every offset index ``d * k + i``."""
    d = np.arange(group.order, dtype=np.int64)
    moved = group.add(d, g)
    return (moved[:, None] * k + np.arange(k, dtype=np.int64)[None, :]).reshape(-1)


def match_allgather(
    sym: Symmetry, topology: Topology, k: int, chunk_bytes: float, cost: CostModel, seed: int
) -> OrbitPlan:
    """The orbit matching of an All-Gather of ``k`` chunks per rank (module docstring). Even
    seeds pick uniformly among the candidates; odd seeds first keep those that fewest of the
    receiver's other in-neighbours hold or expect."""
    group = sym.group
    m = group.order * k
    hops = [cost.hop_ps(topology.links[j], chunk_bytes) for j in sym.links]
    tgt = [_targets(group, k, g) for g in sym.directions]
    # odd seeds: prefer offsets that receiver g's other in-neighbours g - h, which see it as
    # (d + g - h, i), do not hold or expect (TACOS's even-seed rule, here on odd seeds)
    spread_rule = seed % 2 == 1
    spread: list[list[I64]] = [
        [_targets(group, k, int(group.sub(g, h)[0])) for h in sym.directions if h != g]
        if spread_rule
        else []
        for g in sym.directions
    ]
    known_at = np.full(m, -1, dtype=np.int64)
    known_at[:k] = 0
    free = [0] * len(hops)
    rng = np.random.default_rng(seed)
    times: list[int] = [0]
    starts: list[int] = []
    dirs: list[int] = []
    offs: list[int] = []
    arrs: list[int] = []
    have = k
    last = 0
    while have < m:
        if not times:
            raise TacosError("the symmetric matching stalled: the network is not connected")
        t = heapq.heappop(times)
        while times and times[0] == t:
            heapq.heappop(times)
        held = (known_at >= 0) & (known_at <= t)
        for j, (ser, arr) in enumerate(hops):
            if free[j] > t:
                continue
            cand = np.flatnonzero(held & (known_at[tgt[j]] < 0))
            if len(cand) == 0:
                continue
            if spread_rule and len(cand) > 1 and spread[j]:
                held_near = np.zeros(len(cand), dtype=np.int64)
                for near in spread[j]:
                    held_near += known_at[near[cand]] >= 0
                cand = cand[held_near == held_near.min()]
            x = int(cand[rng.integers(len(cand))])
            y = int(tgt[j][x])
            known_at[y] = t + arr
            have += 1
            free[j] = t + ser
            heapq.heappush(times, t + ser)
            heapq.heappush(times, t + arr)
            starts.append(t)
            dirs.append(j)
            offs.append(x)
            arrs.append(t + arr)
            last = max(last, t + arr)
    return OrbitPlan(
        np.asarray(starts, dtype=np.int64),
        np.asarray(dirs, dtype=np.int64),
        np.asarray(offs, dtype=np.int64),
        np.asarray(arrs, dtype=np.int64),
        last,
    )


class _Template:
    """Rank 0's operations while they are being planned (time, class, order) -> columns."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, tuple[int, ...], list[int]]] = []

    def add(self, when: int, cls: int, row: tuple[int, ...], deps: list[int]) -> int:
        self.rows.append((when, cls, len(self.rows), row, deps))
        return len(self.rows) - 1

    def build(
        self, collective: Collective, sym: Symmetry, k: int, name: str, ns: float
    ) -> SymmetricProgram:
        order = sorted(range(len(self.rows)), key=lambda j: self.rows[j][:3])
        new_id = np.empty(len(order), dtype=np.int64)
        new_id[order] = np.arange(len(order))
        table = np.array([self.rows[j][3] for j in order], dtype=np.int32).reshape(-1, 8)
        dep_lists = [sorted(int(new_id[d]) for d in self.rows[j][4]) for j in order]
        # Timing: each send also waits for the last receive planned no later than its start,
        # so that it joins its link's queue in planned order and never early (TACOS's tdep).
        last_recv = -1
        for pos, j in enumerate(order):
            kind = self.rows[j][3][0]
            if kind in (int(OpKind.RECV), int(OpKind.RECV_REDUCE)):
                last_recv = pos
            elif kind == int(OpKind.SEND) and last_recv >= 0 and last_recv not in dep_lists[pos]:
                dep_lists[pos] = sorted([*dep_lists[pos], last_recv])
        offsets = np.zeros(len(order) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(x) for x in dep_lists])
        deps = np.fromiter(
            (d for x in dep_lists for d in x), dtype=np.int32, count=int(offsets[-1])
        )
        cols = {nm: np.ascontiguousarray(table[:, i]) for i, nm in enumerate(TEMPLATE_COLUMNS)}
        return SymmetricProgram(collective, sym.group, k, cols, offsets, deps, name, ns)


def synthesize_symmetric(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int = 0,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> SymmetricProgram:
    """Synthesize ``collective`` on ``topology`` in orbit form. Raises TacosError when the
    pair is not symmetric (`symmetry_of`) or an All-Reduce's links have no equal reverse."""
    sym = symmetry_of(topology, collective)
    if sym is None:
        raise TacosError(
            f"{collective.kind.value} on {topology.spec} is not translation-symmetric "
            "(needs a ring, torus, hypercube or fully connected network without failures)"
        )
    n = collective.num_ranks
    reducing = collective.kind is CollectiveKind.ALLREDUCE
    k = collective.chunks_per_rank // n if reducing else collective.chunks_per_rank
    if reducing and k * n != collective.chunks_per_rank:
        raise TacosError("a symmetric All-Reduce needs a multiple of the ranks as chunks")
    plan = match_allgather(sym, topology, k, chunk_bytes, cost, seed)
    group, dirs = sym.group, np.asarray(sym.directions, dtype=np.int64)
    d_of = plan.offset // k
    i_of = plan.offset % k
    g_of = dirs[plan.direction]
    recv_d = group.add(d_of, g_of) if len(d_of) else d_of
    neg = group.neg(dirs)
    out, inp = int(Buffer.OUTPUT), int(Buffer.INPUT)
    tp = _Template()
    m = n * k
    writer = [-1] * m  # last op that wrote each offset slot
    own = range(k) if not reducing else range(m)
    if not collective.inplace:
        for x in own:
            d, i = divmod(x, k)
            src_elem = d if reducing else -1
            row = (int(OpKind.COPY), -1, inp, src_elem, i, out, d, i)
            writer[x] = tp.add(0, 0, row, [])
    shift = 0
    readers: list[list[int]] = [[] for _ in range(m)]
    if reducing:
        if not all(int(v) in sym.directions for v in neg):
            raise TacosError(
                f"{topology.spec} has a link without a reverse: no symmetric All-Reduce"
            )
        back = [sym.directions.index(int(v)) for v in neg]
        arr_back = [cost.hop_ps(topology.links[sym.links[b]], chunk_bytes)[1] for b in back]
        arr_fwd = [cost.hop_ps(topology.links[j], chunk_bytes)[1] for j in sym.links]
        if arr_back != arr_fwd:
            raise TacosError(f"{topology.spec} has links whose reverse costs differ")
        t_end = plan.makespan_ps
        # reversed order: the latest All-Gather arrival becomes the first Reduce-Scatter send
        for j in np.argsort(-plan.arrival, kind="stable").tolist():
            start = t_end - int(plan.arrival[j])
            gi = int(plan.direction[j])
            sd, rd, i = int(recv_d[j]), int(d_of[j]), int(i_of[j])
            ys, yr = sd * k + i, rd * k + i
            send = (int(OpKind.SEND), int(neg[gi]), out, sd, i, -1, -1, -1)
            s_id = tp.add(start, 2, send, [writer[ys]] if writer[ys] >= 0 else [])
            readers[ys].append(s_id)
            recv = (int(OpKind.RECV_REDUCE), int(dirs[gi]), -1, -1, -1, out, rd, i)
            arrive = start + arr_fwd[gi]
            writer[yr] = tp.add(arrive, 1, recv, [writer[yr]] if writer[yr] >= 0 else [])
        shift = t_end
    for j in range(len(plan.start)):
        gi = int(plan.direction[j])
        sd, rd, i = int(d_of[j]), int(recv_d[j]), int(i_of[j])
        xs, xr = sd * k + i, rd * k + i
        send = (int(OpKind.SEND), int(dirs[gi]), out, sd, i, -1, -1, -1)
        tp.add(shift + int(plan.start[j]), 2, send, [writer[xs]] if writer[xs] >= 0 else [])
        recv = (int(OpKind.RECV), int(neg[gi]), -1, -1, -1, out, rd, i)
        writer[xr] = tp.add(shift + int(plan.arrival[j]), 1, recv, list(readers[xr]))
    program = tp.build(collective, sym, k, f"tacos-symmetric-{collective.kind.value}", 0.0)
    program.planned_ns = replay_symmetric(program, topology, chunk_bytes, cost=cost)
    return program
