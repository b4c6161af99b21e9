"""Hierarchical multi-dimensional collectives and Themis dimension ordering: programs verify,
messages follow the dimensions, Themis orders match hand-worked examples."""

from __future__ import annotations

import itertools
import random
from functools import cache

import pytest

from baselines import ALGORITHMS, BaselineError
from baselines.hierarchical import (
    PhaseOp,
    Scheduler,
    hierarchical_program,
    make_plan,
    ring_cycles,
    topology_grid,
)
from baselines.themis import default_order, themis_orders, themis_orders_and_loads
from chakra_ir import Collective, CollectiveKind, Send
from chakra_ir.verify import verify
from tests.baselines.baseline_checker import check, send_stats, writes_input
from topologies import Topology, parse_topology

AG = CollectiveKind.ALLGATHER
RS = CollectiveKind.REDUCE_SCATTER
AR = CollectiveKind.ALLREDUCE
A2A = CollectiveKind.ALLTOALL

STACK = "stack:ring4*fc4*switch8,bw=[200GB/s,100GB/s,50GB/s]"
SMALL_STACK = "stack:ring3*fc3*switch4,bw=[200GB/s,100GB/s,50GB/s]"
TOPOLOGIES = ["mesh:4x4", "torus:4x4x2", "torus:2x3x4", STACK, "ring:6"]
MORE_TOPOLOGIES = [
    "uniring:5",
    "fc:4",
    "switch:5",
    "hypercube:3",
    "mesh:3x2",
    "torus:3x2",
    "stack:fc2*ring3*switch2",
    "torus:4x2,bw=[100GB/s,20GB/s],fail=0-1",
]


@cache
def topology(spec: str) -> Topology:
    return parse_topology(spec)


def collective(
    kind: CollectiveKind, spec: str, mult: int, inplace: bool, shuffled: bool = False
) -> Collective:
    n = topology(spec).num_npus
    cf = ALGORITHMS["hierarchical"].chunks_per_rank(kind, n) * mult
    placement: tuple[int, ...] = ()
    if shuffled:
        npus = list(range(n))
        random.Random(n + mult).shuffle(npus)
        placement = tuple(npus)
    return Collective(kind, n, cf, inplace, placement=placement)


# -- every program verifies ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.parametrize("inplace", [False, True], ids=["outofplace", "inplace"])
@pytest.mark.parametrize("mult", [1, 3])
@pytest.mark.parametrize("kind", [AR, RS, AG], ids=lambda k: k.value)
@pytest.mark.parametrize("name", ["hierarchical", "themis"])
def test_verifies(name: str, kind: CollectiveKind, mult: int, inplace: bool, spec: str) -> None:
    c = collective(kind, spec, mult, inplace)
    program = ALGORITHMS[name].generate(c, topology(spec))
    assert program.collective == c
    assert program.name == f"{name}-{kind.value}"
    check(program)
    if not inplace:
        assert not writes_input(program), "an out-of-place program must not write its input"


@pytest.mark.parametrize("spec", MORE_TOPOLOGIES)
@pytest.mark.parametrize("kind", [AR, RS, AG], ids=lambda k: k.value)
@pytest.mark.parametrize("scheduler", list(Scheduler))
def test_verifies_more_grids(scheduler: Scheduler, kind: CollectiveKind, spec: str) -> None:
    for inplace in (False, True):
        c = collective(kind, spec, 4, inplace, shuffled=True)
        check(hierarchical_program(c, topology(spec), scheduler))


@pytest.mark.parametrize("spec", ["torus:2x3x4", SMALL_STACK])
@pytest.mark.parametrize("kind", [AR, RS, AG], ids=lambda k: k.value)
@pytest.mark.parametrize("scheduler", list(Scheduler))
def test_options_verify(scheduler: Scheduler, kind: CollectiveKind, spec: str) -> None:
    """Fewer, larger streams; more or unlimited active phases per dimension; ranks placed
    on the NPUs in a shuffled order."""
    c = collective(kind, spec, 6, inplace=False, shuffled=True)
    for splits, active in ((2, 1), (3, 2), (6, 0), (1, 1)):
        program = hierarchical_program(
            c, topology(spec), scheduler, splits=splits, active_per_dim=active
        )
        check(program)


@pytest.mark.parametrize("spec", ["torus:2x3x4", "mesh:3x2", SMALL_STACK])
@pytest.mark.parametrize("kind", [AR, RS, AG], ids=lambda k: k.value)
@pytest.mark.parametrize("scheduler", list(Scheduler))
def test_tracked_equals_reference_builder(
    scheduler: Scheduler, kind: CollectiveKind, spec: str
) -> None:
    for inplace in (False, True):
        c = collective(kind, spec, 3, inplace, shuffled=True)
        fast = hierarchical_program(c, topology(spec), scheduler)
        reference = hierarchical_program(c, topology(spec), scheduler, tracked=False)
        assert fast == reference


# -- messages follow the dimensions -------------------------------------------------------------


def test_allreduce_messages_on_the_stack() -> None:
    """One stream over 4x4x8 = 128 pieces. Rank 0 (coordinates 0,0,0) reduce-scatters along
    the ring dimension (+1 neighbour, 3 steps of 128/4 = 32 slots), along the fc dimension
    (direct to 4, 8, 12, pieces of 32/4 = 8 slots), all-reduces along the switch dimension
    (direct to 16, 32, ..., 112, pieces of 8/8 = 1 slot, twice), then all-gathers back: fc
    (8 slots) and the ring in the -1 direction (to rank 3, 32 slots)."""
    c = Collective(AR, 128, 128)
    program = ALGORITHMS["hierarchical"].generate(c, topology(STACK))
    switch = [(16 * m, 1) for m in range(1, 8)]
    fc = [(4, 8), (8, 8), (12, 8)]
    assert send_stats(program, 0) == ([(1, 32)] * 3 + fc + switch + switch + fc + [(3, 32)] * 3)


def test_reduce_scatter_and_allgather_dimension_orders() -> None:
    """Reduce-scatter goes up the dimensions, all-gather down (one slot per piece)."""
    spec = "torus:2x3x4"  # strides 1, 2, 6
    rs = ALGORITHMS["hierarchical"].generate(Collective(RS, 24, 1), topology(spec))
    ag = ALGORITHMS["hierarchical"].generate(Collective(AG, 24, 1), topology(spec))
    # Rank 0: dim 0 (size 2, 12 pieces to rank 1), dim 1 (size 3, ring 0->1->2: to rank 2,
    # 4 pieces, 2 steps), dim 2 (size 4, ring: to rank 6, 1 piece, 3 steps).
    assert send_stats(rs, 0) == [(1, 12), (2, 4), (2, 4), (6, 1), (6, 1), (6, 1)]
    # All-gather: dim 2 first, in the -1 direction (to rank 18), then dim 1 (to rank 4),
    # then dim 0.
    assert send_stats(ag, 0) == [(18, 1), (18, 1), (18, 1), (4, 4), (4, 4), (1, 12)]


def test_line_dimension_uses_the_folded_ring() -> None:
    """On a mesh row of 5 the reduce-scatter ring is 0, 2, 4, 3, 1: every step at most two
    hops, each directed link of the row crossed once per step."""
    rs, ag = ring_cycles("line", 5)
    assert rs == [0, 2, 4, 3, 1]
    assert ag == rs[::-1]
    assert ring_cycles("line", 4)[0] == [0, 2, 3, 1]
    assert ring_cycles("line", 2)[0] == [0, 1]
    assert ring_cycles("ring", 4) == ([0, 1, 2, 3], [3, 2, 1, 0])
    assert ring_cycles("uniring", 3) == ([0, 1, 2], [0, 1, 2])
    topo = parse_topology("mesh:5x2")
    used: list[tuple[int, int]] = []
    for i, x in enumerate(rs):
        path = topo.route(x, rs[(i + 1) % 5])
        assert len(path) - 1 <= 2
        used.extend(itertools.pairwise(path))
    row = [(a, b) for a in range(5) for b in range(5) if abs(a - b) == 1]
    assert sorted(used) == sorted(row)
    # The mesh all-reduce sends rank 0's first message to the folded successor, NPU 2.
    program = ALGORITHMS["hierarchical"].generate(Collective(AR, 10, 10), topo)
    first = next(op for op in program.ops(0) if isinstance(op, Send))
    assert first.peer == 2


def test_streams_are_contiguous_blocks() -> None:
    """All-reduce stream s owns buffer slots [s*N, (s+1)*N); every message stays inside."""
    n, streams = 24, 3
    program = ALGORITHMS["themis"].generate(Collective(AR, n, n * streams), topology("torus:2x3x4"))
    plan = make_plan(Collective(AR, n, n * streams), topology("torus:2x3x4"), Scheduler.THEMIS)
    assert plan.streams == streams and plan.unit == 1
    for r in range(n):
        for op in program.ops(r):
            if isinstance(op, Send):
                block = op.src.index // n
                assert (op.src.index + op.src.count - 1) // n == block


# -- Themis orders --------------------------------------------------------------------------------


def test_themis_hand_worked_allreduce() -> None:
    """Sizes 4, 4, 8 and bandwidths 200, 100, 50: B_d/B_0 = 1, 0.5, 0.25; c = 1.

    chunk 0: loads 0, 0, 0: gap 0 < 1/16 -> default (0, 1, 2).
        L0 += 1*3/4/1 = 0.75 (c -> 1/4); L1 += (1/4)*3/4/0.5 = 0.375 (c -> 1/16);
        L2 += (1/16)*7/8/0.25 = 0.21875.             loads 0.75, 0.375, 0.21875
    chunk 1: ascending: 2, 1, 0; gap 0.53125 >= 1/16 -> (2, 1, 0).
        L2 += 1*7/8/0.25 = 3.5 -> 3.71875 (c -> 1/8); L1 += (1/8)*3/4/0.5 = 0.1875 -> 0.5625
        (c -> 1/32); L0 += (1/32)*3/4 = 0.0234375 -> 0.7734375.
    chunk 2: ascending: 1 (0.5625), 0 (0.7734375), 2 (3.71875) -> (1, 0, 2).
        L1 += 1.5 -> 2.0625; L0 += (1/4)*3/4 = 0.1875 -> 0.9609375; L2 += 0.21875 -> 3.9375.
    chunk 3: ascending: 0 (0.9609375), 1 (2.0625), 2 (3.9375) -> (0, 1, 2).
        L0 -> 1.7109375, L1 -> 2.4375, L2 -> 4.15625.
    """
    orders, loads = themis_orders_and_loads(AR, (4, 4, 8), (200, 100, 50), 4)
    assert orders == [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 1, 2)]
    assert loads == pytest.approx([1.7109375, 2.4375, 4.15625])
    # Reduce-scatter is ordered the same way; bandwidths in other units change nothing.
    assert themis_orders(RS, (4, 4, 8), (200e9, 100e9, 50e9), 4) == orders


def test_themis_hand_worked_allgather() -> None:
    """All-gather, same network, c = 1 (the per-rank piece); orders are reversed.

    chunk 0: loads 0: default all-gather order (2, 1, 0).
        L2 += 1*7/0.25 = 28 (c -> 8); L1 += 8*3/0.5 = 48 (c -> 32); L0 += 32*3 = 96.
    chunk 1: ascending 2 (28), 1 (48), 0 (96), reversed -> (0, 1, 2).
        L0 += 3 -> 99 (c -> 4); L1 += 4*3/0.5 = 24 -> 72 (c -> 16); L2 += 16*7/0.25 = 448
        -> 476.
    chunk 2: ascending 1 (72), 0 (99), 2 (476), reversed -> (2, 0, 1).
        L2 += 28 -> 504 (c -> 8); L0 += 8*3 = 24 -> 123 (c -> 32); L1 += 32*3/0.5 = 192 -> 264.
    chunk 3: ascending 0, 1, 2, reversed -> (2, 1, 0).
    """
    orders, loads = themis_orders_and_loads(AG, (4, 4, 8), (200, 100, 50), 3)
    assert orders == [(2, 1, 0), (0, 1, 2), (2, 0, 1)]
    assert loads == [123, 264, 504]
    assert themis_orders(AG, (4, 4, 8), (200, 100, 50), 4)[3] == (2, 1, 0)


def test_themis_equal_bandwidths_fall_back_to_the_default_order() -> None:
    """Equal bandwidths on a 4x4 grid: after chunk 0 (default) dim 0 carries 3/4 and dim 1
    3/16, so chunk 1 goes (1, 0), which brings both loads to 15/16. With the loads equal
    (gap 0 < c/16) chunk 2 falls back to the default order, and so on in pairs."""
    orders, loads = themis_orders_and_loads(AR, (4, 4), (50, 50), 5)
    assert orders == [(0, 1), (1, 0), (0, 1), (1, 0), (0, 1)]
    assert loads == pytest.approx([2.625, 2.0625])
    assert themis_orders_and_loads(AR, (4, 4), (50, 50), 4)[1] == [1.875, 1.875]
    # One dimension, or the first chunk: always the default order.
    assert themis_orders(AR, (6,), (50,), 3) == [(0,)] * 3
    assert themis_orders(AR, (4, 4, 2), (50, 50, 50), 1) == [(0, 1, 2)]
    assert themis_orders(AG, (4, 4, 2), (50, 50, 50), 1) == [(2, 1, 0)]


def test_themis_threshold() -> None:
    """Sizes 2, 2. After chunk 0, L0 = 1/2 and L1 = (1/4) / (B1/B0). With B1/B0 = 0.532,
    L1 = 0.46992: dim 1 is less loaded, but by 0.03008 < 1/16, so chunk 1 keeps the default
    order. With B1/B0 = 0.6, L1 = 0.41667, the gap 0.0833 >= 1/16, and chunk 1 goes (1, 0)."""
    assert themis_orders(AR, (2, 2), (1.0, 0.532), 2) == [(0, 1), (0, 1)]
    assert themis_orders(AR, (2, 2), (1.0, 0.6), 2) == [(0, 1), (1, 0)]


def test_themis_skips_dimensions_of_size_one() -> None:
    assert default_order(AR, (4, 1, 2)) == (0, 2)
    assert default_order(AG, (4, 1, 2)) == (2, 0)
    orders = themis_orders(AR, (4, 1, 2), (10, 1, 10), 3)
    assert all(sorted(o) == [0, 2] for o in orders)


def test_themis_errors() -> None:
    with pytest.raises(BaselineError, match="one bandwidth per dimension"):
        themis_orders(AR, (4, 4), (50,), 2)
    with pytest.raises(BaselineError, match="positive"):
        themis_orders(AR, (4, 4), (50, 0), 2)
    with pytest.raises(BaselineError, match="alltoall"):
        themis_orders(A2A, (4, 4), (50, 50), 2)


def test_themis_plan_on_the_stack() -> None:
    """The plan takes the dimension bandwidths from the topology's links: per link 200, 100,
    50 GB/s (the hand-worked orders above); per NPU, as the dimension's algorithm moves data,
    the fc dimension's three links count three times: 200, 300, 50."""
    topo = topology(STACK)
    grid = topology_grid(topo)
    assert grid.shape == (4, 4, 8)
    assert grid.kinds == ("ring", "fc", "switch")
    assert grid.link_bandwidths == (200, 100, 50)
    assert grid.bandwidths == (200, 300, 50)
    c = Collective(AR, 128, 128 * 4)
    plan = make_plan(c, topo, Scheduler.THEMIS, link_bandwidths=True)
    assert list(plan.orders) == [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 1, 2)]
    plan = make_plan(c, topo, Scheduler.THEMIS)
    assert list(plan.orders) == themis_orders(AR, (4, 4, 8), (200, 300, 50), 4, chunk_size=128)
    assert len(set(plan.orders)) > 1
    # Each stream runs its reduce-scatters in its order, then all-gathers in reverse.
    for s, order in enumerate(plan.orders):
        mine = [(ph.dim, ph.op) for ph in plan.phases if ph.stream == s]
        assert mine == [(d, PhaseOp.RS) for d in order] + [(d, PhaseOp.AG) for d in order[::-1]]
    # The default plan: localBWAware, an all-reduce phase at the turning point.
    plan = make_plan(c, topo, Scheduler.BASELINE)
    mine = [(ph.dim, ph.op) for ph in plan.phases if ph.stream == 0]
    rs, ar, ag = PhaseOp.RS, PhaseOp.AR, PhaseOp.AG
    assert mine == [(0, rs), (1, rs), (2, ar), (1, ag), (0, ag)]


def test_themis_streams_take_their_orders_in_the_program() -> None:
    """Stream s's first messages go along the first dimension of its order."""
    topo = topology(STACK)
    c = Collective(AR, 128, 128 * 4)
    plan = make_plan(c, topo, Scheduler.THEMIS, link_bandwidths=True)
    program = hierarchical_program(c, topo, Scheduler.THEMIS, link_bandwidths=True)
    stride = (1, 4, 16)
    first: dict[int, int] = {}
    for op in program.ops(0):
        if isinstance(op, Send):
            first.setdefault(op.src.index // 128, op.peer)
    for s, order in enumerate(plan.orders):
        d = order[0]  # rank 0's neighbours along d: x * stride[d], x = 1..p_d - 1
        assert first[s] in {x * stride[d] for x in range(1, plan.grid.shape[d])}


# -- pipelining: the per-dimension queues -------------------------------------------------------


def test_queue_dependencies() -> None:
    """With one active phase per dimension, every phase waits for the one before it in its
    dimension's queue; the queue predecessor started earlier. Without a limit, none wait."""
    topo = topology(STACK)
    c = Collective(AR, 128, 128 * 6)
    for scheduler in Scheduler:
        plan = make_plan(c, topo, scheduler, active_per_dim=1)
        last: dict[int, int] = {}
        for i, ph in enumerate(plan.phases):
            assert ph.after == last.get(ph.dim, -1)
            assert ph.after < i
            last[ph.dim] = i
        plan2 = make_plan(c, topo, scheduler, active_per_dim=2)
        assert all(ph.after < i for i, ph in enumerate(plan2.phases))
        unlimited = make_plan(c, topo, scheduler, active_per_dim=0)
        assert all(ph.after == -1 for ph in unlimited.phases)
    gated = hierarchical_program(c, topo, active_per_dim=1)
    free = hierarchical_program(c, topo, active_per_dim=0)
    assert len(gated.deps) > len(free.deps)


def test_default_streams_queue_in_order() -> None:
    """Default order: every dimension serves the streams in stream order."""
    plan = make_plan(Collective(AR, 24, 24 * 5), topology("torus:2x3x4"))
    for d in range(3):
        rs = [ph.stream for ph in plan.phases if ph.dim == d and ph.op is not PhaseOp.AG]
        assert rs == sorted(rs)


def test_themis_is_faster_on_the_asymmetric_stack() -> None:
    """Under the simulator's congestion model, Themis beats the default order on the
    Ring 200 / FC 100 / Switch 50 GB/s stack (64 MiB all-reduce, 8 streams)."""
    sim = pytest.importorskip("backends.sim")
    topo = topology(STACK)
    c = Collective(AR, 128, 128 * 8)
    chunk_bytes = 64 * 2**20 // c.chunks_per_rank
    base = sim.simulate(ALGORITHMS["hierarchical"].generate(c, topo), topo, chunk_bytes)
    themis = sim.simulate(ALGORITHMS["themis"].generate(c, topo), topo, chunk_bytes)
    assert themis.finish_ns < 0.9 * base.finish_ns


# -- requests that cannot be served ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["hierarchical", "themis"])
def test_registry(name: str) -> None:
    entry = ALGORITHMS[name]
    assert entry.collectives == {AR, RS, AG}
    assert entry.chunks_per_rank(AR, 16) == 16
    assert entry.chunks_per_rank(RS, 16) == 1
    assert entry.chunks_per_rank(AG, 16) == 1
    assert not entry.supports(A2A, 16)
    with pytest.raises(BaselineError, match=f"{name} does not implement alltoall"):
        entry.generate(Collective(A2A, 16, 1), topology("mesh:4x4"))


@pytest.mark.parametrize("name", ["hierarchical", "themis"])
@pytest.mark.parametrize(
    ("spec", "says"),
    [("fred:6", "every L1 switch full"), ("graph:4,links=0-1;1-2;2-3;3-0", "grid shape")],
)
def test_no_grid_shape(name: str, spec: str, says: str) -> None:
    topo = parse_topology(spec)
    with pytest.raises(BaselineError, match=says):
        ALGORITHMS[name].generate(Collective(AR, topo.num_npus, topo.num_npus), topo)


@pytest.mark.parametrize("name", ["hierarchical", "themis"])
@pytest.mark.parametrize("kind", [AR, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLGATHER])
def test_fred_is_a_grid_of_two_switch_dimensions(name: str, kind: CollectiveKind) -> None:
    """NPUs of an L1 switch, then one NPU per L1 switch through L2: a 4x3 grid on fred:12."""
    topo = parse_topology("fred:12,cfg=A")
    grid = topology_grid(topo)
    assert grid.shape == (4, 3) and grid.kinds == ("switch", "switch")
    assert grid.link_bandwidths == (3000.0, 3000.0 / 8)
    entry = ALGORITHMS[name]
    program = entry.generate(Collective(kind, 12, entry.chunks_per_rank(kind, 12)), topo)
    verify(program)
    # Every message stays under one L1 switch or crosses L2 between NPUs of equal position.
    for r in range(12):
        for op in program.ops(r):
            if isinstance(op, Send):
                assert r // 4 == op.peer // 4 or r % 4 == op.peer % 4


@pytest.mark.parametrize("name", ["hierarchical", "themis"])
def test_placement_must_cover_the_topology(name: str) -> None:
    c = Collective(AR, 8, 8, placement=tuple(range(8)))
    with pytest.raises(BaselineError, match=r"one rank on every NPU.*got 8 ranks on 16 NPUs"):
        ALGORITHMS[name].generate(c, topology("mesh:4x4"))


def test_chunk_counts() -> None:
    topo = topology("mesh:4x4")
    with pytest.raises(BaselineError, match="multiple of 16 chunks per rank, got 8"):
        ALGORITHMS["hierarchical"].generate(Collective(AR, 16, 8), topo)
    with pytest.raises(BaselineError, match="5 splits do not divide the 6 natural units"):
        hierarchical_program(Collective(AR, 16, 96), topo, splits=5)
    with pytest.raises(BaselineError, match="active_per_dim"):
        hierarchical_program(Collective(AR, 16, 16), topo, active_per_dim=-1)
    plan = make_plan(Collective(RS, 16, 6), topo, splits=2)
    assert (plan.streams, plan.unit) == (2, 3)
