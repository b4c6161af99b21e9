"""The send-completion rule through the CLI: recorded in the manifest, used by simulate and
bench, refused when a flag disagrees with a folder; and a closed pipe ends quietly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chakra_ir.outdir import MANIFEST
from tests.cli.test_cli import one_error_line, run

SWITCH8 = "switch:8,bw=50GiB/s,lat=500ns"


def synth(out: Path, *extra: str, algorithm: str = "tacos") -> dict[str, object]:
    res = run(
        "synthesize", "-t", SWITCH8, "-c", "allreduce", "-a", algorithm, "-o", str(out),
        "--json", *extra,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary: dict[str, object] = json.loads(res.output)
    return summary


def simulated(folder: Path, *extra: str) -> dict[str, object]:
    res = run("simulate", str(folder), "--json", *extra)
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.output)
    return data


def test_the_rule_is_recorded_and_used(tmp_path: Path) -> None:
    s = synth(tmp_path / "a")
    assert s["completion"] == "on-arrival"
    assert json.loads((tmp_path / "a" / MANIFEST).read_text())["completion"] == "on-arrival"
    sim = simulated(tmp_path / "a")
    assert sim["completion"] == "on-arrival"
    assert sim["finish_ns"] == s["estimated_ns"]
    d = synth(tmp_path / "d", "--completion", "on-departure")
    assert d["completion"] == "on-departure"
    sim_d = simulated(tmp_path / "d")
    assert sim_d["completion"] == "on-departure"
    assert sim_d["finish_ns"] == d["estimated_ns"]


def test_a_disagreeing_flag_needs_force(tmp_path: Path) -> None:
    synth(tmp_path / "a")
    res = run("simulate", str(tmp_path / "a"), "--completion", "on-departure")
    assert res.exit_code == 2
    assert "differs from the folder's rule on-arrival" in one_error_line(res)
    forced = simulated(tmp_path / "a", "--completion", "on-departure", "--force")
    assert forced["completion"] == "on-departure"
    # The estimate is the folder's, made under the other rule: it is not compared.
    assert forced["estimated_ns"] is None


def test_a_manifest_without_the_field_reads_as_on_departure(tmp_path: Path) -> None:
    synth(tmp_path / "a", "--completion", "on-departure")
    path = tmp_path / "a" / MANIFEST
    m = json.loads(path.read_text())
    del m["completion"]
    path.write_text(json.dumps(m))
    assert simulated(tmp_path / "a")["completion"] == "on-departure"


def test_an_unknown_rule_in_a_manifest_is_one_line(tmp_path: Path) -> None:
    synth(tmp_path / "a")
    path = tmp_path / "a" / MANIFEST
    m = json.loads(path.read_text())
    m["completion"] = "on-launch"
    path.write_text(json.dumps(m))
    res = run("simulate", str(tmp_path / "a"))
    assert res.exit_code == 2
    out = one_error_line(res)
    assert "manifest.json" in out and "on-launch" in out


def test_an_unknown_rule_flag_is_refused() -> None:
    res = run("synthesize", "-t", "ring:4", "-c", "allreduce", "-o", "x", "--completion", "never")
    assert res.exit_code == 2
    assert "on-arrival" in one_error_line(res)


@pytest.mark.parametrize("completion", ["on-arrival", "on-departure"])
def test_bench_runs_every_algorithm_under_the_rule(completion: str) -> None:
    res = run(
        "bench", "-t", SWITCH8, "-c", "allreduce", "--sizes", "1MiB",
        "--algorithms", "tacos,direct,ring", "--completion", completion, "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["completion"] == completion
    times = {r["algorithm"]: r["time_ns"] for r in data["rows"]}
    assert set(times) == {"tacos", "direct", "ring"}
    # TACOS on one switch keeps up with direct under both rules (its sends never wait for a
    # delivery to keep a link's order).
    assert times["tacos"] <= times["direct"] * 1.005


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    synth(tmp_path / "a")
    proc = subprocess.Popen(
        [sys.executable, "-m", "collc", "simulate", str(tmp_path / "a")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before collc writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_the_manifest_records_what_reproduces_the_program(tmp_path: Path) -> None:
    # With --seeds K each phase keeps its best of K seeds: the manifest records the first seed
    # and K, and synthesizing again with them gives the same program.
    synth(tmp_path / "a", "--seed", "3", "--seeds", "4", "--chunks-per-npu", "2")
    m = json.loads((tmp_path / "a" / MANIFEST).read_text())
    assert (m["seed"], m["extra"]["seeds"]) == (3, 4)
    synth(tmp_path / "b", "--seed", "3", "--seeds", "4", "--chunks-per-npu", "2")
    ra, rb = run("inspect", str(tmp_path / "a")), run("inspect", str(tmp_path / "b"))
    assert ra.output == rb.output


def test_the_astra_sim_models_take_no_other_rule(tmp_path: Path) -> None:
    # ASTRA-sim's models complete sends on arrival whatever the folder says: another rule is
    # refused in one line, and their own needs no --force on an on-departure folder.
    synth(tmp_path / "d", "--completion", "on-departure")
    for model in ("analytical", "astra-aware"):
        res = run("simulate", str(tmp_path / "d"), "--model", model, "--completion", "on-departure")
        assert res.exit_code == 2
        assert f"does not apply to --model {model}" in one_error_line(res)
        sim = simulated(tmp_path / "d", "--model", model, "--completion", "on-arrival")
        assert sim["completion"] == "on-arrival"
