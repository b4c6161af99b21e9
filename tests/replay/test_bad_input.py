"""`collc replay` on bad folders: one line, exit status 2, never a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from backends.hwprog import export
from backends.replay import ReplayError, replay
from collc.cli import cli
from tests.hwprog.helpers import made


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program, topology, manifest = made("torus:4x4", "allreduce", "rhd", 64 << 10)
    out = tmp_path_factory.mktemp("hw") / "hw"
    export(program, topology, manifest, out, "torus")
    return out


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        for p in path[:-1]:
            doc = doc[p]
        doc[path[-1]] = value

    return change


def _send(f: Callable[[Any], None]) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        f(next(c for c in doc["commands"] if c["op"] == "send"))

    return change


CASES: list[tuple[str, str, Callable[[Any], None], str]] = [
    ("future", "hwprog.json", _set(["version"], 2), "version 2 is from the future"),
    ("target", "hwprog.json", _set(["target"], "dragonfly"), "'dragonfly' has no replayer"),
    ("schema", "hwprog.json", _set(["num_vcs"], "two"), "$.num_vcs: 'two' is not of type"),
    ("npu-schema", "npus/3.json", _set(["commands", 0, "waits"], ["x"]), "$.commands[0]"),
    ("wait", "npus/3.json", _send(lambda c: c["waits"].append(999)), "waits for command 999"),
    ("route", "npus/3.json", _send(lambda c: c["ports"].__setitem__(0, 4)), "npu 3 command"),
    ("vc", "npus/3.json", _send(lambda c: c["vcs"].__setitem__(0, 7)), "uses VC 7"),
    ("target-type", "hwprog.json", _set(["target"], []), "$.target: [] has no replayer"),
    ("huge-vcs", "hwprog.json", _set(["num_vcs"], 2**63), "beyond 2^53"),
    ("latency", "hwprog.json", _set(["links", 1, "latency_cycles"], 1e308), "not an integer"),
    ("buffers", "npus/1.json", _set(["buffers", "input"], 2**63), "$.buffers.input"),
]


@pytest.mark.parametrize(("name", "file", "change", "text"), CASES, ids=[c[0] for c in CASES])
def test_bad_folder_is_one_line_exit_2(
    good: Path, tmp_path: Path, name: str, file: str, change: Callable[[Any], None], text: str
) -> None:
    bad = tmp_path / name
    shutil.copytree(good, bad)
    path = bad / file
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ReplayError) as e:
        replay(bad)
    assert text in str(e.value) and "\n" not in str(e.value)
    r = CliRunner().invoke(cli, ["replay", str(bad)])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("collc: error: ")
    assert text in r.output and "Traceback" not in r.output


def test_not_a_folder_and_not_json(good: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["replay", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no such folder" in r.output and r.output.count("\n") == 1
    bad = tmp_path / "cut"
    shutil.copytree(good, bad)
    text = (bad / "hwprog.json").read_text()
    (bad / "hwprog.json").write_text(text[: len(text) // 2])
    r = CliRunner().invoke(cli, ["replay", str(bad)])
    assert r.exit_code == 2 and "not JSON" in r.output and "hwprog.json:" in r.output


def test_running_out_of_memory_is_one_line_exit_2(
    good: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MemoryError (an input far beyond the machine) is reported, not a traceback."""
    import backends.replay

    def exhausted(*_args: object, **_kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(backends.replay, "replay", exhausted)
    r = CliRunner().invoke(cli, ["replay", str(good)])
    assert r.exit_code == 2, r.output
    assert (
        r.output == "collc: error: out of memory: the input asks for more than this machine has\n"
    )
