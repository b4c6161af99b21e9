"""Small programs and topologies for the simulator tests.

Round numbers throughout: links of 50 GB/s (50 bytes per ns) and 500 ns latency, so a
1000-byte message keeps a link busy 20 ns and crosses a hop in 520 ns.
"""

from __future__ import annotations

from chakra_ir import Buffer, Collective, CollectiveKind, Hints, Program, ProgramBuilder, Slice
from topologies import Topology, parse_topology

I, O = Buffer.INPUT, Buffer.OUTPUT
LINE3 = "graph:3,links=0-1;1-2,bw=50GB/s,lat=500ns"  # 0 - 1 - 2


def topo(spec: str) -> Topology:
    return parse_topology(spec)


def one_message(placement: tuple[int, ...] = (), route: tuple[int, ...] = ()) -> Program:
    """Broadcast over 2 ranks: the root copies its input and sends it to rank 1."""
    c = Collective(CollectiveKind.BROADCAST, 2, 1, root=0, placement=placement)
    b = ProgramBuilder(c, auto_deps=True, name="one-message")
    b.copy(0, Slice(I, 0), Slice(O, 0))
    b.send(0, 1, Slice(I, 0), hints=Hints(route=route))
    b.recv(1, 0, Slice(O, 0))
    return b.build()


def two_messages() -> Program:
    """Broadcast of 2 chunks over 2 ranks: two messages from rank 0 to rank 1 at once."""
    c = Collective(CollectiveKind.BROADCAST, 2, 2, root=0)
    b = ProgramBuilder(c, auto_deps=True, name="two-messages")
    b.copy(0, Slice(I, 0, 2), Slice(O, 0, 2))
    for i in range(2):
        b.send(0, 1, Slice(I, i), tag=i)
    for i in range(2):
        b.recv(1, 0, Slice(O, i), tag=i)
    return b.build()


def gather3() -> Program:
    """Gather to rank 2 over 3 ranks: ranks 0 and 1 send at once."""
    c = Collective(CollectiveKind.GATHER, 3, 1, root=2)
    b = ProgramBuilder(c, auto_deps=True, name="gather")
    b.copy(2, Slice(I, 0), Slice(O, 2))
    for r in range(2):
        b.send(r, 2, Slice(I, 0))
        b.recv(2, r, Slice(O, r))
    return b.build()


def ring_allreduce(n: int) -> Program:
    """An in-place ring all-reduce over n ranks (n chunks per rank), auto dependencies."""
    c = Collective(CollectiveKind.ALLREDUCE, n, n, inplace=True)
    b = ProgramBuilder(c, auto_deps=True, name="ring")
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s) % n))
            b.recv(r, (r - 1) % n, Slice(I, (r - s - 1) % n), reduce=True)
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s + 1) % n))
            b.recv(r, (r - 1) % n, Slice(I, (r - s) % n))
    return b.build()


def direct_allgather(n: int) -> Program:
    """Every rank sends its input to every other at once."""
    c = Collective(CollectiveKind.ALLGATHER, n, 1)
    b = ProgramBuilder(c, auto_deps=True, name="direct")
    for r in range(n):
        b.copy(r, Slice(I, 0), Slice(O, r))
    for k in range(1, n):
        for r in range(n):
            b.send(r, (r + k) % n, Slice(I, 0))
        for r in range(n):
            src = (r - k) % n
            b.recv(r, src, Slice(O, src))
    return b.build()
