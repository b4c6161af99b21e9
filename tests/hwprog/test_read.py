"""`read_hwprog` on corrupted or hand-edited programs: one line naming the NPU and command."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.hwprog import HwOptions, HwProgError, build_hwprog, export, read_hwprog
from tests.hwprog.helpers import made


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program, topology, manifest = made("torus:4x4", "allreduce", "rhd")
    out = tmp_path_factory.mktemp("hw") / "hw"
    export(program, topology, manifest, out, "torus")
    return out


def _edit(src: Path, dst: Path, name: str, change: Callable[[Any], Any]) -> Path:
    import shutil

    shutil.copytree(src, dst)
    path = dst / name
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    return dst


def _first(doc: Any, op: str) -> Any:
    return next(c for c in doc["commands"] if c["op"] == op)


def _set(path: list[Any], value: Any) -> Callable[[Any], Any]:
    def change(doc: Any) -> Any:
        x = doc
        for p in path[:-1]:
            x = x[p]
        x[path[-1]] = value
        return doc

    return change


def _send_edit(f: Callable[[Any], None]) -> Callable[[Any], Any]:
    def change(doc: Any) -> Any:
        f(_first(doc, "send"))
        return doc

    return change


CASES: list[tuple[str, str, Callable[[Any], Any], str]] = [
    ("future", "hwprog.json", _set(["version"], 2), r"version 2 is from the future"),
    ("format", "hwprog.json", _set(["format"], "other"), r"not a collc-hwprog document"),
    ("schema", "hwprog.json", _set(["num_vcs"], "two"), r"\$\.num_vcs: 'two' is not of type"),
    ("npu-schema", "npus/3.json", _set(["commands", 0, "waits"], ["x"]), r"\$\.commands\[0\]"),
    (
        "missing-wait",
        "npus/3.json",
        _send_edit(lambda c: c["waits"].append(999)),
        r"npu 3 command \d+ \(send\): waits for command 999",
    ),
    (
        "leaves",
        "npus/3.json",
        _send_edit(lambda c: c["ports"].__setitem__(0, 4)),
        r"npu 3 command \d+ \(send\): hop 0 leaves the topology|route ends",
    ),
    (
        "vc",
        "npus/3.json",
        _send_edit(lambda c: c["vcs"].__setitem__(0, 7)),
        r"npu 3 command \d+ \(send\): hop 0 uses VC 7, but the program has 2 VC",
    ),
    (
        "flow",
        "npus/3.json",
        _send_edit(lambda c: c.__setitem__("bytes", c["bytes"] + 1)),
        r"npu 3 command \d+ \(send\): \d+ bytes for",
    ),
    # Numbers as JSON carries them: integers below 2^53 written as integers, finite numbers.
    (
        "huge",
        "hwprog.json",
        _set(["num_vcs"], 2**63),
        r"\$\.num_vcs: 9223372036854775808 is beyond",
    ),
    ("many-vcs", "hwprog.json", _set(["num_vcs"], 17), r"\$\.num_vcs: 17 is greater than"),
    ("float", "hwprog.json", _set(["counts", "messages"], 1e308), r"1e\+308 is not an integer"),
    (
        "nan",
        "hwprog.json",
        _set(["links", 1, "width_bytes_per_cycle"], float("nan")),
        r"\$\.links\[1\]\.width_bytes_per_cycle: nan is not a finite number",
    ),
    ("huge-command", "npus/3.json", _send_edit(lambda c: c.__setitem__("bytes", 2**63)), r"bytes"),
    (
        "loop",
        "npus/3.json",
        _send_edit(lambda c: c.update(ports=[1, 2, 1], vcs=[0, 0, 0])),
        r"npu 3 command \d+ \(send\): hop 1 comes back to router 3 \(a loop\)",
    ),
    (
        "counts",
        "hwprog.json",
        _set(["counts", "packet_hops"], 1),
        r"\$\.counts: \d+ packets and 1 packet-hops, but the sends make \d+ and \d+",
    ),
    # The collective and the buffers it needs.
    ("ranks", "hwprog.json", _set(["collective", "num_ranks"], 2**40), r"for 16 placed ranks"),
    ("collective", "hwprog.json", _set(["collective", "kind"], "gossip"), r"\$\.collective: "),
    (
        "buffers",
        "npus/3.json",
        _set(["buffers", "output"], 2**40),
        r"input/output/scratch of 16/1099511627776/\d+ slots; the collective needs 16/16",
    ),
]


@pytest.mark.parametrize("schema", [True, False])
@pytest.mark.parametrize(("name", "file", "change", "pattern"), CASES, ids=[c[0] for c in CASES])
def test_bad_programs_are_refused_in_one_line(
    good: Path,
    tmp_path: Path,
    schema: bool,
    name: str,
    file: str,
    change: Callable[[Any], Any],
    pattern: str,
) -> None:
    bad = _edit(good, tmp_path / name, file, change)
    with pytest.raises(HwProgError, match=pattern) as e:
        read_hwprog(bad, schema=schema)
    assert "\n" not in str(e.value)
    assert file in str(e.value) or "npu" in str(e.value)


def test_corrupted_json_names_the_position(good: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    text = (bad / "npus" / "2.json").read_text()
    (bad / "npus" / "2.json").write_text(text[: len(text) // 2])
    with pytest.raises(HwProgError, match=r"npus/2\.json:\d+:\d+: not JSON") as e:
        read_hwprog(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(HwProgError, match="no such folder"):
        read_hwprog(tmp_path / "nothing")


def test_the_cli_reports_a_bad_folder_as_input_in_one_line(good: Path, tmp_path: Path) -> None:
    # export reads ET folders, not hardware programs: a hardware folder is refused cleanly.
    from click.testing import CliRunner

    from collc.cli import cli

    r = CliRunner().invoke(
        cli, ["export", str(good), "--target", "mesh", "-o", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and r.output.count("\n") == 1


SMALL = [
    ("mesh:4x4", "allreduce", "rhd"),
    ("torus:4x4", "alltoall", "direct"),
    ("ring:8", "allgather", "ring"),
    ("mesh:4x4,fail=5-6", "alltoall", "direct"),
]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    case=st.sampled_from(SMALL),
    vcs=st.one_of(st.none(), st.integers(4, 6)),
    packet=st.integers(1, 1 << 16),
    depth=st.integers(1, 16),
    clock=st.floats(0.25, 4.0),
    cycles=st.integers(0, 8),
    width=st.one_of(st.none(), st.floats(0.5, 512.0)),
)
def test_export_then_read_gives_back_an_equal_program(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[str, str, str],
    vcs: int | None,
    packet: int,
    depth: int,
    clock: float,
    cycles: int,
    width: float | None,
) -> None:
    program, topology, manifest = made(*case)
    target = "mesh" if case[0].startswith("mesh") else "torus"
    o = HwOptions(vcs, packet, depth, width, clock, cycles)
    out = tmp_path_factory.mktemp("rt") / "hw"
    export(program, topology, manifest, out, target, o)
    assert read_hwprog(out, schema=False) == build_hwprog(program, topology, manifest, target, o)


def test_the_schema_allows_the_vcs_the_exporter_may_write() -> None:
    from backends.hwprog.export import FORMAT
    from backends.hwprog.vcs import MAX_VCS

    header = FORMAT.schema["$defs"]["header"]["properties"]
    assert header["num_vcs"]["maximum"] == MAX_VCS
