"""`collc simulate` under the ASTRA-sim models notes, or refuses with ``--strict``, the inputs
ASTRA-sim's binaries would not run; and names collc's own ETs copied without their manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from collc.cli import cli

MARK = "ASTRA-sim would not run this"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def synth(out: Path, size: str, topology: str = "ring:8") -> Path:
    res = run(
        "synthesize",
        "-t",
        topology,
        "--collective",
        "allreduce",
        "--algorithm",
        "ring",
        "--size",
        size,
        "-o",
        str(out),
    )
    assert res.exit_code == 0, res.output
    return out


def notes(folder: Path, *args: str) -> list[str]:
    res = run("simulate", str(folder), "--json", *args)
    assert res.exit_code == 0, res.output
    found: list[str] = json.loads(res.output)["notes"]
    return found


def test_a_hop_under_1ns_is_noted_for_the_aware_model_and_refused_with_strict(
    tmp_path: Path,
) -> None:
    # 64 B over 8 ranks: 8 B messages on 50 GiB/s links (53.7 B/ns) serialize in 0 ns.
    tiny = synth(tmp_path / "tiny", "64B")
    got = [n for n in notes(tiny, "--model", "astra-aware") if n.startswith(MARK)]
    assert len(got) == 1 and "8 B serializes in under 1 ns" in got[0]
    # The other models time it without that note: only the aware binary aborts.
    assert not any(n.startswith(MARK) for n in notes(tiny, "--model", "congestion"))
    assert not any(n.startswith(MARK) for n in notes(tiny, "--model", "analytical"))
    res = run("simulate", str(tiny), "--model", "astra-aware", "--strict")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "--strict: ASTRA-sim would not run this" in res.output.splitlines()[0]
    # 1 MiB: 128 KiB messages; no note, and --strict runs.
    big = synth(tmp_path / "big", "1MiB")
    assert not any(n.startswith(MARK) for n in notes(big, "--model", "astra-aware"))
    assert run("simulate", str(big), "--model", "astra-aware", "--strict").exit_code == 0


@pytest.mark.parametrize("model", ["astra-aware", "analytical"])
def test_per_link_bandwidths_are_noted_and_refused_with_strict(tmp_path: Path, model: str) -> None:
    spec = "ring:8,linkbw=3-4:25GB/s"
    folder = synth(tmp_path / "f", "1MiB", spec)
    got = [n for n in notes(folder, "--model", model) if n.startswith(MARK)]
    assert len(got) == 1 and "links of different bandwidth" in got[0]
    res = run("simulate", str(folder), "--model", model, "--strict")
    assert res.exit_code == 2 and "different bandwidth" in res.output
    # collc's own model has nothing to say about ASTRA-sim.
    assert not any(n.startswith(MARK) for n in notes(folder, "--model", "congestion"))


def test_collc_ets_without_their_manifest_are_not_called_foreign(tmp_path: Path) -> None:
    folder = synth(tmp_path / "f", "1MiB")
    copy = tmp_path / "copy"
    copy.mkdir()
    for et in folder.glob("*.et"):
        shutil.copy(et, copy / et.name)
    got = notes(copy, "-t", "ring:8")
    assert not any("no collc attributes" in n for n in got), got
    assert any("8 of the 8 ETs carry collc attributes" in n and "manifest" in n for n in got)
