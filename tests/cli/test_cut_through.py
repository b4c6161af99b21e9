"""`collc simulate --cut-through DELAY`: the congestion model under virtual cut-through."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import one_error_line, run


def test_cut_through_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "d"
    res = run("synthesize", "-t", "mesh:3,bw=10GB/s,lat=100ns", "-c", "allgather",
              "-a", "direct", "--size", "3000B", "-o", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    sf = json.loads(run("simulate", str(out), "--json").output)
    ct = json.loads(run("simulate", str(out), "--cut-through", "2ns", "--json").output)
    # 1000 B messages, L = S = 100 ns. NPU 0 sends to 1, then to 2, over link 0>1 (NPU 2
    # mirrors it). Store-and-forward: 0>2 crosses 0>1 at 100-200 and 1>2 at 300-400, and lands
    # at 500. Cut-through, R = 2: 0>1 crosses at 2-102; 0>2 at 102-202, its head passes
    # router 1 at 204 (its tail at 304), it crosses 1>2 at 204-304 and is delivered at 406.
    assert sf["finish_ns"] == 500.0
    assert ct["finish_ns"] == 406.0
    assert any("cut-through" in n for n in ct["notes"])
    assert sf["estimated_ns"] is None and ct["estimated_ns"] is None
    # In 500 B packets (50 ns): 0>2's packets cross 0>1 at 102-152 and 152-202 and 1>2 at
    # 204-254 and 254-304 (each as its head passes router 1), the last delivered at 406.
    pk = run("simulate", str(out), "--cut-through", "2ns", "--packet-size", "500B", "--json")
    assert pk.exit_code == 0, pk.output
    assert json.loads(pk.output)["finish_ns"] == 406.0
    # Store-and-forward packets: 0>2's cross 0>1 at 100-150 and 150-200, and each crosses
    # 1>2 once it has wholly arrived (250-300, 300-350); the last lands at 450.
    pk_sf = json.loads(run("simulate", str(out), "--packet-size", "500B", "--json").output)
    assert pk_sf["finish_ns"] == 450.0


def test_bad_cut_through_values_are_one_line(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert run("synthesize", "-t", "ring:4", "-c", "allreduce", "-o", str(out)).exit_code == 0
    res = run("simulate", str(out), "--cut-through", "5")
    assert res.exit_code == 2 and "needs a unit" in res.output
    res = run("simulate", str(out), "--cut-through", "1ns", "--model", "astra-aware")
    assert res.exit_code == 2
    assert "cut-through switching applies to the congestion model only" in one_error_line(res)
    res = run("simulate", str(out), "--cut-through", "-1ns")
    assert res.exit_code == 2, res.output
    one_error_line(res)
