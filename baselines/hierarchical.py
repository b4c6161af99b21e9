"""Hierarchical multi-dimensional collectives on grid topologies, chunks pipelined across the
dimensions, with the default (ASTRA-sim ``baseline``/``ascending``) or Themis dimension order.

Topologies. A grid topology (``Topology.layout``: ring, uniring, fc, switch, mesh, torus,
hypercube, stack; a 1-D ring, fc or switch is a grid of one dimension) numbers its NPUs with
dimension 0 varying fastest, as ASTRA-sim addresses them. FRED's two-level tree is the grid of
two switch dimensions ``(NPUs per L1, L1 switches)``: the NPUs of one L1 switch, then one NPU
of each L1 switch through L2 (the paper's hierarchical collectives on FRED-A and FRED-C); it
needs every L1 switch full. A *group* of dimension ``d`` is the
set of NPUs that differ only in their coordinate ``d``. Dimensions of size 1 are skipped. The
collective must span the whole topology (every NPU holds exactly one rank, in any order):
the groups are the topology's rows, and a subset of the NPUs has none.

Decomposition (ASTRA-sim ``localBWAware``). A chunk (a *stream*) of ``N = prod(shape)`` pieces
goes through one *phase* per dimension: all-reduce = reduce-scatter along dimensions 0, 1, ...,
n-2, an all-reduce (reduce-scatter then all-gather) on dimension n-1, then all-gather along
n-2, ..., 0; reduce-scatter = dimensions ascending; all-gather = dimensions descending. After a
reduce-scatter on ``d`` every member of a group keeps the 1/p_d of the current region that its
coordinate ``d`` names, so dimension ``d`` moves ``(p_d - 1)/p_d`` of a region that shrank by
the sizes of the dimensions before it. Themis (`baselines.themis`) gives every stream its own
order instead (all-reduce: its reduce-scatter phases in that order, then the all-gather phases
in reverse, each a phase of its own).

Within a dimension, the algorithm fits its kind:

- ``ring`` (torus rows, ring dimensions of a stack, a 1-D ring): ring reduce-scatter in the +1
  direction, ring all-gather in the -1 direction (ASTRA-sim: clockwise, then anticlockwise),
  ``p - 1`` steps of one piece each; ``uniring``: both in the +1 direction.
- ``line`` (mesh rows, hypercube bits; no wraparound link): the same ring over the *folded*
  cycle ``0, 2, 4, ..., 5, 3, 1`` of the line (the reverse for all-gather). Every step is at
  most two hops and crosses each directed link of the line exactly once, instead of sending one
  message the whole length of the line back to the start.
- ``fc`` and ``switch``: direct: every member sends each other member its piece (reduce-
  scatter: into a scratch block per sender, reduced into the own piece; all-gather: straight
  into place).

Chunk granularity. ``chunks_per_rank`` must be a multiple of the natural granularity: ``N``
for all-reduce (one slot per piece of a stream), 1 for reduce-scatter and all-gather (one slot
of each rank's block). ``chunks_per_rank / natural`` is the number of streams (ASTRA-sim's
``preferred-dataset-splits``) unless ``splits`` asks for fewer, larger ones. All-reduce stream
``s`` is the contiguous block ``[s*N*u, (s+1)*N*u)`` of the buffer (``u`` slots per piece);
reduce-scatter and all-gather stream ``s`` is slots ``[s*u, (s+1)*u)`` of every rank's block.

Pipelining (ASTRA-sim's per-dimension queues, ``active-chunks-per-dimension``). Every rank has
one queue per dimension: with ``active_per_dim = a`` a phase may start on a rank only when the
phase ``a`` places ahead of it in that dimension's queue has finished there (explicit
dependencies of the phase's first sends on all of that phase's operations). The default
all-reduce's turning point (reduce-scatter then all-gather on the last dimension) is one queue
phase; Themis' are two. The queue order is the start order of a small list schedule: each
dimension a server taking ``a`` phases at a time, first-come first-served (ties: lower stream),
a phase lasting the bytes it moves per NPU over `Grid.bandwidths`. Every dependency points to
a phase that starts earlier in that schedule, so the program cannot deadlock; operations are
emitted in that start order, which also fixes message matching. ``active_per_dim = 0`` adds no
such dependencies: every stream runs as soon as its data allow.

Themis weighs the dimensions by `Grid.bandwidths` too: the rate at which each dimension's
algorithm moves an NPU's data (a direct phase on an fc dimension uses its ``p - 1`` links at
once), so that its load model matches what the network does; ``link_bandwidths`` weighs them
by the bare link bandwidths instead (ASTRA-sim's per-dimension figure).

Buffers. All-reduce works in the output (out of place: one Copy of each stream's block from
the input first). Reduce-scatter and all-gather work in scratch, in each stream's *logical*
layout (piece ``i`` at ``i*u``, ``i`` the mixed-radix number of the owner's coordinates taken
in the stream's reduce-scatter order, first dimension most significant), so that every message
is one contiguous slice: local Copies move each rank's blocks in (reduce-scatter) or out
(all-gather). Direct reduce-scatter phases have scratch blocks of their own. The input is never
written out of place.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from baselines.base import BaselineError, TrackedBuilder
from baselines.themis import default_order, themis_orders
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice
from topologies import Topology

HIERARCHICAL_KINDS = frozenset(
    {CollectiveKind.ALLREDUCE, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLGATHER}
)

DIRECT_DIMS = frozenset({"fc", "switch"})
"""Dimension kinds served by the direct algorithm; every other kind runs a ring."""

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


class Scheduler(StrEnum):
    """How streams choose their dimension order."""

    BASELINE = "baseline"
    """Every stream the default order (ASTRA-sim ``ascending``)."""
    THEMIS = "themis"
    """Per stream, Themis ``offlineGreedy`` (`baselines.themis`)."""


class PhaseOp(StrEnum):
    """What a phase does on its dimension."""

    RS = "rs"
    AG = "ag"
    AR = "ar"
    """Reduce-scatter then all-gather on one dimension (the localBWAware turning point)."""


def hierarchical_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank: ``N`` for all-reduce (one slot per final piece), else 1."""
    if kind is CollectiveKind.ALLREDUCE:
        return num_ranks
    if kind in HIERARCHICAL_KINDS:
        return 1
    raise BaselineError(f"hierarchical does not implement {kind.value}")


# -- the grid ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """The grid of a topology: ``shape`` (dimension 0 fastest), a kind per dimension (``ring``,
    ``uniring``, ``line``, ``fc``, ``switch``) and per dimension the bandwidth of its slowest
    link, in bytes per ns."""

    shape: tuple[int, ...]
    kinds: tuple[str, ...]
    link_bandwidths: tuple[float, ...]

    @property
    def num_npus(self) -> int:
        n = 1
        for p in self.shape:
            n *= p
        return n

    @property
    def strides(self) -> tuple[int, ...]:
        out, acc = [], 1
        for p in self.shape:
            out.append(acc)
            acc *= p
        return tuple(out)

    @property
    def bandwidths(self) -> tuple[float, ...]:
        """Per dimension, the rate at which its algorithm moves one NPU's data (bytes per ns):
        a ring sends on one link at a time; a folded line ring's steps take two store-and-
        forward hops (half the link bandwidth, for lines longer than 2); a direct phase on an
        fc dimension uses its ``p - 1`` links at once; on a switch dimension, the NPU's up link.
        A phase moving ``b`` bytes per NPU on dimension ``d`` takes about ``b / bandwidths[d]``.
        """
        out = []
        for kind, p, bw in zip(self.kinds, self.shape, self.link_bandwidths, strict=True):
            if kind == "fc":
                bw *= p - 1
            elif kind == "line" and p > 2:
                bw /= 2
            out.append(bw)
        return tuple(out)

    def coord(self, npu: int, dim: int) -> int:
        """Coordinate ``dim`` of NPU ``npu``."""
        return (npu // self.strides[dim]) % self.shape[dim]


def topology_grid(topology: Topology) -> Grid:
    """The `Grid` of ``topology``; raises `BaselineError` when it has no grid shape."""
    if topology.name == "fred":
        return _fred_grid(topology)
    layout = topology.layout
    if layout is None or not layout.shape:
        raise BaselineError(
            f"hierarchical collectives need a topology with a grid shape (ring, uniring, fc, "
            f"switch, mesh, torus, hypercube, stack, fred); {topology.name} has none"
        )
    shape = tuple(layout.shape)
    one_dim = len(shape) == 1
    slowest: dict[int, float] = {}
    for link in topology.links:
        d = 0 if one_dim else link.dim
        bw = link.bandwidth_bytes_per_ns
        slowest[d] = min(bw, slowest.get(d, bw))
    fallback = min(slowest.values()) if slowest else 1.0
    bandwidths = tuple(slowest.get(d, fallback) for d in range(len(shape)))
    return Grid(shape, tuple(layout.kinds), bandwidths)


def _fred_grid(topology: Topology) -> Grid:
    """FRED as the grid (NPUs per L1, L1 switches) of two switch dimensions; the second
    dimension's bandwidth is an NPU's share of its L1 switch's up-link."""
    n = topology.num_npus
    l1_of = [topology.successors(v)[0] for v in range(n)]
    per_l1 = l1_of.count(l1_of[0])
    if n % per_l1 or any(l1_of[v] != l1_of[v - v % per_l1] for v in range(n)):
        raise BaselineError(
            f"hierarchical collectives on FRED need every L1 switch full; {topology.spec} "
            f"has {n} NPUs and {per_l1} per L1 switch"
        )
    npu_bw = min(topology.links_between(v, l1_of[v])[0].bandwidth_bytes_per_ns for v in range(n))
    up = [
        lk.bandwidth_bytes_per_ns / per_l1
        for lk in topology.links
        if topology.is_switch(lk.src) and topology.is_switch(lk.dst)
    ]
    shape = (per_l1, n // per_l1)
    return Grid(shape, ("switch", "switch"), (npu_bw, min(up, default=npu_bw)))


def ring_cycles(kind: str, p: int) -> tuple[list[int], list[int]]:
    """The cycles of coordinates a ring dimension of ``kind`` and size ``p`` uses for
    reduce-scatter and for all-gather (member ``cycle[i]`` sends to ``cycle[i+1]``)."""
    if kind == "line":
        cycle = list(range(0, p, 2)) + list(range(p - 1 - p % 2, 0, -2))
    else:
        cycle = list(range(p))
    if kind == "uniring":
        return cycle, cycle
    return cycle, cycle[::-1]


# -- the plan: streams, their orders and phases, the queue order --------------------------------


@dataclass(frozen=True)
class Phase:
    """One phase of one stream: ``op`` along dimension ``dim`` at ``level`` (the region is the
    stream's ``N`` pieces divided by the sizes of the dimensions before ``level`` in the
    stream's reduce-scatter order). ``after`` is the phase (an index into `Plan.phases`) that
    must finish first on each rank (the queue predecessor), or -1."""

    stream: int
    dim: int
    op: PhaseOp
    level: int
    duration: float
    after: int = -1


@dataclass(frozen=True)
class Plan:
    """How a hierarchical collective runs: ``streams`` streams of ``N`` pieces of ``unit``
    slots; ``orders[s]`` is stream ``s``'s reduce-scatter order (all-gather: all-gather order);
    ``phases`` in emission (schedule start) order."""

    kind: CollectiveKind
    grid: Grid
    streams: int
    unit: int
    orders: tuple[tuple[int, ...], ...]
    phases: tuple[Phase, ...]

    def rs_order(self, stream: int) -> tuple[int, ...]:
        """The stream's dimensions from the largest region to the smallest."""
        order = self.orders[stream]
        return order[::-1] if self.kind is CollectiveKind.ALLGATHER else order


def _phase_time(p: int, fraction: float, bandwidth: float) -> float:
    """Time per unit of stream data of one reduce-scatter or all-gather on a dimension of size
    ``p`` and `Grid.bandwidths` ``bandwidth``, over a region that is ``fraction`` of the stream
    (zero latency; only ratios matter)."""
    return fraction * (p - 1) / p / bandwidth


def _stream_phases(
    kind: CollectiveKind, grid: Grid, order: tuple[int, ...], merge_turn: bool
) -> list[tuple[int, PhaseOp, int, float]]:
    """(dim, op, level, duration) of one stream's phases, in order."""
    rs = order[::-1] if kind is CollectiveKind.ALLGATHER else order
    bandwidths = grid.bandwidths
    fractions, f = [], 1.0
    for d in rs:
        fractions.append(f)
        f /= grid.shape[d]

    def one(level: int, op: PhaseOp) -> tuple[int, PhaseOp, int, float]:
        d = rs[level]
        t = _phase_time(grid.shape[d], fractions[level], bandwidths[d])
        return d, op, level, 2 * t if op is PhaseOp.AR else t

    n = len(rs)
    if kind is CollectiveKind.REDUCE_SCATTER:
        return [one(k, PhaseOp.RS) for k in range(n)]
    if kind is CollectiveKind.ALLGATHER:
        return [one(k, PhaseOp.AG) for k in reversed(range(n))]
    if merge_turn and n:
        return (
            [one(k, PhaseOp.RS) for k in range(n - 1)]
            + [one(n - 1, PhaseOp.AR)]
            + [one(k, PhaseOp.AG) for k in reversed(range(n - 1))]
        )
    return [one(k, PhaseOp.RS) for k in range(n)] + [one(k, PhaseOp.AG) for k in reversed(range(n))]


def _schedule(
    streams: list[list[tuple[int, PhaseOp, int, float]]], active: int
) -> list[tuple[int, int]]:
    """Start order of ``(stream, phase index)`` under per-dimension FIFO queues that run at
    most ``active`` phases at once (0: unlimited)."""
    limit = active if active > 0 else max(1, len(streams))
    ready: dict[int, list[tuple[float, int, int]]] = {}
    running: dict[int, int] = {}
    events: list[tuple[float, int, int, int]] = []  # (finish, seq, stream, index)
    for s, phases in enumerate(streams):
        if phases:
            heapq.heappush(ready.setdefault(phases[0][0], []), (0.0, s, 0))
    started: list[tuple[int, int]] = []
    now, seq = 0.0, 0
    while True:
        for d in sorted(ready):
            queue = ready[d]
            while queue and queue[0][0] <= now and running.get(d, 0) < limit:
                _, s, i = heapq.heappop(queue)
                running[d] = running.get(d, 0) + 1
                started.append((s, i))
                heapq.heappush(events, (now + streams[s][i][3], seq, s, i))
                seq += 1
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] <= now:
            _, _, s, i = heapq.heappop(events)
            running[streams[s][i][0]] -= 1
            if i + 1 < len(streams[s]):
                heapq.heappush(ready.setdefault(streams[s][i + 1][0], []), (now, s, i + 1))
    return started


def make_plan(
    collective: Collective,
    topology: Topology,
    scheduler: Scheduler = Scheduler.BASELINE,
    *,
    splits: int | None = None,
    active_per_dim: int = 1,
    link_bandwidths: bool = False,
) -> Plan:
    """The `Plan` of ``collective`` on ``topology``: streams, orders and phases in start order.

    Raises `BaselineError` for a kind not served, a topology without a grid shape, ranks that
    do not cover every NPU, a chunk count that is not a multiple of the natural granularity, a
    ``splits`` that does not divide the number of natural units, or a negative
    ``active_per_dim``. Themis weighs the dimensions by `Grid.bandwidths` (what each
    dimension's algorithm achieves per NPU), or with ``link_bandwidths`` by the bare link
    bandwidths (ASTRA-sim's per-dimension figure, blind to an fc dimension's parallel links).
    """
    c = collective
    kind, n, cf = c.kind, c.num_ranks, c.chunks_per_rank
    label = scheduler.value if scheduler is Scheduler.THEMIS else "hierarchical"
    if kind not in HIERARCHICAL_KINDS:
        raise BaselineError(f"{label} does not implement {kind.value}")
    grid = topology_grid(topology)
    if n != topology.num_npus or grid.num_npus != n:
        raise BaselineError(
            f"{label} needs one rank on every NPU of the topology (its per-dimension groups are "
            f"the rows of the {'x'.join(map(str, grid.shape))} grid, and a subset of the NPUs "
            f"has no such rows); got {n} ranks on {topology.num_npus} NPUs"
        )
    natural = hierarchical_granularity(kind, n)
    if cf % natural:
        raise BaselineError(
            f"{label} {kind.value} over {n} ranks needs a multiple of {natural} chunks per rank, "
            f"got {cf}"
        )
    units = cf // natural
    streams = units if splits is None else splits
    if streams < 1 or units % streams:
        raise BaselineError(
            f"{label}: {splits} splits do not divide the {units} natural units of {cf} chunks "
            f"per rank"
        )
    if active_per_dim < 0:
        raise BaselineError(f"active_per_dim must be 0 (unlimited) or more, got {active_per_dim}")
    if scheduler is Scheduler.THEMIS:
        # Themis' chunk size c: the stream for all-reduce and reduce-scatter, the per-rank
        # piece for all-gather; the same for every stream, so only its ratio to loads matters.
        size = 1.0 if kind is CollectiveKind.ALLGATHER else float(n)
        bandwidths = grid.link_bandwidths if link_bandwidths else grid.bandwidths
        orders = themis_orders(kind, grid.shape, bandwidths, streams, chunk_size=size)
    else:
        orders = [default_order(kind, grid.shape)] * streams
    merge_turn = scheduler is Scheduler.BASELINE
    per_stream = [_stream_phases(kind, grid, o, merge_turn) for o in orders]
    started = _schedule(per_stream, active_per_dim)
    last_on_dim: dict[int, list[int]] = {}
    phases = []
    for i, (s, j) in enumerate(started):
        d, op, level, duration = per_stream[s][j]
        queue = last_on_dim.setdefault(d, [])
        after = queue[-active_per_dim] if active_per_dim and len(queue) >= active_per_dim else -1
        queue.append(i)
        phases.append(Phase(s, d, op, level, duration, after))
    return Plan(kind, grid, streams, units // streams, tuple(orders), tuple(phases))


# -- the program ---------------------------------------------------------------------------------


class _GatedBuilder(TrackedBuilder):
    """`TrackedBuilder` (automatic per-slot dependencies over slot ranges) whose sends also
    take explicit dependencies, as ``ProgramBuilder(auto_deps=True)`` does."""

    def send(
        self, rank: int, peer: int, src: Slice, *, tag: int = 0, deps: Sequence[int] = ()
    ) -> int:
        auto = self._track(rank, src, None)
        return self._builder.send(rank, peer, src, tag=tag, deps=[*auto, *deps])


class _Emitter:
    """Appends a plan's operations to a builder, phase by phase, for every rank."""

    def __init__(self, collective: Collective, plan: Plan, name: str, tracked: bool) -> None:
        self.c = collective
        self.plan = plan
        self.b: ProgramBuilder | _GatedBuilder = (
            _GatedBuilder(collective, name=name)
            if tracked
            else ProgramBuilder(collective, auto_deps=True, name=name)
        )
        grid = plan.grid
        n = collective.num_ranks
        self.n = n
        self.npu = [collective.npu(r) for r in range(n)]
        rank_of = {npu: r for r, npu in enumerate(self.npu)}
        strides = grid.strides
        self.coords = [[grid.coord(npu, d) for d in range(len(grid.shape))] for npu in self.npu]
        # members[d][r][x]: the rank at coordinate x of rank r's group along d.
        self.members = [
            [
                [
                    rank_of[self.npu[r] + (x - self.coords[r][d]) * strides[d]]
                    for x in range(grid.shape[d])
                ]
                for r in range(n)
            ]
            for d in range(len(grid.shape))
        ]
        self.cycles = [ring_cycles(k, p) for k, p in zip(grid.kinds, grid.shape, strict=True)]
        self.unit = plan.unit
        self.work = OUT if plan.kind is CollectiveKind.ALLREDUCE else SCR
        stream_slots = n * plan.unit
        self.scratch_next = 0 if plan.kind is CollectiveKind.ALLREDUCE else plan.streams * n
        self.scratch_next *= plan.unit
        self.stream_slots = stream_slots
        # Per stream: the sizes of its regions, per level, and each rank's region offset.
        self.region: list[list[int]] = []
        self.offsets: list[list[list[int]]] = []
        for s in range(plan.streams):
            rs = plan.rs_order(s)
            sizes, offs = [n], [[0] * n]
            for d in rs:
                piece = sizes[-1] // grid.shape[d]
                prev = offs[-1]
                offs.append([prev[r] + self.coords[r][d] * piece for r in range(n)])
                sizes.append(piece)
            self.region.append(sizes)
            self.offsets.append(offs)
        self.ops: list[list[list[int]]] = []  # per phase, per rank: its operation ids

    def slot(self, stream: int, rank: int, level: int, piece: int) -> Slice:
        """Piece ``piece`` of ``rank``'s region at ``level`` (pieces of the next level)."""
        u = self.unit
        size = self.region[stream][level + 1]
        start = stream * self.stream_slots + (self.offsets[stream][level][rank] + piece * size) * u
        return Slice(self.work, start, size * u)

    def logical(self, stream: int, rank: int) -> int:
        """The logical index of ``rank``'s final piece in ``stream``."""
        return self.offsets[stream][-1][rank]

    # -- stream start and end -----------------------------------------------------------------
    def begin(self, s: int) -> None:
        c, b, u, n = self.c, self.b, self.unit, self.n
        base = s * self.stream_slots
        if c.kind is CollectiveKind.ALLREDUCE:
            if not c.inplace:
                for r in range(n):
                    b.copy(r, Slice(IN, base, n * u), Slice(OUT, base, n * u))
        elif c.kind is CollectiveKind.REDUCE_SCATTER:
            cf = c.chunks_per_rank
            for r in range(n):
                for q in range(n):
                    dst = Slice(SCR, base + self.logical(s, q) * u, u)
                    b.copy(r, Slice(IN, q * cf + s * u, u), dst)
        else:
            for r in range(n):
                dst = Slice(SCR, base + self.logical(s, r) * u, u)
                b.copy(r, Slice(IN, s * u, u), dst)

    def end(self, s: int) -> None:
        c, b, u, n = self.c, self.b, self.unit, self.n
        base = s * self.stream_slots
        if c.kind is CollectiveKind.REDUCE_SCATTER:
            for r in range(n):
                b.copy(r, Slice(SCR, base + self.logical(s, r) * u, u), Slice(OUT, s * u, u))
        elif c.kind is CollectiveKind.ALLGATHER:
            cf = c.chunks_per_rank
            for r in range(n):
                for q in range(n):
                    if q == r and c.inplace:
                        continue  # the rank's own block already holds its input
                    src = Slice(SCR, base + self.logical(s, q) * u, u)
                    b.copy(r, src, Slice(OUT, q * cf + s * u, u))

    # -- phases -------------------------------------------------------------------------------
    def phase(self, ph: Phase) -> None:
        gate: list[list[int]] = self.ops[ph.after] if ph.after >= 0 else [[] for _ in range(self.n)]
        mine: list[list[int]] = [[] for _ in range(self.n)]
        direct = self.plan.grid.kinds[ph.dim] in DIRECT_DIMS
        if ph.op in (PhaseOp.RS, PhaseOp.AR):
            if direct:
                self._direct_rs(ph, gate, mine)
            else:
                self._ring_rs(ph, gate, mine)
            gate = [[] for _ in range(self.n)]
        if ph.op in (PhaseOp.AG, PhaseOp.AR):
            if direct:
                self._direct_ag(ph, gate, mine)
            else:
                self._ring_ag(ph, gate, mine)
        self.ops.append(mine)

    def _ring_rs(self, ph: Phase, gate: list[list[int]], mine: list[list[int]]) -> None:
        s, d, k = ph.stream, ph.dim, ph.level
        cycle = self.cycles[d][0]
        p = len(cycle)
        pos = {x: i for i, x in enumerate(cycle)}
        b = self.b
        for t in range(p - 1):
            for r in range(self.n):
                group = self.members[d][r]
                i = pos[self.coords[r][d]]
                nxt, prv = group[cycle[(i + 1) % p]], group[cycle[(i - 1) % p]]
                src = self.slot(s, r, k, cycle[(i - t - 1) % p])
                dst = self.slot(s, r, k, cycle[(i - t - 2) % p])
                mine[r].append(b.send(r, nxt, src, deps=gate[r] if t == 0 else ()))
                mine[r].append(b.recv(r, prv, dst, reduce=True))

    def _ring_ag(self, ph: Phase, gate: list[list[int]], mine: list[list[int]]) -> None:
        s, d, k = ph.stream, ph.dim, ph.level
        cycle = self.cycles[d][1]
        p = len(cycle)
        pos = {x: i for i, x in enumerate(cycle)}
        b = self.b
        for t in range(p - 1):
            for r in range(self.n):
                group = self.members[d][r]
                i = pos[self.coords[r][d]]
                nxt, prv = group[cycle[(i + 1) % p]], group[cycle[(i - 1) % p]]
                src = self.slot(s, r, k, cycle[(i - t) % p])
                dst = self.slot(s, r, k, cycle[(i - t - 1) % p])
                mine[r].append(b.send(r, nxt, src, deps=gate[r] if t == 0 else ()))
                mine[r].append(b.recv(r, prv, dst))

    def _direct_rs(self, ph: Phase, gate: list[list[int]], mine: list[list[int]]) -> None:
        s, d, k = ph.stream, ph.dim, ph.level
        p = self.plan.grid.shape[d]
        count = self.region[s][k + 1] * self.unit
        block = self.scratch_next
        self.scratch_next += (p - 1) * count
        b = self.b
        for m in range(1, p):
            for r in range(self.n):
                group = self.members[d][r]
                j = self.coords[r][d]
                own = self.slot(s, r, k, j)
                to, frm = (j + m) % p, (j - m) % p
                tmp = Slice(SCR, block + (m - 1) * count, count)
                mine[r].append(b.send(r, group[to], self.slot(s, r, k, to), deps=gate[r]))
                mine[r].append(b.recv(r, group[frm], tmp))
                mine[r].append(b.reduce(r, tmp, own))

    def _direct_ag(self, ph: Phase, gate: list[list[int]], mine: list[list[int]]) -> None:
        s, d, k = ph.stream, ph.dim, ph.level
        p = self.plan.grid.shape[d]
        b = self.b
        for m in range(1, p):
            for r in range(self.n):
                group = self.members[d][r]
                j = self.coords[r][d]
                to, frm = (j + m) % p, (j - m) % p
                mine[r].append(b.send(r, group[to], self.slot(s, r, k, j), deps=gate[r]))
                mine[r].append(b.recv(r, group[frm], self.slot(s, r, k, frm)))

    def build(self) -> Program:
        plan = self.plan
        remaining = [0] * plan.streams
        for ph in plan.phases:
            remaining[ph.stream] += 1
        begun = [False] * plan.streams
        for ph in plan.phases:
            if not begun[ph.stream]:
                begun[ph.stream] = True
                self.begin(ph.stream)
            self.phase(ph)
            remaining[ph.stream] -= 1
            if remaining[ph.stream] == 0:
                self.end(ph.stream)
        for s in range(plan.streams):
            if not begun[s]:  # no dimension of size > 1 (not on a real topology)
                self.begin(s)
                self.end(s)
        return self.b.build()


def hierarchical_program(
    collective: Collective,
    topology: Topology,
    scheduler: Scheduler = Scheduler.BASELINE,
    *,
    splits: int | None = None,
    active_per_dim: int = 1,
    link_bandwidths: bool = False,
    name: str = "",
    tracked: bool = True,
) -> Program:
    """The hierarchical program of ``collective`` (all-reduce, reduce-scatter or all-gather)
    on the whole of the grid ``topology``, with ``scheduler``'s dimension orders.

    ``splits`` is the number of streams (default: ``chunks_per_rank`` over the natural
    granularity, i.e. one natural unit each); ``active_per_dim`` the phases one dimension's
    queue runs at once per rank (0: no limit); ``link_bandwidths``: see `make_plan`.
    ``tracked`` computes the automatic dependencies over slot ranges (fast); otherwise
    ``ProgramBuilder(auto_deps=True)`` builds the identical Program. The result satisfies
    ``collective`` and passes ``chakra_ir.verify``. Raises `BaselineError` as `make_plan`
    does.
    """
    plan = make_plan(
        collective,
        topology,
        scheduler,
        splits=splits,
        active_per_dim=active_per_dim,
        link_bandwidths=link_bandwidths,
    )
    return _Emitter(collective, plan, name, tracked).build()
