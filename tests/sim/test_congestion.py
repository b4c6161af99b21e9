"""The congestion model on cases small enough to compute by hand.

Links: 50 bytes/ns, 500 ns latency; messages of 1000 bytes, so serialization is 20 ns and a
hop takes 520 ns (store-and-forward: the next hop starts when the whole message arrived).
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.sim import SimResult, TaskGraph, TaskKind, simulate, simulate_tasks
from backends.sim.engine import run_congestion
from backends.sim.errors import SimError
from backends.sim.tasks import Detail, tasks_from_program
from chakra_ir import Buffer, Collective, CollectiveKind, Hints, Program, ProgramBuilder, Slice
from chakra_ir.verify import verify
from tests.sim.helpers import (
    LINE3,
    direct_allgather,
    gather3,
    one_message,
    ring_allreduce,
    topo,
    two_messages,
)
from topologies.cost_model import Completion, CostModel
from topologies.topology import Link

CB = 1000  # chunk bytes
DEPARTURE = CostModel(completion=Completion.ON_DEPARTURE)
I, O = Buffer.INPUT, Buffer.OUTPUT


def test_one_message_over_one_link() -> None:
    # Send at 0 keeps link 0->1 busy [0, 20]; the last byte arrives at 20 + 500 = 520. The
    # send completes then (on-arrival, the default) or when its last byte left (on-departure).
    r = simulate(one_message(), topo("ring:2,bw=50GB/s,lat=500ns"), CB)
    assert r.finish_ns == pytest.approx(520.0)
    assert list(r.rank_finish_ns) == pytest.approx([520.0, 520.0])
    dep = simulate(one_message(), topo("ring:2,bw=50GB/s,lat=500ns"), CB, cost=DEPARTURE)
    assert list(dep.rank_finish_ns) == pytest.approx([20.0, 520.0])
    assert r.messages == 1 and r.hops == 1
    assert r.link_busy_ns[0] == pytest.approx(20.0)
    assert r.busiest_link is not None and r.busiest_link.utilization == pytest.approx(20 / 520)


def test_two_hop_route_store_and_forward() -> None:
    # Rank 1 on NPU 2 of the line 0-1-2: hops 0->1 then 1->2, each 520 ns: 1040 ns.
    p = one_message(placement=(0, 2))
    verify(p)
    r = simulate(p, topo(LINE3), CB)
    assert r.finish_ns == pytest.approx(1040.0)
    assert r.hops == 2
    # Busy 20 ns on 0->1 (link 0) and 1->2 (link 2), nothing on the way back.
    assert list(r.link_busy_ns) == pytest.approx([20.0, 0.0, 20.0, 0.0])


def test_route_hint_is_followed() -> None:
    # On ring:4, NPU 0 -> 1 is one hop, but the hint takes the long way 0>3>2>1: 3 x 520.
    p = one_message(route=(0, 3, 2, 1))
    r = simulate(p, topo("ring:4,bw=50GB/s,lat=500ns"), CB)
    assert r.finish_ns == pytest.approx(1560.0)
    assert r.hops == 3


def test_two_messages_contend_fifo() -> None:
    # Both sends issue at 0 on link 0->1: the first occupies [0, 20], the second [20, 40].
    # Arrivals 520 and 540; the sends complete then, or at 20 and 40 on departure.
    for cost, sender_done in ((CostModel(), 540.0), (DEPARTURE, 40.0)):
        r = simulate(two_messages(), topo("ring:2,bw=50GB/s,lat=500ns"), CB, cost=cost)
        assert r.finish_ns == pytest.approx(540.0)
        assert r.rank_finish_ns[0] == pytest.approx(sender_done)
        assert r.link_busy_ns[0] == pytest.approx(40.0)


def test_a_send_chained_to_a_send_waits_for_its_delivery() -> None:
    # Rank 0 sends twice to rank 1, the second send depending on the first. On arrival, the
    # second is issued when the first has been delivered (520) and lands at 1040; on
    # departure, it is issued at 20 and lands at 540 (ASTRA-sim's rule is the first).
    c = Collective(CollectiveKind.BROADCAST, 2, 2, root=0)
    b = ProgramBuilder(c, auto_deps=True, name="chained")
    b.copy(0, Slice(I, 0, 2), Slice(O, 0, 2))
    s0 = b.send(0, 1, Slice(I, 0))
    b.send(0, 1, Slice(I, 1), deps=[s0])
    b.recv(1, 0, Slice(O, 0))
    b.recv(1, 0, Slice(O, 1))
    p = b.build()
    verify(p)
    t = topo("ring:2,bw=50GB/s,lat=500ns")
    assert simulate(p, t, CB).finish_ns == pytest.approx(1040.0)
    assert simulate(p, t, CB, cost=DEPARTURE).finish_ns == pytest.approx(540.0)


def test_switch_hop_and_contention_on_the_down_link() -> None:
    # switch:3: NPU -> switch (node 3) -> NPU, each hop 520 ns. Ranks 0 and 1 send to 2 at 0
    # on their own up links, both reach the switch at 520; the down link 3->2 serves rank 0's
    # message [520, 540] (arrives 1040), then rank 1's [540, 560] (arrives 1060).
    t = topo("switch:3,bw=50GB/s,lat=500ns")
    r = simulate(gather3(), t, CB)
    assert r.finish_ns == pytest.approx(1060.0)
    assert r.hops == 4
    down = next(lk.index for lk in t.links if (lk.src, lk.dst) == (3, 2))
    assert r.link_busy_ns[down] == pytest.approx(40.0)
    # A lone message through the switch: 2 x 520.
    one = simulate(one_message(), topo("switch:2,bw=50GB/s,lat=500ns"), CB)
    assert one.finish_ns == pytest.approx(1040.0)


def test_switch_delay_from_the_cost_model() -> None:
    t = topo("switch:2,bw=50GB/s,lat=500ns")
    r = simulate(one_message(), t, CB, cost=CostModel(switch_delay_ns=7.0))
    assert r.finish_ns == pytest.approx(1047.0)


def test_packets_pipeline_over_two_hops() -> None:
    # 4 packets of 250 B (5 ns each) on the line 0-1-2. Link 0->1 sends them at 0, 5, 10, 15;
    # they reach NPU 1 at 505, 510, 515, 520 and cross 1->2 at once, reaching NPU 2 at
    # 1010, 1015, 1020, 1025. Store-and-forward of the whole message would take 1040.
    p = one_message(placement=(0, 2))
    r = simulate(p, topo(LINE3), CB, packet_bytes=250)
    assert r.finish_ns == pytest.approx(1025.0)
    assert r.hops == 8
    assert r.rank_finish_ns[0] == pytest.approx(1025.0)  # the last packet arrived at 1025
    dep = simulate(p, topo(LINE3), CB, packet_bytes=250, cost=DEPARTURE)
    assert dep.rank_finish_ns[0] == pytest.approx(20.0)  # the last byte left at 20
    # A packet size that does not divide the message: 400 + 400 + 200 B (8, 8, 4 ns).
    # Hop 1 ends at 8, 16, 20 -> arrivals 508, 516, 520; hop 2 from 508 [508, 516] ->
    # 1016, [516, 524] -> 1024, [524, 528] -> 1028.
    r = simulate(p, topo(LINE3), CB, packet_bytes=400)
    assert r.finish_ns == pytest.approx(1028.0)


def test_more_packets_than_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import backends.sim.models

    monkeypatch.setattr(backends.sim.models, "MAX_PACKETS", 4)
    p = one_message(placement=(0, 2))
    assert simulate(p, topo(LINE3), CB, packet_bytes=250).hops == 8  # 4 packets: at the limit
    with pytest.raises(SimError, match="5 packets of 200 B is more than the limit of 4"):
        simulate(p, topo(LINE3), CB, packet_bytes=200)


def test_ring_allreduce_on_four_npus() -> None:
    # 6 steps (3 reduce-scatter, 3 all-gather); each send waits for the receive of the step
    # before, so the critical path is 6 hops of 520 ns = 3120 ns. Every rank sends 6
    # messages of 1000 B: each clockwise link is busy 120 ns, counter-clockwise ones idle.
    p = ring_allreduce(4)
    verify(p)
    r = simulate(p, topo("ring:4,bw=50GB/s,lat=500ns"), CB)
    assert r.finish_ns == pytest.approx(3120.0)
    assert r.messages == 24 and r.hops == 24
    assert sorted(r.link_busy_ns) == pytest.approx([0.0] * 4 + [120.0] * 4)
    # nccl-tests: size = 4 chunks x 1000 B; algbw = 4000 / 3120 B/ns; busbw x 2(n-1)/n.
    assert r.size_bytes == 4000
    assert r.algbw_gb_per_s == pytest.approx(4000 / 3120)
    assert r.busbw_gb_per_s == pytest.approx(4000 / 3120 * 1.5)


def test_reduction_cost() -> None:
    # Reductions at 10 bytes/ns: 1000 B cost 100 ns after each of the 3 reduce-scatter
    # receives, on the critical path: 3120 + 300.
    p = ring_allreduce(4)
    r = simulate(p, topo("ring:4,bw=50GB/s,lat=500ns"), CB, cost=CostModel(reduce_bytes_per_ns=10))
    assert r.finish_ns == pytest.approx(3420.0)


def test_busy_time_sums_to_hops_times_serialization() -> None:
    t = topo("torus:4x4,bw=50GB/s,lat=500ns")
    p = direct_allgather(16)
    r = simulate(p, t, CB)
    expected_hops = sum(len(t.route_links(a, b)) for a in range(16) for b in range(16) if a != b)
    assert r.hops == expected_hops
    assert r.link_busy_ns.sum() == pytest.approx(expected_hops * 20.0)
    assert r.finish_ns > 0
    assert 0 < r.busiest_link.utilization <= 1.0  # type: ignore[union-attr]


def test_busy_time_with_heterogeneous_links_and_packets() -> None:
    t = topo("mesh:3x2,bw=[100GB/s,25GB/s],lat=100ns")
    p = direct_allgather(6)
    r = simulate(p, t, 3000, packet_bytes=1024)
    want = 0.0
    for a in range(6):
        for b in range(6):
            if a != b:
                want += sum(3000 / t.links[li].bandwidth_bytes_per_ns for li in t.route_links(a, b))
    assert r.link_busy_ns.sum() == pytest.approx(want)
    assert r.hops == 3 * sum(len(t.route_links(a, b)) for a in range(6) for b in range(6) if a != b)


def test_placement_on_a_larger_topology() -> None:
    # A 2-rank broadcast placed on NPUs 5 and 10 of a 4x4 mesh: 10 is (2, 2), 5 is (1, 1):
    # dimension order 5 -> 6 -> 10, 2 hops.
    p = one_message(placement=(5, 10))
    r = simulate(p, topo("mesh:4x4,bw=50GB/s,lat=500ns"), CB)
    assert r.finish_ns == pytest.approx(1040.0)
    assert r.num_ranks == 2


def stream_graph(sizes: list[int]) -> TaskGraph:
    """Rank 0 sends one message per size to rank 1 (tags 0, 1, ...), all at once."""
    k = len(sizes)
    kind = [TaskKind.SEND] * k + [TaskKind.RECV] * k
    return TaskGraph(
        npus=(0, 1),
        rank_offsets=np.array([0, k, 2 * k]),
        kind=np.array(kind, dtype=np.int8),
        detail=np.array([Detail.SEND] * k + [Detail.RECV] * k, dtype=np.int8),
        peer=np.array([1] * k + [0] * k),
        nbytes=np.array(sizes + sizes),
        tag=np.array(list(range(k)) * 2),
        duration_ns=np.zeros(2 * k),
        duration_us=np.zeros(2 * k, dtype=np.int64),
        dep_offsets=np.zeros(2 * k + 1, dtype=np.int64),
        deps=np.zeros(0, dtype=np.int64),
        route_offsets=np.zeros(2 * k + 1, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
        origin=np.array(list(range(k)) * 2),
    )


def test_many_message_sizes() -> None:
    # 100 sizes (more than HopCosts keeps full rows for) queue FIFO on link 0->1: the last
    # arrives after all serializations plus one latency.
    sizes = [100 * (i + 1) for i in range(100)]
    r = simulate_tasks(stream_graph(sizes), topo("ring:2,bw=50GB/s,lat=500ns"))
    assert r.link_busy_ns[0] == pytest.approx(sum(sizes) / 50)
    assert r.finish_ns == pytest.approx(sum(sizes) / 50 + 500)


class SlowBigMessages(CostModel):
    """A cost model whose latency grows with the message (hop = bytes/bw + bytes ns), so a
    small message sent after a big one arrives first: arrivals leave the link's FIFO order."""

    def hop_ns(self, link: Link, nbytes: float) -> float:
        return nbytes / link.bandwidth_bytes_per_ns + nbytes


def test_arrivals_out_of_link_order() -> None:
    # 2000 B: link busy [0, 40], arrives 40 + 2000 = 2040. 1000 B: busy [40, 60], arrives
    # 60 + 1000 = 1060, before the first.
    # The sends complete when their messages arrive (on-arrival) or leave (on-departure).
    g = stream_graph([2000, 1000])
    for completion, sends in (
        (Completion.ON_ARRIVAL, [2040.0, 1060.0]),
        (Completion.ON_DEPARTURE, [40.0, 60.0]),
    ):
        r = simulate_tasks(
            g,
            topo("ring:2,bw=50GB/s,lat=500ns"),
            cost=SlowBigMessages(completion=completion),
            keep_timeline=True,
        )
        assert r.finish_ns == pytest.approx(2040.0)
        assert r.timeline is not None
        assert list(r.timeline.finish_ns) == pytest.approx([*sends, 2040.0, 1060.0])


def hinted_graph(hints: list[tuple[int, ...]]) -> TaskGraph:
    """`stream_graph` of 1000-byte messages, send i following ``hints[i]`` (() for none)."""
    g = stream_graph([1000] * len(hints))
    lens = [len(h) for h in hints] + [0] * len(hints)
    g.route_offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    g.route_nodes = np.array([v for h in hints for v in h], dtype=np.int64)
    return g


def test_route_hints_of_mixed_lengths() -> None:
    # On ring:4, 0 -> 1 directly, the long way 0>3>2>1, and by topology.route: 5 hops.
    g = hinted_graph([(0, 1), (0, 3, 2, 1), ()])
    r = simulate_tasks(g, topo("ring:4,bw=50GB/s,lat=500ns"))
    assert r.hops == 5
    assert r.finish_ns == pytest.approx(3 * 520.0)


def test_bad_route_hint_names_the_first_task() -> None:
    # Sends 1 and 2 both cross a missing link; the error names send 1 and its first gap.
    g = hinted_graph([(0, 1), (0, 3, 2, 0, 1), (0, 2, 1)])
    with pytest.raises(SimError, match=r"op 1 .*crosses 2>0"):
        simulate_tasks(g, topo("ring:4,bw=50GB/s,lat=500ns"))


def test_route_hint_through_a_node_the_topology_lacks() -> None:
    g = hinted_graph([(0, 1, 1), (0, 5, 1)])
    with pytest.raises(SimError, match=r"op 0 .*crosses 1>1"):
        simulate_tasks(g, topo("ring:4,bw=50GB/s,lat=500ns"))
    # Node 6 is not on ring:4: the second hint must not pass for the first (0>3>2>1).
    g = hinted_graph([(0, 3, 2, 1), (0, 2, 6, 1)])
    with pytest.raises(SimError, match=r"op 1 .*crosses 0>2"):
        simulate_tasks(g, topo("ring:4,bw=50GB/s,lat=500ns"))


def forward_race(through: int, direct: int) -> Program:
    """On fc:4, rank ``through`` sends to rank 2 by way of NPU 1, and rank
    ``direct`` sends to rank 1, which forwards it to rank 2: both requests for link 1->2
    come at 520 ns, when the first message reaches NPU 1 and the second is delivered there."""
    c = Collective(CollectiveKind.GATHER, 4, 1, root=2)
    b = ProgramBuilder(c, auto_deps=True, name="forward-race")
    b.send(through, 2, Slice(I, 0), hints=Hints(route=(through, 1, 2)))
    b.send(direct, 1, Slice(I, 0))
    b.recv(1, direct, Slice(O, direct))
    b.send(1, 2, Slice(O, direct))
    b.recv(2, through, Slice(O, through))
    b.recv(2, 1, Slice(O, direct))
    return b.build()


def recv_finish_on_rank2(r: SimResult) -> dict[int, float]:
    tl = r.timeline
    assert tl is not None
    return {
        int(tl.peer[t]): float(tl.finish_ns[t])
        for t in np.flatnonzero((tl.rank == 2) & (tl.kind == TaskKind.RECV))
    }


@pytest.mark.parametrize(("through", "direct"), [(0, 3), (3, 0)])
def test_at_one_instant_hops_go_before_sends_that_became_ready(through: int, direct: int) -> None:
    # Both requests for link 1->2 come at 520 ns: the message of rank `through` reaches NPU 1,
    # and rank 1's forward becomes ready as its receive completes. collc's rule serves the
    # instant's events first: the through message crosses [520, 540] and lands at 1040, the
    # forward [540, 560] and lands at 1060, whichever rank is lower.
    t = topo("fc:4,bw=50GB/s,lat=500ns")
    r = simulate(forward_race(through, direct), t, CB, keep_timeline=True)
    recv2 = recv_finish_on_rank2(r)
    assert recv2[through] == pytest.approx(1040.0)
    assert recv2[1] == pytest.approx(1060.0)
    assert r.finish_ns == pytest.approx(1060.0)


@pytest.mark.parametrize(("through", "direct"), [(0, 3), (3, 0)])
def test_astra_rule_serves_requests_in_the_order_they_were_queued(
    through: int, direct: int
) -> None:
    # Under ASTRA-sim's rule (task_order=False) the arrival queued first (that of the lower
    # rank, whose send was issued first at 0) requests link 1->2 first; the forward requests
    # it as soon as its receive completes.
    g = tasks_from_program(forward_race(through, direct), CB, fold_reductions=True)
    t = topo("fc:4,bw=50GB/s,lat=500ns")
    run = run_congestion(g, t, CostModel(), keep_records=True, task_order=False)
    recv = {int(g.peer[i]): float(run.finish_ns[i]) for i in range(g.num_tasks)
            if g.kind[i] == TaskKind.RECV and g.rank_of(i) == 2}  # fmt: skip
    first, second = (through, 1) if through < direct else (1, through)
    assert recv[first] == pytest.approx(1040.0)
    assert recv[second] == pytest.approx(1060.0)


def test_a_message_to_its_own_rank_crosses_no_link() -> None:
    # Another tool's ET may send to itself. Rank 0: a receive from itself (issued at 0, it
    # waits), a 100 ns COMP, then the send to itself after the COMP, then a COMP of 7 ns after
    # the receive. The message crosses nothing: send and receive finish at 100, the last
    # COMP at 107.
    g = TaskGraph(
        npus=(0,),
        rank_offsets=np.array([0, 4]),
        kind=np.array([TaskKind.RECV, TaskKind.COMP, TaskKind.SEND, TaskKind.COMP], dtype=np.int8),
        detail=np.array([Detail.RECV, Detail.COMP, Detail.SEND, Detail.COMP], dtype=np.int8),
        peer=np.array([0, -1, 0, -1]),
        nbytes=np.array([64, 0, 64, 0]),
        tag=np.zeros(4, dtype=np.int64),
        duration_ns=np.array([0.0, 100.0, 0.0, 7.0]),
        duration_us=np.zeros(4, dtype=np.int64),
        dep_offsets=np.array([0, 0, 0, 1, 2]),
        deps=np.array([1, 0]),
        route_offsets=np.zeros(5, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
        origin=np.arange(4),
    )
    r = simulate_tasks(g, topo("ring:2,bw=50GB/s,lat=500ns"), keep_timeline=True)
    assert r.timeline is not None
    assert list(r.timeline.finish_ns) == pytest.approx([100.0, 100.0, 100.0, 107.0])
    assert r.finish_ns == pytest.approx(107.0)
    assert r.hops == 0 and float(r.link_busy_ns.sum()) == 0.0


def test_reference_link_model_holds_the_link_for_the_latency() -> None:
    # The TACOS reference's links: busy for latency + serialization (520 ns here), so the
    # second message enters at 520 and lands at 1040 (a pipe: at 20, landing at 540).
    t = topo("ring:2,bw=50GB/s,lat=500ns")
    held = simulate(two_messages(), t, CB, cost=CostModel(latency_holds_link=True))
    assert held.finish_ns == pytest.approx(1040.0)
    assert held.link_busy_ns[0] == pytest.approx(1040.0)
    assert simulate(two_messages(), t, CB).finish_ns == pytest.approx(540.0)
