"""Small input, small cost: sizes are checked before anything is allocated, and the bounds of
large regular topologies come from closed forms (checked here by what they touch, not by how
long they take)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import topologies
import topologies.build
from chakra_ir.collective import CollectiveKind
from collc import pipeline
from collc.cli import cli
from tacos.bounds import lower_bounds, regular_lower_bounds
from topologies import parse_topology
from topologies.regular import regular_grid

GRIDS = [
    "mesh:7x7",
    "torus:4x4x3",
    "torus:2x5x5",
    "ring:50",
    "uniring:45",
    "fc:41",
    "switch:41",
    "hypercube:6",
    "mesh:9x5,bw=[1GB/s,5GB/s]",
    "stack:ring4*fc3*switch4,bw=[10GB/s,20GB/s,30GB/s],lat=[100ns,200ns,300ns]",
    "stack:switch4*ring3*ring4",
    "stack:fc7*switch7",
]


@pytest.mark.parametrize("spec", GRIDS)
def test_regular_grid_matches_the_built_topology(spec: str) -> None:
    grid = regular_grid(spec)
    assert grid is not None
    topo = parse_topology(spec)
    assert grid.spec == topo.spec
    assert (grid.num_npus, grid.num_links) == (topo.num_npus, len(topo.links))
    assert grid.num_npus + grid.num_switches == topo.num_nodes


@pytest.mark.parametrize("spec", ["ring:8,fail=0-1", "graph:3,links=0-1;1-2", "fred:8"])
def test_other_specs_are_not_regular(spec: str) -> None:
    assert regular_grid(spec) is None


@pytest.mark.parametrize("spec", GRIDS)
@pytest.mark.parametrize("kind", list(CollectiveKind))
def test_closed_forms_equal_the_searched_bounds(spec: str, kind: CollectiveKind) -> None:
    """Every grid here has more than 40 nodes, so `lower_bounds` searches the same cut family
    the closed forms evaluate (no exact min-cut) and the latency over every pair."""
    if kind is CollectiveKind.CUSTOM:
        return
    topo = parse_topology(spec)
    grid = regular_grid(spec)
    assert grid is not None
    for any_chunking in (False, True):
        for root in (0, 7, topo.num_npus - 1) if kind.rooted else (0,):
            args = dict(chunks_per_npu=2, root=root, any_chunking=any_chunking)
            searched = lower_bounds(kind, topo, 1 << 20, **args)  # type: ignore[arg-type]
            closed = regular_lower_bounds(kind, grid, 1 << 20, **args)  # type: ignore[arg-type]
            assert set(closed.items) == set(searched.items)
            for name, value in searched.items.items():
                assert math.isclose(closed.items[name], value, rel_tol=1e-9), (name, root)


@pytest.mark.parametrize("spec", ["torus:128x128x64", "hypercube:16", "fc:464"])
def test_bounds_of_large_grids_never_build_the_topology(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("the topology was built")

    monkeypatch.setattr(topologies.build, "_make", refuse)
    res = CliRunner().invoke(cli, ["bounds", "-t", spec, "-c", "allreduce", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    grid = regular_grid(spec)
    assert grid is not None and data["topology"] == grid.spec
    assert data["best_ns"] == max(data["bounds_ns"].values()) > 0


def test_torus_latency_bound_is_the_diameter() -> None:
    grid = regular_grid("torus:128x128x64,lat=1000ns")
    assert grid is not None
    b = regular_lower_bounds(CollectiveKind.ALLGATHER, grid, 1 << 20, any_chunking=True)
    assert b.items["latency"] == pytest.approx((64 + 64 + 32) * 1000)


@pytest.mark.parametrize("chunks", ["1000000000", "7000000"])
def test_chunks_per_npu_is_checked_before_synthesis(chunks: str, tmp_path: object) -> None:
    res = CliRunner().invoke(
        cli,
        ["synthesize", "-t", "ring:8", "-c", "allreduce", "--chunks-per-npu", chunks, "-o", "x"],
    )
    assert res.exit_code == 2 and "Traceback" not in res.output
    want = 8 * 8 * int(chunks)
    assert f"= {want:,} chunk transfers" in res.output and "--max-transfers" in res.output


def test_the_transfer_limit_can_be_raised_and_lowered() -> None:
    req = pipeline.Request("ring:4", CollectiveKind.ALLGATHER, "ring", 4096, chunks_per_npu=3)
    result = pipeline.synthesize(req)
    transfers = result.program.num_ranks * result.program.collective.size_chunks
    with pytest.raises(topologies.errors.CollcError, match="more than the limit of"):
        pipeline.synthesize(
            pipeline.Request(
                "ring:4", CollectiveKind.ALLGATHER, "ring", 4096, 3, max_transfers=transfers - 1
            )
        )
    again = pipeline.synthesize(
        pipeline.Request(
            "ring:4", CollectiveKind.ALLGATHER, "ring", 4096, 3, max_transfers=transfers
        )
    )
    assert again.program == result.program


@pytest.mark.parametrize(
    "spec",
    [
        "mesh:7x7,fail=0-1",
        "torus:4x4x3,fail=0-1;5>6",
        "stack:ring4*fc3*switch4,fail=0-1",
        "fred:20",
        "graph:5+1,links=0-5;1-5;2-5;3-4;4-0",
        "ring:8,linkbw=0-1:10GB/s",
    ],
)
def test_vectorized_cut_family_equals_the_set_by_set_search(spec: str) -> None:
    from tacos.channels import Net
    from tacos.cut_bounds import _cut_family, _cut_value, _family_cut

    topo = parse_topology(spec)
    net = Net.of(topo)
    shape = topo.layout.shape if topo.layout is not None else topo.shape
    m = 1000.0

    def value(k_in: int, k_out: int, bw: float, lat: float) -> float:
        return lat + k_in * m / bw

    for ranks in (list(range(topo.num_npus)), list(range(0, topo.num_npus, 2))):
        one_by_one = max(
            (_cut_value(net, s, set(ranks), m) for s in _cut_family(net, shape, ranks)),
            default=0.0,
        )
        assert _family_cut(net, shape, ranks, value, empty_is_infinite=True) == pytest.approx(
            one_by_one, rel=1e-12
        )


def test_link_limit_is_checked_before_building_and_can_be_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from topologies.errors import SpecError

    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("the topology was built")

    spec = "torus:128x128x64,fail=0-1"  # 6,291,456 links
    with monkeypatch.context() as m:
        m.setattr(topologies.build, "_make", refuse)
        with pytest.raises(SpecError, match=r"too many links: 6,291,456 .*COLLC_MAX_LINKS"):
            parse_topology(spec)
    monkeypatch.setenv("COLLC_MAX_LINKS", "255")
    with pytest.raises(SpecError, match="too many links: 256 "):
        parse_topology("torus:8x8")
    monkeypatch.setenv("COLLC_MAX_LINKS", "256")
    assert len(parse_topology("torus:8x8").links) == 256
