"""A training workload whose collectives run in the network (contention mode)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import run


def test_workload_with_in_network_collectives(tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    res = run(
        "workload", "generate", "gpt3-125m", "--npus", "8", "--dp", "2", "--tp", "4", "-o", str(wl)
    )
    assert res.exit_code == 0, res.output
    exposed = {}
    for algo in ("fred-innetwork", "direct"):
        res = run(
            "workload", "simulate", str(wl), "-t", "fred:8", "--model", "congestion",
            "--algorithm", algo, "--json",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        exposed[algo] = data["exposed_communication_ns"]
    # Every collective moves about half the bytes per NPU in the network.
    assert 0 < exposed["fred-innetwork"] < 0.75 * exposed["direct"]
