"""Swing all-reduce on tori (De Sensi, Bonato, Saam, Hoefler, NSDI 2024).

Peers. On a ring of ``p`` positions (``p`` a power of two) position ``c`` talks at step ``s``
to ``c + rho(s)`` if ``c`` is even and to ``c - rho(s)`` if it is odd (mod ``p``), where
``rho(s) = sum_{i<=s} (-2)^i``: 1, -1, 3, -5, 11, -21, ... (`rho`, `swing_peer`). Distances stay
below ``2^s``, so peers are nearer than recursive doubling's and messages share fewer links.
On a torus every dimension runs its own sequence (``log2`` of its size steps) and the steps
alternate between dimensions: dimension ``a``, ``a+1``, ..., skipping a dimension whose steps
are used up.

Multi-port. The buffer is cut into ``2D`` equal parts on a ``D``-dimensional torus, one
*instance* per port: instance ``2a`` starts its dimension rotation at dimension ``a`` and
instance ``2a + 1`` does the same *mirrored* (even positions go the minus way). At every step
the ``2D`` instances use ``2D`` different ports of every node, so every link carries data.
Instance ``i``'s messages carry tag ``i``.

Variants:

- ``swing`` (bandwidth-optimal): per instance a reduce-scatter over steps 0..L-1 then an
  all-gather over L-1..0 (Rabenseifner's shape). At step ``s`` a rank sends its peer the
  blocks of every rank the peer still reaches in steps ``s+1..L-1`` (halving the data each
  step) and reduces the blocks its own later steps reach; the all-gather mirrors that. The
  blocks are laid out in the order of that reach tree (`block_order`), so every message is one
  contiguous slice. All-reduce only needs *some* rank to own each block, so no copy is needed.
- ``swing-latency`` (latency-optimal): every step exchanges and reduces the whole part, like
  recursive doubling, ``L`` steps in all.

Non-power-of-two dimensions (the paper's rule): a dimension of ``p`` positions keeps a core of
``P = 2^floor(log2 p)``; positions ``2v`` for ``v < p - P`` first add their whole buffer into
``2v + 1`` and sit out, the core runs Swing on the ``P`` virtual positions (the odd partner, then
the rest, renumbered), and at the end the partner sends the result back. Dimensions fold one
after the other (0, 1, ...) and unfold in reverse.

Topologies. The ranks must fill a torus or a sub-torus of one (every position of some
dimensions, one position of the others: a row, a plane...) of 1 to 4 dimensions: ``torus``,
``ring`` and ``stack`` of ring dimensions. Meshes and hypercubes are served too, but outside
the paper's claim: a peer across the wraparound takes the long way through the mesh.
Switches, fully connected networks, one-way rings and other graphs are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from baselines.base import BaselineError, TrackedBuilder, log2_floor, trivial_program
from chakra_ir import Buffer, Collective, CollectiveKind, Program, Slice
from topologies import Topology

SWING_KINDS = frozenset({CollectiveKind.ALLREDUCE})
MAX_DIMS = 4
"""Swing serves tori of 1 to 4 dimensions (the paper's evaluation)."""
_SERVED_KINDS = ("ring", "line")
_INSTANCE_LCM = 24
"""Every instance count 2D (D <= 4) divides this."""


def rho(step: int) -> int:
    """Swing's signed peer distance at ``step``: 1, -1, 3, -5, 11, -21, ..."""
    power = 1 << (step + 1)  # (-2)^(step+1) = +-power
    return (1 + power) // 3 if step % 2 == 0 else (1 - power) // 3


def swing_peer(coord: int, step: int, size: int, *, mirrored: bool = False) -> int:
    """The peer of position ``coord`` of a ring of ``size`` positions at ``step``."""
    up = (coord % 2 == 0) != mirrored
    d = rho(step)
    return (coord + d if up else coord - d) % size


def swing_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank without a topology: a multiple of ``2D x P`` for every torus of
    ``num_ranks`` NPUs and at most four dimensions (`swing_chunks_on` is exact)."""
    if kind not in SWING_KINDS:
        raise BaselineError(f"swing does not implement {kind.value}")
    return _INSTANCE_LCM << log2_floor(num_ranks)


def swing_latency_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank of the latency-optimal variant without a topology."""
    if kind not in SWING_KINDS:
        raise BaselineError(f"swing-latency does not implement {kind.value}")
    return _INSTANCE_LCM


@dataclass(frozen=True)
class SwingGrid:
    """The (sub-)torus the ranks fill: ``shape`` of its dimensions (each of at least 2
    positions), whether every one wraps around (``torus``), and each rank's coordinates."""

    shape: tuple[int, ...]
    torus: bool
    coords: tuple[tuple[int, ...], ...]

    @property
    def dims(self) -> int:
        return len(self.shape)

    @property
    def instances(self) -> int:
        """One per port: two per dimension."""
        return 2 * self.dims

    @property
    def core(self) -> tuple[int, ...]:
        """The power-of-two core of every dimension."""
        return tuple(1 << log2_floor(p) for p in self.shape)

    @property
    def levels(self) -> tuple[int, ...]:
        """Swing steps per dimension: log2 of its core."""
        return tuple(log2_floor(p) for p in self.core)

    @cached_property
    def rank_at(self) -> dict[tuple[int, ...], int]:
        return {c: r for r, c in enumerate(self.coords)}


def swing_grid(collective: Collective, topology: Topology) -> SwingGrid:
    """The sub-torus that ``collective``'s ranks fill on ``topology``; `BaselineError` in one
    line when the topology is not a torus or mesh, has more than `MAX_DIMS` dimensions, or the
    ranks do not fill every position of some dimensions and one of the others."""
    layout = topology.layout
    what = f"{topology.spec}"
    if layout is None or not layout.shape or any(k not in _SERVED_KINDS for k in layout.kinds):
        raise BaselineError(
            f"swing serves tori (torus, ring, stack of rings; meshes outside the paper's claim); "
            f"{what} is not one"
        )
    shape, strides = layout.shape, layout.strides
    npus = [collective.npu(r) for r in range(collective.num_ranks)]
    full: list[int] = []
    for d, p in enumerate(shape):
        seen = {(x // strides[d]) % p for x in npus}
        if len(seen) == p and p > 1:
            full.append(d)
        elif len(seen) > 1:
            raise BaselineError(
                f"swing needs its ranks to fill a sub-torus of {what} (every position of some "
                f"dimensions, one of the others); dimension {d} holds {len(seen)} of {p}"
            )
    sub = tuple(shape[d] for d in full)
    count = 1
    for p in sub:
        count *= p
    if count != len(npus):
        raise BaselineError(
            f"swing needs its ranks to fill a sub-torus of {what}; {len(npus)} ranks do not"
        )
    if len(sub) > MAX_DIMS:
        raise BaselineError(
            f"swing serves tori of 1 to {MAX_DIMS} dimensions; the ranks fill {len(sub)} of {what}"
        )
    coords = tuple(tuple((x // strides[d]) % shape[d] for d in full) for x in npus)
    torus = all(layout.kinds[d] == "ring" for d in full)
    return SwingGrid(sub, torus, coords)


def swing_chunks_on(kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
    """The exact natural chunks per rank on ``topology``: ``2D x P`` (``P`` the product of the
    power-of-two cores) for the bandwidth-optimal variant."""
    grid = _grid_of(kind, npus, topology, "swing")
    return grid.instances * _prod(grid.core) if grid.dims else 1


def swing_latency_chunks_on(kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
    """The exact natural chunks per rank of the latency-optimal variant: ``2D``."""
    grid = _grid_of(kind, npus, topology, "swing-latency")
    return grid.instances if grid.dims else 1


def _grid_of(
    kind: CollectiveKind, npus: tuple[int, ...], topology: Topology, name: str
) -> SwingGrid:
    if kind not in SWING_KINDS:
        raise BaselineError(f"{name} does not implement {kind.value}")
    return swing_grid(Collective(kind, len(npus), 1, placement=npus), topology)


def _prod(xs: tuple[int, ...]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def instance_steps(levels: tuple[int, ...], start: int) -> list[tuple[int, int]]:
    """(dimension, that dimension's step) of every step of an instance whose rotation starts
    at dimension ``start``; a dimension whose steps are used up is skipped."""
    used = [0] * len(levels)
    out: list[tuple[int, int]] = []
    d = start
    while len(out) < sum(levels):
        if used[d] < levels[d]:
            out.append((d, used[d]))
            used[d] += 1
        d = (d + 1) % len(levels)
    return out


@dataclass(frozen=True)
class Instance:
    """One port's Swing over the virtual (power-of-two) torus: ``peers[s][v]`` is virtual rank
    ``v``'s peer at step ``s``; virtual ranks number the core positions, dimension 0 fastest."""

    index: int
    steps: tuple[tuple[int, int], ...]
    peers: tuple[tuple[int, ...], ...]

    @property
    def mirrored(self) -> bool:
        return self.index % 2 == 1


def make_instance(index: int, core: tuple[int, ...]) -> Instance:
    """Instance ``index``: rotation from dimension ``index // 2``, mirrored when odd."""
    levels = tuple(log2_floor(p) for p in core)
    steps = tuple(instance_steps(levels, index // 2))
    strides = [_prod(core[:d]) for d in range(len(core))]
    total = _prod(core)
    peers = []
    for d, k in steps:
        row = []
        for v in range(total):
            c = (v // strides[d]) % core[d]
            q = swing_peer(c, k, core[d], mirrored=index % 2 == 1)
            row.append(v + (q - c) * strides[d])
        peers.append(tuple(row))
    return Instance(index, steps, tuple(peers))


def reach_sets(inst: Instance, total: int) -> list[list[frozenset[int]]]:
    """``reach[s][v]``: the virtual ranks ``v`` reaches in steps ``s..L-1`` (itself included);
    each is the disjoint union of ``reach[s+1]`` of ``v`` and of its step-``s`` peer."""
    steps = len(inst.steps)
    reach: list[list[frozenset[int]]] = [[] for _ in range(steps + 1)]
    reach[steps] = [frozenset((v,)) for v in range(total)]
    for s in reversed(range(steps)):
        nxt = reach[s + 1]
        row = []
        for v in range(total):
            mine, theirs = nxt[v], nxt[inst.peers[s][v]]
            if mine & theirs:
                raise BaselineError(f"swing: step {s} pairs ranks whose reach overlaps")
            row.append(mine | theirs)
        reach[s] = row
    return reach


def block_order(reach: list[list[frozenset[int]]]) -> list[int]:
    """Virtual ranks in the order of their blocks: every reach set is a contiguous run."""

    def order(members: frozenset[int], s: int) -> list[int]:
        if len(members) == 1:
            return list(members)
        a = min(members)
        left = reach[s + 1][a]
        return order(left, s + 1) + order(members - left, s + 1)

    return order(reach[0][0], 0)


def swing_program(
    collective: Collective, topology: Topology, *, latency: bool = False, name: str = ""
) -> Program:
    """The Swing all-reduce of ``collective`` on ``topology`` (bandwidth-optimal, or with
    ``latency`` the latency-optimal variant). Raises `BaselineError` as `swing_grid` does, or
    when ``chunks_per_rank`` is not a multiple of `swing_chunks_on`."""
    c = collective
    if c.kind not in SWING_KINDS:
        raise BaselineError(f"swing does not implement {c.kind.value}")
    grid = swing_grid(c, topology)
    if not grid.dims:
        return trivial_program(c, name)
    core = grid.core
    total = _prod(core)
    parts = grid.instances
    natural = parts if latency else parts * total
    if c.chunks_per_rank % natural:
        raise BaselineError(
            f"swing over this {'x'.join(map(str, grid.shape))} torus needs a multiple of "
            f"{natural} chunks per rank, got {c.chunks_per_rank}"
        )
    b = TrackedBuilder(c, name=name)
    cf = c.chunks_per_rank
    whole = Slice(Buffer.OUTPUT, 0, cf)
    if not c.inplace:
        for r in range(c.num_ranks):
            b.copy(r, Slice(Buffer.INPUT, 0, cf), whole)
    folds = _folds(grid)
    for extra, partner in folds:
        b.send(extra, partner, whole)
        b.recv(partner, extra, whole, reduce=True)
    ranks = _virtual_ranks(grid)
    share = cf // parts
    instances = [make_instance(i, core) for i in range(parts)]
    if latency:
        _latency(b, instances, ranks, share)
    else:
        _bandwidth(b, instances, ranks, share, total)
    for extra, partner in reversed(folds):
        b.send(partner, extra, whole)
        b.recv(extra, partner, whole)
    return b.build()


def _folds(grid: SwingGrid) -> list[tuple[int, int]]:
    """(extra rank, its partner) of every fold, dimension by dimension: a rank folds along
    dimension ``d`` when it is core in the dimensions before ``d`` and extra in ``d``."""
    out = []
    for d, p in enumerate(grid.shape):
        x = p - grid.core[d]
        for r, c in enumerate(grid.coords):
            if c[d] < 2 * x and c[d] % 2 == 0 and all(_is_core(c[e], grid, e) for e in range(d)):
                partner = (*c[:d], c[d] + 1, *c[d + 1 :])
                out.append((r, grid.rank_at[partner]))
    return out


def _is_core(coord: int, grid: SwingGrid, d: int) -> bool:
    x = grid.shape[d] - grid.core[d]
    return not (coord < 2 * x and coord % 2 == 0)


def _virtual_ranks(grid: SwingGrid) -> list[int]:
    """The rank that plays each virtual rank (core positions, dimension 0 fastest)."""
    core = grid.core
    total = _prod(core)
    out = []
    for v in range(total):
        coord = []
        rest = v
        for d, p in enumerate(core):
            w = rest % p
            rest //= p
            x = grid.shape[d] - p
            coord.append(2 * w + 1 if w < x else w + x)
        out.append(grid.rank_at[tuple(coord)])
    return out


def _bandwidth(
    b: TrackedBuilder, instances: list[Instance], ranks: list[int], share: int, total: int
) -> None:
    unit = share // total
    plans = []
    for inst in instances:
        reach = reach_sets(inst, total)
        pos = {v: i for i, v in enumerate(block_order(reach))}
        base = inst.index * share

        def blocks(members: frozenset[int], base: int = base, pos: dict[int, int] = pos) -> Slice:
            lo = min(pos[v] for v in members)
            return Slice(Buffer.OUTPUT, base + lo * unit, len(members) * unit)

        plans.append((inst, reach, blocks))
    steps = len(instances[0].steps)
    for s in range(steps):  # reduce-scatter
        for inst, reach, blocks in plans:
            for v, q in enumerate(inst.peers[s]):
                b.send(ranks[v], ranks[q], blocks(reach[s + 1][q]), tag=inst.index)
        for inst, reach, blocks in plans:
            for v, q in enumerate(inst.peers[s]):
                dst = blocks(reach[s + 1][v])
                b.recv(ranks[v], ranks[q], dst, tag=inst.index, reduce=True)
    for s in reversed(range(steps)):  # all-gather
        for inst, reach, blocks in plans:
            for v, q in enumerate(inst.peers[s]):
                b.send(ranks[v], ranks[q], blocks(reach[s + 1][v]), tag=inst.index)
        for inst, reach, blocks in plans:
            for v, q in enumerate(inst.peers[s]):
                b.recv(ranks[v], ranks[q], blocks(reach[s + 1][q]), tag=inst.index)


def _latency(b: TrackedBuilder, instances: list[Instance], ranks: list[int], share: int) -> None:
    steps = len(instances[0].steps)
    for s in range(steps):
        for inst in instances:
            part = Slice(Buffer.OUTPUT, inst.index * share, share)
            for v, q in enumerate(inst.peers[s]):
                b.send(ranks[v], ranks[q], part, tag=inst.index)
        for inst in instances:
            part = Slice(Buffer.OUTPUT, inst.index * share, share)
            for v, q in enumerate(inst.peers[s]):
                b.recv(ranks[v], ranks[q], part, tag=inst.index, reduce=True)
