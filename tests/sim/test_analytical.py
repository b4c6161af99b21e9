"""The analytical model: ASTRA-sim's congestion-unaware backend on a program as a custom
collective (one dimension charged per message, truncated to whole ns, no contention, sends
complete on arrival, COMP nodes in whole µs with 0 -> 1 ns)."""

from __future__ import annotations

import math

from backends.sim import MODELS, simulate
from backends.sim.analytical import astra_delay_ns, astra_hops
from tests.sim.helpers import LINE3, gather3, one_message, ring_allreduce, topo, two_messages
from topologies.cost_model import CostModel

CB = 1000


def test_models_registry() -> None:
    assert set(MODELS) == {"congestion", "analytical", "astra-aware"}
    assert all(m.description for m in MODELS.values())


def test_hop_rule_per_dimension_kind() -> None:
    assert astra_hops("ring", 8, 1, 6) == 3  # the shorter way round
    assert astra_hops("ring", 8, 0, 4) == 4
    assert astra_hops("uniring", 8, 6, 1) == 3
    assert astra_hops("fc", 8, 0, 7) == 1
    assert astra_hops("switch", 8, 0, 7) == 2


def test_delay_is_truncated_once() -> None:
    # 2 hops x 500.4 + 1000 / 3 = 1000.8 + 333.33 = 1334.13 -> 1334 (not 2 x floor(...)).
    assert astra_delay_ns(2, 500.4, 3.0, 1000) == 1334


def test_one_message_and_contention_free() -> None:
    ring = topo("ring:2,bw=50GB/s,lat=500ns")
    r = simulate(one_message(), ring, CB, model="analytical")
    # One hop: 500 + 1000 / 50 = 520 ns; the copy on rank 0 is a COMP of 0 µs = 1 ns.
    assert r.finish_ns == 520
    assert r.rank_finish_ns[0] == 520  # the send completes on arrival
    assert len(r.link_busy_ns) == 0 and r.busiest_link is None
    # No contention: two messages at once both take 520 ns.
    assert simulate(two_messages(), ring, CB, model="analytical").finish_ns == 520


def test_switch_counts_latency_twice_and_serialization_once() -> None:
    # 2 x 500 + 20 = 1020 ns (cut-through), where the congestion model says 2 x 520 = 1040.
    t = topo("switch:3,bw=50GB/s,lat=500ns")
    assert simulate(gather3(), t, CB, model="analytical").finish_ns == 1020


def test_ring_allreduce_on_four_npus() -> None:
    # Each message: floor(500 + 1000 / 50) = 520 ns. A reduction of 0 µs is no node in the ET
    # (ASTRA-sim would run a 0 µs COMP for 1 ns), so step s sends as soon as step s-1's
    # message is in: 6 x 520.
    r = simulate(ring_allreduce(4), topo("ring:4,bw=50GB/s,lat=500ns"), CB, model="analytical")
    assert r.finish_ns == 6 * 520
    assert r.messages == 24 and r.hops == 24
    # With reductions of 2 µs written into the ET: 6 x 520 + 3 x 2000.
    r = simulate(
        ring_allreduce(4),
        topo("ring:4,bw=50GB/s,lat=500ns"),
        CB,
        model="analytical",
        reduce_micros=2,
    )
    assert r.finish_ns == 6 * 520 + 3 * 2000


def test_reduction_micros_come_from_the_cost_model() -> None:
    # 1000 B at 0.4 B/ns = 2500 ns -> 2 µs (nearest, halves to even) per reduction.
    cost = CostModel(reduce_bytes_per_ns=0.4)
    r = simulate(ring_allreduce(4), topo("ring:4"), CB, model="analytical", cost=cost)
    assert r.finish_ns == 6 * math.floor(500 + CB / 50) + 3 * 2000


def test_gib_bandwidth_and_truncation() -> None:
    # 50 GiB/s = 53.6870912 B/ns: 1 MiB takes 19531.25 ns; one hop 20031.25 -> 20031.
    t = topo("ring:4,bw=50GiB/s,lat=500ns")
    r = simulate(ring_allreduce(4), t, 1 << 20, model="analytical")
    assert r.finish_ns == 6 * 20031


def test_lowest_differing_dimension_only() -> None:
    # stack ring4 x fc2: NPU 0 = (0, 0), NPU 6 = (2, 1). ASTRA-sim charges dimension 0 only:
    # 2 ring hops x 100 ns + 1000 B / 100 B/ns = 210 ns (the fc hop is free).
    t = topo("stack:ring4*fc2,bw=[100GB/s,10GB/s],lat=[100ns,1000ns]")
    r = simulate(one_message(placement=(0, 6)), t, CB, model="analytical")
    assert r.finish_ns == 210
    assert any("lowest dimension" in n for n in r.notes)
    # Same dimension 1 only: NPU 0 -> 4 is (0,0) -> (0,1): 1 hop x 1000 + 1000 / 10 = 1100.
    r = simulate(one_message(placement=(0, 4)), t, CB, model="analytical")
    assert r.finish_ns == 1100


def test_torus_is_a_stack_of_rings() -> None:
    t = topo("torus:4x4,bw=50GB/s,lat=500ns")
    r = simulate(one_message(placement=(0, 2)), t, CB, model="analytical")
    assert r.finish_ns == 2 * 500 + 20
    assert not any("not a stack" in n for n in r.notes)


def test_other_topologies_use_their_routes() -> None:
    # The line 0-1-2 is no ASTRA-sim topology: 2 hops of latency + size once = 1020 ns.
    r = simulate(one_message(placement=(0, 2)), topo(LINE3), CB, model="analytical")
    assert r.finish_ns == 1020
    assert any("not a stack" in n for n in r.notes)
    # A mesh has no wraparound, so it is not a stack of rings either.
    r = simulate(one_message(placement=(0, 3)), topo("mesh:4x2"), CB, model="analytical")
    assert r.finish_ns == 3 * 500 + 20
    assert any("not a stack" in n for n in r.notes)


def test_route_hints_are_ignored() -> None:
    p = one_message(route=(0, 3, 2, 1))
    r = simulate(p, topo("ring:4,bw=50GB/s,lat=500ns"), CB, model="analytical")
    assert r.finish_ns == 520
    assert any("route hints" in n for n in r.notes)


def test_failed_links_fall_back_to_routes() -> None:
    # torus:4x4 without 0<->1: the route 0 -> 1 goes round the ring, 0 -> 3 -> 2 -> 1.
    t = topo("torus:4x4,bw=50GB/s,lat=500ns,fail=0-1")
    r = simulate(one_message(placement=(0, 1)), t, CB, model="analytical")
    assert r.finish_ns == 3 * 500 + 20
    assert any("failed links" in n for n in r.notes)
