"""Virtual channels: dateline on tori, one VC on meshes, source routes, refused cycles."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from backends.hwprog import HwDeadlockError, HwOptions, build_hwprog, export, read_hwprog
from backends.hwprog.grid import grid_of
from backends.hwprog.vcs import assign, find_cycle
from chakra_ir.outdir import Manifest
from chakra_ir.program import Program
from tests.hwprog.helpers import made, target_of
from topologies import Topology, parse_topology


def _cdg(hw_header: dict[str, object], npus: list[dict[str, object]]) -> set[tuple[object, ...]]:
    by_port = {(lk["src"], lk["port"]): lk["dst"] for lk in hw_header["links"]}  # type: ignore[attr-defined,index]
    edges = set()
    for doc in npus:
        for c in doc["commands"]:  # type: ignore[attr-defined]
            if c["op"] != "send":
                continue
            cur, prev = doc["npu"], None
            for pt, vc in zip(c["ports"], c["vcs"], strict=True):
                ch = (cur, pt, vc)
                if prev is not None:
                    edges.add((prev, ch))
                prev, cur = ch, by_port[(cur, pt)]
    return edges


def test_the_issue_target_torus_8x8_direct_alltoall() -> None:
    program, topology, manifest = made("torus:8x8", "alltoall", "direct")
    with pytest.raises(HwDeadlockError) as e:
        build_hwprog(program, topology, manifest, "torus", HwOptions(vcs=1))
    msg = str(e.value)
    assert "\n" not in msg and "cycle" in msg and "vc0" in msg and "dateline" in msg
    assert len(e.value.cycle) >= 2
    hw = build_hwprog(program, topology, manifest, "torus", HwOptions(vcs=2))
    assert hw.header["deadlock"]["acyclic"] and hw.header["vc_rule"] == "dateline"
    edges = _cdg(hw.header, hw.npus)
    assert edges and find_cycle(edges_as_ints(edges)) is None
    assert {v for d in hw.npus for c in d["commands"] if c["op"] == "send" for v in c["vcs"]} == {
        0,
        1,
    }


def edges_as_ints(edges: set[tuple[object, ...]]) -> list[tuple[int, int]]:
    ids: dict[object, int] = {}
    return [(ids.setdefault(a, len(ids)), ids.setdefault(b, len(ids))) for a, b in edges]


@pytest.mark.parametrize(("topo", "algo"), [("torus:4x4", "rhd"), ("torus:4x4", "direct")])
def test_one_vc_torus_with_wrap_traffic_is_refused_and_forced(
    tmp_path: Path, topo: str, algo: str
) -> None:
    coll = "alltoall" if algo == "direct" else "allreduce"
    program, topology, manifest = made(topo, coll, algo)
    with pytest.raises(HwDeadlockError, match=r"has a cycle: .*vc0 -> .*back to"):
        export(program, topology, manifest, tmp_path / "hw", "torus", HwOptions(vcs=1))
    assert not (tmp_path / "hw").exists()
    export(program, topology, manifest, tmp_path / "hw", "torus", HwOptions(vcs=1, force=True))
    hw = read_hwprog(tmp_path / "hw")
    d = hw.header["deadlock"]
    assert not d["acyclic"] and d["forced"] and len(d["cycle"]) >= 2
    # the named cycle is a cycle of links
    cyc = d["cycle"]
    for a, b in zip(cyc, cyc[1:] + cyc[:1], strict=True):
        assert a["dst"] == b["src"]


def test_meshes_need_one_vc_for_dimension_order() -> None:
    for algo, coll in (("direct", "alltoall"), ("rhd", "allreduce")):
        program, topology, manifest = made("mesh:4x4", coll, algo)
        hw = build_hwprog(program, topology, manifest, "mesh", HwOptions(vcs=1))
        assert hw.header["deadlock"]["acyclic"] and hw.header["counts"]["source_routed"] == 0


def test_tacos_sends_one_hop_at_a_time_and_never_needs_the_dateline() -> None:
    program, topology, manifest = made("torus:4x4", "allreduce", "tacos")
    hw = build_hwprog(program, topology, manifest, "torus", HwOptions(vcs=1))
    assert hw.header["deadlock"]["dependencies"] == 0


def test_dateline_assignment_switches_vc_on_the_wrap_link() -> None:
    grid = grid_of(parse_topology("torus:8x8"), "torus")
    path = grid.dor_path(6, 8 * 2 + 1)  # +x over the wrap (6>7>0>1), then +y twice
    hops = [grid.by_pair[(u, v)] for u, v in itertools.pairwise(path)]
    assert [h.dateline for h in hops] == [False, True, False, False, False]
    assert assign(grid, hops, 2) == [0, 1, 1, 0, 0]
    assert assign(grid, hops, 1) == [0, 0, 0, 0, 0]


def test_routes_around_failed_links_are_source_routed_and_get_their_own_class(
    tmp_path: Path,
) -> None:
    spec = "torus:4x4,fail=0-1"
    program, topology, manifest = made(spec, "alltoall", "direct")
    export(program, topology, manifest, tmp_path / "hw", "torus")
    hw = read_hwprog(tmp_path / "hw", schema=True)
    h = hw.header
    assert h["counts"]["source_routed"] > 0 and h["deadlock"]["acyclic"]
    assert h["failed"] == [[0, 1], [1, 0]]
    assert h["num_vcs"] == 4  # a route that turns back takes the second dateline class
    table = {
        (r["router"], e["flow"]): (e["port"], e["vc"])
        for r in hw.routers["routers"]
        for e in r["flows"]
    }
    sources = [
        (d["npu"], c) for d in hw.npus for c in d["commands"] if c.get("routing") == "source"
    ]
    assert len(sources) == h["counts"]["source_routed"]
    assert len(table) == sum(len(c["ports"]) for _, c in sources)
    with pytest.raises(HwDeadlockError, match="cycle"):
        build_hwprog(program, topology, manifest, "torus", HwOptions(vcs=1))


def test_routes_around_a_failed_mesh_link_are_source_routed() -> None:
    program, topology, manifest = made("mesh:4x4,fail=5-6", "alltoall", "direct")
    hw = build_hwprog(program, topology, manifest, "mesh")
    assert hw.header["counts"]["source_routed"] > 0
    assert hw.header["deadlock"]["acyclic"]


def _yx_hints(every: int) -> tuple[Program, Topology, Manifest]:
    """The direct all-to-all on mesh:4x4 with every ``every``-th send routed y first."""
    import dataclasses

    import numpy as np

    from chakra_ir.program import OpKind

    program, topology, manifest = made("mesh:4x4", "alltoall", "direct")
    rank_of = program.op_rank()
    offsets, nodes = [0], []
    k = 0
    for g in range(program.num_ops):
        if program.kind[g] == OpKind.SEND:
            s, d = int(rank_of[g]), int(program.peer[g])
            if k % every == 0:
                mid = (s % 4) + (d // 4) * 4  # y first, then x
                path = [*topology.route(s, mid)[:-1], *topology.route(mid, d)]
            else:
                path = list(topology.route(s, d))
            nodes += path
            k += 1
        offsets.append(len(nodes))
    hinted = dataclasses.replace(
        program,
        route_offsets=np.array(offsets, dtype=np.int64),
        route_nodes=np.array(nodes, dtype=np.int32),
        _views={},
    )
    return hinted, topology, manifest


def test_producers_route_hints_against_dimension_order_need_a_second_class() -> None:
    from chakra_ir.verify import verify_routes

    program, topology, manifest = _yx_hints(2)
    verify_routes(program, topology)
    with pytest.raises(HwDeadlockError, match="cycle"):
        build_hwprog(program, topology, manifest, "mesh", HwOptions(vcs=1))
    hw = build_hwprog(program, topology, manifest, "mesh")
    h = hw.header
    assert h["num_vcs"] == 2 and h["deadlock"]["acyclic"] and h["counts"]["source_routed"] > 0
    tables = sum(len(r["flows"]) for r in hw.routers["routers"])
    assert tables > 0


@pytest.mark.parametrize(("topo", "vcs", "lanes"), [("torus:4x4", 8, 4), ("mesh:4x4", 3, 3)])
def test_spare_vcs_form_lanes_and_stay_acyclic(topo: str, vcs: int, lanes: int) -> None:
    """Dimension-order routes need one class; VCs beyond it are copies of that class (lanes),
    route i on lane i mod lanes, and lanes other than 0 are table-driven."""
    program, topology, manifest = made(topo, "alltoall", "direct")
    hw = build_hwprog(program, topology, manifest, target_of(topo), HwOptions(vcs=vcs))
    sends = [c for d in hw.npus for c in d["commands"] if c["op"] == "send"]
    per_lane = 2 if topo.startswith("torus") else 1
    seen = {c["vcs"][0] // per_lane for c in sends}
    assert seen == set(range(lanes))
    for c in sends:
        lane = c["vcs"][0] // per_lane
        assert all(v // per_lane == lane for v in c["vcs"])  # a route keeps its lane
        assert (c["routing"] == "dor") == (lane == 0)
    assert hw.header["deadlock"]["acyclic"]
    assert find_cycle(edges_as_ints(_cdg(hw.header, hw.npus))) is None
    tables = {(e["flow"], e["vc"]) for r in hw.routers["routers"] for e in r["flows"]}
    assert {f for f, _ in tables} == {c["flow"] for c in sends if c["routing"] == "source"}
