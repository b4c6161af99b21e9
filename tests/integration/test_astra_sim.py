"""collc's ASTRA-sim models against ASTRA-sim itself, on a few small bundles.

Optional: each test runs only when its environment variable names a binary built from
ASTRA-sim's analytical backend,

    COLLC_ASTRA_SIM_UNAWARE=/path/to/AstraSim_Analytical_Congestion_Unaware \\
    COLLC_ASTRA_SIM_AWARE=/path/to/AstraSim_Analytical_Congestion_Aware \\
        pytest tests/integration

Each case is produced as ``collc synthesize`` would, exported as ``collc export --target
astra-sim`` would, and run through the bundle's ``run.sh`` (``ASTRA_SIM`` names the binary).
ASTRA-sim's time is the largest ``sys[i] finished, T cycles`` (cycles are ns).

- The congestion-unaware binary reports exactly what ``collc simulate --model analytical``
  predicts.
- The congestion-aware binary agrees with ``collc simulate --model astra-aware`` within 1%,
  exactly where ``exact`` is set. ASTRA-sim's current custom collective issues the nodes that
  are ready at one instant in the order of a hash set, which collc's model does not emulate:
  sends that start together onto one link may leave in another order there. collc gates such
  sends (an ``after`` hint, written as a 1 ns COMP node: TACOS from its replay, every other
  producer from one simulation), so the programs agree exactly. The cases marked
  xfail (strict: they fail the run once they agree, so the mark is removed) are ones where
  that order moves the finish by more than 1%.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from chakra_ir.collective import CollectiveKind
from collc import pipeline
from collc.exporters import EXPORTERS, ExportOptions

AWARE_ENV = "COLLC_ASTRA_SIM_AWARE"
UNAWARE_ENV = "COLLC_ASTRA_SIM_UNAWARE"
LINK = "bw=50GiB/s,lat=500ns"
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")
TIMEOUT_S = 120


def _binary(var: str) -> str | None:
    path = os.environ.get(var, "")
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


needs_unaware = pytest.mark.skipif(
    _binary(UNAWARE_ENV) is None,
    reason=f"set {UNAWARE_ENV} to an AstraSim_Analytical_Congestion_Unaware binary",
)
needs_aware = pytest.mark.skipif(
    _binary(AWARE_ENV) is None,
    reason=f"set {AWARE_ENV} to an AstraSim_Analytical_Congestion_Aware binary",
)


@dataclass(frozen=True)
class Case:
    id: str
    topology: str
    algorithm: str
    kind: CollectiveKind = CollectiveKind.ALLREDUCE
    chunks_per_npu: int = 1
    size_bytes: int = 1 << 20
    exact: bool = False
    """ASTRA-sim aware reports exactly the astra-aware model's time."""
    groups: str = ""
    """Process groups (``--groups``): every group runs the collective at once."""


CASES = [
    Case("tacos-switch8", "switch:8", "tacos", exact=True),
    Case("tacos-ring8-c4", "ring:8", "tacos", chunks_per_npu=4, exact=True),
    Case("tacos-allgather-ring8", "ring:8", "tacos", CollectiveKind.ALLGATHER, exact=True),
    Case("direct-switch8", "switch:8", "direct", exact=True),
    Case("ring-ring8", "ring:8", "ring", exact=True),
    Case("ring-bidir-switch8", "switch:8", "ring-bidir", exact=True),
    Case("rhd-switch8", "switch:8", "rhd", exact=True),
    Case("dbt-ring8", "ring:8", "dbt", exact=True),
    # Process groups sharing the network: even and odd NPUs, each group's messages crossing
    # the other's NPUs and links.
    Case("tacos-groups-ring16", "ring:16", "tacos", groups="stride:2", exact=True),
    Case("ring-groups-switch16", "switch:16", "ring", groups="4", exact=True),
    # All-to-all: personalised chunks relayed along the ring.
    Case("tacos-alltoall-ring8", "ring:8", "tacos", CollectiveKind.ALLTOALL, exact=True),
    Case(
        "dimensional-alltoall-switch8",
        "switch:8",
        "dimensional",
        CollectiveKind.ALLTOALL,
        exact=True,
    ),
]

ISSUE_ORDER = (
    "ASTRA-sim issues same-instant ready sends in hash-set order, which the astra-aware model "
    "does not emulate"
)
AWARE_OFF: frozenset[str] = frozenset()
"""Cases whose aware time is more than 1% from the model's (ASTRA-sim at 518bd51)."""


def _params(cases: list[Case], off: frozenset[str] = frozenset()) -> list[object]:
    return [
        pytest.param(
            c,
            id=c.id,
            marks=[pytest.mark.xfail(reason=ISSUE_ORDER, strict=True)] if c.id in off else [],
        )
        for c in cases
    ]


def _produce(case: Case, tmp_path: Path) -> tuple[Path, Path, int]:
    """Synthesize ``case`` into an output folder and export its ASTRA-sim bundle; returns
    the folder, the bundle and the number of NPUs."""
    req = pipeline.Request(
        f"{case.topology},{LINK}",
        case.kind,
        case.algorithm,
        case.size_bytes,
        case.chunks_per_npu,
        groups=case.groups,
    )
    folder = tmp_path / "out"
    pipeline.write(pipeline.synthesize(req), folder)
    manifest, program, _ = pipeline.load(folder)
    topology = pipeline.topology_of(manifest, None)
    bundle = tmp_path / "bundle"
    EXPORTERS["astra-sim"](program, topology, manifest, bundle, ExportOptions())
    return folder, bundle, topology.num_npus


def _astra(bundle: Path, binary: str, npus: int) -> int:
    """Run the bundle under ``binary``; the largest finished time over the NPUs."""
    proc = subprocess.run(
        ["sh", str(bundle / "run.sh")],
        env={**os.environ, "ASTRA_SIM": binary},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:] or proc.stdout[-2000:]
    finished = {int(m[1]): int(m[2]) for m in FINISHED.finditer(proc.stdout)}
    assert sorted(finished) == list(range(npus)), proc.stdout[-2000:]
    return max(finished.values())


def _model(folder: Path, model: str) -> float:
    result, _, _ = pipeline.simulate_folder(pipeline.SimRequest(folder, model=model))
    return result.finish_ns


@needs_unaware
@pytest.mark.parametrize("case", _params(CASES))
def test_unaware_binary_reports_the_analytical_model(case: Case, tmp_path: Path) -> None:
    folder, bundle, npus = _produce(case, tmp_path)
    binary = _binary(UNAWARE_ENV)
    assert binary is not None
    assert _astra(bundle, binary, npus) == _model(folder, "analytical")


@needs_aware
@pytest.mark.parametrize("case", _params(CASES, AWARE_OFF))
def test_aware_binary_agrees_with_the_astra_aware_model(case: Case, tmp_path: Path) -> None:
    folder, bundle, npus = _produce(case, tmp_path)
    binary = _binary(AWARE_ENV)
    assert binary is not None
    measured = _astra(bundle, binary, npus)
    predicted = _model(folder, "astra-aware")
    if case.exact:
        assert predicted == measured
    else:
        assert predicted == pytest.approx(measured, rel=0.01)
