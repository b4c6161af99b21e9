"""Small hand-written programs shared by the IR tests."""

from __future__ import annotations

from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def ring_allreduce(n: int, *, inplace: bool = False) -> Program:
    """A plain ring all-reduce over n ranks, buffer cut in n chunks, built with auto deps."""
    c = Collective(CollectiveKind.ALLREDUCE, n, n, inplace=inplace)
    b = ProgramBuilder(c, auto_deps=True, name="ring")
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s) % n))
            b.recv(r, (r - 1) % n, Slice(I, (r - s - 1) % n), reduce=True)
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s + 1) % n))
            b.recv(r, (r - 1) % n, Slice(I, (r - s) % n))
    if not inplace:
        for r in range(n):
            b.copy(r, Slice(I, 0, n), Slice(O, 0, n))
    return b.build()


def direct_allgather(n: int, *, inplace: bool = False) -> Program:
    c = Collective(CollectiveKind.ALLGATHER, n, 1, inplace=inplace)
    b = ProgramBuilder(c, auto_deps=True, name="direct")
    for r in range(n):
        if not inplace:
            b.copy(r, Slice(I, 0), Slice(O, r))
    for k in range(1, n):
        for r in range(n):
            b.send(r, (r + k) % n, Slice(I, 0))
        for r in range(n):
            src = (r - k) % n
            b.recv(r, src, Slice(O, src))
    return b.build()
