"""Dimension-by-dimension all-to-all: one direct all-to-all per dimension of a grid.

On a grid topology (mesh, torus, ASTRA-sim stack; dimension 0 fastest) with one rank on every
NPU, phase ``d`` is an all-to-all inside every line of dimension ``d``: a rank sends each peer
of its line, in one message, every chunk it holds whose destination has that peer's coordinate
in dimension ``d``, and keeps the chunks whose destination has its own. After phase ``d`` a
rank holds the chunks whose destinations agree with it in dimensions ``0..d`` and whose
sources agree with it in the others; after the last, its own. Messages stay inside one line of
one dimension (each crosses that dimension's links only), which is how tori and ASTRA-sim's
multi-dimensional collectives run an all-to-all.

Each phase gathers the chunks for each peer into a contiguous scratch range with local copies
(free in the cost model) and exchanges in shift order (step ``m``: send to coordinate ``x+m``,
receive from ``x-m``); the final copies place every chunk in its output slot.
"""

from __future__ import annotations

from baselines.base import BaselineError
from baselines.hierarchical import topology_grid
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice
from topologies import Topology

DIMENSIONAL_KINDS = frozenset({CollectiveKind.ALLTOALL})
IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def dimensional_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """One chunk per pair of ranks."""
    if kind not in DIMENSIONAL_KINDS:
        raise BaselineError(f"dimensional does not implement {kind.value}")
    return 1


def dimensional_program(collective: Collective, topology: Topology, *, name: str = "") -> Program:
    """The dimension-by-dimension all-to-all of ``collective`` on ``topology``; see the module
    docstring. Raises BaselineError for another kind, a topology without a grid, ranks that do
    not sit one on every NPU in order, or groups."""
    c = collective
    if c.kind not in DIMENSIONAL_KINDS:
        raise BaselineError(f"dimensional does not implement {c.kind.value}")
    try:
        grid = topology_grid(topology)
    except BaselineError:
        raise BaselineError(
            f"dimensional needs a topology with a grid shape (ring, mesh, torus, hypercube, "
            f"stack...); {topology.spec} has none"
        ) from None
    n, cf = c.num_ranks, c.chunks_per_rank
    if n != topology.num_npus or any(c.npu(r) != r for r in range(n)) or grid.num_npus != n:
        raise BaselineError(
            f"dimensional needs one rank on every NPU of the grid in order (its lines are the "
            f"rows of the {'x'.join(map(str, grid.shape))} grid); got {n} ranks on "
            f"{topology.num_npus} NPUs"
        )
    shape, strides = grid.shape, grid.strides
    b = ProgramBuilder(c, auto_deps=True, name=name)

    def coord(r: int, d: int) -> int:
        return (r // strides[d]) % shape[d]

    # Per rank, the chunks it holds, (src, dst, i), with their slots.
    held: list[list[tuple[int, int, int]]] = [
        [(r, t, i) for t in range(n) for i in range(cf)] for r in range(n)
    ]
    where: list[list[Slice]] = [
        [Slice(IN, t * cf + i) for t in range(n) for i in range(cf)] for _ in range(n)
    ]
    total = n * cf
    area = 0  # next free scratch offset (the same on every rank)
    for d, size in enumerate(shape):
        if size == 1:
            continue
        per_peer = total // size
        send_at, recv_at = area, area + total
        area += 2 * total
        # Gather each coordinate's chunks into a contiguous range, in held order.
        groups: list[list[list[tuple[int, int, int]]]] = []
        for r in range(n):
            by: list[list[tuple[int, int, int]]] = [[] for _ in range(size)]
            slots: list[list[Slice]] = [[] for _ in range(size)]
            for key, slot in zip(held[r], where[r], strict=True):
                y = coord(key[1], d)
                by[y].append(key)
                slots[y].append(slot)
            for y in range(size):
                for j, slot in enumerate(slots[y]):
                    b.copy(r, slot, Slice(SCR, send_at + y * per_peer + j))
            groups.append(by)
        # Exchange in shift order inside each line of dimension d.
        for m in range(1, size):
            for r in range(n):
                x = coord(r, d)
                y = (x + m) % size
                peer = r + (y - x) * strides[d]
                b.send(r, peer, Slice(SCR, send_at + y * per_peer, per_peer))
            for r in range(n):
                x = coord(r, d)
                y = (x - m) % size
                peer = r + (y - x) * strides[d]
                b.recv(r, peer, Slice(SCR, recv_at + y * per_peer, per_peer))
        # What each rank holds now: its own group, and every peer's group for its coordinate.
        new_held = []
        new_where = []
        for r in range(n):
            x = coord(r, d)
            keys: list[tuple[int, int, int]] = []
            slots2: list[Slice] = []
            for y in range(size):
                peer = r + (y - x) * strides[d]
                src_keys = groups[peer][x]
                base = send_at if y == x else recv_at
                keys.extend(src_keys)
                slots2.extend(Slice(SCR, base + y * per_peer + j) for j in range(len(src_keys)))
            new_held.append(keys)
            new_where.append(slots2)
        held, where = new_held, new_where
    for r in range(n):
        for (s, t, i), slot in zip(held[r], where[r], strict=True):
            if t != r:
                raise AssertionError("dimensional: a chunk ended away from its destination")
            b.copy(r, slot, Slice(OUT, s * cf + i))
    return b.build()
