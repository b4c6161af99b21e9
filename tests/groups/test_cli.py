"""Process groups through the CLI: synthesize, simulate, bounds, bench and export, and the
one-line errors for groups that do not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_ir.outdir import MANIFEST
from tests.cli.test_cli import one_error_line, run
from topologies.groups import read_astra_groups

TORUS = "torus:4x4"


def synth(out: Path, *extra: str) -> dict[str, object]:
    res = run("synthesize", "-t", TORUS, "-c", "allreduce", "-o", str(out), "--json", *extra)
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.output)
    return data


def test_synthesize_and_simulate_groups(tmp_path: Path) -> None:
    s = synth(tmp_path / "j", "--groups", "stride:4")
    assert s["groups"] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert s["groups_joint"] is True
    manifest = json.loads((tmp_path / "j" / MANIFEST).read_text())
    assert manifest["collective"]["groups"] == s["groups"]
    assert manifest["extra"]["groups"] == "stride:4"
    res = run("simulate", str(tmp_path / "j"), "--json")
    assert res.exit_code == 0, res.output
    sim = json.loads(res.output)
    assert sim["finish_ns"] == pytest.approx(s["estimated_ns"])
    assert sim["group_size"] == 4
    assert sim["busbw_factor"] == pytest.approx(2 * 3 / 4)
    assert [x["npus"] for x in sim["instances"]] == s["groups"]
    human = run("simulate", str(tmp_path / "j"))
    assert "4 instances" in human.output and "in groups of 4" in human.output


def test_independent_and_baselines(tmp_path: Path) -> None:
    s = synth(tmp_path / "i", "--groups", "4", "--groups-independent")
    assert s["groups_joint"] is False
    b = synth(tmp_path / "b", "--groups", "block:2x2", "-a", "ring")
    assert b["groups_joint"] is False and len(b["groups"]) == 4  # type: ignore[arg-type]
    assert b["estimated_ns"] is not None
    res = run("verify", str(tmp_path / "b"))
    assert res.exit_code == 0 and "in 4 groups of 4" in res.output
    res = run(
        "synthesize", "-t", TORUS, "-c", "alltoall", "-a", "direct", "--groups", "8",
        "-o", str(tmp_path / "a2a"),
    )  # fmt: skip
    assert res.exit_code == 0, res.output


def test_placement_must_match_the_groups(tmp_path: Path) -> None:
    s = synth(tmp_path / "p", "--groups", "0-3;8-11", "--placement", "0-3,8-11")
    assert s["ranks"] == 8
    res = run(
        "synthesize", "-t", TORUS, "-c", "allreduce", "-o", str(tmp_path / "q"),
        "--groups", "0-3;8-11", "--placement", "0-7",
    )  # fmt: skip
    assert res.exit_code == 2
    assert "NPU 4 runs a rank of the collective but is in no group" in one_error_line(res)


def test_bounds_and_bench(tmp_path: Path) -> None:
    res = run("bounds", "-t", "ring:8", "-c", "allgather", "--groups", "0,1,4,5;2,3,6,7", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["bounds_ns"]["joint-cut"] > data["bounds_ns"]["cut"]
    res = run(
        "bench", "-t", TORUS, "-c", "allgather", "--groups", "stride:4", "--sizes", "64KiB",
        "--algorithms", "tacos,direct", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = {r["algorithm"]: r for r in json.loads(res.output)["rows"]}
    assert set(rows) == {"tacos", "tacos-independent", "direct"}
    assert all(r["time_ns"] and r["time_ns"] > 0 for r in rows.values())


def test_exports(tmp_path: Path) -> None:
    synth(tmp_path / "j", "--groups", "8")
    res = run("export", str(tmp_path / "j"), "--target", "astra-sim", "-o", str(tmp_path / "a"))
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "a" / "collective").glob("*.et"))) == 16
    written = read_astra_groups(tmp_path / "a" / "process_groups.json")
    assert written.members == (tuple(range(8)), tuple(range(8, 16)))
    assert (
        "Process groups: the program runs allreduce in 2 groups of 8"
        in (tmp_path / "a" / "README.txt").read_text()
    )
    res = run("export", str(tmp_path / "j"), "--target", "msccl-xml", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "process groups" in one_error_line(res)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--groups", "0-7;4-11"], "NPU 4 is in groups 0 and 1"),
        (["--groups", "0-7;8-11"], "equal sizes"),
        (["--groups", "0-7;8-16"], "NPU 16 is not in"),
        (["--groups", "block:3x2"], "blocks of 3"),
        (["--groups-independent"], "--groups-independent needs --groups"),
        (["--groups", "8", "-c", "broadcast"], "broadcast cannot be split"),
        (["--groups", "8", "-c", "gather"], "gather cannot be split"),
        (["--groups", "missing.json"], "missing.json: cannot read"),
    ],
)
def test_bad_groups_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    base = ["synthesize", "-t", TORUS, "-o", str(tmp_path / "out")]
    if "-c" not in args:
        base += ["-c", "allreduce"]
    res = run(*base, *args)
    assert res.exit_code == 2, res.output
    assert message in one_error_line(res)
    assert not (tmp_path / "out").exists()
