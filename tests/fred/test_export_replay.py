"""``collc export --target fred`` and the FRED replay, through the CLI, and their refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.fred.compile import FredOptions, compile_fred
from backends.fred.errors import FredUncolourable
from chakra_ir import Buffer, ProgramBuilder, Slice
from chakra_ir.collective import Collective, CollectiveKind
from tests.cli.test_cli import one_error_line, run
from topologies import parse_topology


def synth(out: Path, spec: str, coll: str = "allreduce", *extra: str) -> None:
    res = run(
        "synthesize", "-t", spec, "-c", coll, "--algorithm", "fred-innetwork",
        "--size", "16MiB", "-o", str(out), *extra,
    )  # fmt: skip
    assert res.exit_code == 0, res.output


def export(src: Path, out: Path, *extra: str) -> dict[str, object]:
    res = run("export", str(src), "--target", "fred", "-o", str(out), "--json", *extra)
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.output)
    return data


def replay(folder: Path, *extra: str) -> dict[str, object]:
    res = run("replay", str(folder), "--json", *extra)
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.output)
    return data


def simulated_ns(folder: Path) -> float:
    res = run("simulate", str(folder), "--json")
    assert res.exit_code == 0, res.output
    return float(json.loads(res.output)["finish_ns"])


@pytest.mark.parametrize(
    ("spec", "coll", "extra"),
    [
        ("fred:20", "allreduce", ()),
        ("fred:20", "allreduce", ("--groups", "2")),
        ("fred:20", "allreduce", ("--groups", "stride:4")),
        ("fred:8", "reducescatter", ()),
        ("fred:8", "allgather", ()),
        ("fred:20,cfg=B", "allreduce", ("--groups", "stride:4")),
    ],
)
def test_export_and_replay_hold(
    tmp_path: Path, spec: str, coll: str, extra: tuple[str, ...]
) -> None:
    synth(tmp_path / "p", spec, coll, *extra)
    files = export(tmp_path / "p", tmp_path / "hw")["files"]
    assert isinstance(files, list) and any("switches/L2.json" in str(f) for f in files)
    header = json.loads((tmp_path / "hw" / "hwprog.json").read_text())
    assert header["format"] == "collc-fred" and header["m"] == 3 and header["fix"] == ""
    assert all(s["config_bytes"] <= 1536 for s in header["switches"])
    got = replay(tmp_path / "hw", "--timeline", str(tmp_path / "t.json"))
    assert got["postcondition"] == "holds" and got["completed"]
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    sim = simulated_ns(tmp_path / "p")
    if coll == "allreduce" and "cfg=B" not in spec:  # one phase: the flow model of simulate
        assert abs(float(got["time_ns"]) - sim) <= 0.02 * sim, (got["time_ns"], sim)
    else:  # phases cannot share a port, where simulate's flows share links
        assert sim * 0.98 <= float(got["time_ns"]) <= 1.5 * sim, (got["time_ns"], sim)


def test_human_report(tmp_path: Path) -> None:
    synth(tmp_path / "p", "fred:20")
    export(tmp_path / "p", tmp_path / "hw")
    res = run("replay", str(tmp_path / "hw"))
    assert res.exit_code == 0
    assert "1 phase(s)" in res.output and "postcondition holds" in res.output


def test_refusals_are_one_line(tmp_path: Path) -> None:
    synth(tmp_path / "rs", "fred:20", "reducescatter")
    res = run("export", str(tmp_path / "rs"), "--target", "fred", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "over its 1536 B of configuration memory" in one_error_line(res)
    assert not (tmp_path / "x").exists()
    export(tmp_path / "rs", tmp_path / "x", "--config-memory", "3KiB")
    res = run(
        "export",
        str(tmp_path / "rs"),
        "--target",
        "fred",
        "-o",
        str(tmp_path / "y"),
        "--fred-m",
        "1",
    )
    assert res.exit_code == 2 and "--fred-m 1" in one_error_line(res)


def _triangle() -> object:
    """Three flows on switch:6 whose conflict graph at the outer level is a triangle."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLREDUCE, 6, 1))
    one = Slice(Buffer.INPUT, 0, 1)
    out = Slice(Buffer.OUTPUT, 0, 1)
    for f, ins, outs in [(0, [0], [2]), (1, [1], [4]), (2, [2], [3, 5])]:
        for r in ins:
            b.flow_in(r, f, one)
        for r in outs:
            b.flow_out(r, f, out)
    return b.build()


def test_uncolourable_at_fixed_m_and_the_raise_m_fix() -> None:
    topo = parse_topology("switch:6,innet=yes")
    p = _triangle()
    with pytest.raises(
        FredUncolourable, match=r"uncolourable at m=2: phase 1, switch L1: level 0"
    ) as e:
        compile_fred(p, topo, FredOptions(m=2))  # type: ignore[arg-type]
    assert "\n" not in str(e.value) and "NPU 2" in str(e.value)
    cfg = compile_fred(p, topo, FredOptions(m=2, fix="raise-m"))  # type: ignore[arg-type]
    assert (cfg.m, cfg.fix) == (3, "raise-m to 3")


def _edit(path: Path, change: object) -> None:
    doc = json.loads(path.read_text())
    change(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))


def test_hand_edited_and_corrupted_folders(tmp_path: Path) -> None:
    synth(tmp_path / "p", "fred:20", "allreduce", "--groups", "stride:4")
    export(tmp_path / "p", tmp_path / "good")

    def fresh(name: str) -> Path:
        import shutil

        shutil.copytree(tmp_path / "good", tmp_path / name)
        return tmp_path / name

    def refused(folder: Path, *want: str) -> None:
        res = run("replay", str(folder))
        assert res.exit_code == 2, res.output
        line = one_error_line(res)
        for w in want:
            assert w in line, line

    # A µSwitch that sends one flow into the middle another uses.
    f = fresh("mix")
    sw = f / "switches" / "L1-0.json"

    def mix(doc: dict) -> None:  # type: ignore[type-arg]
        # NPUs 0 and 1 (DP groups 0 and 1) enter µSwitch i0 for different middles: sum them.
        el = doc["configurations"][0]["elements"]
        assert sorted(map(len, el["i0"])) == [0, 1, 1]
        el["i0"] = [[0, 1], [], []]

    _edit(sw, mix)
    refused(f, "switch L1-0, phase 1, µSwitch i0", "flows 0 and 1 meet")
    # An element that does not exist, a state of the wrong shape.
    f = fresh("noel")
    _edit(
        f / "switches" / "L2.json",
        lambda d: d["configurations"][0]["elements"].update({"m7.i0": [[0]]}),
    )
    refused(f, "switch L2, phase 1", "m7.i0", "not an element of FRED_3(20)")
    f = fresh("shape")
    _edit(
        f / "switches" / "L1-1.json",
        lambda d: d["configurations"][0]["elements"].update({"i0": [[0]]}),
    )
    refused(f, "switch L1-1, phase 1, µSwitch i0", "1 outputs")
    # A flow routed to the wrong output.
    f = fresh("wrong")

    def swap(doc: dict) -> None:  # type: ignore[type-arg]
        # NPUs 8 and 9 (ports 0 and 1 of o0) receive each other's group's sum.
        el = doc["configurations"][0]["elements"]
        el["o0"] = el["o0"][::-1]

    _edit(f / "switches" / "L1-2.json", swap)
    refused(f, "phase 1: flow 0 delivers flow 1", "to NPU 8")
    # Not JSON, a version from the future, a schema violation.
    f = fresh("notjson")
    (f / "switches" / "L2.json").write_text("{")
    refused(f, "L2.json", "not JSON")
    f = fresh("future")
    _edit(f / "hwprog.json", lambda d: d.update(version=9))
    refused(f, "version 9 is from the future")
    f = fresh("schema")
    _edit(f / "hwprog.json", lambda d: d.update(m="three"))
    refused(f, "$.m")
