"""Direct algorithms: every rank exchanges with every other rank, one message per pair.

Peers follow a shift schedule: at step ``m`` (1..N-1) rank ``r`` sends to ``r+m`` and receives
from ``r-m`` (mod N), so each step is a permutation and no rank is the target of two sends in
one step.

- all-gather: rank ``r`` sends its whole input to every other rank.
- reduce-scatter: rank ``r`` sends its input piece ``j`` to rank ``j``; each incoming piece
  lands in its own scratch block (so all receives can proceed at once) and is reduced into the
  output in step order.
- all-reduce: direct reduce-scatter of N pieces, then direct all-gather of the reduced piece.
- all-to-all: rank ``r`` sends input piece ``j`` to rank ``j``, which stores it in output
  piece ``r``. In place, a piece received before its slot has been sent waits in scratch and is
  copied in right after that send.

Messages carry a whole piece (``chunks_per_rank`` slots; all-reduce: 1/N of the buffer), so
any chunk count that is a multiple of the natural one is served. Every rank has the same
operation layout, so the program is built a step at a time for all ranks at once
(`UniformBuilder`, O(N) Python calls for O(N^2) operations).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from baselines.base import BaselineError, trivial_program
from baselines.columns import UniformBuilder, Values
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice

DIRECT_KINDS = frozenset(
    {
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLREDUCE,
        CollectiveKind.ALLTOALL,
    }
)

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def direct_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank: N for all-reduce (one piece per rank), else 1."""
    if kind not in DIRECT_KINDS:
        raise BaselineError(f"direct does not implement {kind.value}")
    return num_ranks if kind is CollectiveKind.ALLREDUCE else 1


def direct_program(collective: Collective, *, name: str = "", vectorized: bool = True) -> Program:
    """The direct (all pairs, shift-scheduled) program of ``collective``.

    ``vectorized`` builds the columns a step at a time for all ranks at once; otherwise
    ``ProgramBuilder`` with automatic dependencies builds the identical Program.
    """
    c = collective
    n, cf = c.num_ranks, c.chunks_per_rank
    natural = direct_granularity(c.kind, n)
    if cf % natural:
        raise BaselineError(
            f"direct {c.kind.value} over {n} ranks needs a multiple of {natural} chunks per "
            f"rank, got {cf}"
        )
    if n == 1:
        return trivial_program(c, name)
    if vectorized:
        return _columns(c, name)
    b = ProgramBuilder(c, auto_deps=True, name=name)
    if c.kind is CollectiveKind.ALLGATHER:
        _allgather(b, c)
    elif c.kind is CollectiveKind.REDUCE_SCATTER:
        _reduce_scatter(b, c, piece=cf, work=lambda r: Slice(OUT, 0, cf))
    elif c.kind is CollectiveKind.ALLREDUCE:
        k = cf // n
        _reduce_scatter(b, c, piece=k, work=lambda r: Slice(OUT, r * k, k))
        for m in range(1, n):
            for r in range(n):
                b.send(r, (r + m) % n, Slice(OUT, r * k, k))
            for r in range(n):
                src = (r - m) % n
                b.recv(r, src, Slice(OUT, src * k, k))
    else:
        _alltoall(b, c)
    return b.build()


def _columns(c: Collective, name: str) -> Program:
    """The same programs as the builder path, with explicit dependencies, for all ranks at
    once (every rank has the same layout)."""
    n, cf = c.num_ranks, c.chunks_per_rank
    u = UniformBuilder(c, name=name)
    r = np.arange(n, dtype=np.int64)
    kind = c.kind
    if kind is CollectiveKind.ALLGATHER:
        if not c.inplace:
            u.copy((IN, 0), (OUT, r * cf), cf)
        for m in range(1, n):
            u.send((r + m) % n, IN, 0, cf)
            u.recv((r - m) % n, OUT, (r - m) % n * cf, cf)
    elif kind in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLREDUCE):
        piece = cf if kind is CollectiveKind.REDUCE_SCATTER else cf // n
        work: Values = 0 if kind is CollectiveKind.REDUCE_SCATTER else r * piece
        last: Values = -1
        if not c.inplace:
            last = u.copy((IN, r * piece), (OUT, work), piece)
        rs_send = [-1] * n
        for m in range(1, n):
            rs_send[m] = u.send((r + m) % n, IN, (r + m) % n * piece, piece)
            got = u.recv((r - m) % n, SCR, (m - 1) * piece, piece)
            last = u.reduce((SCR, (m - 1) * piece), (OUT, work), piece, deps=(got, last))
        if kind is CollectiveKind.ALLREDUCE:
            for m in range(1, n):
                u.send((r + m) % n, OUT, work, piece, deps=(last,))
                # In place, the slot was read by the reduce-scatter send to that rank.
                dep = rs_send[n - m] if c.inplace else -1
                u.recv((r - m) % n, OUT, (r - m) % n * piece, piece, deps=(dep,))
    else:  # all-to-all
        if not c.inplace:
            u.copy((IN, r * cf), (OUT, r * cf), cf)
        sent = [-1] * n
        held = [-1] * n
        for m in range(1, n):
            dst, src = (r + m) % n, (r - m) % n
            sent[m] = u.send(dst, IN, dst * cf, cf)
            if c.inplace and 2 * m > n:
                block = (n - m - 1) * cf
                u.copy((SCR, block), (OUT, dst * cf), cf, deps=(held[n - m], sent[m]))
            if c.inplace and 2 * m < n:
                held[m] = u.recv(src, SCR, (m - 1) * cf, cf)
            else:
                u.recv(src, OUT, src * cf, cf, deps=(sent[n - m] if c.inplace else -1,))
    return u.build()


def _allgather(b: ProgramBuilder, c: Collective) -> None:
    n, cf = c.num_ranks, c.chunks_per_rank
    if not c.inplace:
        for r in range(n):
            b.copy(r, Slice(IN, 0, cf), Slice(OUT, r * cf, cf))
    for m in range(1, n):
        for r in range(n):
            b.send(r, (r + m) % n, Slice(IN, 0, cf))
        for r in range(n):
            src = (r - m) % n
            b.recv(r, src, Slice(OUT, src * cf, cf))


def _reduce_scatter(
    b: ProgramBuilder, c: Collective, piece: int, work: Callable[[int], Slice]
) -> None:
    """Rank ``r`` ends with the sum of piece ``r`` (``piece`` slots) in ``work(r)``."""
    n = c.num_ranks
    if not c.inplace:
        for r in range(n):
            b.copy(r, Slice(IN, r * piece, piece), work(r))
    for m in range(1, n):
        for r in range(n):
            dst = (r + m) % n
            b.send(r, dst, Slice(IN, dst * piece, piece))
        for r in range(n):
            block = Slice(SCR, (m - 1) * piece, piece)
            b.recv(r, (r - m) % n, block)
            b.reduce(r, block, work(r))


def _alltoall(b: ProgramBuilder, c: Collective) -> None:
    n, cf = c.num_ranks, c.chunks_per_rank
    if not c.inplace:
        for r in range(n):
            b.copy(r, Slice(IN, r * cf, cf), Slice(OUT, r * cf, cf))
    for m in range(1, n):
        for r in range(n):
            dst = (r + m) % n
            b.send(r, dst, Slice(IN, dst * cf, cf))
            if c.inplace and 2 * m > n:
                # The piece from ``dst`` arrived at step n-m, before this send freed its slot.
                b.copy(r, Slice(SCR, (n - m - 1) * cf, cf), Slice(OUT, dst * cf, cf))
        for r in range(n):
            src = (r - m) % n
            if c.inplace and 2 * m < n:
                b.recv(r, src, Slice(SCR, (m - 1) * cf, cf))
            else:
                b.recv(r, src, Slice(OUT, src * cf, cf))
