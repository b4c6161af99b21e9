"""Races and header consistency in hardware programs: `read_hwprog` (so `collc replay`) finds
every unordered conflicting pair of slot accesses whatever the timing, and refuses headers
that disagree with their links and routes."""

from __future__ import annotations

import json
import shutil
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from backends.hwprog import HwOptions, HwProgError, build_hwprog, export, read_hwprog
from backends.hwprog.races import check_races
from backends.replay import replay
from collc.cli import cli
from tests.hwprog.helpers import made


@pytest.fixture(scope="module")
def rhd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's program: rhd all-reduce of 64 KiB on a 4x4 torus."""
    program, topology, manifest = made("torus:4x4", "allreduce", "rhd", 64 << 10)
    out = tmp_path_factory.mktemp("hw") / "hw"
    export(program, topology, manifest, out, "torus")
    return out


def _edit(src: Path, dst: Path, name: str, change: Callable[[Any], None]) -> Path:
    shutil.copytree(src, dst)
    path = dst / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return dst


def _drop_wait(npu_cmd: int, wait: int) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        c = next(c for c in doc["commands"] if c["id"] == npu_cmd)
        c["waits"].remove(wait)

    return change


def test_the_issue_reproduction_is_a_race_naming_both_commands(rhd: Path, tmp_path: Path) -> None:
    # NPU 11's send 15 reads output[8:16]; receive 12 writes output[14:16].
    cmds = {c["id"]: c for c in json.loads((rhd / "npus/11.json").read_text())["commands"]}
    assert cmds[15]["src"] == ["output", 8, 8] and cmds[12]["dst"] == ["output", 14, 2]
    assert 12 in cmds[15]["waits"]
    assert replay(rhd).postcondition == "holds"

    bad = _edit(rhd, tmp_path / "bad", "npus/11.json", _drop_wait(15, 12))
    with pytest.raises(HwProgError) as e:
        read_hwprog(bad)
    msg = str(e.value)
    assert "npus/11.json: npu 11 command 15 (send output[8:16])" in msg
    assert "command 12 (recv output[14:16])" in msg
    assert "output[14]" in msg and "read-after-write" in msg and "\n" not in msg
    r = CliRunner().invoke(cli, ["replay", str(bad)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "Traceback" not in r.output
    assert "npu 11 command 15" in r.output and "command 12" in r.output


def _accesses(hw: Any) -> list[list[tuple[int, str, int, int, bool]]]:
    """Per NPU: (command position, buffer, first slot, end, writes) of every access."""
    out = []
    for doc in hw.npus:
        acc = []
        for i, c in enumerate(doc["commands"]):
            if "src" in c:
                b, s, k = c["src"]
                acc.append((i, b, s, s + k, False))
            if "dst" in c:
                b, s, k = c["dst"]
                acc.append((i, b, s, s + k, True))
        out.append(acc)
    return out


def _brute_force_race(hw: Any) -> bool:
    """An independent oracle: the transitive closure of waits and messages by search from
    every command, then every conflicting pair on an NPU tested (not in place, no aliases)."""
    nodes: dict[tuple[int, int], list[tuple[int, int]]] = {}
    send_of: dict[int, tuple[int, int]] = {}
    recv_of: dict[int, tuple[int, int]] = {}
    for n, doc in enumerate(hw.npus):
        pos = {c["id"]: i for i, c in enumerate(doc["commands"])}
        for i, c in enumerate(doc["commands"]):
            nodes.setdefault((n, i), [])
            for w in c["waits"]:
                nodes.setdefault((n, pos[w]), []).append((n, i))
            if c["op"] == "send":
                send_of[c["flow"]] = (n, i)
            elif c["op"] == "recv":
                recv_of[c["flow"]] = (n, i)
    for f, s in send_of.items():
        nodes[s].append(recv_of[f])
    after: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for start in nodes:
        seen: set[tuple[int, int]] = set()
        q = deque(nodes[start])
        while q:
            x = q.popleft()
            if x not in seen:
                seen.add(x)
                q.extend(nodes[x])
        after[start] = seen
    for n, acc in enumerate(_accesses(hw)):
        for i, (a, ba, sa, ea, wa) in enumerate(acc):
            for b, bb, sb, eb, wb in acc[i + 1 :]:
                if a == b or ba != bb or ea <= sb or eb <= sa or not (wa or wb):
                    continue
                if (n, b) not in after[(n, a)] and (n, a) not in after[(n, b)]:
                    return True
    return False


@pytest.mark.parametrize(
    "case",
    [("torus:4x4", "allreduce", "rhd"), ("mesh:3x3", "allreduce", "ring")],
    ids=["rhd", "ring"],
)
def test_every_single_wait_removed_agrees_with_a_brute_force_oracle(
    case: tuple[str, str, str],
) -> None:
    """Remove each wait of each command in turn: the check finds a race exactly when the
    brute-force closure finds an unordered conflicting pair; all three kinds occur."""
    program, topology, manifest = made(*case, 16 << 10)
    target = "mesh" if case[0].startswith("mesh") else "torus"
    hw = build_hwprog(program, topology, manifest, target)
    assert not hw.header["collective"]["inplace"]
    check_races(hw)
    assert not _brute_force_race(hw)
    kinds: set[str] = set()
    found = accepted = 0
    for doc in hw.npus:
        for c in doc["commands"]:
            for w in list(c["waits"]):
                c["waits"].remove(w)
                try:
                    check_races(hw)
                    raced = ""
                except HwProgError as e:
                    raced = str(e)
                assert bool(raced) == _brute_force_race(hw), (doc["npu"], c["id"], w, raced)
                if raced:
                    found += 1
                    kinds.update(
                        k
                        for k in ("read-after-write", "write-after-read", "write-after-write")
                        if k in raced
                    )
                else:
                    accepted += 1
                c["waits"].insert(0, w)
    assert found > 0
    if case[2] == "rhd":
        assert kinds == {"read-after-write", "write-after-read", "write-after-write"}


# -- header and format refusals --------------------------------------------------------------


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        for p in path[:-1]:
            doc = doc[p]
        doc[path[-1]] = value

    return change


def _copy_count(doc: Any) -> None:
    c = next(c for c in doc["commands"] if c["op"] == "copy")
    c["dst"][2] -= 1


def _dor_detour(doc: Any) -> None:
    c = next(c for c in doc["commands"] if c["op"] == "send" and c["routing"] == "dor")
    c["vcs"] = [1 - v for v in c["vcs"]]


HEADER_CASES: list[tuple[str, str, Callable[[Any], None], str]] = [
    ("dims", "hwprog.json", _set(["dims", 1], "line"), r"$.dims[1]: 'line'"),
    ("failed", "hwprog.json", _set(["failed"], [[0, 1]]), "link 0>1 is listed as failed"),
    ("failed-far", "hwprog.json", _set(["failed"], [[0, 5]]), "0>5 is not a link of the grid"),
    ("vc-rule", "hwprog.json", _set(["vc_rule"], "single"), "$.vc_rule: single"),
    ("vcs-per-class", "hwprog.json", _set(["vcs_per_class"], 1), "$.vc_rule: dateline with 1"),
    ("dateline", "hwprog.json", _set(["links", 0, "dateline"], True), "says dim 0 dir + dateline"),
    ("link-dir", "hwprog.json", _set(["links", 0, "dir"], "-"), "$.links[0]"),
    ("acyclic", "hwprog.json", _set(["deadlock", "acyclic"], False), "$.deadlock: acyclic false"),
    ("forced", "hwprog.json", _set(["deadlock", "forced"], True), "forced true"),
    ("channels", "hwprog.json", _set(["deadlock", "channels"], 7), "$.deadlock: 7 channels"),
    ("deps", "hwprog.json", _set(["deadlock", "dependencies"], 0), "and 0 dependencies"),
    (
        "cycle",
        "hwprog.json",
        _set(["deadlock", "cycle"], [{"src": 0, "port": 1, "dst": 1, "vc": 0}]),
        "$.deadlock.cycle: the channel-dependency graph is acyclic",
    ),
    ("commands", "hwprog.json", _set(["counts", "commands"], 1), "$.counts: 1 commands"),
    ("source", "hwprog.json", _set(["counts", "source_routed"], 3), "3 source-routed"),
    ("copy-count", "npus/2.json", _copy_count, "copies 16 source slots into 15"),
    ("dor-vcs", "npus/2.json", _dor_detour, "routing dor, but its VCs"),
]


@pytest.mark.parametrize(
    ("name", "file", "change", "text"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES]
)
def test_headers_that_disagree_with_links_and_routes_are_refused(
    rhd: Path, tmp_path: Path, name: str, file: str, change: Callable[[Any], None], text: str
) -> None:
    bad = _edit(rhd, tmp_path / name, file, change)
    with pytest.raises(HwProgError) as e:
        read_hwprog(bad)
    assert text in str(e.value) and "\n" not in str(e.value)
    r = CliRunner().invoke(cli, ["replay", str(bad)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and text in r.output


def test_duplicate_keys_long_integers_and_stray_npu_files_are_refused(
    rhd: Path, tmp_path: Path
) -> None:
    dup = tmp_path / "dup"
    shutil.copytree(rhd, dup)
    text = (dup / "hwprog.json").read_text()
    (dup / "hwprog.json").write_text(text.replace('"num_vcs": 2', '"num_vcs": 2, "num_vcs": 3'))
    long = tmp_path / "long"
    shutil.copytree(rhd, long)
    text = (long / "npus/3.json").read_text()
    (long / "npus/3.json").write_text(text.replace('"bytes":', '"bytes":' + "9" * 5000, 1))
    stray = tmp_path / "stray"
    shutil.copytree(rhd, stray)
    shutil.copy(stray / "npus/3.json", stray / "npus/16.json")
    for folder, want in (
        (dup, "the key 'num_vcs' appears twice"),
        (long, "npus/3.json: a number with more digits"),
        (stray, "npus/16.json: not an NPU file of the header's 16 NPUs"),
    ):
        r = CliRunner().invoke(cli, ["replay", str(folder)])
        assert r.exit_code == 2, r.output
        assert r.output.count("\n") == 1 and want in r.output, r.output


@pytest.mark.parametrize(
    ("spec", "coll", "algo", "options"),
    [
        ("ring:2", "allreduce", "ring", HwOptions()),
        ("stack:ring4*ring2", "allgather", "direct", HwOptions()),
        ("mesh:4x4,fail=5-6;9>10", "alltoall", "direct", HwOptions()),
        ("torus:4x4", "alltoall", "direct", HwOptions(vcs=6)),
        ("torus:4x4", "alltoall", "direct", HwOptions(vcs=1, force=True)),
        ("torus:3x3x2", "allreduce", "tacos", HwOptions()),
    ],
    ids=["ring2", "stack", "failed", "lanes", "forced", "3d"],
)
def test_what_the_exporter_writes_passes_every_check(
    tmp_path: Path, spec: str, coll: str, algo: str, options: HwOptions
) -> None:
    program, topology, manifest = made(spec, coll, algo, 8 << 10)
    target = "mesh" if spec.startswith("mesh") else "torus"
    out = tmp_path / "hw"
    export(program, topology, manifest, out, target, options)
    hw = read_hwprog(out)
    assert hw == build_hwprog(program, topology, manifest, target, options)
    assert hw.header["deadlock"]["acyclic"] != options.force
