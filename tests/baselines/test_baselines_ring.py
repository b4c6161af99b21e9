"""Ring and bidirectional ring: topology-aware order, vectorized = builder, counts, pipelining."""

from __future__ import annotations

import itertools
import random

import pytest

from baselines import ALGORITHMS, ring_order, ring_program
from chakra_ir import Collective, CollectiveKind, Recv, Send
from tests.baselines.baseline_checker import check, send_stats
from topologies import Topology, parse_topology

AG = CollectiveKind.ALLGATHER
RS = CollectiveKind.REDUCE_SCATTER
AR = CollectiveKind.ALLREDUCE


def hops(topo: Topology, c: Collective, order: list[int]) -> list[int]:
    n = len(order)
    return [len(topo.route(c.npu(order[i]), c.npu(order[(i + 1) % n]))) - 1 for i in range(n)]


def shuffled(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


@pytest.mark.parametrize("kind", [AG, RS, AR])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("rings", [1, 2])
@pytest.mark.parametrize("mult", [1, 3])
def test_vectorized_equals_builder(
    kind: CollectiveKind, n: int, inplace: bool, rings: int, mult: int
) -> None:
    natural = rings * n if kind is AR else rings
    c = Collective(kind, n, natural * mult, inplace)
    order = shuffled(n, seed=n + 10 * mult)
    orders = [order, order[::-1]][:rings]
    fast = ring_program(c, orders, name="x", vectorized=True)
    slow = ring_program(c, orders, name="x", vectorized=False)
    assert fast == slow
    check(fast)


def test_order_follows_a_permuted_placement() -> None:
    topo = parse_topology("ring:8")
    placement = (3, 0, 6, 1, 7, 2, 5, 4)
    c = Collective(AR, 8, 8, placement=placement)
    order = ring_order(c, topo)
    assert sorted(order) == list(range(8))
    assert hops(topo, c, order) == [1] * 8


@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4", "mesh:4x4", "hypercube:3"])
def test_order_on_whole_topology_is_hamiltonian(spec: str) -> None:
    topo = parse_topology(spec)
    n = topo.num_npus
    c = Collective(AR, n, n)
    assert hops(topo, c, ring_order(c, topo)) == [1] * n


def test_order_on_switch() -> None:
    topo = parse_topology("switch:8")
    c = Collective(AR, 8, 8)
    order = ring_order(c, topo)
    assert sorted(order) == list(range(8))
    assert hops(topo, c, order) == [2] * 8


def test_order_on_mesh_block() -> None:
    topo = parse_topology("mesh:4x4")
    # The top two rows of the mesh, in a scrambled rank order: a 2x4 block has a 1-hop cycle.
    placement = (5, 0, 7, 2, 4, 1, 6, 3)
    c = Collective(AR, 8, 8, placement=placement)
    assert hops(topo, c, ring_order(c, topo)) == [1] * 8


@pytest.mark.parametrize(
    "placement",
    [
        (0, 15, 3, 12, 5, 10),
        (9, 2, 14, 7, 0, 11, 4),
        (1, 13, 6, 8, 3, 15, 10, 0),
        (2, 7, 11, 0, 13, 4, 9, 14, 5, 1),  # beyond exact search: the heuristic tours
    ],
)
def test_order_on_scattered_mesh_subset_is_optimal(placement: tuple[int, ...]) -> None:
    topo = parse_topology("mesh:4x4")
    n = len(placement)
    c = Collective(AR, n, n, placement=placement)
    order = ring_order(c, topo)
    assert sorted(order) == list(range(n))

    d = [[len(topo.route(a, b)) - 1 for b in placement] for a in placement]

    def key(o: list[int]) -> tuple[int, int]:
        h = [d[o[i - 1]][o[i]] for i in range(n)]
        return max(h), sum(h)

    best = min(key([0, *p]) for p in itertools.permutations(range(1, n)))
    assert key(order) == best


def test_order_follows_one_way_ring() -> None:
    topo = parse_topology("uniring:8")
    full = Collective(AR, 8, 8, placement=(2, 5, 0, 7, 4, 1, 6, 3))
    order = ring_order(full, topo)
    for i in range(8):
        a, b = full.npu(order[i]), full.npu(order[(i + 1) % 8])
        assert topo.links_between(a, b), f"no link {a}->{b}"
    part = Collective(AR, 4, 4, placement=(6, 2, 4, 0))
    assert hops(topo, part, ring_order(part, topo)) == [2] * 4


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("k", [1, 2])
def test_allreduce_messages(n: int, k: int) -> None:
    topo = parse_topology(f"ring:{n}")
    c = Collective(AR, n, n * k)
    program = ALGORITHMS["ring"].generate(c, topo)
    order = ring_order(c, topo)
    for r in range(n):
        i = order.index(r)
        nxt, prv = order[(i + 1) % n], order[(i - 1) % n]
        # 2(N-1) steps, each moving 1/N of the buffer, as k sub-chunks of one slot.
        assert send_stats(program, r) == [(nxt, 1)] * (2 * (n - 1) * k)
        recvs = [op for op in program.ops(r) if isinstance(op, Recv)]
        assert [op.peer for op in recvs] == [prv] * (2 * (n - 1) * k)
        assert sum(op.reduce for op in recvs) == (n - 1) * k


@pytest.mark.parametrize("kind", [AG, RS])
def test_allgather_reduce_scatter_messages(kind: CollectiveKind) -> None:
    n, cf = 6, 3
    program = ALGORITHMS["ring"].generate(Collective(kind, n, cf), parse_topology("ring:6"))
    for r in range(n):
        assert [s for _, s in send_stats(program, r)] == [1] * ((n - 1) * cf)


def test_bidirectional_split() -> None:
    n = 5
    topo = parse_topology("ring:5")
    c = Collective(AR, n, 2 * n)
    program = ALGORITHMS["ring-bidir"].generate(c, topo)
    check(program)
    order = ring_order(c, topo)
    for r in range(n):
        i = order.index(r)
        sends = [op for op in program.ops(r) if isinstance(op, Send)]
        cw = [op for op in sends if op.tag == 0]
        ccw = [op for op in sends if op.tag == 1]
        assert len(cw) == len(ccw) == 2 * (n - 1)
        assert {op.peer for op in cw} == {order[(i + 1) % n]}
        assert {op.peer for op in ccw} == {order[(i - 1) % n]}
        # Each ring works on its own half of the buffer.
        assert all(op.src.index < n for op in cw)
        assert all(op.src.index >= n for op in ccw)


@pytest.mark.parametrize("kind", [AG, RS, AR])
@pytest.mark.parametrize("inplace", [False, True])
def test_pipelined_sub_chunks_are_independent(kind: CollectiveKind, inplace: bool) -> None:
    """A sub-chunk's operations depend only on operations of the same sub-chunk."""
    n, k = 4, 3
    cf = n * k if kind is AR else k
    program = ring_program(Collective(kind, n, cf, inplace), [list(range(n))])

    def sub(op: Send | Recv) -> int:
        index = op.src.index if isinstance(op, Send) else op.dst.index
        return index % k

    for r in range(n):
        ops = program.ops(r)
        for op in ops:
            if not isinstance(op, Send | Recv):
                continue
            for d in op.deps:
                dep = ops[d]
                if isinstance(dep, Send | Recv):
                    assert sub(dep) == sub(op)
        # The first step's sub-chunk messages depend on nothing but the initial copy.
        first_send = next(op for op in ops if isinstance(op, Send))
        assert first_send.deps == ()


def test_a_large_ring_has_the_expected_operations() -> None:
    n = 256
    c = Collective(AR, n, n)
    program = ALGORITHMS["ring"].generate(c, parse_topology(f"ring:{n}"))
    assert program.num_ops == n * (1 + 4 * (n - 1))
