"""Hand-built Programs for the MSCCL-IR XML tests."""

from __future__ import annotations

import random

from chakra_ir import Buffer, Collective, CollectiveKind, Hints, Program, ProgramBuilder, Slice

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def ring_allgather(n: int, cf: int = 1, *, inplace: bool = False) -> Program:
    """Each chunk travels the ring r -> r+1 -> ...; out of place, the own chunk is copied."""
    b = ProgramBuilder(
        Collective(CollectiveKind.ALLGATHER, n, cf, inplace=inplace), auto_deps=True, name="ring_ag"
    )
    if not inplace:
        for r in range(n):
            b.copy(r, Slice(I, 0, cf), Slice(O, r * cf, cf))
    for c in range(cf):
        for s in range(n - 1):
            for r in range(n):
                slot = Slice(O, ((r - s) % n) * cf + c)
                b.send(r, (r + 1) % n, slot)
                b.recv((r + 1) % n, r, slot)
    return b.build()


def ring_allreduce(n: int, *, inplace: bool = False, name: str = "ring_ar") -> Program:
    """Reduce-scatter then all-gather around the ring, buffer cut in n chunks."""
    c = Collective(CollectiveKind.ALLREDUCE, n, n, inplace=inplace)
    b = ProgramBuilder(c, auto_deps=True, name=name)
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s) % n))
            b.recv((r + 1) % n, r, Slice(I, (r - s) % n), reduce=True)
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s + 1) % n))
            b.recv((r + 1) % n, r, Slice(I, (r - s + 1) % n))
    if not inplace:
        for r in range(n):
            b.copy(r, Slice(I, 0, n), Slice(O, 0, n))
    return b.build()


def alltoall(n: int) -> Program:
    """Every rank sends chunk q of its input to rank q directly."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLTOALL, n, 1), auto_deps=True, name="a2a")
    for r in range(n):
        b.copy(r, Slice(I, r), Slice(O, r))
        for k in range(1, n):
            b.send(r, (r + k) % n, Slice(I, (r + k) % n))
        for k in range(1, n):
            b.recv(r, (r - k) % n, Slice(O, (r - k) % n))
    return b.build()


def manual_ring_allgather(n: int) -> Program:
    """Ring all-gather with MSCCLang-style manual threadblocks: sends in tb 0, receives in
    tb 1, the own-chunk copy in tb 1, all on channel 0."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLGATHER, n, 1), auto_deps=True, name="manual")
    send_tb, recv_tb = Hints((), 0, 0), Hints((), 0, 1)
    for r in range(n):
        b.copy(r, Slice(I, 0), Slice(O, r), hints=recv_tb)
    for s in range(n - 1):
        for r in range(n):
            slot = Slice(O, (r - s) % n)
            b.send(r, (r + 1) % n, slot, hints=send_tb)
            b.recv((r + 1) % n, r, slot, hints=recv_tb)
    return b.build()


def trap_reduce() -> Program:
    """A reduce to rank 1 whose receiving slots (scratch 3, 4) differ from the sending slots
    (input 0, 1): the srcbuf trap of MSCCLang."""
    c = Collective(CollectiveKind.REDUCE, 2, 2, root=1)
    b = ProgramBuilder(c, auto_deps=True, name="trap")
    b.copy(1, Slice(I, 0, 2), Slice(S, 3, 2))
    for i in range(2):
        b.send(0, 1, Slice(I, i))
        b.recv(1, 0, Slice(S, 3 + i), reduce=True)
    b.copy(1, Slice(S, 3, 2), Slice(O, 0, 2))
    return b.build()


def needs_two_buffered(*, hinted: bool) -> Program:
    """Rank 0 sends two messages to rank 1 before rank 1 can take the first one: with one
    message of buffering per connection the serialized threadblocks deadlock unless the
    messages get separate channels, which channel hints (``hinted``) forbid."""
    c = Collective(CollectiveKind.ALLGATHER, 2, 3)
    b = ProgramBuilder(c, auto_deps=True, name="needs_buffer")
    h = Hints((), 0, -1) if hinted else Hints()
    h1 = Hints((), 1, -1) if hinted else Hints()
    b.copy(0, Slice(I, 0, 3), Slice(O, 0, 3), hints=h)
    b.copy(1, Slice(I, 0, 3), Slice(O, 3, 3), hints=h)
    s1 = b.send(0, 1, Slice(I, 0), hints=h)
    s2 = b.send(0, 1, Slice(I, 1), deps=[s1], hints=h)
    b.send(0, 1, Slice(I, 2), tag=1, deps=[s2], hints=h1)
    r3 = b.recv(1, 0, Slice(O, 2), tag=1, hints=h1)
    b.recv(1, 0, Slice(O, 0), deps=[r3], hints=h)
    b.recv(1, 0, Slice(O, 1), hints=h)
    for i in range(3):
        b.send(1, 0, Slice(I, i), hints=h)
        b.recv(0, 1, Slice(O, 3 + i), hints=h)
    return b.build()


def random_tree(n: int, root: int, rng: random.Random) -> list[tuple[int, int]]:
    """Random spanning tree edges (parent, child), parents covered first."""
    covered = [root]
    rest = [r for r in range(n) if r != root]
    rng.shuffle(rest)
    edges = []
    for r in rest:
        edges.append((rng.choice(covered), r))
        covered.append(r)
    return edges


def tree_broadcast(n: int, cf: int, rng: random.Random) -> Program:
    """Each chunk of the root's input is broadcast down its own random tree."""
    root = rng.randrange(n)
    b = ProgramBuilder(Collective(CollectiveKind.BROADCAST, n, cf, root=root), auto_deps=True)
    b.copy(root, Slice(I, 0, cf), Slice(O, 0, cf))
    for c in range(cf):
        for parent, child in random_tree(n, root, rng):
            tag = rng.randrange(3)
            b.send(parent, child, Slice(O, c), tag=tag)
            b.recv(child, parent, Slice(O, c), tag=tag)
    return b.build()


def tree_allreduce(n: int, cf: int, rng: random.Random, *, inplace: bool) -> Program:
    """Each chunk is reduced up a random tree and broadcast back down it."""
    c = Collective(CollectiveKind.ALLREDUCE, n, cf, inplace=inplace)
    b = ProgramBuilder(c, auto_deps=True, name="tree_ar")
    for k in range(cf):
        edges = random_tree(n, rng.randrange(n), rng)
        for parent, child in reversed(edges):
            b.send(child, parent, Slice(I, k))
            b.recv(parent, child, Slice(I, k), reduce=True)
        for parent, child in edges:
            b.send(parent, child, Slice(I, k))
            b.recv(child, parent, Slice(I, k))
    if not inplace:
        for r in range(n):
            b.copy(r, Slice(I, 0, cf), Slice(O, 0, cf))
    return b.build()
