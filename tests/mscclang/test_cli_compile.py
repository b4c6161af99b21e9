"""``collc compile`` and ``collc import`` of the msccl-tools shapes: several programs per
file, ``--program``, ``--as-custom``, the caps and their flags, located import errors and
runtime-limit warnings. In-process with CliRunner."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner, Result

from backends.msccl_xml import XmlOptions, program_to_xml
from collc.cli import cli
from tests.msccl_xml.programs import ring_allreduce

PROGRAMS = Path(__file__).parent / "programs"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_each_program_of_a_file_gets_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run("compile", str(PROGRAMS / "two_programs.py"), "-o", str(out), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [Path(p["output"]).name for p in data["programs"]] == ["direct", "relay"]
    for name in ("direct", "relay"):
        assert (out / name / "manifest.json").is_file()
    one = tmp_path / "one"
    res = run("compile", str(PROGRAMS / "two_programs.py"), "-o", str(one), "--program", "2")
    assert res.exit_code == 0, res.output
    manifest = json.loads((one / "manifest.json").read_text())
    assert manifest["collective"]["kind"] == "allgather"
    res = run("compile", str(PROGRAMS / "two_programs.py"), "-o", str(one), "--program", "x")
    assert res.exit_code == 2
    assert "no MSCCLProgram 'x' in the file (1: direct, 2: relay)" in res.output


def test_as_custom_flag(tmp_path: Path) -> None:
    path = PROGRAMS / "partial_allreduce.py"
    res = run("compile", str(path), "-o", str(tmp_path / "a"))
    assert res.exit_code == 2
    assert "never calls Check()" in res.output and "Traceback" not in res.output
    res = run("compile", str(path), "-o", str(tmp_path / "b"), "--as-custom", "--json")
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["collective"]["kind"] == "custom"
    assert manifest["extra"]["msccl"]["as_custom"] is True


def test_caps_have_flags(tmp_path: Path) -> None:
    loop = tmp_path / "loop.py"
    loop.write_text(
        "from msccl.language import *\nfrom msccl.topologies import *\n"
        'with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):\n'
        "    c = chunk(0, Buffer.input, 0)\n"
        "    while True:\n"
        "        c.copy(1, 'tmp', 0)\n"
    )
    res = run("compile", str(loop), "-o", str(tmp_path / "o"), "--max-ops", "500")
    assert res.exit_code == 2
    assert re.search(r"loop\.py:6:9: the program records more than 500 operations", res.output)
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 1000)
    res = run("compile", str(big), "-o", str(tmp_path / "o"), "--max-source-bytes", "100")
    assert res.exit_code == 2
    assert "6,000 bytes, more than the limit of 100" in res.output
    res = run("compile", str(big), "-o", str(tmp_path / "o"), "--max-tokens", "50")
    assert res.exit_code == 2
    assert "more than 50 tokens" in res.output


def test_import_names_the_step_and_warns(tmp_path: Path) -> None:
    text = program_to_xml(ring_allreduce(4, inplace=True), XmlOptions(fusion=True))
    wide = re.sub(r'nchannels="\d+"', 'nchannels="40"', text, count=1)
    good = tmp_path / "wide.xml"
    good.write_text(wide)
    res = run("import", str(good), "-o", str(tmp_path / "w"))
    assert res.exit_code == 0, res.output
    assert f"collc: warning: {good}: the XML uses 40 channels; the MSCCL runtime accepts" in (
        res.output
    )
    bad = tmp_path / "rrs.xml"
    bad.write_text(text.replace('type="rrcs"', 'type="rrs"', 1))
    res = run("import", str(bad), "-o", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert re.search(rf"{re.escape(str(bad))}(:\d+:\d+)?: gpu \d+", res.output)
    assert "semantics" in res.output and "Traceback" not in res.output
    huge = tmp_path / "huge.xml"
    huge.write_text(re.sub(r's_chunks="\d+"', 's_chunks="1000000000"', text, count=1))
    res = run("import", str(huge), "-o", str(tmp_path / "h"))
    assert res.exit_code == 2 and "--max-chunks" in res.output
