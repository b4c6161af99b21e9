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
