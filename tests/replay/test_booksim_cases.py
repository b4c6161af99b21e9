"""The BookSim2 calibration cases (docs/hardware.md, "Calibration against BookSim2") with
hand-computed cycles.

Links of 16 bytes per cycle and 1 cycle of latency (BookSim's channels with
``use_noc_latency = 0``), packets of 64 bytes (4 flits: s = 4), router pipeline R = 4
(BookSim's routing, VC allocation, switch allocation and traversal). BookSim's figures are
these plus 2 cycles: its injection and ejection channels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.hwprog import HwOptions
from backends.hwprog.errors import HwProgError
from backends.replay import replay
from tests.replay.helpers import one_message, write
from tests.replay.shift import shift_program

LINK = "bw=16GB/s,lat=1ns"
L, R, S = 1, 4, 4


def hw(depth: int = 16, vcs: int = 2, force: bool = False) -> HwOptions:
    return HwOptions(
        vcs=vcs, packet_bytes=64, buffer_depth=depth, link_width=16, router_cycles=R, force=force
    )


@pytest.mark.parametrize(("hops", "ring"), [(1, 8), (2, 5), (3, 7)])
def test_zero_load_latency(tmp_path: Path, hops: int, ring: int) -> None:
    program, _ = one_message(hops)
    res = replay(write(program, f"torus:{ring},{LINK}", tmp_path / "hw", 64, hw(), target="torus"))
    # BookSim 2.0 measured 15.0, 20.1 and 25.0 cycles (neighbor and tornado traffic at an
    # injection rate of 0.0005): these + 2.
    assert res.cycles == hops * L + (hops + 1) * R + S == (13, 18, 23)[hops - 1]


def test_a_batch_through_one_port(tmp_path: Path) -> None:
    """Every node of an 8-ring sends 16 packets to its neighbour at once: the first is
    delivered at 13 (one hop), the others follow one serialization (4 cycles) apart."""
    out = write(
        shift_program(8, 1, 16), f"torus:8,{LINK}", tmp_path / "hw", 64, hw(), target="torus"
    )
    res = replay(out)
    assert res.cycles == 13 + 15 * S == 73  # BookSim with 4 VCs: 76 = 73 + 2 + 1
    assert res.postcondition == "holds"


def test_two_flows_per_port_fill_the_link(tmp_path: Path) -> None:
    """Tornado on a 5-ring: every link carries two nodes' 16 packets (128 cycles of flits).
    The link starts at R = 4 and never idles, and the last packet then needs its second hop."""
    out = write(
        shift_program(5, 2, 16), f"torus:5,{LINK}", tmp_path / "hw", 64, hw(), target="torus"
    )
    res = replay(out)
    busiest = max(lk.busy_cycles for lk in res.links)
    assert busiest == 2 * 16 * S
    assert R + busiest <= res.cycles <= R + busiest + L + R + S + L + R
    assert res.postcondition == "holds"


def test_one_vc_ring_under_wraparound(tmp_path: Path) -> None:
    program = shift_program(8, 3, 16)
    with pytest.raises(HwProgError, match=r"has a cycle: 0>1 \(\+0\) vc0 -> 1>2"):
        write(program, f"torus:8,{LINK}", tmp_path / "a", 64, hw(vcs=1), target="torus")
    out = write(
        program,
        f"torus:8,{LINK}",
        tmp_path / "b",
        64,
        hw(depth=2, vcs=1, force=True),
        target="torus",
    )
    res = replay(out)
    assert res.deadlock is not None and len(res.deadlock["cycle"]) == 8
    assert res.postcondition == "not reached"
