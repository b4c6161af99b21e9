"""The smaller items of trusting collc: a full disk names a path, an unknown collective is
one line, limits say what they are, bandwidths are named for their unit, an unreadable
optional workload description does not block the run, and a very large trace is announced."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import chakra_ir.et
from collc.cli import cli


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("s") / "out"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out


def test_a_full_disk_without_a_file_name_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: Any, **_kw: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a failed write() raises

    monkeypatch.setattr(chakra_ir.et, "write_et_files", full)
    out = tmp_path / "o"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 2
    assert r.output == f"collc: error: {out}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["synthesize", "bounds"])
def test_an_unknown_collective_is_one_line(tmp_path: Path, command: str) -> None:
    args = [command, "-t", "ring:4", "-c", "allreduced"]
    if command == "synthesize":
        args += ["-o", str(tmp_path / "o")]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2
    assert r.output.count("\n") == 1
    assert r.output.startswith("collc: error: --collective: unknown collective 'allreduced'")


@pytest.mark.parametrize(
    ("flag", "value", "text"),
    [
        ("--buffer-depth", "2000000", "--buffer-depth 2000000: between 1 and 1,048,576 packets"),
        ("--router-cycles", "2000000", "--router-cycles 2000000: between 0 and 1,048,576 cycles"),
    ],
)
def test_hardware_limits_say_what_they_are(
    tmp_path: Path, flag: str, value: str, text: str
) -> None:
    out = tmp_path / "m"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "mesh:2x2", "-c", "allgather", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        cli, ["export", str(out), "--target", "mesh", "-o", str(tmp_path / "h"), flag, value]
    )
    assert r.exit_code == 2 and text in r.output, r.output


def test_bandwidths_are_named_for_gigabytes_per_second(folder: Path) -> None:
    r = CliRunner().invoke(cli, ["simulate", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert "busbw_gbps" not in d and "algbw_gbps" not in d
    size = d["size_bytes"]
    assert d["algbw_gb_per_s"] == pytest.approx(size / d["finish_ns"])  # bytes/ns = GB/s


def test_an_unreadable_workload_description_is_a_warning(tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    args = ["workload", "generate", "gpt3-13b", "--npus", "8", "--dp", "2", "--tp", "2"]
    r = CliRunner().invoke(cli, [*args, "--pp", "2", "-o", str(wl)])
    assert r.exit_code == 0, r.output
    (wl / "workload.json").write_text('{"model": ')
    r = CliRunner().invoke(cli, ["workload", "simulate", str(wl), "-t", "stack:fc2*ring4"])
    assert r.exit_code == 0, r.output
    assert "collc: warning: " in r.output and "workload.json" in r.output
    assert "runs without its description" in r.output


def test_a_very_large_trace_is_announced_before_it_is_written(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backends.sim.timeline as timeline

    monkeypatch.setattr(timeline, "LARGE_TRACE_EVENTS", 10)
    t = tmp_path / "t.json"
    r = CliRunner().invoke(cli, ["simulate", str(folder), "--timeline", str(t)])
    assert r.exit_code == 0, r.output
    events = len(json.loads(t.read_text())["traceEvents"])
    assert f"collc: warning: {t}: the timeline holds {events:,} events" in r.output
    monkeypatch.setattr(timeline, "LARGE_TRACE_EVENTS", events)
    r = CliRunner().invoke(cli, ["simulate", str(folder), "--timeline", str(t)])
    assert r.exit_code == 0 and "warning" not in r.output
