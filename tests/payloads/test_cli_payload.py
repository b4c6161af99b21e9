"""``--payload`` and ``--converter`` on simulate and bench, in-process; bad input is one line
and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from collc.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("p") / "r8"
    res = run(
        "synthesize",
        "-t",
        "ring:8",
        "-c",
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


def _time(res: Result) -> float:
    assert res.exit_code == 0, res.output
    return float(json.loads(res.output)["finish_ns"])


def test_simulate_with_payloads(folder: Path) -> None:
    plain = _time(run("simulate", str(folder), "--json"))
    assert _time(run("simulate", str(folder), "--json", "--payload", "dense")) == plain
    sparse = run("simulate", str(folder), "--json", "--payload", "sparse:density=0.001")
    data = json.loads(sparse.output)
    assert data["finish_ns"] < plain
    assert data["lower_bound_name"] == "sparse-ingress"
    assert any("messages by format" in n for n in data["notes"])
    hw = _time(
        run(
            "simulate",
            str(folder),
            "--json",
            "--payload",
            "sparse:density=0.001",
            "--converter",
            "hw",
        )
    )
    assert hw < data["finish_ns"]
    text = run("simulate", str(folder), "--payload", "sparse:density=0.001,format=coo").output
    assert "coo" in text and "sparse-ingress" in text


def test_simulate_with_tensors(folder: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = [np.where(rng.random(1 << 19) < 0.01, 1.0, 0.0).astype(np.float16) for _ in range(8)]
    np.savez(tmp_path / "g.npz", *arrays)
    res = run("simulate", str(folder), "--json", "--payload", f"tensor:{tmp_path / 'g.npz'}")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["finish_ns"] > 0
    small = [a[:1000] for a in arrays]
    np.savez(tmp_path / "s.npz", *small)
    res = run("simulate", str(folder), "--payload", f"tensor:{tmp_path / 's.npz'}")
    assert res.exit_code == 2 and "--force" in res.output


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sparse:density=0", "must lie in (0, 1]"),
        ("sparse:density=1.01", "must lie in (0, 1]"),
        ("sparse:density=-1", "must lie in (0, 1]"),
        ("sparse:density=0.1,format=zip", "unknown format 'zip'"),
        ("sparse:density=0.1,shape=4x", "shape must be MxK"),
        ("sparse", "needs density"),
        ("sparsity:density=0.1", "unknown payload kind"),
        ("tensor:NOFILE.npz", "NOFILE.npz"),
    ],
)
def test_bad_payloads(folder: Path, spec: str, message: str) -> None:
    res = run("simulate", str(folder), "--payload", spec)
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    first = res.output.splitlines()[0]
    assert first.startswith("collc: error: ") and message in first


def test_bad_tensor_files(folder: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "few.npz", *[np.ones(16, dtype=np.float16)] * 3)
    res = run("simulate", str(folder), "--payload", f"tensor:{tmp_path / 'few.npz'}")
    assert res.exit_code == 2 and "3 tensors for 8 ranks" in res.output.splitlines()[0]
    np.savez(tmp_path / "odd.npz", np.ones(16, dtype=np.float16), np.ones((4, 4), dtype=np.float16))
    res = run("simulate", str(folder), "--payload", f"tensor:{tmp_path / 'odd.npz'}")
    assert res.exit_code == 2 and "one shape" in res.output.splitlines()[0]
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    res = run("simulate", str(folder), "--payload", f"tensor:{tmp_path / 'junk.npz'}")
    assert res.exit_code == 2 and "junk.npz" in res.output.splitlines()[0]


def test_bench_with_a_payload() -> None:
    res = run(
        "bench",
        "-t",
        "ring:8",
        "-c",
        "allreduce",
        "--sizes",
        "1MiB",
        "--algorithms",
        "ring,direct",
        "--payload",
        "sparse:density=0.01",
        "--json",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["lower_bounds"]["1048576"]["name"] == "sparse-ingress"
    for row in data["rows"]:
        assert row["sent_bytes"] > 0 and row["ratio"] >= 1
    res = run("bench", "-t", "ring:8", "-c", "allreduce", "--payload", "sparse:density=2")
    assert res.exit_code == 2


def _synth(out: Path, *extra: str, kind: str = "allreduce") -> Result:
    return run(
        "synthesize",
        "-t",
        "torus:2x2x2",
        "-c",
        kind,
        "--size",
        "1MiB",
        "-q",
        "-o",
        str(out),
        *extra,
    )


def test_synthesize_with_a_payload_plans_and_records_it(tmp_path: Path) -> None:
    spec = "sparse:density=0.01"
    res = _synth(tmp_path / "s", "--payload", spec, "--converter", "hw", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["lower_bound"] == "sparse-ingress"
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["extra"]["payload"] == spec
    assert manifest["extra"]["converter"] == "hw"
    # simulate weighs the folder under its payload and converter, and the estimate is exact.
    sim = run("simulate", str(tmp_path / "s"), "--json")
    data = json.loads(sim.output)
    assert data["lower_bound_name"] == "sparse-ingress"
    assert data["finish_ns"] == pytest.approx(summary["estimated_ns"], abs=1e-6)
    assert data["estimated_ns"] == pytest.approx(summary["estimated_ns"], abs=1e-6)
    human = run("simulate", str(tmp_path / "s"))
    assert "simulated / estimated = 1.0000" in human.output
    # Another converter is another question: no estimate to compare with.
    sw = json.loads(run("simulate", str(tmp_path / "s"), "--json", "--converter", "sw").output)
    assert sw["estimated_ns"] is None and sw["finish_ns"] > data["finish_ns"]


def test_synthesize_with_a_dense_payload_writes_the_same_program(tmp_path: Path) -> None:
    assert _synth(tmp_path / "a").exit_code == 0
    assert _synth(tmp_path / "b", "--payload", "dense").exit_code == 0
    for f in sorted((tmp_path / "a").glob("*.et")):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    ma = json.loads((tmp_path / "a" / "manifest.json").read_text())
    mb = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert mb["extra"].pop("payload") == "dense" and mb["extra"].pop("converter") == "sw"
    assert ma["extra"]["estimated_ns"] == mb["extra"]["estimated_ns"]


def test_synthesize_payload_bad_input_is_one_line(tmp_path: Path) -> None:
    for extra, kind, want in (
        (("--payload", "sparse:density=2"), "allreduce", "density"),
        (("--payload", "sparse:density=0.1"), "alltoall", "all-to-all"),
        (("--payload", "sparse:density=0.1,format=csf"), "allreduce", "unknown format"),
    ):
        res = _synth(tmp_path / "x", *extra, kind=kind)
        assert res.exit_code == 2, res.output
        first = res.output.strip().splitlines()[0]
        assert first.startswith("collc: error:") and want in first, res.output
        assert "Traceback" not in res.output


def test_bench_compares_tacos_planned_with_and_without_the_payload() -> None:
    res = run(
        "bench",
        "-t",
        "torus:2x2x2",
        "-c",
        "allreduce",
        "--sizes",
        "4MiB",
        "--json",
        "--algorithms",
        "tacos,ring",
        "--payload",
        "sparse:density=0.01",
    )
    assert res.exit_code == 0, res.output
    rows = {r["algorithm"]: r for r in json.loads(res.output)["rows"]}
    assert set(rows) == {"tacos", "tacos-dense", "ring"}
    assert rows["tacos"]["time_ns"] <= rows["tacos-dense"]["time_ns"]
    plain = run(
        "bench",
        "-t",
        "torus:2x2x2",
        "-c",
        "allreduce",
        "--sizes",
        "4MiB",
        "--json",
        "--algorithms",
        "tacos,ring",
    )
    assert {r["algorithm"] for r in json.loads(plain.output)["rows"]} == {"tacos", "ring"}


def test_synthesize_with_tensors_takes_their_size(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    arrays = {
        f"r{r}": ((rng.random(4096) < 0.05) * rng.random(4096)).astype(np.float16) for r in range(8)
    }
    np.savez(tmp_path / "g.npz", **arrays)
    res = _synth(tmp_path / "t", "--payload", f"tensor:{tmp_path / 'g.npz'}", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["size_bytes"] == 4096 * 2
    assert summary["lower_bound"] == "sparse-ingress"
    sim = json.loads(run("simulate", str(tmp_path / "t"), "--json").output)
    assert sim["finish_ns"] == pytest.approx(summary["estimated_ns"], abs=1e-6)
