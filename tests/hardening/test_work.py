"""Large legal topologies cost seconds, not minutes: synthesis estimates its work from the
spec before producing anything and refuses beyond ``--max-work``, topologies of more than
``COLLC_MAX_LINKS`` links are refused before they are built, and the searched cut family of the
bounds is sampled on large topologies. Checked by what runs and what is refused, never by how
long anything takes (the rate of a work unit is measured by ``benchmarks/bench_work.py``)."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from chakra_ir.collective import Collective, CollectiveKind
from collc import pipeline
from collc.cli import cli
from tacos import bound_terms, cut_bounds
from tacos.channels import Net, build_channels, channel_hops, mean_route_hops
from topologies import parse_topology


def _no_generate(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("a program was produced")

    monkeypatch.setattr(pipeline, "generate", refuse)


def _error_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("collc: error: "), output
    assert "Traceback" not in output
    return lines[0]


# The legal topologies of the spec campaign that ran for minutes before the work limit.
CAMPAIGN = [
    ("fc:644", "too many links: 414,092 "),
    ("uniring:564", "estimated work "),
    ("switch:648", "estimated work "),
    ("torus:642x2x2", "estimated work "),
    ("fred:864", "estimated work "),
]


@pytest.mark.parametrize(("spec", "message"), CAMPAIGN)
@pytest.mark.parametrize("algorithm", ["tacos", "ring"])
def test_large_legal_topologies_are_refused_before_synthesis(
    spec: str, message: str, algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_generate(monkeypatch)
    kind = "allreduce" if algorithm == "tacos" else "allgather"
    args = ["synthesize", "-t", spec, "-c", kind, "-a", algorithm, "-o", str(tmp_path / "o")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2
    line = _error_line(res.output)
    assert message in line
    assert ("--max-work" if "work" in message else "COLLC_MAX_LINKS") in line
    assert not (tmp_path / "o").exists()


def test_the_work_limit_refuses_in_one_line_naming_the_estimate_and_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_generate(monkeypatch)
    res = CliRunner().invoke(
        cli, ["synthesize", "-t", "torus:8x8x8", "-c", "allreduce", "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1
    line = _error_line(res.output)
    # 512 ranks x 512 chunks x 2 phases x (32 + 6 channel hops)
    assert "estimated work 19,922,944 (512 ranks x 512 chunks x 2 phases" in line
    assert f"the limit of {pipeline.MAX_WORK:,}" in line and "--max-work" in line


@pytest.mark.parametrize(
    ("spec", "kind", "algorithm", "extra"),
    [
        ("ring:8", "allreduce", "tacos", []),
        ("switch:6", "allgather", "tacos", ["--seeds", "2"]),
        ("mesh:3x3", "alltoall", "tacos", []),
        ("ring:8", "allgather", "ring", []),
    ],
)
def test_max_work_raises_the_limit(
    spec: str, kind: str, algorithm: str, extra: list[str], tmp_path: Path
) -> None:
    req = pipeline.Request(spec, CollectiveKind(kind), algorithm, seeds=2 if extra else 1)
    topo = parse_topology(spec)
    producer = pipeline.ALGORITHMS[algorithm](req, None)
    collective = pipeline.make_collective(req, producer, topo)
    work = pipeline.estimate_work(
        collective, topo, tacos=algorithm == "tacos", seeds=2 if extra else 1
    )
    args = ["synthesize", "-t", spec, "-c", kind, "-a", algorithm, *extra, "-q"]
    res = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "a"), "--max-work", "1"])
    assert res.exit_code == 2
    assert f"estimated work {work.units:,} ({work.terms})" in _error_line(res.output)
    assert "the limit of 1 " in res.output
    res = CliRunner().invoke(
        cli, [*args, "-o", str(tmp_path / "b"), "--max-work", str(work.units - 1)]
    )
    assert res.exit_code == 2 and "--max-work" in _error_line(res.output)
    res = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "c"), "--max-work", str(work.units)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c" / "manifest.json").is_file()


def test_the_default_work_limit_is_stated_in_the_help() -> None:
    res = CliRunner().invoke(cli, ["synthesize", "--help"])
    assert res.exit_code == 0
    assert f"{pipeline.MAX_WORK:,}" in " ".join(res.output.split())


def test_the_estimate_counts_phases_seeds_and_route_hops() -> None:
    topo = parse_topology("ring:8")
    ag = Collective(CollectiveKind.ALLGATHER, 8, 1)
    ar = Collective(CollectiveKind.ALLREDUCE, 8, 8)
    a2a = Collective(CollectiveKind.ALLTOALL, 8, 1)  # 8 blocks a rank
    one = pipeline.estimate_work(ag, topo, tacos=False).units
    assert one == 8 * 8 * pipeline.WORK_PER_TRANSFER
    assert pipeline.estimate_work(ar, topo, tacos=False).units == 2 * one
    assert pipeline.estimate_work(ag, topo, tacos=True).units == 8 * 8 * (32 + 2)
    assert pipeline.estimate_work(ag, topo, tacos=True, seeds=3).units == 3 * 8 * 8 * (32 + 2)
    # ring:8 from NPU 0: distances 1,2,3,4,3,2,1 (mean 16/7)
    assert mean_route_hops(topo, list(range(8))) == pytest.approx(16 / 7)
    assert pipeline.estimate_work(a2a, topo, tacos=False).units == round(
        8 * 8 * 16 / 7 * pipeline.WORK_PER_TRANSFER
    )


@pytest.mark.parametrize(
    "spec",
    [
        "ring:8",
        "uniring:7",
        "fc:9",
        "switch:12",
        "mesh:4x3",
        "torus:3x3x2",
        "hypercube:4",
        "stack:ring4*fc3*switch2",
        "ring:8,fail=0-1",
        "fred:20",
        "fred:9,l1=2",
    ],
)
def test_channel_hops_matches_the_channels_tacos_builds(spec: str) -> None:
    """Exact where every channel is one hop or crosses one switch; on FRED's two switch levels
    it counts four hops for every channel, an upper estimate within a factor of two."""
    topo = parse_topology(spec)
    npus = list(range(topo.num_npus))
    per_rank: dict[int, int] = defaultdict(int)
    for ch in build_channels(Net.of(topo), npus):
        per_rank[ch.src] += len(ch.links)
    built = sum(per_rank.values()) / len(npus)
    estimate = channel_hops(topo, npus)
    if spec.startswith("fred"):
        assert built < estimate <= 2 * built
    else:
        assert estimate == pytest.approx(built)


def test_the_link_limit_refuses_through_the_cli_and_the_variable_raises_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_generate(monkeypatch)
    args = ["synthesize", "-t", "fc:400", "-c", "allgather", "-a", "ring", "-o", str(tmp_path)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2
    line = _error_line(res.output)
    assert "too many links: 159,600 (at most 131,072" in line and "COLLC_MAX_LINKS" in line
    monkeypatch.setenv("COLLC_MAX_LINKS", "159600")
    res = CliRunner().invoke(cli, args)
    # built this time, then refused by the work limit before any program is produced
    assert res.exit_code == 2 and "estimated work 5,120,000 " in _error_line(res.output)


def test_the_cut_family_is_sampled_beyond_cut_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer slabs evaluated on a large topology: still a lower bound (never above the full
    family's), and the same family when the topology is small enough."""
    topo = parse_topology("ring:400,fail=0-1")
    assert topo.layout is not None
    shape = topo.layout.shape
    net = Net.of(topo)
    ranks = list(range(topo.num_npus))
    evaluated: list[int] = []
    spaced = cut_bounds._spaced

    def counting(items: range, share: float) -> list[int]:
        out = spaced(items, share)
        evaluated.append(len(out))
        return out

    def value(k_in: int, _k_out: int, bw: float, lat: float) -> float:
        return lat + k_in * 1000.0 / bw

    monkeypatch.setattr(cut_bounds, "_spaced", counting)
    full = cut_bounds._family_cut(net, shape, ranks, value, empty_is_infinite=True)
    assert evaluated[0] == 399
    monkeypatch.setattr(cut_bounds, "CUT_WORK", 20 * len(topo.links))
    evaluated.clear()
    sampled = cut_bounds._family_cut(net, shape, ranks, value, empty_is_infinite=True)
    assert evaluated[0] <= 21
    assert 0 < sampled <= full


def test_spaced_keeps_the_ends_and_the_middle() -> None:
    assert cut_bounds._spaced(range(1, 100), 1.0) == list(range(1, 100))
    picks = cut_bounds._spaced(range(1, 100), 0.05)
    assert picks[0] == 1 and picks[-1] == 99 and 50 in picks
    assert len(picks) <= 6 and picks == sorted(set(picks))


def _nth_arrival(key: tuple[tuple[float, float], ...], s: float, need: int) -> float:
    """By brute force: the ``need``-th earliest chunk arrival over links ``key``, link ``e``
    delivering its ``j``-th chunk at ``a_e + j s / B_e``."""
    times = sorted(lat + j * s / bw for lat, bw in key for j in range(1, need + 1))
    return times[need - 1]


def test_chunk_count_is_the_nth_arrival_over_distinct_links() -> None:
    rng = random.Random(3)
    for _ in range(300):
        kinds = [(rng.choice([0.0, 500.0, rng.uniform(0, 900)]), rng.uniform(1, 100))]
        kinds += [(rng.uniform(0, 900), rng.choice([25.0, 50.0])) for _ in range(2)]
        key = tuple(sorted(rng.choice(kinds) for _ in range(rng.randint(1, 9))))
        s, need = rng.uniform(1, 1e5), rng.randint(1, 60)
        got = bound_terms._chunk_count_of.__wrapped__(key, s, need)
        assert got == pytest.approx(_nth_arrival(key, s, need), rel=1e-9, abs=1e-5)


def test_bounds_on_a_large_fully_connected_network_take_memory_linear_in_its_size() -> None:
    """The spec campaign's ``bounds -t fc:41000`` grew past 20 GB: the chunk bound compared
    every candidate time with every one of the n-1 equal in-links. Scaled down to fc:4000
    (which took 0.4 GB that way), the peak must stay small."""
    tracemalloc.start()
    try:
        res = CliRunner().invoke(cli, ["bounds", "-t", "fc:4000", "-c", "allgather"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0, res.output
    assert peak < 32 << 20


def test_bench_skips_producers_over_the_work_limit_with_the_reason() -> None:
    from click.testing import CliRunner

    from collc.cli import cli

    args = ["bench", "-t", "ring:8", "-c", "allreduce", "--sizes", "1MiB", "--json"]
    r = CliRunner().invoke(cli, [*args, "--algorithms", "tacos,ring", "--max-work", "1"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    assert {row["algorithm"] for row in rows} == {"tacos", "ring"}
    for row in rows:
        assert "--max-work" in row["error"] and row["time_ns"] is None
    ok = CliRunner().invoke(cli, [*args, "--algorithms", "ring"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["rows"][0]["time_ns"] > 0
