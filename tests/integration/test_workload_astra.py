"""`collc workload simulate --model analytical` against ASTRA-sim's congestion-unaware binary.

Optional: runs only when ``COLLC_ASTRA_SIM_UNAWARE`` names an
``AstraSim_Analytical_Congestion_Unaware`` binary built from ASTRA-sim's public sources. Each
case generates a workload, runs it in both with the same network YAML, system JSON (written by
`workloads.analytical.system_json`) and communicator groups, and compares the iteration times
(ASTRA-sim's: the largest ``sys[i] finished, T cycles``). The rules the comparison rests on are
held by tests that always run (tests/workloads); the times are equal to the ns.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from backends.astrasim.network import network_yaml
from topologies import parse_topology
from workloads.analytical import NativeConfig, native_timers, run_analytical, system_json
from workloads.chakra_io import write_workload
from workloads.model import check_workload
from workloads.transformer import generate

UNAWARE_ENV = "COLLC_ASTRA_SIM_UNAWARE"
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def _binary() -> str | None:
    path = os.environ.get(UNAWARE_ENV, "")
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


pytestmark = pytest.mark.skipif(
    _binary() is None,
    reason=f"set {UNAWARE_ENV} to an AstraSim_Analytical_Congestion_Unaware binary",
)

# Without pipeline stages: the ETFeeder of ASTRA-sim 4f387bcd resolves data_deps only, so the
# ctrl_deps that order a stage's 1F1B schedule do not bind there (docs/workloads.md, section 5).
CASES = [
    (
        "gpt3-125m",
        (4, 4, 1),
        {},
        "stack:ring4*ring4,bw=[50GiB/s,25GiB/s],lat=[500ns,1000ns]",
        NativeConfig(preferred_dataset_splits=4, local_mem_bw_gbps=1600.0),
    ),
    (
        "gpt3-125m",
        (4, 4, 1),
        {"sp": True, "zero": 1},
        "stack:ring2*fc4*switch2,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[50ns,500ns,1000ns]",
        NativeConfig(collective_optimization="localBWAware", implementation=("direct",)),
    ),
    (
        # Tensor-parallel groups of 4 unevenly spaced on a ring of 8 (1, 1, 1 and 3 hops).
        "vit-base",
        (2, 4, 1),
        {},
        "ring:8,bw=50GiB/s,lat=500ns",
        NativeConfig(endpoint_delay_ns=1000, preferred_dataset_splits=2),
    ),
]


@pytest.mark.parametrize(("model", "par", "gen", "spec", "config"), CASES)
def test_iteration_time_matches_astra_sim(
    tmp_path: Path,
    model: str,
    par: tuple[int, int, int],
    gen: dict[str, object],
    spec: str,
    config: NativeConfig,
) -> None:
    binary = _binary()
    assert binary is not None
    dp, tp, pp = par
    w = generate(model, npus=dp * tp * pp, dp=dp, tp=tp, pp=pp, seq=512, **gen)  # type: ignore[arg-type]
    check_workload(w)
    topo = parse_topology(spec)
    _, _, dims = native_timers(topo, config)
    ours = run_analytical(w, topo, config, classes=check_workload(w))[0].time_ns
    write_workload(w, tmp_path / "wl")
    (tmp_path / "net.yml").write_text(network_yaml(topo))
    (tmp_path / "sys.json").write_text(json.dumps(system_json(config, len(dims))))
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    done = subprocess.run(
        [
            binary,
            f"--workload-configuration={tmp_path / 'wl' / 'workload'}",
            f"--system-configuration={tmp_path / 'sys.json'}",
            f"--network-configuration={tmp_path / 'net.yml'}",
            f"--remote-memory-configuration={tmp_path / 'mem.json'}",
            f"--comm-group-configuration={tmp_path / 'wl' / 'comm_groups.json'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    times = [int(m[2]) for m in FINISHED.finditer(done.stdout + done.stderr)]
    assert done.returncode == 0 and times, done.stderr[-500:]
    theirs = max(times)
    assert ours == theirs
