"""``--coll`` and ``--as-custom`` across export and import (issue 27, item 3): the export error
for a custom collective offers ``custom`` (what msccl-tools writes) and, for a program compiled
``--as-custom``, the collective it came from; ``XML()`` of such a program names its MSCCLang
collective as msccl-tools does; ``collc import --as-custom`` reads a file that computes
something else under a standard name (msccl-tools' pipeline examples)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner, Result

from collc.cli import cli

PROGRAMS = Path(__file__).parent / "programs"
PARTIAL = PROGRAMS / "partial_allreduce.py"
TREE = PROGRAMS / "broadcast_tree.py"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _algo(output: str) -> ET.Element:
    start = output.index("<algo")
    return ET.fromstring(output[start : output.index("</algo>") + len("</algo>")])


def test_export_error_offers_custom(tmp_path: Path) -> None:
    out = tmp_path / "tree"
    assert run("compile", str(TREE), "-o", str(out), "--", "3", "1", "1").exit_code == 0
    res = run("export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "the program computes the custom collective; say what the XML's coll names" in (
        res.output
    )
    assert "scatter, or custom, as msccl-tools writes custom collectives" in res.output
    assert "--coll allreduce" not in res.output
    res = run(
        "export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "x"), "--coll", "custom"
    )
    assert res.exit_code == 0, res.output
    (xml,) = (tmp_path / "x").glob("*.xml")
    assert ET.parse(xml).getroot().get("coll") == "custom"


def test_as_custom_program_keeps_its_collective_name(tmp_path: Path) -> None:
    out = tmp_path / "partial"
    res = run("compile", str(PARTIAL), "-o", str(out), "--as-custom")
    assert res.exit_code == 0, res.output
    # XML() prints what msccl-tools prints for the program: its MSCCLang collective's name.
    assert _algo(res.output).get("coll") == "allreduce"
    res = run("export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "'allreduce-as-custom'" in res.output and "'partial'" not in res.output
    assert res.output.rstrip().endswith("--coll allreduce writes what msccl-tools writes for it")


def test_import_as_custom_reads_a_file_that_computes_something_else(tmp_path: Path) -> None:
    res = run("compile", str(PARTIAL), "-o", str(tmp_path / "c"), "--as-custom")
    xml = tmp_path / "partial.xml"
    xml.write_text(res.output[res.output.index("<algo") : res.output.index("</algo>") + 7] + "\n")
    res = run("import", str(xml), "-o", str(tmp_path / "plain"))
    assert res.exit_code == 2
    assert "semantics: rank 1 output[0] ends with chunk(1,0)" in res.output
    assert res.output.rstrip().endswith(
        "(if the file is meant to compute something other than allreduce, --as-custom reads "
        "it as the custom collective it computes)"
    )
    res = run("import", str(xml), "-o", str(tmp_path / "custom"), "--as-custom", "--json")
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "custom" / "manifest.json").read_text())
    assert manifest["collective"]["kind"] == "custom"
    assert manifest["collective"]["inplace"] is True
    assert manifest["extra"]["msccl"]["as_custom"] is True
    # Rank 0 ends with the sum of all three; the others keep their own chunk.
    assert manifest["collective"]["custom_output"] == [[[[0, 7]]], [[[0, 2]]], [[[0, 4]]]]
    assert any("read --as-custom" in n for n in manifest["extra"]["notes"])


def test_import_as_custom_needs_a_standard_name(tmp_path: Path) -> None:
    out = tmp_path / "tree"
    run("compile", str(TREE), "-o", str(out), "--", "3", "1", "1")
    run("export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "x"), "--coll", "custom")
    (xml,) = (tmp_path / "x").glob("*.xml")
    res = run("import", str(xml), "-o", str(tmp_path / "y"), "--as-custom")
    assert res.exit_code == 2
    assert "--as-custom reads a file whose coll names a standard collective" in res.output
    assert run("import", str(xml), "-o", str(tmp_path / "z")).exit_code == 0
