"""Direct, recursive halving-doubling and double binary tree: messages as each algorithm
defines them."""

from __future__ import annotations

import pytest

from baselines import ALGORITHMS
from baselines.dbt import allreduce_trees, rooted_trees, tree_parents
from chakra_ir import Collective, CollectiveKind, Recv, Send
from tests.baselines.baseline_checker import check, send_stats
from topologies import parse_topology

AG = CollectiveKind.ALLGATHER
RS = CollectiveKind.REDUCE_SCATTER
AR = CollectiveKind.ALLREDUCE
A2A = CollectiveKind.ALLTOALL
BC = CollectiveKind.BROADCAST
RED = CollectiveKind.REDUCE

FC = parse_topology("fc:16")


# -- direct -------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 6])
@pytest.mark.parametrize("kind", [AG, RS, A2A])
def test_direct_messages(n: int, kind: CollectiveKind) -> None:
    cf = 2
    program = ALGORITHMS["direct"].generate(Collective(kind, n, cf), FC)
    for r in range(n):
        # Shift schedule: step m sends to r+m, one whole piece each.
        assert send_stats(program, r) == [((r + m) % n, cf) for m in range(1, n)]


@pytest.mark.parametrize("n", [2, 5, 8])
def test_direct_allreduce_messages(n: int) -> None:
    k = 3
    program = ALGORITHMS["direct"].generate(Collective(AR, n, n * k), FC)
    for r in range(n):
        peers = [(r + m) % n for m in range(1, n)]
        assert send_stats(program, r) == [(p, k) for p in peers + peers]


def test_direct_reduce_scatter_receives_concurrently() -> None:
    """Receives land in distinct scratch blocks and depend on nothing."""
    program = ALGORITHMS["direct"].generate(Collective(RS, 5, 1), FC)
    for r in range(5):
        recvs = [op for op in program.ops(r) if isinstance(op, Recv)]
        assert all(op.deps == () and not op.reduce for op in recvs)
        assert len({op.dst.index for op in recvs}) == 4


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_direct_alltoall_in_place(n: int) -> None:
    check(ALGORITHMS["direct"].generate(Collective(A2A, n, 2, inplace=True), FC))


# -- recursive halving-doubling -----------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_rhd_allreduce_power_of_two(n: int) -> None:
    k = 2
    cf = n * k
    program = ALGORITHMS["rhd"].generate(Collective(AR, n, cf), FC)
    steps = n.bit_length() - 1
    for r in range(n):
        stats = send_stats(program, r)
        # Halving: partner at distance 1, 2, 4... with half, quarter... of the buffer.
        halving = [(r ^ (1 << level), cf >> (level + 1)) for level in range(steps)]
        doubling = [(r ^ (1 << level), cf >> (level + 1)) for level in reversed(range(steps))]
        assert stats == halving + doubling
        assert sum(s for _, s in stats) == 2 * (n - 1) * k


@pytest.mark.parametrize("n", [2, 4, 8])
def test_rhd_reduce_scatter_and_allgather_power_of_two(n: int) -> None:
    steps = n.bit_length() - 1
    rs = ALGORITHMS["rhd"].generate(Collective(RS, n, 1), FC)
    ag = ALGORITHMS["rhd"].generate(Collective(AG, n, 1), FC)
    for r in range(n):
        # Reduce-scatter: far partner first with half the pieces.
        assert send_stats(rs, r) == [(r ^ (n >> (s + 1)), n >> (s + 1)) for s in range(steps)]
        # All-gather: near partner first with the pieces gathered so far.
        assert send_stats(ag, r) == [(r ^ (1 << s), 1 << s) for s in range(steps)]


@pytest.mark.parametrize("n", [3, 5, 6, 7, 12])
def test_rhd_allreduce_fold(n: int) -> None:
    p = 1 << (n.bit_length() - 1)
    extra = n - p
    cf = p
    program = ALGORITHMS["rhd"].generate(Collective(AR, n, cf), FC)
    check(program)
    steps = p.bit_length() - 1
    for r in range(n):
        stats = send_stats(program, r)
        if r < 2 * extra and r % 2 == 0:
            # Folded away: the whole buffer to the partner, nothing else.
            assert stats == [(r + 1, cf)]
        elif r < 2 * extra:
            assert len(stats) == 2 * steps + 1
            assert stats[-1] == (r - 1, cf)
        else:
            assert len(stats) == 2 * steps


@pytest.mark.parametrize("n", [3, 6, 7])
@pytest.mark.parametrize("kind", [AG, RS])
def test_rhd_fold_for_gather_and_scatter(n: int, kind: CollectiveKind) -> None:
    p = 1 << (n.bit_length() - 1)
    extra = n - p
    program = ALGORITHMS["rhd"].generate(Collective(kind, n, 2), FC)
    check(program)
    for r in range(0, 2 * extra, 2):
        assert [peer for peer, _ in send_stats(program, r)] == [r + 1]
    total = sum(s for r in range(n) for _, s in send_stats(program, r))
    core = (p - 1) * p if kind is RS else (n - 1) * n  # slots moved by the core exchanges
    assert total >= core


# -- double binary tree ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 6, 7, 8, 13, 16, 33])
def test_trees_are_binary_and_complementary(n: int) -> None:
    for trees in (allreduce_trees(n), rooted_trees(n, n // 2)):
        for tree in trees:
            assert sorted(tree.parent).count(-1) == 1
            assert all(len(ch) <= 2 for ch in tree.children)
            # every rank reaches the root, depth at most ceil(log2 n) + 1
            assert max(tree.depth) <= max(1, (n - 1).bit_length()) + 1
            for r in range(n):
                x, seen = r, 0
                while tree.parent[x] >= 0:
                    x = tree.parent[x]
                    seen += 1
                assert x == tree.root and seen == tree.depth[r]
        t0, t1 = allreduce_trees(n)
        if n > 2:
            leaves0 = {r for r in range(n) if not t0.children[r]}
            leaves1 = {r for r in range(n) if not t1.children[r]}
            assert not leaves0 & leaves1, "no rank is a leaf in both trees"
    assert rooted_trees(n, n // 2)[0].root == rooted_trees(n, n // 2)[1].root == n // 2


def test_tree_parents_small() -> None:
    assert tree_parents(1) == [-1]
    assert tree_parents(2) == [-1, 0]
    assert tree_parents(8) == [-1, 2, 4, 2, 0, 6, 4, 6]
    assert tree_parents(6) == [-1, 2, 4, 2, 0, 4]


@pytest.mark.parametrize("n", [2, 3, 7, 8])
@pytest.mark.parametrize("chunks", [2, 6])
def test_dbt_allreduce_messages(n: int, chunks: int) -> None:
    program = ALGORITHMS["dbt"].generate(Collective(AR, n, chunks), FC)
    trees = allreduce_trees(n)
    total = 0
    for r in range(n):
        sends = [op for op in program.ops(r) if isinstance(op, Send)]
        total += len(sends)
        for op in sends:
            assert op.src.count == 1
            tree = trees[op.tag // 2]
            going_up = op.tag % 2 == 0
            if going_up:
                assert op.peer == tree.parent[r]
            else:
                assert op.peer in tree.children[r]
    # Every tree edge carries each of its chunks once up and once down.
    assert total == chunks * 2 * (n - 1)


@pytest.mark.parametrize("kind", [BC, RED])
def test_dbt_rooted_messages(kind: CollectiveKind) -> None:
    n, chunks = 7, 4
    program = ALGORITHMS["dbt"].generate(Collective(kind, n, chunks, root=3), FC)
    check(program)
    total = sum(len(send_stats(program, r)) for r in range(n))
    assert total == chunks * (n - 1)
    if kind is BC:
        assert send_stats(program, 3)  # the root sends
        assert not [op for op in program.ops(3) if isinstance(op, Recv)]
    else:
        assert not send_stats(program, 3)


def test_dbt_pipelines_chunks() -> None:
    """A leaf sends every chunk up before it receives the first result back down."""
    n, chunks = 8, 8
    program = ALGORITHMS["dbt"].generate(Collective(AR, n, chunks, inplace=True), FC)
    t0, _ = allreduce_trees(n)
    leaf = next(r for r in range(n) if not t0.children[r])
    ops = program.ops(leaf)
    up = [i for i, op in enumerate(ops) if isinstance(op, Send) and op.tag == 0]
    down = [i for i, op in enumerate(ops) if isinstance(op, Recv) and op.tag == 1]
    assert len(up) == len(down) == chunks // 2
    assert up[1] < down[0]
