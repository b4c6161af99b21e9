"""The CLI, in-process with CliRunner: happy paths, JSON, and every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chakra_ir import Collective, CollectiveKind, ProgramBuilder, Slice
from chakra_ir.outdir import MANIFEST, Manifest, write_output
from collc.cli import cli
from tests.chakra_ir.helpers import I, O


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def one_error_line(res: Result) -> str:
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert "Traceback" not in res.output
    assert lines, "no error message"
    assert (
        lines[0].startswith("collc: error: ")
        or lines[0].startswith("Error:")
        or "Usage" in lines[0]
    )
    return res.output


@pytest.fixture
def ring8(tmp_path: Path) -> Path:
    out = tmp_path / "ring8"
    res = run(
        "synthesize",
        "--topology",
        "ring:8",
        "--collective",
        "allreduce",
        "--algorithm",
        "ring",
        "--size",
        "1MiB",
        "-o",
        str(out),
    )
    assert res.exit_code == 0, res.output
    return out


def test_synthesize_writes_ets_and_manifest(ring8: Path) -> None:
    names = sorted(p.name for p in ring8.iterdir())
    assert names == sorted([*(f"allreduce.{r}.et" for r in range(8)), MANIFEST])
    m = json.loads((ring8 / MANIFEST).read_text())
    assert m["collective"]["kind"] == "allreduce"
    assert m["size_bytes"] == 1 << 20
    assert m["chunk_bytes"] * m["collective"]["chunks_per_rank"] == 1 << 20
    assert m["topology"].startswith("ring:8")
    assert m["placement"] == list(range(8))
    assert m["collc_version"]


def test_synthesize_json_summary(tmp_path: Path) -> None:
    spec = "mesh:4x4,bw=50GB/s,lat=500ns,fail=0-1;5>6"
    res = run(
        "synthesize",
        "-t",
        spec,
        "-c",
        "allgather",
        "-a",
        "ring",
        "--size",
        "64MiB",
        "-o",
        str(tmp_path / "m16"),
        "--json",
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["ranks"] == 16 and s["collective"] == "allgather"
    assert s["operations"] > 0 and s["messages"] > 0
    assert "fail=" in s["topology"]


def test_verify_ok_and_json(ring8: Path) -> None:
    res = run("verify", str(ring8))
    assert res.exit_code == 0 and "ok" in res.output
    data = json.loads(run("verify", str(ring8), "--json").output)
    assert data["ok"] is True and data["ranks"] == 8


def test_verify_finds_a_wrong_program(tmp_path: Path) -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(0, Slice(I, 0), Slice(O, 0))
    b.copy(1, Slice(I, 0), Slice(O, 1))
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(O, 0))  # rank 0 never gets chunk(1,0)
    m = Manifest(c, "ring:2", 2048, 1024, "allgather")
    write_output(tmp_path / "bad", b.build(), m)
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "bad")])
    assert res.exit_code == 1
    assert "rank 0 output[1] ends with empty, expected chunk(1,0)" in res.output


def test_inspect_text_and_et_json(ring8: Path) -> None:
    text = run("inspect", str(ring8)).output
    assert text.startswith("program")
    assert "collective allreduce ranks=8" in text
    res = run("inspect", str(ring8 / "allreduce.3.et"), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert isinstance(data, dict)


def test_demo(tmp_path: Path) -> None:
    res = run("demo", "-o", str(tmp_path / "d"), "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["read_back"] == "identical" and s["ranks"] == 16
    assert (tmp_path / "d" / MANIFEST).exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-t", "mesk:4x4", "-c", "allreduce"], "mesk"),
        (["-t", "ring:8", "-c", "allreduced"], "allreduced"),
        (["-t", "ring:8", "-c", "allreduce", "-a", "nope"], "nope"),
        (["-t", "ring:8", "-c", "allreduce", "--size", "0"], "size"),
        (["-t", "ring:8", "-c", "allreduce", "--size", "12XB"], "12XB"),
        (["-t", "ring:6", "-c", "allreduce", "-a", "rhd", "--chunks-per-npu", "0"], "chunks"),
        (["-t", "ring:8", "-c", "allreduce", "--placement", "0,99"], "99"),
        (["-t", "ring:8", "-c", "allreduce", "--placement", "3-1"], "'3-1' is an empty range"),
        (["-t", "ring:8", "-c", "allreduce", "--placement", "0-99999999999"], "NPU 99999999999"),
        (["-t", "ring:8", "-c", "allreduce", "--placement", "1-2-3"], "cannot read '1-2-3'"),
        (["-t", "ring:8", "-c", "allreduce", "--placement", "0,1,1"], "names an NPU twice"),
    ],
)
def test_bad_synthesize_input(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["synthesize", *args, "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert needle in one_error_line(res)
    assert not out.exists()
    assert [p for p in tmp_path.iterdir()] == []


def test_bad_spec_names_position(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli, ["synthesize", "-t", "mesh:4x4,bw=fast", "-c", "allreduce", "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2
    first = res.output.splitlines()[0]
    assert first.startswith("collc: error: <spec>:")


def test_missing_folder_and_manifest(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "no such folder" in res.output
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "not a collc output folder" in res.output


def test_corrupted_et_file(ring8: Path) -> None:
    f = ring8 / "allreduce.2.et"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    res = CliRunner().invoke(cli, ["verify", str(ring8)])
    assert res.exit_code == 2
    assert "allreduce.2.et" in res.output and "Traceback" not in res.output


def test_garbage_manifest(ring8: Path) -> None:
    (ring8 / MANIFEST).write_text("{not json")
    res = CliRunner().invoke(cli, ["verify", str(ring8)])
    assert res.exit_code == 2 and "manifest.json:1:" in res.output


def test_existing_foreign_folder_is_not_replaced(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    res = CliRunner().invoke(cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-o", str(out)])
    assert res.exit_code == 2 and "not a collc output folder" in res.output
    assert (out / "notes.txt").read_text() == "keep me"


def test_rerun_replaces_a_collc_folder(ring8: Path) -> None:
    res = run("synthesize", "-t", "ring:4", "-c", "allgather", "-o", str(ring8))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in ring8.iterdir()) == sorted(
        [*(f"allgather.{r}.et" for r in range(4)), MANIFEST]
    )
    assert [p.name for p in ring8.parent.iterdir() if p.name.startswith(".")] == []


def test_bounds_command() -> None:
    res = run("bounds", "-t", "ring:8", "-c", "allgather", "--size", "8MiB", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    # A bidirectional ring: each NPU receives 7/8 of 8 MiB over two 50 GB/s links, after
    # one link latency (500 ns).
    assert data["bounds_ns"]["ingress"] == pytest.approx(500 + 7 / 8 * 8 * 2**20 / 100, rel=1e-9)
    assert data["best_ns"] >= data["bounds_ns"]["ingress"]


def test_tacos_is_default_and_reports_its_ratio(tmp_path: Path) -> None:
    res = run(
        "synthesize", "-t", "mesh:3x3", "-c", "allgather", "-o", str(tmp_path / "t"), "--json"
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["algorithm"] == "tacos"
    assert s["estimated_ns"] >= s["lower_bound_ns"] > 0
    assert s["ratio"] == pytest.approx(s["estimated_ns"] / s["lower_bound_ns"])


def test_simulate_reproduces_the_tacos_estimate(tmp_path: Path) -> None:
    out = tmp_path / "t"
    assert (
        run(
            "synthesize", "-t", "torus:3x3", "-c", "allreduce", "--size", "4MiB", "-o", str(out)
        ).exit_code
        == 0
    )
    res = run("simulate", str(out), "--json", "--timeline", str(tmp_path / "t.json"))
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["finish_ns"] == pytest.approx(data["estimated_ns"], rel=0.01)
    assert data["bound_ratio"] >= 1.0
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    res = run("simulate", str(out), "--model", "analytical", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["model"] == "analytical"


def test_simulate_refuses_mismatches(ring8: Path) -> None:
    res = CliRunner().invoke(cli, ["simulate", str(ring8), "--topology", "ring:9"])
    assert res.exit_code == 2 and "differs from the folder's topology" in res.output
    res = CliRunner().invoke(cli, ["simulate", str(ring8), "--size", "2MiB"])
    assert res.exit_code == 2 and "--force" in res.output
    res = CliRunner().invoke(cli, ["simulate", str(ring8), "--size", "2MiB", "--force", "--json"])
    assert res.exit_code == 0
    assert json.loads(res.output)["size_bytes"] == 2 << 20
    res = CliRunner().invoke(cli, ["simulate", str(ring8), "--model", "quantum"])
    assert res.exit_code == 2


def test_simulate_foreign_ets_needs_topology(ring8: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for f in ring8.glob("*.et"):
        (foreign / f.name).write_bytes(f.read_bytes())
    res = CliRunner().invoke(cli, ["simulate", str(foreign)])
    assert res.exit_code == 2 and "--topology" in res.output
    res = CliRunner().invoke(cli, ["simulate", str(foreign), "-t", "ring:8", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["semantics_checked"] is False


def test_bench_in_process() -> None:
    res = run("bench", "-t", "ring:4", "-c", "allreduce", "--sizes", "1MiB:4MiB:x4", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["sizes"] == [1 << 20, 4 << 20]
    algos = {r["algorithm"] for r in data["rows"]}
    assert {"tacos", "ring", "direct", "rhd", "dbt"} <= algos
    for r in data["rows"]:
        if not r["error"]:
            assert r["ratio"] >= 1.0 - 1e-9
    text = run("bench", "-t", "ring:4", "-c", "alltoall", "--sizes", "1MiB").output
    assert "direct" in text and "does not implement alltoall" in text


def test_bench_seeds_reach_the_ring_bound() -> None:
    """TACOS with three seeds (the ring's rule with seeds 0 and 1, the other rule with seed 2)
    ties ring-bidir at the bound on ring:8 with 4 chunks per NPU; one seed does not."""
    args = ["bench", "-t", "ring:8,bw=50GiB/s,lat=500ns", "-c", "allreduce", "--sizes", "1MiB"]
    args += ["--chunks-per-npu", "4", "--algorithms", "tacos,ring-bidir", "--json"]
    ratio = {}
    for seeds in ("1", "3"):
        res = run(*args, "--seeds", seeds)
        assert res.exit_code == 0, res.output
        rows = {r["algorithm"]: r for r in json.loads(res.output)["rows"]}
        ratio[seeds] = rows["tacos"]["time_ns"] / rows["ring-bidir"]["time_ns"]
    assert ratio["1"] > 1.05 and ratio["3"] == pytest.approx(1.0, abs=1e-6)
    res = CliRunner().invoke(cli, [*args, "--seeds", "0"])
    assert res.exit_code == 2


def test_bench_bad_sizes() -> None:
    res = CliRunner().invoke(
        cli, ["bench", "-t", "ring:4", "-c", "allreduce", "--sizes", "1MiB:4MiB"]
    )
    assert res.exit_code == 2 and "MIN:MAX:xFACTOR" in res.output


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_compile_export_import_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "ring"
    res = run("compile", str(EXAMPLES / "allreduce_ring.py"), "-o", str(out), "--json", "--", "4")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["algorithm"] == "mscclang" and s["ranks"] == 4
    assert "<algo" in s["program_output"]  # the program calls XML()
    res = run("export", str(out), "--target", "msccl-xml", "-o", str(tmp_path / "xml"), "--json")
    assert res.exit_code == 0, res.output
    xml, marker = json.loads(res.output)["files"]
    assert marker.endswith("collc_msccl.json")
    assert Path(xml).read_text().startswith("<algo ")
    res = run("import", xml, "-o", str(tmp_path / "back"), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["collective"] == "allreduce"
    assert run("verify", str(tmp_path / "back")).exit_code == 0
    assert run("simulate", str(tmp_path / "back")).exit_code == 0


def test_compile_errors_point_at_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from msccl.language import *\nx = chunk(0, Buffer.input, 0\n")
    res = CliRunner().invoke(cli, ["compile", str(bad), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert res.output.startswith(f"collc: error: {bad}:")
    assert "^" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()
    res = CliRunner().invoke(
        cli, ["compile", str(tmp_path / "missing.py"), "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "no such file" in res.output


def test_import_malformed_xml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text('<algo name="x" proto="Simple" nchannels="1">\n  <gpu id="zero"/>\n</algo>\n')
    res = CliRunner().invoke(cli, ["import", str(bad), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert f"{bad}:" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_export_astra_sim_bundle(ring8: Path, tmp_path: Path) -> None:
    out = tmp_path / "astra"
    res = run("export", str(ring8), "--target", "astra-sim", "-o", str(out), "--json")
    assert res.exit_code == 0, res.output
    system = json.loads((out / "system.json").read_text())
    assert system["all-reduce-implementation-custom"] == ["collective/allreduce"]
    assert len(list((out / "collective").glob("allreduce.*.et"))) == 8
    assert "AstraSim_Analytical_Congestion_Unaware" in (out / "run.sh").read_text()


def test_export_astra_sim_refuses_failed_links(tmp_path: Path) -> None:
    src = tmp_path / "f"
    assert (
        run("synthesize", "-t", "torus:3x3,fail=0-1", "-c", "allgather", "-o", str(src)).exit_code
        == 0
    )
    res = CliRunner().invoke(
        cli, ["export", str(src), "--target", "astra-sim", "-o", str(tmp_path / "a")]
    )
    assert res.exit_code == 2 and "failed links" in res.output
    assert not (tmp_path / "a").exists()


def test_unwritable_output_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    res = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-o", str(blocker / "out")]
    )
    assert res.exit_code == 2
    assert res.output.startswith("collc: error: ") and "Traceback" not in res.output
    assert blocker.read_text() == "not a folder"


def _foreign_et(folder: Path, *, deadlock: bool) -> None:
    """Two ranks exchanging one message each, as another tool would write them (no collc
    attributes); with ``deadlock`` both receive before they send."""
    from chakra_ir.et import et_def_pb2 as pb

    def frame(msg: object) -> bytes:
        body = msg.SerializeToString()  # type: ignore[attr-defined]
        n, head = len(body), bytearray()
        while True:
            head.append((n & 0x7F) | (0x80 if n >> 7 else 0))
            n >>= 7
            if not n:
                return bytes(head) + body

    def node(i: int, kind: int, src: int, dst: int, deps: list[int]) -> object:
        n = pb.Node(id=i, name="send" if kind == pb.COMM_SEND_NODE else "recv", type=kind)
        n.data_deps.extend(deps)
        for name, field, value in (
            ("is_cpu_op", "bool_val", False),
            ("comm_src", "int32_val", src),
            ("comm_dst", "int32_val", dst),
            ("comm_size", "int64_val", 1024),
            ("comm_tag", "int32_val", 0),
        ):
            a = n.attr.add()
            a.name = name
            setattr(a, field, value)
        return n

    folder.mkdir()
    for r in range(2):
        other = 1 - r
        if deadlock:
            nodes = [
                node(1, pb.COMM_RECV_NODE, other, r, []),
                node(2, pb.COMM_SEND_NODE, r, other, [1]),
            ]
        else:
            nodes = [
                node(1, pb.COMM_SEND_NODE, r, other, []),
                node(2, pb.COMM_RECV_NODE, other, r, [1]),
            ]
        data = frame(pb.GlobalMetadata(version="0.0.4")) + b"".join(frame(n) for n in nodes)
        (folder / f"trace.{r}.et").write_bytes(data)


def test_verify_foreign_ets(tmp_path: Path) -> None:
    _foreign_et(tmp_path / "good", deadlock=False)
    res = run("verify", str(tmp_path / "good"), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["checks"] == ["structure", "progress"] and "not checkable" in data["note"]
    _foreign_et(tmp_path / "bad", deadlock=True)
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "bad")])
    assert res.exit_code == 1 and "deadlock" in res.output


def test_verify_collc_ets_without_manifest(ring8: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ring8.glob("*.et"):
        (bare / f.name).write_bytes(f.read_bytes())
    data = json.loads(run("verify", str(bare), "--json").output)
    assert data["checks"] == ["structure", "progress", "semantics", "races"]
