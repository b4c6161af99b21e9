"""ASTRA-sim's native collectives against closed forms of its analytical backend.

Bandwidths are ASTRA-sim's GB/s (2^30 B/s): 50 GB/s = 53.6870912 B/ns, so 1 MiB takes
19531.25 ns; every message delay is truncated to whole ns.
"""

from __future__ import annotations

import math

import pytest

from backends.sim import (
    AstraDim,
    astrasim_native_estimate,
    astrasim_native_time,
    dims_from_topology,
)
from backends.sim.errors import SimError
from backends.sim.native import _schedule, parse_algorithm
from topologies import parse_topology

MIB = 1 << 20
B50 = 50 * 2**30 / 1e9  # bytes per ns
B25 = 25 * 2**30 / 1e9


def fl(x: float) -> int:
    return math.floor(x)


def test_ring_allreduce_closed_form() -> None:
    # 2(p-1) steps of (alpha + M/(pB)): p = 4, M = 4 MiB: 6 x floor(500 + 19531.25).
    t = astrasim_native_time(
        "allreduce", [("Ring", 4, 50, 500)], 4 * MIB, ["ring"], endpoint_delay=0
    )
    assert t == 6 * 20031
    assert t == pytest.approx(2 * 3 * (500 + 4 * MIB / (4 * B50)), abs=6)


def test_endpoint_delay_and_reduction_per_step() -> None:
    # + 10 ns per step (6 steps) and one before the first, + 3 m / 50 GB/s (decimal), each of
    # the three passes truncated to whole ns, on the 3 reduce-scatter steps.
    t = astrasim_native_time(
        "allreduce", [("Ring", 4, 50, 500)], 4 * MIB, ["ring"], endpoint_delay=10, local_mem_bw=50
    )
    assert t == 6 * (20031 + 10) + 10 + 3 * 3 * int(MIB / 50)


def test_reduce_scatter_and_allgather_sizes() -> None:
    # RS of 4 MiB on 4: 3 steps of 1 MiB. AG: ASTRA-sim's size is the per-rank input; with
    # nccl sizes a 4 MiB all-gather has 1 MiB inputs and 3 steps of 1 MiB.
    rs = astrasim_native_time(
        "reduce_scatter", [("Ring", 4, 50, 500)], 4 * MIB, "ring", endpoint_delay=0
    )
    ag = astrasim_native_time(
        "allgather", [("Ring", 4, 50, 500)], 4 * MIB, "ring", endpoint_delay=0
    )
    ag_astra = astrasim_native_time(
        "allgather",
        [("Ring", 4, 50, 500)],
        MIB,
        "ring",
        size_convention="astrasim",
        endpoint_delay=0,
    )
    assert rs == ag == ag_astra == 3 * 20031


def test_alltoall_ring_steps() -> None:
    t = astrasim_native_time("alltoall", [("Ring", 4, 50, 500)], 4 * MIB, "ring", endpoint_delay=0)
    assert t == 6 * 20031  # p(p-1)/2 = 6 neighbour steps of D/p


def test_direct_on_a_switch_is_two_rounds() -> None:
    # Direct AR = RS + AG, each one round of messages of D/p to all peers at once; a switch
    # hop counts latency twice: 2 x floor(2 x 1000 + (8 MiB / 8) / B25).
    t = astrasim_native_time(
        "allreduce", [("Switch", 8, 25, 1000)], 8 * MIB, ["direct"], endpoint_delay=0
    )
    assert t == 2 * fl(2000 + MIB / B25)
    assert t == pytest.approx(2 * (2 * 1000 + 8 * MIB / (8 * B25)), abs=2)


def test_direct_on_a_ring_pays_the_farthest_peer() -> None:
    # Ring of 8: the farthest peer is 4 hops away; a window of 2 makes 4 rounds per half,
    # at distances (1,2), (3,4), (5,6), (7): worst hops 2, 4, 3, 1.
    m = 8 * MIB // 8
    full = astrasim_native_time(
        "allreduce", [("Ring", 8, 50, 500)], 8 * MIB, "direct", endpoint_delay=0
    )
    assert full == 2 * fl(4 * 500 + m / B50)
    win = astrasim_native_time(
        "allreduce", [("Ring", 8, 50, 500)], 8 * MIB, "direct2", endpoint_delay=0
    )
    assert win == 2 * sum(fl(h * 500 + m / B50) for h in (2, 4, 3, 1))


def test_halving_doubling() -> None:
    # p = 8: RS step k sends D/2^k to distance 2^(k-1) (ring hops 1, 2, 4); AG mirrors it.
    D = 8 * MIB
    rs = [fl(h * 500 + (D >> k) / B50) for k, h in ((1, 1), (2, 2), (3, 4))]
    t = astrasim_native_time(
        "allreduce", [("Ring", 8, 50, 500)], D, "halvingDoubling", endpoint_delay=0
    )
    assert t == 2 * sum(rs)
    closed = 2 * sum(h * 500 + D / (2**k * B50) for k, h in ((1, 1), (2, 2), (3, 4)))
    assert t == pytest.approx(closed, abs=6)
    with pytest.raises(SimError, match="power-of-2"):
        astrasim_native_time("allreduce", [("Ring", 6, 50, 500)], D, "halvingDoubling")


def test_multi_dim_local_bw_aware() -> None:
    # Ring 4 x Switch 8, localBWAware, one chunk: RS on dim 0 (3 steps of D/4), AR on dim 1
    # (ring: 14 steps of D/4/8), AG on dim 0 (3 steps of D/4): bytes on dim k follow
    # 2(p_k-1)/p_k x D/prod(p_j<k).
    D = 32 * MIB
    dims = [("Ring", 4, 50, 500), ("Switch", 8, 25, 1000)]
    est = astrasim_native_estimate(
        "allreduce",
        dims,
        D,
        ["ring", "ring"],
        collective_optimization="localBWAware",
        endpoint_delay=0,
    )
    a = fl(500 + (D // 4) / B50)
    b = fl(2 * 1000 + (D // 32) / B25)
    assert est.time_ns == 3 * a + 14 * b + 3 * a
    assert [(p.dim, p.comm, p.bytes_in) for p in est.phases] == [
        (0, "reduce_scatter", D),
        (1, "allreduce", D // 4),
        (0, "allgather", D // 4),
    ]
    # baseline: a full all-reduce of the whole chunk on each dimension.
    base = astrasim_native_time("allreduce", dims, D, ["ring", "ring"], endpoint_delay=0)
    assert base == 6 * fl(500 + (D // 4) / B50) + 14 * fl(2000 + (D // 8) / B25)


def test_chunks_run_serially_on_one_dimension() -> None:
    one = astrasim_native_time(
        "allreduce", [("Ring", 4, 50, 500)], 4 * MIB, "ring", endpoint_delay=0
    )
    four = astrasim_native_time(
        "allreduce",
        [("Ring", 4, 50, 500)],
        16 * MIB,
        "ring",
        preferred_dataset_splits=4,
        endpoint_delay=0,
    )
    assert four == 4 * one
    # Two active chunks overlap without contention: half the time.
    two = astrasim_native_time(
        "allreduce",
        [("Ring", 4, 50, 500)],
        16 * MIB,
        "ring",
        preferred_dataset_splits=4,
        active_chunks_per_dimension=2,
        endpoint_delay=0,
    )
    assert two == 2 * one


def test_chunks_pipeline_across_dimensions() -> None:
    # Phases A (dim 0, 10), B (dim 1, 30), C (dim 0, 10), two chunks, one active: chunk 0 runs
    # A [0,10] B [10,40] C [40,50]; chunk 1 enters at 10: A [10,20], B waits for dim 1 until
    # 40: B [40,70], C [70,80].
    assert _schedule([(0, 10.0), (1, 30.0), (0, 10.0)], 2, 1) == 80.0
    assert _schedule([(0, 10.0)], 3, 1) == 30.0
    assert _schedule([(0, 10.0)], 3, 3) == 10.0


def test_minimum_chunk_rule() -> None:
    # 16 B split 4 ways on 8 NPUs: chunks of 4 B < 8 NPUs are raised to 8 B, size 32 B.
    est = astrasim_native_estimate(
        "allreduce", [("Ring", 8, 50, 500)], 16, "ring", preferred_dataset_splits=4
    )
    assert (est.chunk_bytes, est.chunks, est.comm_size_bytes) == (8, 4, 32)
    # All-gather is exempt.
    est = astrasim_native_estimate(
        "allgather",
        [("Ring", 8, 50, 500)],
        16,
        "ring",
        preferred_dataset_splits=4,
        size_convention="astrasim",
    )
    assert (est.chunk_bytes, est.chunks) == (4, 4)


def test_one_ring_over_all_npus() -> None:
    # oneRing over Ring 4 x Ring 2 (8 NPUs in id order): consecutive ids always differ in
    # dimension 0, so every step costs one dimension-0 hop: 14 steps of floor(500 + m/B).
    D = 8 * MIB
    t = astrasim_native_time(
        "allreduce",
        [("Ring", 4, 50, 500), ("Ring", 2, 25, 1000)],
        D,
        ["oneRing", "ring"],
        endpoint_delay=0,
    )
    assert t == 14 * fl(500 + (D // 8) / B50)


def test_dims_from_topology_and_parse() -> None:
    t = parse_topology(
        "stack:ring4*fc2*switch8,bw=[200GB/s,100GB/s,50GB/s],lat=[100ns,200ns,500ns]"
    )
    dims = dims_from_topology(t)
    assert [(d.topology, d.npus, d.latency_ns) for d in dims] == [
        ("Ring", 4, 100.0),
        ("FullyConnected", 2, 200.0),
        ("Switch", 8, 500.0),
    ]
    assert dims[0].bandwidth_bytes_per_ns == pytest.approx(200.0)
    with pytest.raises(SimError, match="not a stack"):
        dims_from_topology(parse_topology("mesh:4x4"))
    assert parse_algorithm("direct8").window == 8
    assert parse_algorithm("oneHalvingDoubling").flat
    assert AstraDim("fullyconnected", 4, 1, 1).kind == "fc"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "broadcast"}, "not broadcast"),
        ({"algorithms": ["ring", "ring"]}, "2 algorithms for 1 dimensions"),
        ({"algorithms": ["doubleBinaryTree"]}, "not modelled"),
        ({"algorithms": ["tree"]}, "unknown ASTRA-sim algorithm"),
        ({"size_bytes": 0}, "size must be positive"),
        ({"dims": [("Torus", 4, 50, 500)]}, "unknown ASTRA-sim dimension"),
        ({"collective_optimization": "themis"}, "unknown collective optimization"),
    ],
)
def test_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "kind": "allreduce",
        "dims": [("Ring", 4, 50, 500)],
        "size_bytes": MIB,
        "algorithms": ["ring"],
    }
    args.update(kwargs)
    with pytest.raises(SimError, match=message):
        astrasim_native_time(**args)  # type: ignore[arg-type]
