"""`workloads.engine.run_workload`: ASTRA-sim's workload rules, with constant timers so every
time is a closed form."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tests.workloads.build import AG, AR, coll, comp, mem, other, recv, same, send, workload
from workloads.engine import CollCall, Roofline, WorkloadRun, local_ns, resource, run_workload
from workloads.model import CollKind, NodeKind, Workload, WorkloadError, check_workload

T = 7_000.0
"""Every collective's time (ns) in these tests."""
P = 3_000.0
"""Every message's time (ns)."""


def run(
    w: Workload,
    coll_ns: float = T,
    p2p_ns: float = P,
    *,
    remote_mem: tuple[float, float] | None = None,
) -> WorkloadRun:
    """``w`` checked, then run with every collective taking ``coll_ns`` and every message
    ``p2p_ns``."""
    check_workload(w)
    return run_workload(w, lambda c: coll_ns, lambda s, d, b: p2p_ns, remote_mem=remote_mem)


def ends(r: WorkloadRun, npu: int) -> list[float]:
    return r.ends[npu]


def test_a_compute_chain_sums_its_durations() -> None:
    # 3 µs, then 0 µs (1 ns), then 2 µs.
    w = same(1, [comp(0, 3), comp(1, 0, (0,)), comp(2, 2, (1,))])
    r = run(w)
    assert r.starts[0] == [0.0, 3000.0, 3001.0]
    assert r.ends[0] == [3000.0, 3001.0, 5001.0]
    assert r.finish_ns == [5001.0]
    assert r.compute_ns == [5001.0]
    assert r.exposed_ns == [0.0]
    assert r.time_ns == 5001.0


def test_independent_compute_runs_one_at_a_time_in_id_order() -> None:
    # File order 9, 4, 6; ids 4, 6, 9 issue first (one compute at a time).
    w = same(1, [comp(9, 1), comp(4, 2), comp(6, 3)])
    r = run(w)
    assert r.issue_order[0] == [1, 2, 0]
    assert r.starts[0] == [5000.0, 0.0, 2000.0]
    assert r.ends[0] == [6000.0, 2000.0, 5000.0]


def test_a_node_ready_later_with_a_smaller_id_waits_for_the_running_one() -> None:
    # 5 runs from 0; 1 becomes ready at 1 µs (after 0), 7 at the same time: 1 goes first at 8 µs.
    w = same(1, [comp(0, 1, is_cpu_op=True), comp(5, 8), comp(1, 2, (0,)), comp(7, 1, (0,))])
    r = run(w)
    start = dict(zip([n.id for n in w.ranks[0]], r.starts[0], strict=True))
    assert start == {0: 0.0, 5: 0.0, 1: 8000.0, 7: 10000.0}


def test_a_cpu_op_does_not_hold_the_gpu() -> None:
    w = same(1, [comp(0, 4, is_cpu_op=True), comp(1, 3)])
    r = run(w)
    assert r.ends[0] == [4000.0, 3000.0]
    # CPU ops are not GPU compute (ASTRA-sim's tics_gpu_ops).
    assert r.compute_ns == [3000.0]
    assert r.exposed_ns == [1000.0]


def test_compute_and_a_collective_overlap() -> None:
    w = same(2, [comp(0, 10), coll(1, AR, 1024)])
    r = run(w)
    for npu in range(2):
        assert r.starts[npu] == [0.0, 0.0]
        assert r.ends[npu] == [10_000.0, T]
    assert r.time_ns == 10_000.0
    assert r.exposed_ns == [0.0, 0.0]


def test_two_collectives_on_one_npu_run_one_after_another() -> None:
    w = same(2, [coll(0, AR, 1024), coll(1, AG, 256)])
    r = run(w)
    assert r.starts[0] == [0.0, T]
    assert r.ends[0] == [T, 2 * T]
    assert [(c.call.kind, c.index, c.start_ns, c.end_ns) for c in r.collectives] == [
        (AR, 0, 0.0, T),
        (AG, 1, T, 2 * T),
    ]


def test_collectives_of_different_groups_also_serialize_on_an_npu() -> None:
    g = {"1": (0, 1), "2": (0, 2)}
    w = workload(
        [coll(0, AR, 64, "1"), coll(1, AR, 64, "2")],
        [coll(0, AR, 64, "1")],
        [coll(0, AR, 64, "2")],
        groups=g,
    )
    r = run(w)
    assert r.ends == [[T, 2 * T], [T], [2 * T]]
    # NPU 2 issued at 0, waited for NPU 0.
    assert r.starts[2] == [0.0]


def test_a_receive_is_exempt_from_the_communication_limit() -> None:
    # NPU 0 runs a collective with NPU 2 while NPU 1's message arrives at P < T.
    w = workload(
        [coll(0, AR, 64, "1"), recv(1, 1, 0, 512, tag=5)],
        [send(0, 1, 0, 512, tag=5)],
        [coll(0, AR, 64, "1")],
        groups={"1": (0, 2)},
    )
    r = run(w)
    assert r.starts[0] == [0.0, 0.0]
    assert r.ends[0] == [T, P]
    assert r.ends[1] == [P]


def test_a_send_holds_the_communication_slot() -> None:
    # The send waits for the collective on its NPU (unlike a receive).
    w = workload(
        [coll(0, AR, 64), send(1, 0, 1, 512)],
        [coll(0, AR, 64), recv(1, 0, 1, 512)],
    )
    r = run(w)
    assert r.starts[0] == [0.0, T]
    assert r.ends[0] == [T, T + P]
    assert r.starts[1] == [0.0, 0.0]
    assert r.ends[1] == [T, T + P]


def test_a_collective_starts_when_its_last_member_issues_it() -> None:
    w = workload([coll(0, AR, 4096)], [comp(0, 5), coll(1, AR, 4096, deps=(0,))])
    r = run(w)
    assert r.starts[0] == [0.0]
    assert r.ends[0] == [5000.0 + T]
    assert r.ends[1] == [5000.0, 5000.0 + T]
    (c,) = r.collectives
    assert c.issued == {0: 0.0, 1: 5000.0}
    assert (c.start_ns, c.end_ns) == (5000.0, 5000.0 + T)
    assert c.call == CollCall(AR, 4096, (0, 1), "", None)
    # Exposed communication is the finish minus the compute.
    assert r.compute_ns == [0.0, 5000.0]
    assert r.exposed_ns == [5000.0 + T, T]


def test_the_timer_sees_the_group_and_its_attributes() -> None:
    calls: list[CollCall] = []

    def timer(c: CollCall) -> float:
        calls.append(c)
        return 100.0 * len(c.members)

    dims = (True, False)
    w = workload(
        [coll(0, AG, 300, "3", involved_dim=dims), coll(1, AR, 50, deps=(0,))],
        [coll(0, AR, 50)],
        [coll(0, AG, 300, "3", involved_dim=dims), coll(1, AR, 50, deps=(0,))],
        groups={"3": (0, 2)},
    )
    check_workload(w)
    r = run_workload(w, timer, lambda s, d, b: 0.0)
    assert calls == [CollCall(AG, 300, (0, 2), "3", dims), CollCall(AR, 50, (0, 1, 2), "", None)]
    assert r.ends == [[200.0, 500.0], [500.0], [200.0, 500.0]]


def test_send_completes_on_arrival_and_receive_when_posted_and_arrived() -> None:
    seen: list[tuple[int, int, int]] = []

    def p2p(src: int, dst: int, nbytes: int) -> float:
        seen.append((src, dst, nbytes))
        return 100.0 + nbytes

    # Receive posted early (1 µs < arrival) and late (5 µs > arrival).
    for post_us, recv_end in ((1, 100.0 + 2900), (5, 5000.0)):
        w = workload(
            [send(0, 0, 1, 2900, tag=1)],
            [comp(0, post_us), recv(1, 0, 1, 2900, tag=1, deps=(0,))],
        )
        check_workload(w)
        r = run_workload(w, lambda c: 0.0, p2p)
        assert r.ends[0] == [3000.0]
        assert r.starts[1][1] == post_us * 1000.0
        assert r.ends[1][1] == recv_end
    assert seen == [(0, 1, 2900)] * 2


def test_messages_match_first_come_first_matched() -> None:
    # Two messages of one (src, dst, tag, size): the receives complete in posting order.
    w = workload(
        [send(0, 0, 1, 10), send(1, 0, 1, 10, deps=(0,))],
        [recv(0, 0, 1, 10), recv(1, 0, 1, 10)],
    )
    r = run(w)
    assert r.ends[0] == [P, 2 * P]
    assert r.ends[1] == [P, 2 * P]


def test_a_broadcast_takes_its_duration_on_its_own() -> None:
    def never(c: CollCall) -> float:
        raise AssertionError("a broadcast is not a group collective")

    w = workload([coll(0, CollKind.BROADCAST, 1024, us=7), comp(1, 2, (0,))], [comp(0, 1)])
    check_workload(w)
    r = run_workload(w, never, lambda s, d, b: 0.0)
    assert r.ends[0] == [7000.0, 9000.0]
    assert r.ends[1] == [1000.0]
    assert r.collectives == []


def test_memory_nodes_need_remote_memory() -> None:
    w = same(1, [comp(0, 1), mem(3, 1000, (0,))])
    check_workload(w)
    with pytest.raises(WorkloadError) as info:
        run_workload(w, lambda c: 0.0, lambda s, d, b: 0.0)
    assert str(info.value).startswith("npu0.et: node 3")
    assert "--remote-mem" in str(info.value)


def test_memory_nodes_take_latency_plus_size_over_bandwidth() -> None:
    # 100 ns + 1000 B / 3 B/ns = 100 + 333 (whole ns); a load and a store hold the
    # communication slot one after the other.
    w = same(1, [mem(0, 1000), mem(1, 1000, store=True)])
    r = run(w, remote_mem=(100.0, 3.0))
    assert r.ends[0] == [433.0, 866.0]
    assert r.compute_ns == [0.0]


@pytest.mark.parametrize("kind", [NodeKind.METADATA, NodeKind.INVALID])
def test_metadata_and_invalid_nodes_take_no_time(kind: NodeKind) -> None:
    w = same(1, [other(0, kind), comp(1, 2, (0,)), other(2, kind, (1,))])
    r = run(w)
    assert r.starts[0] == [0.0, 0.0, 2000.0]
    assert r.ends[0] == [0.0, 2000.0, 2000.0]


def test_ctrl_deps_gate_issue_like_data_deps() -> None:
    w = same(1, [comp(0, 4, is_cpu_op=True), replace(comp(1, 2), ctrl_deps=(0,))])
    r = run(w)
    assert r.starts[0] == [0.0, 4000.0]


def test_roofline_compute_ns() -> None:
    roof = Roofline(peak_flops=1e14, mem_bw=1e12)
    # Compute-bound: intensity 123456.789 FLOP/B, 1e12 x that > 1e14; 123456789 / 1e14 s.
    assert roof.compute_ns(123_456_789, 1000) == 1234
    # Memory-bound: intensity 2, perf 2e12 FLOP/s; 2469134 / 2e12 s = 1234.567 ns.
    assert roof.compute_ns(2_469_134, 1_234_567) == 1234
    # Exactly at the ridge: intensity 100.
    assert roof.compute_ns(10**9, 10**7) == 10_000
    assert roof.compute_ns(5, 0) is None
    with pytest.raises(WorkloadError, match="positive"):
        Roofline(0.0, 1e12).compute_ns(10, 10)


def test_the_roofline_times_gpu_compute_not_cpu_ops() -> None:
    roof = Roofline(peak_flops=1e14, mem_bw=1e12)
    w = same(
        1,
        [
            comp(0, 9, num_ops=123_456_789, tensor_size=1000),
            comp(1, 9, (0,), num_ops=5, tensor_size=0),
            comp(2, 3, (1,), is_cpu_op=True),
        ],
    )
    check_workload(w, roofline=True)
    r = run_workload(w, lambda c: 0.0, lambda s, d, b: 0.0, roofline=roof)
    assert r.ends[0] == [1234.0, 1234.0, 4234.0]
    assert r.compute_ns == [1234.0]


def test_local_ns_and_resources() -> None:
    w = same(1, [comp(0, 0)])
    assert local_ns(w, 0, comp(0, 0), None, None) == 1.0
    assert local_ns(w, 0, comp(0, 12), None, None) == 12_000.0
    assert local_ns(w, 0, coll(0, CollKind.BROADCAST, 8, us=0), None, None) == 1.0
    assert local_ns(w, 0, coll(0, AR, 8), None, None) == 0.0
    assert resource(comp(0, 1)) == "comp"
    assert resource(comp(0, 1, is_cpu_op=True)) == "cpu"
    assert resource(recv(0, 1, 0, 8)) == "none"
    for nd in (send(0, 0, 1, 8), coll(0, AR, 8), mem(0, 8), other(0, NodeKind.METADATA)):
        assert resource(nd) == "comm"


def test_a_collective_that_never_completes_is_reported() -> None:
    # Not a checked workload: NPU 1 never issues the collective.
    w = workload([coll(0, AR, 64)], [comp(0, 1)])
    with pytest.raises(WorkloadError) as info:
        run_workload(w, lambda c: 0.0, lambda s, d, b: 0.0)
    assert str(info.value).startswith("npu0.et: node 0")
    assert "never completes" in str(info.value)


def test_every_node_has_a_time() -> None:
    w = workload(
        [comp(0, 1), coll(1, AR, 8, deps=(0,)), send(2, 0, 1, 8, deps=(1,))],
        [coll(0, AR, 8), recv(1, 0, 1, 8)],
    )
    r = run(w)
    assert all(not math.isnan(x) for row in r.starts + r.ends for x in row)
    # 1 µs, the collective, the message.
    assert r.time_ns == 1000.0 + T + P
    assert ends(r, 1) == [1000.0 + T, 1000.0 + T + P]


def test_pg_name_0_and_empty_count_as_one_group() -> None:
    # NPU 0 names the default group "" then "0", NPU 1 the other way round: the k-th
    # collective of the default group is the same one on both.
    w = workload(
        [coll(0, AR, 64, ""), coll(1, AG, 32, "0", deps=(0,))],
        [coll(0, AR, 64, "0"), coll(1, AG, 32, "", deps=(0,))],
    )
    r = run(w)
    assert [(c.call.kind, c.call.pg_name, c.index) for c in r.collectives] == [
        (AR, "", 0),
        (AG, "", 1),
    ]
    assert r.ends == [[T, 2 * T], [T, 2 * T]]
