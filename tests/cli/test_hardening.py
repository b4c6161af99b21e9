"""Issue 10's inputs, each kept as a test: every one ends in one error line naming the file
or spec position with exit status 2 (or, for verify's wrong programs, 1), never a traceback,
and a folder whose files disagree with their manifest is refused rather than trusted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from chakra_ir.outdir import MANIFEST
from collc.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def error_line(res: Result, status: int = 2) -> str:
    """The one error line of a failed run (asserting there is no traceback)."""
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    assert res.exit_code == status, res.output
    lines = res.output.splitlines()
    if lines[0].startswith("Usage: "):  # a flag value click rejected: its usage, then Error:
        lines = [ln for ln in lines if ln.startswith("Error: ")]
    first = lines[0]
    assert first.startswith("collc: error: ") or first.startswith("Error: "), res.output
    return first


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hard") / "r8"
    res = run("synthesize", "-t", "ring:8", "-c", "allreduce", "--size", "64KiB", "-o", str(out))
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def folder(base: Path, tmp_path: Path) -> Path:
    out = tmp_path / "f"
    shutil.copytree(base, out)
    return out


def edit_manifest(folder: Path, **changes: Any) -> None:
    path = folder / MANIFEST
    data = json.loads(path.read_text())
    for key, value in changes.items():
        target = data
        parts = key.split("__")
        for p in parts[:-1]:
            target = target[p]
        target[parts[-1]] = value
    path.write_text(json.dumps(data))


COMMANDS = (("verify",), ("simulate",), ("inspect",), ("inspect", "--json"))


def test_inspect_json_of_a_folder_is_json(folder: Path) -> None:
    res = run("inspect", str(folder), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(data["ranks"]) == 8


def test_manifest_that_is_not_utf8(folder: Path) -> None:
    raw = (folder / MANIFEST).read_bytes()
    at = raw.index(b"allreduce")
    (folder / MANIFEST).write_bytes(raw[:at] + b"\xff" + raw[at + 1 :])
    line = raw.count(b"\n", 0, at) + 1
    for cmd in COMMANDS:
        first = error_line(run(*cmd, str(folder)))
        assert f"{folder / MANIFEST}:{line}:" in first and "not UTF-8" in first


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("extra__reduce_micros", "x", "extra.reduce_micros"),
        ("extra__reduce_micros", 1.5, "extra.reduce_micros"),
        ("extra__estimated_ns", "NaN", "extra.estimated_ns"),
        ("extra__lower_bound_ns", [1], "extra.lower_bound_ns"),
        ("chunk_bytes", 3.5, "'chunk_bytes' must be an integer"),
        ("chunk_bytes", "8192", "'chunk_bytes' must be an integer"),
        ("size_bytes", True, "'size_bytes' must be an integer"),
        ("chunk_bytes", 0, "'chunk_bytes' must be at least 1"),
        ("topology", 8, "'topology' must be a string"),
        ("et_prefix", "../x", "et_prefix"),
        ("extra", [], "'extra' must be an object"),
    ],
)
def test_manifest_fields_of_the_wrong_type(
    folder: Path, key: str, value: Any, fragment: str
) -> None:
    edit_manifest(folder, **{key: value})
    for cmd in COMMANDS:
        first = error_line(run(*cmd, str(folder)))
        assert str(folder / MANIFEST) in first and fragment in first, first


def test_manifest_with_a_non_finite_number(folder: Path) -> None:
    text = (folder / MANIFEST).read_text()
    data = json.loads(text)
    old = json.dumps(data["extra"]["estimated_ns"])
    (folder / MANIFEST).write_text(text.replace(f'"estimated_ns": {old}', '"estimated_ns": NaN'))
    first = error_line(run("simulate", str(folder)))
    assert "NaN is not a JSON number" in first and str(folder / MANIFEST) in first


def test_manifest_chunk_bytes_that_disagree_with_the_files(folder: Path) -> None:
    m = json.loads((folder / MANIFEST).read_text())
    cb = m["chunk_bytes"] * 2
    edit_manifest(folder, chunk_bytes=cb, size_bytes=cb * m["collective"]["chunks_per_rank"])
    for cmd in COMMANDS[:2]:
        first = error_line(run(*cmd, str(folder)))
        assert f"chunk_bytes {cb} differs from the ET files' own chunk size" in first


def test_manifest_size_that_is_not_chunks_times_chunk_bytes(folder: Path) -> None:
    m = json.loads((folder / MANIFEST).read_text())
    edit_manifest(folder, size_bytes=m["size_bytes"] + 1)
    first = error_line(run("verify", str(folder)))
    assert f"size_bytes {m['size_bytes'] + 1} is not chunk_bytes" in first


@pytest.mark.parametrize(
    ("topology", "fragment"),
    [
        ("mesk:8", "unknown topology kind 'mesk'"),
        ("ring:4", "has 4 NPUs, too few for the 8 ranks"),
        ("ring:8\x00", "control character"),
    ],
)
def test_manifest_topology_is_checked(folder: Path, topology: str, fragment: str) -> None:
    edit_manifest(folder, topology=topology)
    for cmd in (("verify",), ("simulate",)):
        first = error_line(run(*cmd, str(folder)))
        assert str(folder / MANIFEST) in first and fragment in first, first


def test_manifest_with_a_hundred_million_ranks_is_refused_at_once(folder: Path) -> None:
    from chakra_ir.collective import collective_from_dict

    m = json.loads((folder / MANIFEST).read_text())
    n = 100_000_000
    raw = dict(m["collective"], num_ranks=n)
    size = m["chunk_bytes"] * collective_from_dict(raw).size_chunks
    edit_manifest(folder, collective__num_ranks=n, size_bytes=size, placement=None, et_files=None)
    for cmd in COMMANDS:
        first = error_line(run(*cmd, str(folder)))
        assert f"names {n} ranks but the folder holds 8" in first, first
        assert str(folder / MANIFEST) in first


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("placement", [7, 6, 5, 4, 3, 2, 1, 0], "'placement' disagrees"),
        ("placement", [0] * 1_000_000, "'placement' disagrees"),
        ("et_files", ["x.0.et"], "'et_files' is not the 8 files allreduce.<rank>.et"),
    ],
)
def test_manifest_lists_must_agree(folder: Path, key: str, value: Any, fragment: str) -> None:
    edit_manifest(folder, **{key: value})
    first = error_line(run("verify", str(folder)))
    assert str(folder / MANIFEST) in first and fragment in first, first


def test_swapped_rank_files_are_refused(folder: Path) -> None:
    a, b = folder / "allreduce.2.et", folder / "allreduce.5.et"
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    for cmd in COMMANDS:
        first = error_line(run(*cmd, str(folder)))
        assert str(a) in first and "holds rank 5, but its name makes it rank 2" in first


def test_bit_flipped_buffer_code_names_the_node(folder: Path) -> None:
    from chakra_ir.et import encode_program, parse_et
    from chakra_ir.et.codec import decode_program

    f = folder / "allreduce.3.et"
    t = parse_et(f.read_bytes(), str(f))
    col = t.attrs["collc_dst_buf"]
    # Rewrite one destination buffer code to 5 through the Program columns and re-encode.
    files = sorted(folder.glob("*.et"), key=lambda p: int(p.name.split(".")[1]))
    p = decode_program(files)
    p.dst_buf[p.rank_offsets[3] + int(col.nodes[0])] = 5
    m = json.loads((folder / MANIFEST).read_text())
    f.write_bytes(encode_program(p, m["chunk_bytes"])[3])
    for cmd in COMMANDS:
        first = error_line(run(*cmd, str(folder)))
        assert str(f) in first and "collc_dst_buf 5 names no buffer" in first


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("ring:8,bw=1e400GB/s", "above 1e18 B/s"),
        ("ring:8,bw=1e-300GB/s", "below 1KB/s"),
        ("ring:8,bw=1e-10GB/s", "below 1KB/s"),
        ("ring:8,lat=1e400ns", "longer than 1000 s"),
        ("ring:8,bw=" + "9" * 5000 + "GB/s", "has 5000 characters"),
        ("ring:8,lat=" + "9" * 5000 + "ns", "has 5000 characters"),
        ("ring:8,bw=50gb/s", "'gb/s' is not one"),
        ("ring:8,bw=50GBps", "'GBps' is not one"),
        ("ring:8\x00", "control character"),
    ],
)
def test_bad_specs_name_the_value(spec: str, fragment: str, tmp_path: Path) -> None:
    for args in (
        ("bounds", "-t", spec, "-c", "allreduce"),
        ("synthesize", "-t", spec, "-c", "allreduce", "-o", str(tmp_path / "o")),
    ):
        first = error_line(run(*args))
        assert first.startswith("collc: error: <spec>:1:") and fragment in first, first
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("size", "fragment"),
    [
        ("1e400", "larger than the largest size"),
        ("9" * 5000, "has 5000 characters"),
        ("1e-300", "positive whole number of bytes"),
        ("64mib", "unknown size unit"),
    ],
)
def test_bad_sizes(size: str, fragment: str, tmp_path: Path) -> None:
    first = error_line(
        run("synthesize", "-t", "ring:4", "-c", "allreduce", "--size", size, "-o", str(tmp_path))
    )
    assert "--size" in first and fragment in first


def test_bits_are_an_eighth_of_bytes() -> None:
    def best(spec: str) -> float:
        res = run("bounds", "-t", spec, "-c", "allgather", "--size", "1MiB", "--json")
        assert res.exit_code == 0, res.output
        value: float = json.loads(res.stdout)["bounds_ns"]["ingress"]
        return value

    gbit = best("ring:8,bw=400Gb/s,lat=0ns")
    assert gbit == pytest.approx(best("ring:8,bw=400Gbps,lat=0ns"))
    assert gbit == pytest.approx(best("ring:8,bw=50GB/s,lat=0ns"))


def test_size_too_large_for_exact_times_is_refused_up_front(tmp_path: Path) -> None:
    first = error_line(
        run(
            "synthesize",
            "-t",
            "ring:8,bw=1KB/s",
            "-c",
            "allreduce",
            "--size",
            "1TiB",
            "-o",
            str(tmp_path / "o"),
        )
    )
    assert "1TiB over 8 hops of the slowest link" in first
    assert not (tmp_path / "o").exists()
