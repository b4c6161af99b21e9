"""Every writer owns its folder: the MSCCL XML export goes through the one atomic folder
writer (refusing folders of other kinds, all or nothing, also under concurrent writers), and
every temporary carries the PID its cleanup matches and is removed on SIGTERM."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import chakra_ir.et
from collc import pipeline
from collc.cli import cli
from collc.exporters import EXPORTERS, ExportOptions


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("w") / "out"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out


def _xml(folder: Path, out: Path | str) -> Any:
    return CliRunner().invoke(cli, ["export", str(folder), "--target", "msccl-xml", "-o", str(out)])


def _refused(r: Any, text: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and text in r.output and "Traceback" not in r.output


def test_msccl_xml_refuses_folders_of_other_kinds(folder: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    r = CliRunner().invoke(cli, ["export", str(folder), "--target", "astra-sim", "-o", str(bundle)])
    assert r.exit_code == 0, r.output
    before = sorted(p.name for p in bundle.iterdir())
    _refused(_xml(folder, bundle), "is not an MSCCL XML export of collc")
    assert sorted(p.name for p in bundle.iterdir()) == before
    _refused(_xml(folder, folder), "is not an MSCCL XML export of collc")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "allreduce.xml").write_text("my own work")
    _refused(_xml(folder, mine), "not replacing it")
    assert (mine / "allreduce.xml").read_text() == "my own work"


def test_msccl_xml_refuses_the_working_folder(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    _refused(_xml(folder, "."), "name a folder of its own")
    assert list(here.iterdir()) == []


def test_msccl_xml_replaces_its_own_export_and_keeps_a_link(folder: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert _xml(folder, link).exit_code == 0
    assert link.is_symlink() and sorted(p.name for p in real.iterdir()) == [
        "collc_msccl.json",
        "ring-allreduce.xml",
    ]
    assert _xml(folder, link).exit_code == 0  # an earlier export of its own: replaced
    assert link.is_symlink() and (real / "ring-allreduce.xml").read_text().startswith("<algo")
    # A link to a foreign folder is refused like the folder itself.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    link2 = tmp_path / "link2"
    link2.symlink_to(other, target_is_directory=True)
    _refused(_xml(folder, link2), "not replacing it")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


def test_output_folders_through_a_link_stay_links(folder: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    for _ in range(2):
        r = CliRunner().invoke(
            cli, ["synthesize", "-t", "ring:4", "-c", "allgather", "-a", "ring", "-o", str(link)]
        )
        assert r.exit_code == 0, r.output
        assert link.is_symlink() and (real / "manifest.json").is_file()


@pytest.mark.parametrize("round_", range(6))
def test_concurrent_exports_of_two_kinds_never_mix(
    folder: Path, tmp_path: Path, round_: int
) -> None:
    """An MSCCL XML and an ASTRA-sim export into one folder at once: at most one succeeds
    in replacing what the other wrote, and the folder is wholly one kind."""
    manifest, program, _ = pipeline.load(folder)
    topo = pipeline.topology_of(manifest, None)
    out = tmp_path / "o"
    start = threading.Barrier(2)
    results: dict[str, str] = {}

    def run(target: str) -> None:
        start.wait()
        try:
            EXPORTERS[target](program, topo, manifest, out, ExportOptions())
            results[target] = "ok"
        except Exception as e:
            results[target] = type(e).__name__

    threads = [threading.Thread(target=run, args=(t,)) for t in ("msccl-xml", "astra-sim")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = {p.name for p in out.iterdir()}
    xml = "collc_msccl.json" in names
    bundle = "collc_bundle.json" in names
    assert xml != bundle, names  # one kind, never both
    if xml:
        assert names == {"ring-allreduce.xml", "collc_msccl.json"}
    # A folder of another kind is never replaced, so the one that found the folder filled
    # by the other (at its start or just before its rename) is refused.
    assert sorted(results.values()).count("ok") == 1, results
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_astra_sim_temporary_carries_the_pid_and_sigterm_removes_it(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backends.astrasim.bundle as b

    manifest, program, _ = pipeline.load(folder)
    topo = pipeline.topology_of(manifest, None)
    real = b.write_et_files
    seen: list[Path] = []

    def interrupted(p: Any, out: Path, *args: Any, **kw: Any) -> Any:
        real(p, out, *args, **kw)
        seen.append(Path(out).parent)
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt the write")

    monkeypatch.setattr(b, "write_et_files", interrupted)
    with pytest.raises(SystemExit) as info:
        EXPORTERS["astra-sim"](program, topo, manifest, tmp_path / "a" / "b", ExportOptions())
    assert info.value.code == 128 + signal.SIGTERM
    assert seen and seen[0].name.startswith(f".b.tmp-{os.getpid()}-")
    assert not seen[0].exists() and list(tmp_path.iterdir()) == []  # parents made: gone too


def test_an_interrupted_timeline_leaves_no_temporary(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import topologies.atomic as atomic

    seen: list[str] = []
    real_replace = os.replace

    def interrupted(src: str, dst: Any) -> None:
        seen.append(src)
        os.kill(os.getpid(), signal.SIGTERM)
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    with pytest.raises(SystemExit) as info:
        atomic.write_text_atomically(tmp_path / "t.json", "{}")
    assert info.value.code == 128 + signal.SIGTERM
    assert seen and Path(seen[0]).name.startswith(f".t.json.tmp-{os.getpid()}-")
    assert list(tmp_path.iterdir()) == []


def test_file_temporaries_of_dead_processes_are_removed(folder: Path, tmp_path: Path) -> None:
    dead = tmp_path / f".t.json.tmp-{2**22 + 12345}-abc"  # above Linux's largest pid
    alive = tmp_path / f".t.json.tmp-{os.getpid()}-xyz"
    dead.write_text("half")
    alive.write_text("being written")
    r = CliRunner().invoke(cli, ["simulate", str(folder), "--timeline", str(tmp_path / "t.json")])
    assert r.exit_code == 0, r.output
    assert not dead.exists() and alive.exists() and (tmp_path / "t.json").is_file()


def test_a_full_disk_names_the_folder_not_the_temporary(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def full(p: Any, out: Path, *args: Any, **kw: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(out) / "allreduce.0.et"))

    monkeypatch.setattr(chakra_ir.et, "write_et_files", full)
    out = tmp_path / "o"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 2, r.output
    assert f"{out}/allreduce.0.et: No space left on device" in r.output, r.output
    assert ".tmp-" not in r.output
