"""Outputs a user can trust: file modes follow the umask, requirements are checked before
anything is written, temporaries are removed on SIGTERM and after a killed run, the Gantt
chart says how many links it shows, the summary says when the size was rounded, and the lower
bounds say what they hold for."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import backends.sim.plots
import chakra_ir.et
from backends.sim.errors import SimError
from chakra_ir.outdir import MANIFEST, Manifest, remove_stale_temporaries, write_output
from collc import pipeline
from collc.cli import cli
from topologies.units import format_size_bytes


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("outputs") / "t16"
    res = run("synthesize", "-t", "torus:4x4", "-c", "allreduce", "--size", "64KiB", "-o", str(out))
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_timeline_plot_and_xml_follow_the_umask(
    folder: Path, tmp_path: Path, umask_027: None
) -> None:
    t, p, g = tmp_path / "t.json", tmp_path / "p.png", tmp_path / "g.png"
    res = run("simulate", str(folder), "--timeline", str(t), "--plot", str(p), "--gantt", str(g))
    assert res.exit_code == 0, res.output
    res = run("export", str(folder), "--target", "msccl-xml", "-o", str(tmp_path / "xml"))
    assert res.exit_code == 0, res.output
    files = [t, p, g, *(tmp_path / "xml").glob("*.xml")]
    assert len(files) == 4
    for f in files:
        assert _mode(f) == 0o640, (f, oct(_mode(f)))


def test_missing_matplotlib_writes_nothing(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> Any:
        raise SimError("plots need matplotlib, which is not installed: pip install 'collc[plot]'")

    monkeypatch.setattr(backends.sim.plots, "_matplotlib", missing)
    t, p = tmp_path / "t.json", tmp_path / "p.png"
    res = run("simulate", str(folder), "--timeline", str(t), "--plot", str(p))
    assert res.exit_code == 2 and "pip install 'collc[plot]'" in res.output
    assert list(tmp_path.iterdir()) == []


def test_a_plot_format_matplotlib_cannot_write_writes_nothing(folder: Path, tmp_path: Path) -> None:
    t, p, g = tmp_path / "t.json", tmp_path / "p.png", tmp_path / "g.bad"
    res = run("simulate", str(folder), "--timeline", str(t), "--plot", str(p), "--gantt", str(g))
    assert res.exit_code == 2, res.output
    assert f"cannot write {g}: format 'bad' is not one of" in res.output
    assert list(tmp_path.iterdir()) == []


def test_sigterm_during_a_write_leaves_no_temporary(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest, program, _ = pipeline.load(folder)
    real = chakra_ir.et.write_et_files
    seen: list[Path] = []

    def interrupted(p: Any, out: Path, *args: Any, **kw: Any) -> Any:
        real(p, out, *args, **kw)
        seen.append(Path(out))
        os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` would, mid-write
        raise AssertionError("SIGTERM did not interrupt the write")

    monkeypatch.setattr(chakra_ir.et, "write_et_files", interrupted)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as info:
        write_output(tmp_path / "o", program, manifest)
    assert info.value.code == 128 + signal.SIGTERM
    assert seen and seen[0].name.startswith(".o.tmp-") and not seen[0].exists()
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == previous


def test_the_next_run_removes_temporaries_of_dead_processes(folder: Path, tmp_path: Path) -> None:
    dead = tmp_path / f".o.tmp-{2**22 + 12345}-abc"  # above Linux's largest pid
    old = tmp_path / f".o.old-{2**22 + 12345}-def"
    alive = tmp_path / f".o.tmp-{os.getpid()}-xyz"
    other = tmp_path / f".p.tmp-{2**22 + 12345}-abc"
    for d in (dead, old, alive, other):
        d.mkdir()
        (d / "x.et").write_bytes(b"x" * 100)
    manifest, program, _ = pipeline.load(folder)
    write_output(tmp_path / "o", program, manifest)
    assert not dead.exists() and not old.exists()
    assert alive.exists() and other.exists()
    assert remove_stale_temporaries(tmp_path / "p") == [other]


def test_gantt_says_how_many_links_it_shows(folder: Path, tmp_path: Path) -> None:
    g = tmp_path / "g.png"
    res = run("simulate", str(folder), "--gantt", str(g), "--gantt-links", "3", "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["gantt_links"]
    assert rows["shown"] == 3 and rows["in_use"] > 3
    res = run("simulate", str(folder), "--gantt", str(g), "--gantt-links", "3")
    assert f"shows the 3 busiest of {rows['in_use']:,} links" in res.output
    res = run("simulate", str(folder), "--gantt", str(g), "--gantt-links", "5000", "--json")
    every = json.loads(res.stdout)["gantt_links"]
    assert every == {"shown": rows["in_use"], "in_use": rows["in_use"]}


def test_summary_says_when_the_size_was_rounded(tmp_path: Path) -> None:
    res = run(
        "synthesize", "-t", "ring:3", "-c", "allreduce", "--size", "64MiB", "-o", str(tmp_path)
    )
    assert res.exit_code == 0, res.output
    m = Manifest.from_json(json.loads((tmp_path / MANIFEST).read_text()), "m")
    assert m.size_bytes > 64 << 20
    assert f"--size 64MiB rounded up to whole chunks (+{m.size_bytes - (64 << 20)} B)" in res.output
    exact = tmp_path.parent / "exact"
    res = run("synthesize", "-t", "ring:4", "-c", "allreduce", "--size", "64MiB", "-o", str(exact))
    assert res.exit_code == 0 and "rounded" not in res.output
    assert format_size_bytes(64 << 20) in res.output


def test_bounds_say_what_they_hold_for(folder: Path, tmp_path: Path) -> None:
    res = run(
        "synthesize",
        "-t",
        "torus:4x4",
        "-c",
        "allreduce",
        "--chunks-per-npu",
        "2",
        "-o",
        str(tmp_path / "t"),
    )
    assert "for its chunking, 2 chunks per NPU" in res.output
    res = run(
        "synthesize", "-t", "torus:4x4", "-a", "ring", "-c", "allreduce", "-o", str(tmp_path / "r")
    )
    assert re.search(r"lower bound .*\(\w+, for any program\)", res.output), res.output
    res = run("simulate", str(tmp_path / "t"))
    assert "for any program" in res.output


def test_no_phase_lines_when_stderr_is_not_a_terminal(folder: Path, tmp_path: Path) -> None:
    for args in (("verify", str(folder)), ("simulate", str(folder))):
        res = run(*args)
        assert res.exit_code == 0 and res.stderr == "", res.stderr
    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    res = run("synthesize", "-t", "ring:4", "-c", "allgather", "-o", str(copy))
    assert res.exit_code == 0 and res.stderr == ""
