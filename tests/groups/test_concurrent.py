"""Several program instances at once on one topology (`backends.sim.concurrent`)."""

from __future__ import annotations

import pytest

from backends.sim import SimError, simulate
from backends.sim.concurrent import Instance, simulate_instances
from baselines import ALGORITHMS
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.grouping import split_groups
from chakra_ir.program import Program
from tacos.groups import synthesize_groups
from tacos.synthesis import chunks_for
from topologies import parse_topology

K = CollectiveKind
TORUS = parse_topology("torus:4x4")
CB = 65536


def ring_on(npus: tuple[int, ...], kind: CollectiveKind = K.ALLREDUCE) -> Program:
    algo = ALGORITHMS["ring"]
    c = Collective(kind, len(npus), algo.chunks_per_rank(kind, len(npus)), placement=npus)
    return algo.generate(c, TORUS)


ROW0, ROW1 = (0, 1, 2, 3), (4, 5, 6, 7)


def alone(p: Program) -> float:
    return simulate(p, TORUS, CB).finish_ns


@pytest.mark.parametrize("model", ["congestion", "analytical", "astra-aware"])
def test_a_grouped_program_runs_as_its_groups_do(model: str) -> None:
    topo = parse_topology("torus:8x8")
    kind = K.ALLREDUCE
    c = Collective(
        kind, 64, chunks_for(kind, 32, 1), groups=(tuple(range(0, 64, 2)), tuple(range(1, 64, 2)))
    )
    p = synthesize_groups(c, topo, 4096).program
    whole = simulate(p, topo, 4096, model=model)
    parts = simulate_instances(
        [Instance(f"g{g}", q, 4096) for g, q in enumerate(split_groups(p))], topo, model=model
    )
    assert parts.finish_ns == whole.finish_ns
    assert list(parts.rank_finish_ns) == list(whole.rank_finish_ns)
    assert max(x.finish_ns for x in parts.instances) == whole.finish_ns


def test_disjoint_instances_do_not_slow_each_other() -> None:
    a, b = ring_on(ROW0), ring_on(ROW1)
    r = simulate_instances([Instance("a", a, CB), Instance("b", b, CB)], TORUS)
    assert [x.finish_ns for x in r.instances] == [alone(a), alone(b)]
    assert r.finish_ns == max(alone(a), alone(b))


def test_instances_on_the_same_npus_share_links() -> None:
    a = ring_on(ROW0)
    r = simulate_instances([Instance("a", a, CB), Instance("b", a, CB)], TORUS)
    t = alone(a)
    assert r.finish_ns > t
    assert r.num_ranks == 8  # two ranks on each of the row's NPUs


def test_a_start_time_delays_an_instance() -> None:
    a, b = ring_on(ROW0), ring_on(ROW1)
    r = simulate_instances([Instance("a", a, CB), Instance("b", b, CB, start_ns=5000.0)], TORUS)
    got = {x.name: x for x in r.instances}
    assert got["b"].start_ns == 5000.0
    assert got["b"].finish_ns == pytest.approx(5000.0 + alone(b))


def test_after_waits_for_the_whole_instance() -> None:
    a = ring_on(ROW0)
    r = simulate_instances(
        [
            Instance("first", a, CB),
            Instance("second", a, CB, start_ns=10.0, after=("first",)),
        ],
        TORUS,
    )
    first, second = r.instances
    assert second.start_ns == first.finish_ns == pytest.approx(alone(a))
    assert second.finish_ns == pytest.approx(2 * alone(a))


def test_after_npu_waits_only_for_the_same_npu() -> None:
    a, b = ring_on(ROW0), ring_on((0, 4, 8, 12))  # they share NPU 0 only
    r = simulate_instances(
        [Instance("a", a, CB), Instance("b", b, CB, after=("a",), after_npu=True)], TORUS
    )
    ia, ib = r.instances
    assert ib.start_ns == 0.0
    assert ib.finish_ns > ia.finish_ns
    whole = simulate_instances([Instance("a", a, CB), Instance("b", b, CB, after=("a",))], TORUS)
    assert whole.instances[1].start_ns == ia.finish_ns
    assert ib.finish_ns <= whole.instances[1].finish_ns
    # b's rank on NPU 4 (which a does not use) issues work before a has finished.
    tl = simulate_instances(
        [Instance("a", a, CB), Instance("b", b, CB, after=("a",), after_npu=True)],
        TORUS,
        keep_timeline=True,
    ).timeline
    assert tl is not None
    on4 = tl.npus.index(4)
    assert float(tl.issue_ns[tl.rank == on4].min()) < ia.finish_ns
    on0 = [r for r, x in enumerate(tl.npus) if x == 0]
    assert len(on0) == 2  # a's and b's ranks share NPU 0


@pytest.mark.parametrize(
    ("instances", "message"),
    [
        ([], "no program instances"),
        ([("a", 0.0, ()), ("a", 0.0, ())], "two program instances are called 'a'"),
        ([("a", 0.0, ("b",))], "waits for 'b', which is no instance"),
        ([("a", 0.0, ("a",))], "waits for itself"),
        ([("a", 0.0, ("b",)), ("b", 0.0, ("a",))], "wait for each other: a -> b -> a"),
        ([("a", -1.0, ())], "is not a time"),
        ([("a", float("nan"), ())], "is not a time"),
    ],
)
def test_refusals(instances: list[tuple[str, float, tuple[str, ...]]], message: str) -> None:
    p = ring_on(ROW0)
    with pytest.raises(SimError, match=message):
        simulate_instances([Instance(n, p, CB, s, a) for n, s, a in instances], TORUS)
