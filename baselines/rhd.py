"""Recursive halving-doubling, with Rabenseifner's fold for non-powers of two.

For N ranks let P = 2^floor(log2 N) and X = N - P. Ranks ``2v`` and ``2v+1`` for v < X form
a fold pair: the even rank sends all its data to the odd one (which reduces or stores it),
sits out the core, and gets its result back at the end. The P core ranks (the odd rank of
each pair, then ranks 2X..N-1) are renumbered 0..P-1 and run the power-of-two algorithm
(``log2 P`` exchanges with partners ``v XOR 2^l``); a core rank that stands for a pair owns
both ranks' pieces. Every exchange moves one contiguous slice, so:

- reduce-scatter: recursive halving with the far partner first (distance P/2 with half the
  data, then P/4 ...), since rank r must end with piece r; the even rank of a pair gets its
  piece from its partner at the end.
- all-gather: recursive doubling with the near partner first (distance 1 with one piece,
  then 2 ...); at the end the odd rank of a pair sends the even one everything it lacks (two
  slices: the pieces before and after the even rank's own).
- all-reduce: the buffer is cut into P pieces; reduce-scatter by recursive halving with the
  near partner first (distance 1 with half the buffer) and all-gather by recursive doubling
  in the mirror order, so core rank v ends the halving with piece bitreverse(v). Rank counts
  that are not powers of two pay two whole-buffer messages for the fold.

Receives that combine data are reducing receives into the working buffer: the output (all-
reduce, all-gather), the input in place, or a scratch copy of the input for an out-of-place
reduce-scatter.
"""

from __future__ import annotations

from dataclasses import dataclass

from baselines.base import BaselineError, Builder, log2_floor, new_builder, trivial_program
from chakra_ir import Buffer, Collective, CollectiveKind, Program, Slice

RHD_KINDS = frozenset(
    {CollectiveKind.ALLGATHER, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLREDUCE}
)

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def rhd_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank: 2^floor(log2 N) for all-reduce, else 1."""
    if kind not in RHD_KINDS:
        raise BaselineError(f"rhd does not implement {kind.value}")
    return 1 << log2_floor(num_ranks) if kind is CollectiveKind.ALLREDUCE else 1


@dataclass(frozen=True)
class _Fold:
    """The rank renumbering of the non-power-of-two extension."""

    n: int

    @property
    def core_size(self) -> int:
        return 1 << log2_floor(self.n)

    @property
    def extra(self) -> int:
        return self.n - self.core_size

    def rank(self, v: int) -> int:
        """The rank that plays core rank ``v``."""
        return 2 * v + 1 if v < self.extra else v + self.extra

    def partner(self, v: int) -> int:
        """The folded-away even rank of core rank ``v``, or -1."""
        return 2 * v if v < self.extra else -1

    def pieces(self, a: int, b: int) -> tuple[int, int]:
        """The rank pieces owned by core ranks ``a..b-1`` (reduce-scatter, all-gather)."""
        x = self.extra
        start = 2 * a if a < x else a + x
        end = 2 * b if b <= x else b + x
        return start, end


def rhd_program(collective: Collective, *, name: str = "", tracked: bool = True) -> Program:
    """The recursive halving-doubling program of ``collective`` (any rank count).

    ``tracked`` computes the per-slot dependencies over slot ranges (fast); otherwise
    ``ProgramBuilder`` with automatic dependencies builds the identical Program.
    """
    c = collective
    natural = rhd_granularity(c.kind, c.num_ranks)
    if c.chunks_per_rank % natural:
        raise BaselineError(
            f"rhd {c.kind.value} over {c.num_ranks} ranks needs a multiple of {natural} chunks "
            f"per rank, got {c.chunks_per_rank}"
        )
    if c.num_ranks == 1:
        return trivial_program(c, name)
    b = new_builder(c, name, tracked)
    fold = _Fold(c.num_ranks)
    if c.kind is CollectiveKind.ALLREDUCE:
        _allreduce(b, c, fold)
    elif c.kind is CollectiveKind.REDUCE_SCATTER:
        _reduce_scatter(b, c, fold)
    else:
        _allgather(b, c, fold)
    return b.build()


def _exchange(b: Builder, moves: list[tuple[int, int, Slice, Slice]], reduce: bool) -> None:
    """One step: every (rank, peer, send slice, receive slice) sends first, then receives."""
    for r, peer, src, _ in moves:
        b.send(r, peer, src)
    for r, peer, _, dst in moves:
        b.recv(r, peer, dst, reduce=reduce)


def _allreduce(b: Builder, c: Collective, fold: _Fold) -> None:
    cf, p = c.chunks_per_rank, fold.core_size
    k = cf // p
    whole = Slice(OUT, 0, cf)
    if not c.inplace:
        for v in range(p):
            b.copy(fold.rank(v), Slice(IN, 0, cf), whole)
    for v in range(fold.extra):
        b.send(fold.partner(v), fold.rank(v), Slice(IN, 0, cf))
        b.recv(fold.rank(v), fold.partner(v), whole, reduce=True)
    # Reduce-scatter by recursive halving, near partner first: ranges of pieces.
    ranges = [(0, p)] * p
    kept: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    sent: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    steps = log2_floor(p)
    for level in range(steps):
        bit = 1 << level
        moves = []
        for v in range(p):
            lo, hi = ranges[v]
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if v & bit else ((lo, mid), (mid, hi))
            kept[v].append(keep)
            sent[v].append(give)
            ranges[v] = keep
            fresh = level == 0 and fold.partner(v) < 0
            src = Slice(IN if fresh else OUT, give[0] * k, (give[1] - give[0]) * k)
            dst = Slice(OUT, keep[0] * k, (keep[1] - keep[0]) * k)
            moves.append((fold.rank(v), fold.rank(v ^ bit), src, dst))
        _exchange(b, moves, reduce=True)
    # All-gather by recursive doubling, in the mirror order.
    for level in reversed(range(steps)):
        bit = 1 << level
        moves = []
        for v in range(p):
            keep, give = kept[v][level], sent[v][level]
            src = Slice(OUT, keep[0] * k, (keep[1] - keep[0]) * k)
            dst = Slice(OUT, give[0] * k, (give[1] - give[0]) * k)
            moves.append((fold.rank(v), fold.rank(v ^ bit), src, dst))
        _exchange(b, moves, reduce=False)
    for v in range(fold.extra):
        b.send(fold.rank(v), fold.partner(v), whole)
        b.recv(fold.partner(v), fold.rank(v), whole)


def _reduce_scatter(b: Builder, c: Collective, fold: _Fold) -> None:
    n, cf, p = c.num_ranks, c.chunks_per_rank, fold.core_size
    work = IN if c.inplace else SCR
    if not c.inplace:
        for v in range(p):
            b.copy(fold.rank(v), Slice(IN, 0, n * cf), Slice(SCR, 0, n * cf))
    for v in range(fold.extra):
        b.send(fold.partner(v), fold.rank(v), Slice(IN, 0, n * cf))
        b.recv(fold.rank(v), fold.partner(v), Slice(work, 0, n * cf), reduce=True)
    # Recursive halving, far partner first: ranges of core ranks.
    ranges = [(0, p)] * p
    level = 0
    half = p // 2
    while half:
        moves = []
        for v in range(p):
            lo, hi = ranges[v]
            lower, upper = (lo, lo + half), (lo + half, hi)
            keep, give = (upper, lower) if v & half else (lower, upper)
            ranges[v] = keep
            gs, ge = fold.pieces(*give)
            ks, ke = fold.pieces(*keep)
            fresh = level == 0 and fold.partner(v) < 0
            src = Slice(IN if fresh else work, gs * cf, (ge - gs) * cf)
            moves.append(
                (fold.rank(v), fold.rank(v ^ half), src, Slice(work, ks * cf, (ke - ks) * cf))
            )
        _exchange(b, moves, reduce=True)
        half //= 2
        level += 1
    for v in range(fold.extra):
        e = fold.partner(v)
        b.send(fold.rank(v), e, Slice(work, e * cf, cf))
        b.recv(e, fold.rank(v), Slice(OUT, 0, cf))
    if not c.inplace:
        for v in range(p):
            r = fold.rank(v)
            b.copy(r, Slice(SCR, r * cf, cf), Slice(OUT, 0, cf))


def _allgather(b: Builder, c: Collective, fold: _Fold) -> None:
    n, cf, p = c.num_ranks, c.chunks_per_rank, fold.core_size
    if not c.inplace:
        for r in range(n):
            b.copy(r, Slice(IN, 0, cf), Slice(OUT, r * cf, cf))
    for v in range(fold.extra):
        e = fold.partner(v)
        b.send(e, fold.rank(v), Slice(IN, 0, cf))
        b.recv(fold.rank(v), e, Slice(OUT, e * cf, cf))
    bit = 1
    while bit < p:
        moves = []
        for v in range(p):
            mine = v - v % bit
            theirs = mine ^ bit
            ms, me = fold.pieces(mine, mine + bit)
            ts, te = fold.pieces(theirs, theirs + bit)
            if bit == 1 and fold.partner(v) < 0:
                src = Slice(IN, 0, cf)
            else:
                src = Slice(OUT, ms * cf, (me - ms) * cf)
            moves.append(
                (fold.rank(v), fold.rank(v ^ bit), src, Slice(OUT, ts * cf, (te - ts) * cf))
            )
        _exchange(b, moves, reduce=False)
        bit *= 2
    for v in range(fold.extra):
        e, r = fold.partner(v), fold.rank(v)
        for lo, hi in ((0, e), (e + 1, n)):
            if hi > lo:
                part = Slice(OUT, lo * cf, (hi - lo) * cf)
                b.send(r, e, part)
                b.recv(e, r, part)
