"""`collc export OUT --target mesh|torus`: files, options, one-line refusals (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from backends.hwprog import read_hwprog
from collc import pipeline
from collc.cli import cli
from tests.hwprog.helpers import result


def _folder(tmp_path: Path, topo: str, coll: str, algo: str) -> Path:
    out = tmp_path / "out"
    pipeline.write(result(topo, coll, algo), out)
    return out


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.output


def test_export_torus_with_options(tmp_path: Path) -> None:
    out = _folder(tmp_path, "torus:4x4", "allreduce", "rhd")
    code, text = _run(
        "export", str(out), "--target", "torus", "-o", str(tmp_path / "hw"), "--vcs", "2",
        "--packet-size", "1KiB", "--buffer-depth", "2", "--link-width", "32", "--clock", "1.5",
        "--router-cycles", "3", "--json",
    )  # fmt: skip
    assert code == 0, text
    data = json.loads(text)
    assert data["target"] == "torus" and data["files"][0].endswith("hwprog.json")
    h = read_hwprog(tmp_path / "hw").header
    assert (h["num_vcs"], h["packet_bytes"], h["buffer_depth_packets"]) == (2, 1024, 2)
    assert (h["link_width_bytes_per_cycle"], h["clock_ghz"], h["router_pipeline_cycles"]) == (
        32,
        1.5,
        3,
    )


def test_one_vc_torus_refused_in_one_line_then_forced(tmp_path: Path) -> None:
    out = _folder(tmp_path, "torus:4x4", "alltoall", "direct")
    hw = tmp_path / "hw"
    code, text = _run("export", str(out), "--target", "torus", "-o", str(hw), "--vcs", "1")
    assert code == 2 and text.count("\n") == 1 and "cycle" in text and "vc0" in text
    assert text.startswith("collc: error: ") and not hw.exists()
    code, text = _run(
        "export", str(out), "--target", "torus", "-o", str(hw), "--vcs", "1", "--force"
    )
    assert code == 0, text
    assert not read_hwprog(hw).header["deadlock"]["acyclic"]


def test_wrong_kind_of_topology_refused_in_one_line(tmp_path: Path) -> None:
    out = _folder(tmp_path, "mesh:4x4", "allreduce", "rhd")
    code, text = _run("export", str(out), "--target", "torus", "-o", str(tmp_path / "hw"))
    assert code == 2 and text.count("\n") == 1 and "--target torus accepts only tori" in text
    code, text = _run("export", str(out), "--target", "mesh", "-o", str(tmp_path / "hw"))
    assert code == 0, text


def test_bad_option_values_exit_2(tmp_path: Path) -> None:
    out = _folder(tmp_path, "mesh:4x4", "allreduce", "rhd")
    for flag, value in (("--vcs", "0"), ("--clock", "-1"), ("--buffer-depth", "0")):
        code, text = _run(
            "export", str(out), "--target", "mesh", "-o", str(tmp_path / "hw"), flag, value
        )
        assert code == 2 and text.count("\n") == 1 and flag in text, (flag, text)


def test_links_too_slow_for_exact_cycles_are_refused(tmp_path: Path) -> None:
    """A packet's time on a link, in cycles, must stay below 2^40 (exact in a replay)."""
    out = _folder(tmp_path, "mesh:4x4", "allreduce", "rhd")
    hw = tmp_path / "hw"
    for width in ("1e-308", "1e-9"):
        code, text = _run(
            "export", str(out), "--target", "mesh", "-o", str(hw), "--link-width", width
        )
        assert code == 2 and text.count("\n") == 1, text
        assert "beyond 2^40: raise --link-width" in text and not hw.exists()
    # 4096 B at 1e-6 bytes/cycle is 4.1e9 cycles a packet: slow, and exact.
    code, text = _run("export", str(out), "--target", "mesh", "-o", str(hw), "--link-width", "1e-6")
    assert code == 0, text
