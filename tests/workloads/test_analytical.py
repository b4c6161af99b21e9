"""`workloads.analytical`: ASTRA-sim's congestion-unaware backend with its native collectives.

Closed forms by ASTRA-sim's rules (backends/sim/native.py): a ring all-reduce over p NPUs of a
chunk of D bytes is 2(p-1) steps of D/p bytes (integer division), each costing the message
delay ``int(hops x latency + bytes / bandwidth)`` plus the endpoint delay (10 ns), and one more
endpoint delay for the packet released before the first step. ASTRA-sim's
bandwidth is in GB/s of 2^30 bytes, so a 50 GB/s (decimal) link is 46.566 of its GB/s, 50 bytes
per ns; the specs here use decimal GB/s so every bandwidth is a whole number of bytes per ns.
"""

from __future__ import annotations

import math

import pytest

from backends.sim.native import astrasim_native_time, astrasim_p2p_ns
from backends.sim.native_ring import group_ring_ends
from chakra_ir.collective import CollectiveKind
from tests.workloads.build import AG, AR, RS, coll, comp, same, workload
from topologies import parse_topology
from workloads.analytical import NativeConfig, native_timers, run_analytical, system_json
from workloads.engine import CollCall, run_workload
from workloads.model import CollKind, WorkloadError, check_workload

GIB = 1 << 30
S = 1 << 20
RING8 = parse_topology("ring:8")  # 50 GB/s = 50 B/ns, 500 ns
STACK = parse_topology("stack:ring4*ring2,bw=[100GB/s,25GB/s],lat=[100ns,700ns]")
ALL8 = tuple(range(8))


def delay(hops: int, lat: float, bw: float, nbytes: int) -> int:
    """ASTRA-sim's message delay, truncated to whole ns."""
    return math.floor(hops * lat + nbytes / bw)


def test_dimensions_are_in_astra_sims_gb_per_s() -> None:
    _, _, dims = native_timers(STACK, NativeConfig())
    assert [(d.topology, d.npus, d.latency_ns) for d in dims] == [
        ("Ring", 4, 100.0),
        ("Ring", 2, 700.0),
    ]
    assert dims[0].bandwidth_gbps == pytest.approx(100e9 / GIB)
    assert dims[1].bandwidth_gbps == pytest.approx(25e9 / GIB)
    assert dims[0].bandwidth_bytes_per_ns == pytest.approx(100.0)


def test_a_whole_cluster_all_reduce_is_astra_sims_native_time() -> None:
    config = NativeConfig(endpoint_delay_ns=25, local_mem_bw_gbps=80.0)
    coll_t, _, dims = native_timers(RING8, config)
    t = coll_t(CollCall(AR, S, ALL8))
    assert t == astrasim_native_time(
        "allreduce",
        dims,
        S,
        ["ring"],
        endpoint_delay=25,
        local_mem_bw=80.0,
        size_convention="astrasim",
    )
    # 14 steps of 131072 B and the release before the first; the 7 reduce-scatter steps also
    # reduce 3 x 131072 B at 80 B/ns, each pass truncated to whole ns (1638.4 -> 1638).
    m = S // 8
    step = delay(1, 500, 50, m) + 25
    assert t == 14 * step + 25 + 7 * 3 * 1638


def test_a_whole_cluster_ring_all_reduce_closed_form() -> None:
    coll_t, _, _ = native_timers(RING8, NativeConfig())
    # 131072 B / 50 B/ns = 2621.44 ns; 14 x (3121 + 10) + 10.
    assert coll_t(CollCall(AR, S, ALL8)) == 14 * (delay(1, 500, 50, S // 8) + 10) + 10 == 43844


def test_all_gather_and_reduce_scatter_sizes_are_astra_sims() -> None:
    coll_t, _, _ = native_timers(RING8, NativeConfig())
    # All-gather: comm_size is the per-rank input; 7 steps of the whole 1000 B.
    assert coll_t(CollCall(AG, 1000, ALL8)) == 7 * (delay(1, 500, 50, 1000) + 10) + 10
    # Reduce-scatter: 7 steps of 8000 / 8 B.
    assert coll_t(CollCall(RS, 8000, ALL8)) == 7 * (delay(1, 500, 50, 1000) + 10) + 10
    # A chunk smaller than the NPU count is raised to one byte per NPU.
    assert coll_t(CollCall(AR, 3, ALL8)) == 14 * (delay(1, 500, 50, 1) + 10) + 10


def test_a_group_of_two_is_a_ring_over_the_group() -> None:
    coll_t, _, _ = native_timers(RING8, NativeConfig())
    # p = 2: 2 steps of S/2 = 524288 B (10485.76 ns) between neighbours, 3 releases.
    t = coll_t(CollCall(AR, S, (0, 1), "1"))
    assert t == 2 * delay(1, 500, 50, S // 2) + 3 * 10 == 22000


def test_an_uneven_group_ring_is_timed_message_by_message() -> None:
    # Logical ring 0 -> 2 -> 5 -> 0: 2, 3 and 3 hops. Each member's end is its longest chain of
    # 4 steps back along the ring, plus 5 releases of 10 ns: the endpoint delay (0 here) does
    # not apply to a group's ring.
    a, b = delay(2, 500, 50, S // 3), delay(3, 500, 50, S // 3)
    coll_t, _, dims = native_timers(RING8, NativeConfig(endpoint_delay_ns=0))
    t = coll_t(CollCall(AR, S, (0, 2, 5), "7"))
    assert t == 50 + a + 3 * b < 4 * b + 50
    ends = group_ring_ends(
        CollectiveKind.ALLREDUCE, (0, 2, 5), S, 1, lambda x, y, m: astrasim_p2p_ns(dims, x, y, m)
    )
    assert ends == [50 + a + 3 * b, 50 + 2 * a + 2 * b, 50 + a + 3 * b]
    # NPU 5 starts 10 us late: its successor NPU 0 ends 10 us later, NPU 2 (whose chain of 4
    # links back does not start at NPU 5's first release) not at all, and NPU 5 itself less
    # than 10 us later, the others' first steps having overlapped its wait.
    late = group_ring_ends(
        CollectiveKind.ALLREDUCE,
        (0, 2, 5),
        S,
        1,
        lambda x, y, m: astrasim_p2p_ns(dims, x, y, m),
        starts=(0.0, 0.0, 10_000.0),
    )
    assert late[0] == ends[0] + 10_000 and late[1] == ends[1]
    assert ends[2] < late[2] < ends[2] + 10_000


def test_a_group_on_a_stack_charges_the_lowest_differing_dimension() -> None:
    coll_t, _, _ = native_timers(STACK, NativeConfig())
    # NPUs 0 and 4 differ in dimension 1 only (25 B/ns, 700 ns).
    t = coll_t(CollCall(AR, S, (0, 4), "1"))
    assert t == 2 * (delay(1, 700, 25, S // 2) + 10) + 10
    # NPUs 0 and 1 differ in dimension 0 (100 B/ns, 100 ns).
    t = coll_t(CollCall(AR, S, (0, 1), "2"))
    assert t == 2 * (delay(1, 100, 100, S // 2) + 10) + 10


def test_involved_dim_drops_dimensions() -> None:
    coll_t, _, _ = native_timers(STACK, NativeConfig())
    dim0 = 6 * (delay(1, 100, 100, S // 4) + 10) + 10  # ring of 4: 6 steps of S/4
    dim1 = 2 * (delay(1, 700, 25, S // 2) + 10) + 10  # ring of 2: 2 steps of S/2
    everything = tuple(range(8))
    assert coll_t(CollCall(AR, S, everything)) == dim0 + dim1
    assert coll_t(CollCall(AR, S, everything, "", (True, True))) == dim0 + dim1
    assert coll_t(CollCall(AR, S, everything, "", (True, False))) == dim0
    assert coll_t(CollCall(AR, S, everything, "", (False, True))) == dim1


def test_involved_dim_reaches_the_timer_from_the_workload() -> None:
    coll_t, p2p, _ = native_timers(STACK, NativeConfig())
    w = same(8, [coll(0, AR, S, involved_dim=(False, True))])
    check_workload(w)
    r = run_workload(w, coll_t, p2p)
    assert r.time_ns == 2 * (delay(1, 700, 25, S // 2) + 10) + 10


def test_p2p_is_hops_times_latency_plus_bytes_over_bandwidth() -> None:
    _, p2p, _ = native_timers(RING8, NativeConfig())
    assert p2p(0, 3, 1234) == delay(3, 500, 50, 1234) == 1524
    assert p2p(0, 5, 1234) == delay(3, 500, 50, 1234)  # the shorter way round
    assert p2p(7, 0, 1234) == delay(1, 500, 50, 1234)
    _, p2p, _ = native_timers(STACK, NativeConfig())
    assert p2p(0, 5, 1234) == delay(1, 100, 100, 1234) == 112
    assert p2p(0, 4, 1234) == delay(1, 700, 25, 1234) == 749


def test_the_implementation_knob() -> None:
    config = NativeConfig(implementation=("direct",))
    coll_t, _, _ = native_timers(RING8, config)
    # Direct all-reduce on 8: a reduce-scatter and an all-gather round of all 7 peers, each
    # costing its slowest message (4 hops away) of S/8 bytes.
    assert coll_t(CollCall(AR, S, ALL8)) == 2 * (delay(4, 500, 50, S // 8) + 10) + 10


def test_an_unsupported_collective_algorithm_is_a_workload_error() -> None:
    coll_t, _, _ = native_timers(RING8, NativeConfig(implementation=("halvingDoubling",)))
    with pytest.raises(WorkloadError, match="ALL_TO_ALL of 4096 B on 8 NPUs"):
        coll_t(CollCall(CollKind.ALL_TO_ALL, 4096, ALL8))


@pytest.mark.parametrize("spec", ["mesh:2x4", "uniring:8"])
def test_topologies_without_an_astra_sim_network_are_refused(spec: str) -> None:
    with pytest.raises(WorkloadError, match="ASTRA-sim network"):
        native_timers(parse_topology(spec), NativeConfig())


def test_system_json_keys() -> None:
    config = NativeConfig(
        implementation=("ring",),
        per_kind={CollKind.ALL_TO_ALL: ("direct", "ring")},
        endpoint_delay_ns=7,
        preferred_dataset_splits=4,
        active_chunks_per_dimension=2,
        local_mem_bw_gbps=1600.0,
        peak_perf_tflops=900.0,
        roofline=True,
        collective_optimization="localBWAware",
    )
    assert system_json(config, 2) == {
        "scheduling-policy": "FIFO",
        "endpoint-delay": 7,
        "active-chunks-per-dimension": 2,
        "preferred-dataset-splits": 4,
        "collective-optimization": "localBWAware",
        "local-mem-bw": 1600.0,
        "peak-perf": 900.0,
        "roofline-enabled": 1,
        "all-reduce-implementation": ["ring", "ring"],
        "all-gather-implementation": ["ring", "ring"],
        "reduce-scatter-implementation": ["ring", "ring"],
        "all-to-all-implementation": ["direct", "ring"],
    }
    assert system_json(NativeConfig(), 1)["roofline-enabled"] == 0


def test_an_eight_npu_workload_with_one_collective() -> None:
    coll_t, p2p, _ = native_timers(RING8, NativeConfig())
    w = same(8, [comp(0, 2), coll(1, AR, S, deps=(0,))])
    check_workload(w)
    r = run_workload(w, coll_t, p2p)
    t = 14 * (delay(1, 500, 50, S // 8) + 10) + 10
    assert r.time_ns == 2000 + t
    assert r.exposed_ns == [t] * 8


def test_a_group_workload_on_eight_npus() -> None:
    coll_t, p2p, _ = native_timers(RING8, NativeConfig())
    groups = {"1": (0, 1), "2": (2, 3, 4, 5, 6, 7)}
    w = workload(
        *([coll(0, AR, S, "1")] for _ in range(2)),
        *([coll(0, AG, 600, "2")] for _ in range(6)),
        groups=groups,
    )
    check_workload(w)
    r = run_workload(w, coll_t, p2p)
    pair = 2 * delay(1, 500, 50, S // 2) + 3 * 10
    # All-gather on the logical ring 2..7: 5 steps of 600 B; the pair 7 -> 2 is 3 hops, the
    # others 1. A member ends after the 5 links back from it and 6 releases: every member but
    # 7 crosses 7 -> 2.
    c, e = delay(3, 500, 50, 600), delay(1, 500, 50, 600)
    six = 60 + c + 4 * e
    assert r.finish_ns == [pair] * 2 + [six] * 6
    # Timed per member (the analytical mode), member 7 ends before the others.
    run, shortcut = run_analytical(w, RING8, NativeConfig(), classes=check_workload(w))
    assert shortcut == "none"
    assert run.finish_ns == [pair] * 2 + [six] * 5 + [60 + 5 * e]
