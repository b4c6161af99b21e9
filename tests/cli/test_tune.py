"""``collc tune``: the fastest candidate per size, ranges that cover every byte count once, the
cache, the exports, and bad input in one line with exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from chakra_ir.collective import CollectiveKind
from collc.cli import cli
from collc.tune import TuneCache, TuneSpec, choice_at, merge_ranges, run_tune

ROOT = Path(__file__).resolve().parents[2]
AR = CollectiveKind.ALLREDUCE
SIZES = (1024, 16384, 262144, 4 << 20, 64 << 20)


def _spec(**kw: object) -> TuneSpec:
    base: dict[str, object] = {
        "topology": "torus:4x2",
        "collective": AR,
        "sizes": SIZES,
        "tacos_chunks": (1, 2),
        "tacos_seeds": (0,),
    }
    base.update(kw)
    return TuneSpec(**base)  # type: ignore[arg-type]


def test_merge_ranges_splits_at_the_geometric_mean() -> None:
    ranges = merge_ranges([(1024, "a"), (2048, "a"), (4096, "b"), (8192, "a")])
    assert [(r.label, r.first, r.last) for r in ranges] == [
        ("a", 1024, 2048),
        ("b", 4096, 4096),
        ("a", 8192, 8192),
    ]
    # isqrt(2048 * 4096) = 2896, isqrt(4096 * 8192) = 5792
    assert [(r.min_bytes, r.max_bytes) for r in ranges] == [(0, 2896), (2897, 5792), (5793, 0)]


def test_the_fastest_candidate_wins_and_ranges_cover_every_size() -> None:
    report = run_tune(_spec())
    labels = {c.label for c in report.candidates}
    assert {"tacos/c1/s0", "tacos/c2/s0", "ring", "swing", "swing-latency"} <= labels
    for size in SIZES:
        timed = [c for c in report.cells if c.size_bytes == size and c.time_ns is not None]
        assert report.best[size] == min(timed, key=lambda c: c.time_ns or 0.0).label
        assert choice_at(report.ranges, size) == report.best[size]
    assert report.ranges[0].min_bytes == 0 and report.ranges[-1].max_bytes == 0
    for a, b in zip(report.ranges, report.ranges[1:], strict=False):
        assert a.max_bytes + 1 == b.min_bytes
        assert a.label != b.label
    assert report.runs == len([c for c in report.cells if c.time_ns is not None])


def test_a_wider_rerun_reuses_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    first = run_tune(_spec(sizes=SIZES[:3]), TuneCache(path))
    assert first.hits == 0 and first.runs > 0
    wider = run_tune(_spec(), TuneCache(path))
    assert wider.hits == first.runs
    assert wider.runs == len([c for c in wider.cells if c.time_ns is not None]) - first.runs
    for c in first.cells:
        again = wider.cell(c.label, c.size_bytes)
        assert again is not None and again.time_ns == c.time_ns
    # another model is another key: nothing reused
    other = run_tune(_spec(sizes=SIZES[:1], model="astra-aware"), TuneCache(path))
    assert other.hits == 0


def test_program_files_compete(tmp_path: Path) -> None:
    spec = _spec(
        topology="ring:8",
        sizes=(65536,),
        algorithms=("ring",),
        programs=(ROOT / "examples" / "allreduce_ring.py",),
    )
    report = run_tune(spec)
    labels = [c.label for c in report.candidates]
    assert labels == ["ring", "file:allreduce_ring.py"]
    cell = report.cell("file:allreduce_ring.py", 65536)
    assert cell is not None and cell.time_ns is not None and cell.time_ns > 0


def _xml_bounds(path: Path) -> tuple[int, int]:
    head = path.read_text().split(">", 1)[0]
    lo = re.search(r'minBytes="(\d+)"', head)
    hi = re.search(r'maxBytes="(\d+)"', head)
    assert lo and hi
    return int(lo.group(1)), int(hi.group(1))


def test_export_msccl_xml_selects_each_size_once(tmp_path: Path) -> None:
    """The runtime's rule (msccl_lifecycle.cc): nBytes >= minBytes && (maxBytes == 0 ||
    nBytes <= maxBytes). Every sweep size and the sizes between them select exactly one file,
    the one of the size's fastest candidate."""
    out = tmp_path / "xml"
    argv = ["tune", "-t", "torus:4x2", "-c", "allreduce", "--sizes", "1KiB:64MiB:x16"]
    argv += ["--tacos-chunks", "1", "--tacos-seeds", "0", "--no-cache", "--json"]
    result = CliRunner().invoke(cli, [*argv, "--export", "msccl-xml", "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    listing = json.loads((out / "tuning.json").read_text())
    files = {r["algorithm"]: out / r["files"][0] for r in listing["ranges"]}
    assert len(listing["ranges"]) == len(data["ranges"])
    probes = set(data["sizes"]) | {r["min_bytes"] for r in data["ranges"]}
    probes |= {r["max_bytes"] for r in data["ranges"] if r["max_bytes"]}
    for size in sorted(probes | {s + 1 for s in probes} | {3 << 30}):
        chosen = [
            f
            for f in out.glob("*.xml")
            if (lambda lo, hi: size >= lo and (hi == 0 or size <= hi))(*_xml_bounds(f))
        ]
        assert len(chosen) == 1, size
        if str(size) in data["best"]:
            assert chosen[0] == files[data["best"][str(size)]]


def test_export_astra_sim_writes_a_bundle_per_range(tmp_path: Path) -> None:
    out = tmp_path / "astra"
    argv = ["tune", "-t", "ring:4", "-c", "allreduce", "--sizes", "1KiB:16MiB:x64"]
    argv += ["--algorithms", "ring,swing-latency,direct", "--no-cache"]
    result = CliRunner().invoke(cli, [*argv, "--export", "astra-sim", "-o", str(out)])
    assert result.exit_code == 0, result.output
    listing = json.loads((out / "tuning.json").read_text())
    for r in listing["ranges"]:
        folder = out / Path(r["files"][0]).parts[0]
        assert (folder / "collc_bundle.json").is_file()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--sizes", "4KiB:1KiB:x2"], "need MIN <= MAX"),
        (["--sizes", ""], "--sizes"),
        (["--sizes", "1KiB:4KiB:x1"], "factor of at least 2"),
        (["-c", "alltoall", "--algorithms", "ring"], "no producer makes alltoall"),
        (["-t", "switch:8", "--algorithms", "swing"], "swing serves tori"),
        (["--tacos-chunks", "0"], "--tacos-chunks"),
        (["--algorithms", "nope"], "unknown producer"),
        (["--export", "msccl-xml"], "--export and --output go together"),
        (["--model", "analytical", "--packet-size", "4KiB"], "congestion model only"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], words: str) -> None:
    base = ["tune", "-t", "ring:4", "-c", "allreduce", "--sizes", "1KiB", "--no-cache"]
    args = base + argv
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_broken_cache_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    cache.write_text('{"format": 1, "results": {"k": {"time_ns": "fast"}}}')
    argv = ["tune", "-t", "ring:4", "-c", "allreduce", "--sizes", "1KiB", "--cache", str(cache)]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert "not a collc tune cache" in result.output and str(cache) in result.output


def test_table_names_the_ranges() -> None:
    argv = ["tune", "-t", "ring:4", "-c", "allreduce", "--sizes", "1KiB:1MiB:x32", "--no-cache"]
    result = CliRunner().invoke(cli, [*argv, "--algorithms", "ring,swing-latency"])
    assert result.exit_code == 0, result.output
    assert "chosen ranges" in result.output and "no limit" in result.output


def test_workload_tuned_picks_the_fastest_per_collective(tmp_path: Path) -> None:
    """Every tuned choice is what `collc tune` picks for that group and size alone, the
    choices go through the cache, and on this data-parallel workload the tuned iteration is no
    slower than one with the large all-reduces' producer used for every collective."""
    runner = CliRunner()
    wl = tmp_path / "wl"
    gen = ["workload", "generate", "gpt3-125m", "--npus", "4", "--dp", "4", "-o", str(wl)]
    assert runner.invoke(cli, [*gen, "--no-memory-check"]).exit_code == 0
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    sim = ["workload", "simulate", str(wl), "-t", "ring:4", "--json"]
    result = runner.invoke(cli, [*sim, "--algorithm", "tuned"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["tuned"]
    for choice in data["tuned"]:
        spec = TuneSpec(
            "ring:4",
            AR,
            (choice["bytes"],),
            placement="0,1,2,3",
            tacos_chunks=(1,),
            tacos_seeds=(0,),
        )
        report = run_tune(spec)
        assert report.candidate(report.best[choice["bytes"]]).algorithm == choice["algorithm"]
    assert (tmp_path / "xdg" / "collc" / "tune.json").is_file()
    big = max(data["tuned"], key=lambda c: c["bytes"])["algorithm"]
    forced = runner.invoke(cli, [*sim, "--algorithm", big], env=env)
    assert forced.exit_code == 0, forced.output
    assert data["iteration_ns"] <= json.loads(forced.output)["iteration_ns"]
    bad = runner.invoke(cli, [*sim, "--algorithm", "tuned,allreduce=nope"], env=env)
    assert bad.exit_code == 2 and "tuned" in bad.output
