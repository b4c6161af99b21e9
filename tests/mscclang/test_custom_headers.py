"""The XML header of custom collectives as msccl-tools writes it and msccl-executor-nccl reads
it (issue 27, item 2): ``inplace``/``outofplace`` follow the collective's own flag (the runtime
serves in-place calls only with ``inplace="1"`` files), and each GPU's ``i_chunks``/``o_chunks``
are what its steps use (0 on a GPU that never touches the buffer), through ``XML()``, ``collc
export`` of a compiled program and ``collc import`` followed by ``collc export``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import collc.exporters  # noqa: F401  (installs the writer behind XML())
from collc.cli import cli
from mscclang_frontend import compile_file, hooks

TREE = Path(__file__).parent / "programs" / "broadcast_tree.py"


def _xml(*argv: str) -> ET.Element:
    text = hooks.emit_xml(compile_file(TREE, argv))
    assert text is not None
    return ET.fromstring(text)


def _sizes(root: ET.Element) -> list[tuple[int, int]]:
    return [(int(g.get("i_chunks", -1)), int(g.get("o_chunks", -1))) for g in root.iter("gpu")]


@pytest.mark.parametrize("inplace", [False, True])
def test_tree_broadcast_header(inplace: bool) -> None:
    root = _xml("7", "2", "1", *(["--inplace"] if inplace else []))
    assert (root.get("coll"), root.get("inplace"), root.get("outofplace")) == (
        "custom",
        "1" if inplace else "0",
        "0" if inplace else "1",
    )
    # Rank 0 only reads its input; the others only write (and forward) their output.
    assert _sizes(root) == [(2, 0)] + [(0, 2)] * 6
    assert root.get("nchunksperloop") == "2"


def test_instances_multiply_the_used_sizes() -> None:
    root = _xml("3", "1", "2")
    assert _sizes(root) == [(2, 0), (0, 2), (0, 2)]
    assert root.get("nchunksperloop") == "2"


def test_export_and_reimport_keep_the_inplace_flag(tmp_path: Path) -> None:
    run = CliRunner()
    out = tmp_path / "compiled"
    res = run.invoke(cli, ["compile", str(TREE), "-o", str(out), "--", "7", "1", "1", "--inplace"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "manifest.json").read_text())["extra"]["msccl"]["inplace"] is True
    xml_dir = tmp_path / "xml"
    res = run.invoke(
        cli, ["export", str(out), "--target", "msccl-xml", "-o", str(xml_dir), "--coll", "custom"]
    )
    assert res.exit_code == 0, res.output
    (written,) = xml_dir.glob("*.xml")
    root = ET.parse(written).getroot()
    assert (root.get("inplace"), root.get("outofplace")) == ("1", "0")
    assert _sizes(root) == [(1, 0)] + [(0, 1)] * 6
    # Read back and written again: the header survives the round trip.
    back = tmp_path / "back"
    res = run.invoke(cli, ["import", str(written), "-o", str(back)])
    assert res.exit_code == 0, res.output
    again = tmp_path / "again"
    res = run.invoke(
        cli, ["export", str(back), "--target", "msccl-xml", "-o", str(again), "--coll", "custom"]
    )
    assert res.exit_code == 0, res.output
    (rewritten,) = again.glob("*.xml")
    root2 = ET.parse(rewritten).getroot()
    assert (root2.get("inplace"), root2.get("outofplace")) == ("1", "0")
    assert _sizes(root2) == _sizes(root)


def test_standard_collectives_keep_their_declared_sizes() -> None:
    # An in-place all-gather names every slot by the output buffer: i_chunks is 0 everywhere,
    # o_chunks the whole output, as before.
    path = Path(__file__).parent / "programs" / "inplace_allgather_pairs.py"
    text = hooks.emit_xml(compile_file(path, ("3", "2")))
    assert text is not None
    root = ET.fromstring(text)
    assert (root.get("inplace"), root.get("outofplace")) == ("1", "0")
    assert _sizes(root) == [(0, 6)] * 3
