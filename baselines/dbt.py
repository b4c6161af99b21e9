"""Double binary tree (NCCL style): all-reduce, and broadcast/reduce over rooted trees.

Both trees are "in-order" binary trees over a sequence of ranks: position ``p >= 1`` with
lowest set bit ``b`` hangs below ``p + b`` or ``p - b`` (whichever has the next bit), skipping
positions past the end, and position 0 is the root with a single child. Leaves are the odd
positions, so a second tree over the mirrored sequence (even N) or the sequence shifted by
one (odd N) makes (nearly) every rank a leaf in one tree and an inner node in the other; the
two trees share the load of every rank's links. All-reduce trees run over the ranks in rank
order (placements decide locality); broadcast and reduce use the root followed by the other
ranks, and the second tree shifts the others by one.

Chunks alternate trees (chunk ``c`` uses tree ``c % 2``) and travel as separate messages, so
a tree works on several chunks at once (pipelining). All-reduce: each inner node adds its
children's partial sums (the first with a reducing receive, the second through a scratch slot
so both can arrive together) and passes the sum up; the root then sends the result down the
same tree. Messages of tree ``T`` carry tag ``2T`` going up and ``2T+1`` going down.

Operations are listed per rank in pipeline order: chunk ``c`` goes up at tick ``c + height``
and down at tick ``c + tree height + 1 + depth``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from baselines.base import BaselineError, Builder, new_builder, trivial_program
from chakra_ir import Buffer, Collective, CollectiveKind, Program, Slice

DBT_KINDS = frozenset({CollectiveKind.ALLREDUCE, CollectiveKind.BROADCAST, CollectiveKind.REDUCE})

IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def dbt_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank: 2 (one chunk per tree)."""
    if kind not in DBT_KINDS:
        raise BaselineError(f"dbt does not implement {kind.value}")
    return 2


def tree_parents(n: int) -> list[int]:
    """Parent position of every position of the in-order binary tree over ``n`` positions.

    Position 0 is the root (parent -1) with one child; each other position has at most two.
    """
    parents = [-1] * n
    for p in range(1, n):
        q = p
        while True:
            low = q & -q
            up = q - low if q & (low << 1) else q + low
            if up < n:
                parents[p] = up
                break
            if up & (up - 1) == 0:  # past the top of the tree: hang below the root
                parents[p] = 0
                break
            q = up
    return parents


@dataclass(frozen=True)
class Tree:
    """A tree over ranks: parent (-1 at the root), children, height and depth per rank."""

    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    height: tuple[int, ...]
    depth: tuple[int, ...]

    @property
    def root(self) -> int:
        return self.parent.index(-1)

    @classmethod
    def over(cls, sequence: list[int]) -> Tree:
        """The in-order tree whose position ``p`` is rank ``sequence[p]``."""
        n = len(sequence)
        pos_parent = tree_parents(n)
        parent = [-1] * n
        children: list[list[int]] = [[] for _ in range(n)]
        for p in range(1, n):
            parent[sequence[p]] = sequence[pos_parent[p]]
        for p in range(n):  # children in sequence order
            if parent[sequence[p]] >= 0:
                children[parent[sequence[p]]].append(sequence[p])
        height = [0] * n
        for p in sorted(range(n), key=lambda x: -_level(x)):
            x = sequence[p]
            if children[x]:
                height[x] = 1 + max(height[y] for y in children[x])
        depth = [0] * n
        for p in sorted(range(n), key=_level):
            x = sequence[p]
            for y in children[x]:
                depth[y] = depth[x] + 1
        return cls(tuple(parent), tuple(tuple(ch) for ch in children), tuple(height), tuple(depth))


def _level(p: int) -> int:
    """Key that orders positions from the root down (root first, then by decreasing low bit)."""
    return -(1 << 62) if p == 0 else -(p & -p)


def allreduce_trees(n: int) -> tuple[Tree, Tree]:
    """The two complementary trees of an n-rank all-reduce."""
    seq = list(range(n))
    second = seq[::-1] if n % 2 == 0 else seq[1:] + seq[:1]
    return Tree.over(seq), Tree.over(second)


def rooted_trees(n: int, root: int) -> tuple[Tree, Tree]:
    """Two trees rooted at ``root`` for broadcast and reduce."""
    others = [(root + j) % n for j in range(1, n)]
    return Tree.over([root, *others]), Tree.over([root, *others[1:], *others[:1]])


def dbt_program(collective: Collective, *, name: str = "", tracked: bool = True) -> Program:
    """The double-binary-tree program of ``collective`` (all-reduce, broadcast, reduce).

    ``tracked`` computes the per-slot dependencies over slot ranges (fast); otherwise
    ``ProgramBuilder`` with automatic dependencies builds the identical Program.
    """
    c = collective
    n, cf = c.num_ranks, c.chunks_per_rank
    natural = dbt_granularity(c.kind, n)
    if cf % natural:
        raise BaselineError(
            f"dbt {c.kind.value} needs a multiple of {natural} chunks per rank, got {cf}"
        )
    if n == 1:
        return trivial_program(c, name)
    trees = allreduce_trees(n) if c.kind is CollectiveKind.ALLREDUCE else rooted_trees(n, c.root)
    b = new_builder(c, name, tracked)
    up = c.kind in (CollectiveKind.ALLREDUCE, CollectiveKind.REDUCE)
    down = c.kind in (CollectiveKind.ALLREDUCE, CollectiveKind.BROADCAST)
    if not c.inplace:
        for r in range(n):
            if c.kind is CollectiveKind.BROADCAST and r != c.root:
                continue  # non-roots receive everything
            b.copy(r, Slice(IN, 0, cf), Slice(OUT, 0, cf))

    events: list[tuple[int, int, int, int, Callable[[], None]]] = []
    for chunk in range(cf):
        t = chunk % 2
        tree = trees[t]
        top = tree.height[tree.root]
        for r in range(n):
            if up:
                events.append((chunk + tree.height[r], 0, chunk, r, _up(b, tree, t, r, chunk)))
            if down:
                tick = chunk + top + 1 + tree.depth[r]
                events.append((tick, 1, chunk, r, _down(b, c, tree, t, r, chunk)))
    events.sort(key=lambda e: e[:4])
    for *_, emit in events:
        emit()
    return b.build()


def _up(b: Builder, tree: Tree, t: int, r: int, chunk: int) -> Callable[[], None]:
    """Rank ``r`` adds its children's partial sums of ``chunk`` and sends the sum up."""

    def emit() -> None:
        kids = tree.children[r]
        slot = Slice(OUT, chunk)
        if kids:
            b.recv(r, kids[0], slot, tag=2 * t, reduce=True)
            for kid in kids[1:]:
                b.recv(r, kid, Slice(SCR, chunk), tag=2 * t)
                b.reduce(r, Slice(SCR, chunk), slot)
        if tree.parent[r] >= 0:
            b.send(r, tree.parent[r], slot if kids else Slice(IN, chunk), tag=2 * t)

    return emit


def _down(b: Builder, c: Collective, tree: Tree, t: int, r: int, chunk: int) -> Callable[[], None]:
    """Rank ``r`` receives the result of ``chunk`` from its parent and passes it on."""

    def emit() -> None:
        slot = Slice(OUT, chunk)
        if tree.parent[r] >= 0:
            b.recv(r, tree.parent[r], slot, tag=2 * t + 1)
            src = slot
        else:
            src = Slice(IN, chunk) if c.kind is CollectiveKind.BROADCAST else slot
        for kid in tree.children[r]:
            b.send(r, kid, src, tag=2 * t + 1)

    return emit
