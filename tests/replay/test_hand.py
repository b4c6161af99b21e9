"""The packet model against hand-computed cycles, and against the alpha-beta cost model.

Links of 10 GB/s at 1 GHz (W = 10 bytes/cycle) and 100 ns (L = 100 cycles); packets of 1000
bytes; a message of 2500 bytes is 3 packets of 100, 100 and 50 cycles (S = 250); router
pipeline R = 2 cycles. Cut-through over h hops without contention (docs/hardware.md):

    T_ct = h*L + (h+1)*R + S  =  T_sf - (h-1)*S + (h+1)*R,   T_sf = h*(L + B/W)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from backends.hwprog import HwOptions
from backends.replay import ReplayOptions, replay
from backends.sim import simulate
from tests.replay.helpers import one_message, two_into_one_port, write
from topologies import parse_topology
from topologies.cost_model import CostModel

L, R, S = 100, 2, 250
LINK = "bw=10GB/s,lat=100ns"
CUT_THROUGH = CostModel(cut_through_router_ns=R)
HW = HwOptions(packet_bytes=1000, router_cycles=R, buffer_depth=64)


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_one_message_over_h_hops(tmp_path: Path, hops: int) -> None:
    program, _ = one_message(hops)
    spec = f"mesh:{hops + 1},{LINK}"
    res = replay(write(program, spec, tmp_path / "hw", 2500, HW))
    assert res.cycles == hops * L + (hops + 1) * R + S  # 354, 456, 558
    assert (res.packets, res.packet_hops) == (3, 3 * hops)
    assert res.postcondition == "holds" and res.deadlock is None
    # Every link on the way carried the whole message once.
    assert sorted(lk.busy_cycles for lk in res.links if lk.busy_cycles) == [S] * hops
    # The alpha-beta model (store-and-forward, whole messages) and the formula between them.
    t_sf = simulate(program, parse_topology(spec), 2500).finish_ns
    assert t_sf == hops * (L + S)
    assert res.cycles == t_sf - (hops - 1) * S + (hops + 1) * R
    # The simulator applies the formula itself under cut-through switching, to the whole
    # message or to each of its packets: without contention both pipeline the same way.
    topo = parse_topology(spec)
    assert simulate(program, topo, 2500, cost=CUT_THROUGH).finish_ns == res.cycles
    packets = simulate(program, topo, 2500, cost=CUT_THROUGH, packet_bytes=1000)
    assert packets.finish_ns == res.cycles and packets.hops == 3 * hops
    # Store-and-forward packets pipeline too, but each pays its serialization per hop:
    # the first packet arrives at h(L + 100) and the last 150 cycles behind it.
    assert simulate(program, topo, 2500, packet_bytes=1000).finish_ns == hops * (L + 100) + 150


def test_two_messages_through_one_port(tmp_path: Path) -> None:
    """0>1>2 (flow a, 3 packets) and 1>2 (flow b, 3 packets) share router 1's port to 2.

    b's packets start at 2, 102 (a's first packet is ready at router 1 only at 104); at 202
    round-robin turns to a (a0: 202-302), then b2 (302-352), then a1 (352-452), a2 (452-502).
    b is delivered at 302 + 100 + 50 + 2 = 454, a at 452 + 100 + 50 + 2 = 604."""
    program, _ = two_into_one_port()
    out = write(program, f"mesh:3,{LINK}", tmp_path / "hw", 2500, HW)
    res = replay(out, ReplayOptions(timeline=True))
    assert res.cycles == 604
    tl = res.timeline
    assert tl is not None
    recv_done = {tl["flow"][g]: tl["finish"][g] for g in range(len(tl["op"])) if tl["op"][g] == 1}
    spans = {  # link 1>2's busy spans, merged per flow
        (a, b, f)
        for i, lk in enumerate(res.links)
        if (lk.src, lk.dst) == (1, 2)
        for a, b, f in tl["links"][i]
    }
    b_flow = tl["flow"][next(g for g in range(len(tl["op"])) if tl["npu"][g] == 1)]
    a_flow = 1 - b_flow
    assert recv_done == {a_flow: 604, b_flow: 454}
    assert spans == {
        (2, 202, b_flow),
        (202, 302, a_flow),
        (302, 352, b_flow),
        (352, 502, a_flow),
    }
    assert res.postcondition == "holds"
    # Without contention b alone would take 2R + L + S = 354; the cost model charges it FIFO.
    assert simulate(program, parse_topology(f"mesh:3,{LINK}"), 2500).finish_ns == 700
    # Cut-through in the simulator keeps whole messages FIFO: b holds 1>2 for 2-252 and is
    # delivered at 354; a's head is at router 1 at 104, it takes 1>2 for 252-502 and is
    # delivered at 502 + 100 + 2 = 604, the replay's end (round robin delivers b at 454).
    r = simulate(program, parse_topology(f"mesh:3,{LINK}"), 2500, cost=CUT_THROUGH)
    assert r.finish_ns == 604
    assert r.rank_finish_ns.tolist() == [604.0, 354.0, 604.0]  # sends complete on arrival
    # In packets the simulator's links stay FIFO: b's three packets queued at 0, before a0
    # reached router 1 at 104, so the delivery times do not change.
    rp = simulate(
        program, parse_topology(f"mesh:3,{LINK}"), 2500, cost=CUT_THROUGH, packet_bytes=1000
    )
    assert rp.rank_finish_ns.tolist() == [604.0, 354.0, 604.0]


def test_credits_limit_a_shallow_buffer(tmp_path: Path) -> None:
    """One VC buffer of 1 packet: each packet waits for the previous one's credit, which
    comes back L after its tail left the buffer (delivered at start + L + s + R)."""
    program, _ = one_message(1)
    hw = dataclasses.replace(HW, buffer_depth=1)
    res = replay(write(program, f"mesh:2,{LINK}", tmp_path / "hw", 2500, hw))
    # p0 starts at 2, credit back at 2+100+100+2+100 = 304; p1 at 304, back at 606;
    # p2 (50 cycles) at 606, delivered at 606 + 100 + 50 + 2.
    assert res.cycles == 758
    assert max(b.max_packets for b in res.buffers) == 1


def test_on_departure_releases_the_sender_earlier(tmp_path: Path) -> None:
    """The completion rule changes only what waits on a send: the receive still ends at 354."""
    program, _ = one_message(1)
    for rule in ("on-arrival", "on-departure"):
        out = write(program, f"mesh:2,{LINK}", tmp_path / rule, 2500, HW, completion=rule)
        res = replay(out, ReplayOptions(timeline=True))
        assert res.cycles == 354 and res.completion == rule
        tl = res.timeline
        assert tl is not None
        send = next(g for g in range(len(tl["op"])) if tl["op"][g] == 0)
        # on-departure: the last packet (50 cycles) left at 2 + 100 + 100 + 50.
        assert tl["finish"][send] == (354 if rule == "on-arrival" else 252)
