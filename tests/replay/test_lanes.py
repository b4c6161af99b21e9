"""Head-of-line blocking, and lanes against it (docs/hardware.md, "Agreement with the
alpha-beta model").

A direct all-gather on a 3x3 mesh sends two-hop messages that share links. With buffers that
never fill (the cost model's own assumption: its nodes buffer without limit), the replay still
trails the packet-level cost model while every message of an input queues in one VC buffer:
a packet waiting for a busy port holds up the packets behind it that go elsewhere. With a
second VC as a lane, routes spread over two buffers and the replay meets the cost model.
"""

from __future__ import annotations

from pathlib import Path

from backends.hwprog import HwOptions, export
from backends.replay import replay
from backends.sim import simulate
from tests.hwprog.helpers import made

UNBOUNDED = 1 << 16


def test_a_lane_removes_head_of_line_blocking(tmp_path: Path) -> None:
    program, topology, manifest = made("mesh:3x3", "allgather", "direct")
    model = simulate(program, topology, manifest.chunk_bytes, packet_bytes=4096).finish_ns
    times = {}
    for vcs in (1, 2):
        out = tmp_path / f"v{vcs}"
        export(program, topology, manifest, out, "mesh", HwOptions(vcs=vcs, buffer_depth=UNBOUNDED))
        res = replay(out)
        assert res.postcondition == "holds"
        times[vcs] = res.time_ns
    assert times[1] > 1.2 * model  # one buffer per input: head-of-line blocking
    assert abs(times[2] - model) <= 0.02 * model
