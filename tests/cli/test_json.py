"""``--json`` on every command that has it: the output is one JSON document that agrees with
the folder or the flags it describes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from chakra_ir.outdir import MANIFEST
from collc.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def run_json(*args: str, after: tuple[str, ...] = ()) -> Any:
    """``collc ARGS --json AFTER`` (AFTER: a compiled program's own arguments after --)."""
    res = CliRunner().invoke(cli, [*args, "--json", *after], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("json") / "m4"
    s = run_json(
        "synthesize", "-t", "mesh:2x2", "-c", "allgather", "--size", "4KiB", "-o", str(out)
    )
    assert s["output"] == str(out) and s["ranks"] == 4
    return out


def _manifest(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
    return data


def test_every_command_with_a_json_flag_is_covered() -> None:
    assert isinstance(cli, click.Group)
    with_json = {
        name
        for name, cmd in cli.commands.items()
        if any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params)
    }
    covered = {
        "synthesize",
        "bounds",
        "verify",
        "inspect",
        "simulate",
        "bench",
        "compile",
        "import",
        "export",
        "replay",
        "demo",
        "view",
        "libra",  # tests/explore/test_libra.py::test_cli_on_libra_inputs_with_json
        "tune",  # tests/cli/test_tune.py::test_export_msccl_xml_selects_each_size_once
        "explore",  # tests/explore/test_study.py (a study and its report, both with --json)
    }
    # A new command with --json needs a test here (or, named above, in its own tests).
    assert with_json <= covered, with_json - covered


def test_synthesize_json_matches_the_manifest(folder: Path) -> None:
    m = _manifest(folder)
    s = run_json(
        "synthesize",
        "-t",
        m["topology"],
        "-c",
        "allgather",
        "--size",
        "4KiB",
        "-o",
        str(folder.parent / "again"),
    )
    assert s["chunk_bytes"] == m["chunk_bytes"] and s["size_bytes"] == m["size_bytes"]
    assert len([f for f in s["files"] if f.endswith(".et")]) == len(m["et_files"])


def test_inspect_folder_json(folder: Path) -> None:
    d = run_json("inspect", str(folder))
    assert d["manifest"] == _manifest(folder)
    assert [r["rank"] for r in d["ranks"]] == list(range(4))
    assert all(isinstance(op["id"], int) for r in d["ranks"] for op in r["ops"])
    sends = sum(op["op"] == "send" for r in d["ranks"] for op in r["ops"])
    v = run_json("verify", str(folder))
    assert sends == v["messages"]


def test_inspect_file_json(folder: Path) -> None:
    f = folder / "allgather.1.et"
    d = run_json("inspect", str(f))
    assert d["file"] == str(f)
    assert d["metadata"]["collc_rank"] == 1
    assert [n["id"] for n in d["nodes"]] == list(range(len(d["nodes"])))


def test_verify_json(folder: Path) -> None:
    d = run_json("verify", str(folder))
    assert d["ok"] is True and d["ranks"] == 4 and d["collective"] == "allgather"
    assert "semantics" in d["checks"]


def test_verify_foreign_json(folder: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for f in folder.glob("*.et"):
        (foreign / f.name).write_bytes(f.read_bytes())
    d = run_json("verify", str(foreign))
    assert d["ok"] is True and d["ranks"] == 4 and d["note"]


def test_simulate_json(folder: Path) -> None:
    d = run_json("simulate", str(folder))
    assert d["finish_ns"] > 0
    assert d["estimated_ns"] == pytest.approx(_manifest(folder)["extra"]["estimated_ns"])
    assert d["files"] == []


def test_bounds_json() -> None:
    d = run_json("bounds", "-t", "ring:4", "-c", "allreduce", "--size", "1MiB")
    assert d["best_ns"] == max(d["bounds_ns"].values())
    assert d["bounds_ns"][d["best"]] == d["best_ns"]
    assert set(d["descriptions"]) == set(d["bounds_ns"])


def test_bench_json() -> None:
    d = run_json(
        "bench", "-t", "ring:4", "-c", "allgather", "--sizes", "4KiB", "--algorithms", "ring,direct"
    )
    assert {r["algorithm"] for r in d["rows"]} == {"ring", "direct"}


def test_export_json(folder: Path, tmp_path: Path) -> None:
    d = run_json("export", str(folder), "--target", "astra-sim", "-o", str(tmp_path / "astra"))
    assert d["target"] == "astra-sim"
    assert all(Path(f).exists() for f in d["files"])


def test_replay_json(folder: Path, tmp_path: Path) -> None:
    hw = tmp_path / "hw"
    run_json("export", str(folder), "--target", "mesh", "-o", str(hw))
    d = run_json("replay", str(hw))
    assert d["target"] == "mesh" and d["postcondition"] == "holds" and d["completed"]
    assert d["messages"] == len(json.loads((hw / "hwprog.json").read_text())["npus"]) * 3


def test_compile_json(tmp_path: Path) -> None:
    src = ROOT / "examples" / "allgather_ring.py"
    out = tmp_path / "c"
    d = run_json("compile", str(src), "-o", str(out), after=("--", "4"))
    assert d["algorithm"] == "mscclang" and d["ranks"] == 4
    assert d["ranks"] == _manifest(out)["collective"]["num_ranks"]


def test_import_json(tmp_path: Path) -> None:
    xml = ROOT / "tests" / "msccl_xml" / "data" / "msccl_allgather_ring.xml"
    d = run_json("import", str(xml), "-o", str(tmp_path / "x"))
    assert d["algorithm"] == "msccl-xml"
    assert d["ranks"] == _manifest(tmp_path / "x")["collective"]["num_ranks"]


def test_demo_json(tmp_path: Path) -> None:
    d = run_json("demo", "-o", str(tmp_path / "demo"))
    assert d["read_back"] == "identical" and d["ranks"] == 16


def test_view_json_names_the_page_it_wrote(folder: Path, tmp_path: Path) -> None:
    page = tmp_path / "m4.html"
    v = run_json("view", str(folder), "-o", str(page))
    assert v["file"] == str(page) and v["bytes"] == page.stat().st_size
    (panel,) = v["panels"]
    assert panel["exact"] is True and panel["finish_ns"] > 0
