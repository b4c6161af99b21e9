"""`workloads.expand.run_contended`: collectives expanded by collc producers and simulated
together with the workload's compute and messages, so collectives of different groups contend
for links. The reference times are each collective's program simulated alone
(`backends.sim.simulate`)."""

from __future__ import annotations

import math
from functools import cache

import pytest

from backends.sim import simulate
from collc.pipeline import cost_model_for, program_for
from tests.workloads.build import AG, AR, coll, comp, mem, recv, same, send, workload
from topologies import Topology, parse_topology
from workloads.engine import CollCall
from workloads.expand import ContendedRun, ProgramFor, run_contended
from workloads.model import CollKind, WNode, Workload, check_workload

COST = cost_model_for("on-arrival")
RING8 = parse_topology("ring:8")
S = 1 << 20
ALL8 = tuple(range(8))


@cache
def producer(spec: str, algorithm: str) -> ProgramFor:
    return program_for(parse_topology(spec), (algorithm, {}), cost=COST, chunks_per_npu=1, seed=0)


def alone(call: CollCall, topo: Topology = RING8, algorithm: str = "ring") -> float:
    """The collective's program simulated by itself on an idle network."""
    e = producer(topo.spec, algorithm)(call)
    return simulate(e.program, topo, e.chunk_bytes, cost=COST).finish_ns


def contended(
    w: Workload,
    topo: Topology = RING8,
    algorithm: str = "ring",
    *,
    remote_mem: tuple[float, float] | None = None,
) -> ContendedRun:
    """``w`` checked, then run in the contention mode with the baseline ``algorithm``."""
    check_workload(w)
    r = run_contended(w, topo, producer(topo.spec, algorithm), cost=COST, remote_mem=remote_mem)
    _sane(w, r)
    return r


def _sane(w: Workload, r: ContendedRun) -> None:
    """Every node has a start and an end after it, no earlier than its dependencies' ends."""
    for npu, nodes in enumerate(w.ranks):
        pos = {nd.id: i for i, nd in enumerate(nodes)}
        for i, nd in enumerate(nodes):
            s, e = r.run.starts[npu][i], r.run.ends[npu][i]
            assert not math.isnan(s) and e >= s
            for d in nd.deps:
                assert s >= r.run.ends[npu][pos[d]]
        assert r.run.finish_ns[npu] == max(r.run.ends[npu])


@pytest.mark.parametrize(
    ("algorithm", "kind", "size"),
    [("ring", AR, S), ("direct", AR, S), ("ring", AG, S // 8)],
)
def test_one_collective_takes_its_time_alone(algorithm: str, kind: CollKind, size: int) -> None:
    w = same(8, [coll(0, kind, size)])
    r = contended(w, algorithm=algorithm)
    t = alone(CollCall(kind, size, ALL8), algorithm=algorithm)
    assert r.run.time_ns == t
    assert r.uncontended.time_ns == t
    (c,) = r.run.collectives
    assert (c.start_ns, c.end_ns) == (0.0, t)
    assert r.programs == 1


def test_a_ring_all_reduce_sends_its_messages() -> None:
    # 8 ranks, 2 x 7 steps, one message per rank and step.
    r = contended(same(8, [coll(0, AR, S)]))
    assert r.sim.messages == 8 * 2 * 7


def test_disjoint_groups_on_disjoint_links_do_not_slow_each_other() -> None:
    # {0..3} and {4..7} on ring:8: each group's ring, 3 -> 0 included, stays inside its half.
    groups = {"1": (0, 1, 2, 3), "2": (4, 5, 6, 7)}
    w = workload(*([coll(0, AR, S, "1" if i < 4 else "2")] for i in range(8)), groups=groups)
    r = contended(w)
    times = {c.call.pg_name: c.end_ns - c.start_ns for c in r.run.collectives}
    assert times == {
        "1": alone(CollCall(AR, S, groups["1"], "1")),
        "2": alone(CollCall(AR, S, groups["2"], "2")),
    }
    assert r.programs == 2


def test_interleaved_groups_contend_for_links() -> None:
    # {0,2,4,6} and {1,3,5,7}: every direct message crosses links the other group uses.
    groups = {"1": (0, 2, 4, 6), "2": (1, 3, 5, 7)}
    w = workload(*([coll(0, AR, S, "1" if i % 2 == 0 else "2")] for i in range(8)), groups=groups)
    r = contended(w, algorithm="direct")
    one = alone(CollCall(AR, S, groups["1"], "1"), algorithm="direct")
    assert r.uncontended.time_ns == one
    assert r.run.time_ns > one
    for c in r.run.collectives:
        assert c.end_ns - c.start_ns > one


def test_a_pipeline_message_contends_with_a_collective() -> None:
    # NPU 0 sends to NPU 3 over 0>1>2>3 while group {2,3,4,5} runs a ring (2 -> 3 on 2>3).
    groups = {"1": (2, 3, 4, 5)}
    ranks: list[list[WNode]] = []
    for npu in range(8):
        if npu == 0:
            ranks.append([send(0, 0, 3, S)])
        elif npu == 3:
            ranks.append([coll(0, AR, S, "1"), recv(1, 0, 3, S)])
        elif npu in groups["1"]:
            ranks.append([coll(0, AR, S, "1")])
        else:
            ranks.append([comp(0, 1)])
    w = workload(*ranks, groups=groups)
    r = contended(w)
    links = [RING8.links[i] for i in RING8.route_links(0, 3)]
    msg = COST.path_ns(links, S)
    assert r.uncontended.ends[0] == [msg]
    t = alone(CollCall(AR, S, groups["1"], "1"))
    assert r.uncontended.ends[2] == [t]
    (c,) = r.run.collectives
    assert c.end_ns > t


def test_a_message_alone_takes_its_path_time() -> None:
    w = workload(
        [send(0, 0, 3, S)], [comp(0, 1)], [comp(0, 1)], [recv(0, 0, 3, S)], *[[comp(0, 1)]] * 4
    )
    r = contended(w)
    links = [RING8.links[i] for i in RING8.route_links(0, 3)]
    msg = COST.path_ns(links, S)
    assert r.run.ends[0] == [msg]
    assert r.run.ends[3] == [msg]
    assert r.run.time_ns == r.uncontended.time_ns == msg


def test_compute_before_a_collective_delays_it_by_the_compute_time() -> None:
    w = same(8, [comp(0, 5), coll(1, AR, S, deps=(0,))])
    r = contended(w)
    t = alone(CollCall(AR, S, ALL8))
    assert r.run.time_ns == pytest.approx(5000.0 + t, rel=1e-12)
    (c,) = r.run.collectives
    assert c.start_ns == 5000.0
    assert r.run.compute_ns == [5000.0] * 8
    for npu in range(8):
        assert r.run.starts[npu][1] == 5000.0


def test_compute_overlaps_a_collective() -> None:
    # 100 µs of compute is longer than the collective: the iteration is the compute.
    t = alone(CollCall(AR, S, ALL8))
    assert t < 100_000
    r = contended(same(8, [comp(0, 100), coll(1, AR, S)]))
    assert r.run.time_ns == 100_000.0
    assert r.run.exposed_ns == [0.0] * 8


def test_collectives_on_one_npu_run_one_after_another() -> None:
    w = same(8, [coll(0, AR, S), coll(1, AG, S // 8)])
    r = contended(w)
    a, b = alone(CollCall(AR, S, ALL8)), alone(CollCall(AG, S // 8, ALL8))
    assert r.run.time_ns == pytest.approx(a + b, rel=1e-12)
    assert r.programs == 2
    # The same collective twice is expanded once.
    r = contended(same(8, [coll(0, AR, S), coll(1, AR, S)]))
    assert r.programs == 1
    assert r.run.time_ns == pytest.approx(2 * a, rel=1e-12)


def test_memory_and_broadcast_nodes_keep_their_local_times() -> None:
    # 100 ns + 1000 / 3 B/ns = 433 ns of remote memory; a broadcast of 7 µs on NPU 0 alone.
    w = workload(
        [coll(0, CollKind.BROADCAST, 64, us=7), mem(1, 1000, (0,)), coll(2, AR, S, deps=(1,))],
        *([mem(1, 1000), coll(2, AR, S, deps=(1,))] for _ in range(7)),
    )
    r = contended(w, remote_mem=(100.0, 3.0))
    t = alone(CollCall(AR, S, ALL8))
    assert r.run.ends[0][:2] == [7000.0, 7433.0]
    assert r.run.ends[1][0] == 433.0
    assert r.run.time_ns == pytest.approx(7433.0 + t, rel=1e-12)
