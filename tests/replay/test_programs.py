"""Replaying producers' programs: the postcondition holds, a corrupted program is reported
wrong (not crashed), a forced cyclic program deadlocks naming its cycle of waiting buffers."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from backends.hwprog import HwOptions, export
from backends.replay import REPLAYERS, replay
from collc.cli import cli
from tests.hwprog.helpers import made, target_of

CASES = [
    ("mesh:3x3", "allreduce", "tacos"),
    ("torus:4x4", "allreduce", "tacos"),
    ("torus:4x4", "allgather", "ring"),
    ("mesh:4x4", "alltoall", "direct"),
    ("torus:4x4", "allreduce", "rhd"),
    ("torus:2x2x2", "reduce_scatter", "tacos"),
]
SIZE = 64 << 10


def _export(
    tmp: Path,
    topo: str,
    coll: str,
    algo: str,
    options: HwOptions | None = None,
    size: int = SIZE,
) -> Path:
    program, topology, manifest = made(topo, coll, algo, size)
    out = tmp / "hw"
    export(program, topology, manifest, out, target_of(topo), options)
    return out


@pytest.mark.parametrize(("topo", "coll", "algo"), CASES)
def test_postcondition_holds(tmp_path: Path, topo: str, coll: str, algo: str) -> None:
    res = replay(_export(tmp_path, topo, coll, algo))
    assert res.completed and res.deadlock is None
    assert res.postcondition == "holds", res.postcondition_message
    assert res.packets == res.to_json()["packets"] > 0
    hw = json.loads((tmp_path / "hw" / "hwprog.json").read_text())
    assert (res.packets, res.packet_hops) == (
        hw["counts"]["packets"],
        hw["counts"]["packet_hops"],
    )
    assert sum(lk.packets for lk in res.links) == res.packet_hops
    assert all(0 <= lk.to_json(res.cycles)["utilisation"] <= 1 for lk in res.links)
    depth = hw["buffer_depth_packets"]
    assert 1 <= max(b.max_packets for b in res.buffers) <= depth


def test_registry_names_the_grid_targets() -> None:
    assert set(REPLAYERS) >= {"mesh", "torus"}


def test_corrupted_program_is_reported_not_crashed(tmp_path: Path) -> None:
    out = _export(tmp_path, "torus:4x4", "allreduce", "rhd")
    # Hand-edit: one reducing receive overwrites instead (still a well-formed program).
    path = out / "npus" / "5.json"
    doc = json.loads(path.read_text())
    first = next(c for c in doc["commands"] if c["op"] == "recv" and c["reduce"])
    first["reduce"] = False
    path.write_text(json.dumps(doc))
    res = replay(out)
    assert res.completed
    assert res.postcondition == "fails"
    assert "output" in res.postcondition_message or "reduce" in res.postcondition_message
    r = CliRunner().invoke(cli, ["replay", str(out)])
    assert r.exit_code == 1, r.output
    assert "postcondition fails" in r.output


def test_double_reduction_is_reported(tmp_path: Path) -> None:
    out = _export(tmp_path, "torus:4x4", "allreduce", "rhd")
    # Hand-edit: every receive of NPU 3 reduces, so some contribution counts twice.
    path = out / "npus" / "3.json"
    doc = json.loads(path.read_text())
    for c in doc["commands"]:
        if c["op"] == "recv":
            c["reduce"] = True
    path.write_text(json.dumps(doc))
    res = replay(out)
    assert res.postcondition == "fails"
    assert res.postcondition_message.startswith("npu 3 command")


def test_forced_cyclic_program_deadlocks_naming_the_cycle(tmp_path: Path) -> None:
    """The issue's case on a 4x4 torus: direct all-to-all of 1 MiB, 1 VC, buffers of 2
    packets (4 packets a message: wrap-around traffic fills the rings)."""
    opts = HwOptions(vcs=1, buffer_depth=2, force=True)
    out = _export(tmp_path, "torus:4x4", "alltoall", "direct", opts, 1 << 20)
    res = replay(out)
    assert not res.completed
    dl = res.deadlock
    assert dl is not None
    cycle = dl["cycle"]
    assert len(cycle) >= 2
    assert all(c["vc"] == 0 for c in cycle)
    # Each buffer waits for the next: the next buffer is fed by the router holding this one.
    for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        assert b["from"] == a["router"]
    assert "->" in dl["description"] and "back to" in dl["description"]
    assert res.postcondition == "not reached"
    r = CliRunner().invoke(cli, ["replay", str(out), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["deadlock"]["cycle"] == cycle and data["completed"] is False


def test_dateline_vcs_complete_the_same_traffic(tmp_path: Path) -> None:
    opts = HwOptions(buffer_depth=2)  # default: 2 VCs, dateline
    out = _export(tmp_path, "torus:4x4", "alltoall", "direct", opts, 1 << 20)
    res = replay(out)
    assert res.completed and res.deadlock is None
    assert res.postcondition == "holds"
    assert res.parameters["num_vcs"] == 2


def test_timeline_and_json(tmp_path: Path) -> None:
    out = _export(tmp_path, "torus:4x4", "allreduce", "tacos")
    tl = tmp_path / "t.json"
    r = CliRunner().invoke(cli, ["replay", str(out), "--json", "--timeline", str(tl)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["postcondition"] == "holds" and data["time_ns"] == data["cycles"]
    trace = json.loads(tl.read_text())
    events = trace["traceEvents"]
    assert any(e.get("pid") == 1 and e["ph"] == "X" for e in events)
    npu = [e for e in events if e["ph"] == "X" and e["pid"] >= 100]
    assert npu and {e["name"].split()[0] for e in npu} >= {"send", "recv"}
    # Events on one thread never overlap.
    lanes: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in npu:
        lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in lanes.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
    r = CliRunner().invoke(cli, ["replay", str(out)])
    assert r.exit_code == 0 and "postcondition holds" in r.output


@pytest.mark.parametrize("rule", ["on-arrival", "on-departure"])
def test_message_trains_equal_packet_by_packet(tmp_path: Path, rule: str) -> None:
    """One-hop links serve a whole message at once; the figures are those of arbitrating
    every packet through the event queue."""
    from dataclasses import replace

    from backends.hwprog import read_hwprog
    from backends.replay import ReplayOptions
    from backends.replay.grid import GridReplay

    program, topology, manifest = made("torus:4x4", "allreduce", "tacos", 1 << 20)
    out = tmp_path / "hw"
    export(program, topology, replace(manifest, completion=rule), out, "torus")
    hw = read_hwprog(out)
    opts = ReplayOptions(timeline=True)
    fast = GridReplay(hw, str(out), opts).run()
    slow = GridReplay(hw, str(out), opts, trains=False).run()
    assert fast.to_json() == slow.to_json()
    assert fast.timeline == slow.timeline
    assert fast.postcondition == "holds"


@pytest.mark.parametrize(
    ("topo", "algo", "size"), [("torus:4x4", "tacos", 1 << 20), ("mesh:3x3", "ring", 81 << 13)]
)
def test_contention_free_programs_replay_as_the_simulator_cuts_through(
    tmp_path: Path, topo: str, algo: str, size: int
) -> None:
    # With links of 64 B per cycle and chunks of whole 4 KiB packets, packets serialize in whole
    # cycles, so the replay and `collc simulate --cut-through 1ns` (the router's one cycle at
    # 1 GHz) agree to the cycle on programs whose messages never share a link at once. The
    # ring on a 3x3 mesh has a two-hop edge (the grid has no ring of its own).
    from backends.sim import simulate
    from topologies.cost_model import CostModel

    spec = f"{topo},bw=64GB/s,lat=100ns"
    program, topology, manifest = made(spec, "allreduce", algo, size)
    assert manifest.chunk_bytes % 4096 == 0
    out = tmp_path / "hw"
    export(program, topology, manifest, out, target_of(topo), HwOptions(buffer_depth=1 << 16))
    res = replay(out)
    assert res.postcondition == "holds"
    cost = CostModel(cut_through_router_ns=1.0)
    assert simulate(program, topology, manifest.chunk_bytes, cost=cost).finish_ns == res.time_ns
