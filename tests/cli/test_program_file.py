"""The compact program file: synthesize writes it in either form, verify, simulate and
inspect read it, and a bad file is one line with exit status 2."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from backends.sim import simulate
from chakra_ir.et.codec import decode_program
from chakra_ir.progfile import ProgramFileError, read_program_file, write_program_file
from chakra_ir.symmetric import SymmetricProgram
from chakra_ir.text import format_program
from collc.cli import cli
from topologies import parse_topology


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def _synth(tmp_path: Path, spec: str, kind: str, *extra: str) -> tuple[Path, dict[str, object]]:
    out = tmp_path / "p.collcp"
    code, text = _run("synthesize", "-t", spec, "-c", kind, "-o", str(out), "--json", *extra)
    assert code == 0, text
    return out, json.loads(text)


def test_symmetric_file_round_trip(tmp_path: Path) -> None:
    out, data = _synth(tmp_path, "torus:4x4", "allreduce", "--size", "1MiB")
    assert data["form"] == "symmetric"
    pf = read_program_file(out)
    assert isinstance(pf.program, SymmetricProgram)
    code, text = _run("verify", str(out), "--json")
    assert code == 0 and json.loads(text)["form"] == "symmetric"
    code, text = _run("simulate", str(out), "--json")
    assert code == 0
    sim = json.loads(text)
    full = pf.program.expand()
    topo = parse_topology("torus:4x4")
    assert sim["finish_ns"] == simulate(full, topo, pf.chunk_bytes).finish_ns
    # one rank's text equals that rank's section of the whole program's text
    code, text = _run("inspect", str(out), "--rank", "5")
    assert code == 0
    whole = format_program(full)
    section = whole[whole.index("rank 5 ") : whole.index("rank 6 ")]
    ops = [ln for ln in text.splitlines() if ln.startswith("  ")]
    want = [ln.split(" route=")[0] for ln in section.splitlines()[1:]]
    assert ops == want


def test_full_form_when_not_symmetric(tmp_path: Path) -> None:
    out, data = _synth(tmp_path, "mesh:3x3", "allgather")
    assert data["form"] == "full"
    code, _ = _run("verify", str(out))
    assert code == 0
    code, text = _run(
        "synthesize", "-t", "mesh:3x3", "-c", "allgather", "-o", str(out), "--form", "symmetric"
    )
    assert code == 2 and "no symmetric form" in text
    code, text = _run("simulate", str(out), "--model", "analytical")
    assert code == 2 and "congestion" in text


def test_full_form_forced_matches_folder(tmp_path: Path) -> None:
    out, data = _synth(tmp_path, "ring:4", "allgather", "--form", "full")
    assert data["form"] == "full"
    folder = tmp_path / "f"
    code, _ = _run("synthesize", "-t", "ring:4", "-c", "allgather", "-o", str(folder))
    assert code == 0
    code, a = _run("inspect", str(out))
    code2, b = _run("inspect", str(folder))
    assert code == code2 == 0 and a == b
    code, text = _run(
        "synthesize", "-t", "ring:4", "-c", "allgather", "-o", str(folder), "--form", "full"
    )
    assert code == 2 and "program file" in text


def test_bad_files(tmp_path: Path) -> None:
    out, _ = _synth(tmp_path, "ring:4", "allgather")
    pf = read_program_file(out)
    # a wrong version
    arrays = dict(np.load(out, allow_pickle=False))
    header = json.loads(arrays["header"].tobytes().decode())
    for key, value, text in (
        ("version", 99, "version 99"),
        ("format", "zip", "format is 'zip'"),
        ("chunk_bytes", -1, "chunk_bytes"),
        ("form", "odd", "form must be"),
        ("completion", "eventually", "completion must be one of"),
    ):
        bad = dict(arrays)
        h = {**header, key: value}
        bad["header"] = np.frombuffer(json.dumps(h).encode(), dtype=np.uint8)
        path = tmp_path / f"bad_{key}.collcp"
        with open(path, "wb") as f:
            np.savez(f, **bad)
        with pytest.raises(ProgramFileError, match=text):
            read_program_file(path)
        code, msg = _run("verify", str(path))
        assert code == 2 and str(path) in msg and len(msg.strip().splitlines()) == 1
    short = dict(arrays)
    short["deps"] = short["deps"][:-1]
    path = tmp_path / "short.collcp"
    with open(path, "wb") as f:
        np.savez(f, **short)
    with pytest.raises(ProgramFileError, match="dep_offsets"):
        read_program_file(path)
    # a truncated archive is not a program file at all; a rewritten one reads back equal
    trunc = tmp_path / "trunc.collcp"
    trunc.write_bytes(out.read_bytes()[:200])
    assert not zipfile.is_zipfile(trunc)
    with pytest.raises(ProgramFileError, match="not a collc program file"):
        read_program_file(trunc)
    code, msg = _run("verify", str(trunc))
    assert code == 2
    again = tmp_path / "again.collcp"
    write_program_file(again, pf.program, chunk_bytes=pf.chunk_bytes, topology=pf.topology)
    p2 = read_program_file(again).program
    assert isinstance(p2, SymmetricProgram) and isinstance(pf.program, SymmetricProgram)
    assert all((p2.columns[k] == pf.program.columns[k]).all() for k in p2.columns)


def test_export_streams_et_files(tmp_path: Path) -> None:
    out, _ = _synth(tmp_path, "hypercube:3", "allgather", "--chunks-per-npu", "2")
    code, text = _run("export", str(out), "--target", "chakra-et", "-o", str(tmp_path / "et"))
    assert code == 0, text
    files = sorted((tmp_path / "et").glob("allgather.*.et"))
    assert len(files) == 8
    pf = read_program_file(out)
    assert isinstance(pf.program, SymmetricProgram)
    assert decode_program(files) == pf.program.expand()
    # Another target takes the expanded program: the bundle's custom ETs are that program.
    code, text = _run("export", str(out), "--target", "astra-sim", "-o", str(tmp_path / "a"))
    assert code == 0, text
    custom = sorted((tmp_path / "a" / "collective").glob("allgather.*.et"))
    assert decode_program(custom) == pf.program.expand()
    folder = tmp_path / "f"
    assert _run("synthesize", "-t", "ring:4", "-c", "allgather", "-o", str(folder))[0] == 0
    code, text = _run("export", str(folder), "--target", "chakra-et", "-o", str(tmp_path / "e2"))
    assert code == 0, text
    assert [p.read_bytes() for p in sorted((tmp_path / "e2").glob("*.et"))] == [
        p.read_bytes() for p in sorted(folder.glob("*.et"))
    ]


def test_export_of_a_program_file_equals_the_folders(tmp_path: Path) -> None:
    """A full-form file exports to MSCCL XML exactly as the ET folder of the same request."""
    out, data = _synth(tmp_path, "mesh:3x3", "allgather", "--size", "9MiB")
    assert data["form"] == "full"
    folder = tmp_path / "f"
    args = ("-t", "mesh:3x3", "-c", "allgather", "--size", "9MiB", "-o", str(folder))
    assert _run("synthesize", *args)[0] == 0
    for src, dst in ((out, "x1"), (folder, "x2")):
        code, text = _run("export", str(src), "--target", "msccl-xml", "-o", str(tmp_path / dst))
        assert code == 0, text
    one = sorted((tmp_path / "x1").glob("*.xml"))
    assert one and [f.read_bytes() for f in one] == [
        f.read_bytes() for f in sorted((tmp_path / "x2").glob("*.xml"))
    ]


def test_export_refuses_to_expand_a_huge_symmetric_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import collc.program_files as files

    out, _ = _synth(tmp_path, "torus:4x4", "allgather")
    monkeypatch.setattr(files, "EXPAND_LIMIT", 100)
    code, text = _run("export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "x"))
    assert code == 2 and "more than 100" in text and len(text.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
    code, text = _run("export", str(out), "--target", "chakra-et", "-o", str(tmp_path / "e"))
    assert code == 0, text


@pytest.mark.parametrize("rule", ["on-arrival", "on-departure"])
def test_the_file_keeps_its_completion_rule(tmp_path: Path, rule: str) -> None:
    """simulate times a file under the rule it was synthesized under unless told otherwise."""
    for spec in ("ring:6", "mesh:2x3"):
        out, _ = _synth(tmp_path, spec, "allgather", "--completion", rule)
        assert read_program_file(out).completion == rule
        code, text = _run("simulate", str(out), "--json")
        assert code == 0, text
        assert json.loads(text)["completion"] == rule
