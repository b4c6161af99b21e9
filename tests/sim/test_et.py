"""Timing ET traces at the node level: collc's own, and foreign ones without collc attributes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends.sim import SimError, TaskGraph, simulate, simulate_et, simulate_tasks, tasks_from_et
from backends.sim.tasks import Detail, TaskKind
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et import parse_et, read_et_folder, write_et_files
from chakra_ir.et.framing import frame
from tests.sim.helpers import ring_allreduce, topo

CB = 1000
RING2 = "ring:2,bw=50GB/s,lat=500ns"


def _node(
    nid: int,
    ntype: int,
    deps: tuple[int, ...] = (),
    ctrl: tuple[int, ...] = (),
    dur: int = 0,
    **attrs: int,
) -> bytes:
    node = pb.Node(
        id=nid,
        name=f"n{nid}",
        type=ntype,  # type: ignore[arg-type]
        data_deps=list(deps),
        ctrl_deps=list(ctrl),
        duration_micros=dur,
    )
    for name, value in attrs.items():
        a = node.attr.add()
        a.name = name
        if name == "comm_size":
            a.int64_val = value
        else:
            a.int32_val = value
    return frame(node.SerializeToString())


def _et(*nodes: bytes) -> bytes:
    return frame(pb.GlobalMetadata(version="0.0.4").SerializeToString()) + b"".join(nodes)


SEND, RECV, COMP, COLL = 5, 6, 4, 7


def foreign_pair() -> list[Any]:
    """Rank 0: 2 µs of compute, then a 1000-byte send (tag 5) to rank 1. Rank 1: the
    receive, then a 0 µs compute gated by a ctrl dependency. Ids are not 0..n-1."""
    r0 = _et(
        _node(10, COMP, dur=2),
        _node(11, SEND, deps=(10,), comm_dst=1, comm_size=CB, comm_tag=5),
    )
    r1 = _et(
        _node(3, RECV, comm_src=0, comm_size=CB, comm_tag=5),
        _node(4, COMP, ctrl=(3,)),
    )
    return [parse_et(r0, "f.0.et"), parse_et(r1, "f.1.et")]


def test_foreign_trace_simulates_in_both_models() -> None:
    traces = foreign_pair()
    t = topo(RING2)
    r = simulate_et(traces, t)
    # COMP 2 µs = 2000 ns, then one hop of 520 ns; the 0 µs COMP takes nothing.
    assert r.finish_ns == pytest.approx(2520.0)
    assert r.messages == 1
    assert not r.semantics_checked
    assert any("semantics not checked" in n for n in r.notes)
    assert r.algbw_gb_per_s is None and r.size_bytes is None
    # ASTRA-sim: the 0 µs COMP becomes 1 ns.
    assert simulate_et(traces, t, model="analytical").finish_ns == 2521


def test_foreign_task_graph_columns() -> None:
    g = tasks_from_et(foreign_pair())
    assert g.source == "et" and not g.semantics_checked
    assert g.kind.tolist() == [TaskKind.COMP, TaskKind.SEND, TaskKind.RECV, TaskKind.COMP]
    assert g.origin.tolist() == [10, 11, 3, 4]
    assert g.deps.tolist() == [0, 2]  # node 11 on node 10; node 4 on node 3 (ctrl)
    assert g.partners().tolist() == [-1, 2, 1, -1]
    assert g.describe(2) == "rank 1 node 3 (recv from 0, tag 5, 1000 B)"


def test_a_hand_built_task_graph() -> None:
    # The neutral graph directly: rank 0 sends 1000 B to rank 1, which then computes 30 ns.
    g = TaskGraph(
        npus=(0, 1),
        rank_offsets=np.array([0, 1, 3]),
        kind=np.array([TaskKind.SEND, TaskKind.RECV, TaskKind.COMP], dtype=np.int8),
        detail=np.array([Detail.SEND, Detail.RECV, Detail.COMP], dtype=np.int8),
        peer=np.array([1, 0, -1]),
        nbytes=np.array([CB, CB, 0]),
        tag=np.zeros(3, dtype=np.int64),
        duration_ns=np.array([0.0, 0.0, 30.0]),
        duration_us=np.zeros(3, dtype=np.int64),
        dep_offsets=np.array([0, 0, 0, 1]),
        deps=np.array([1]),
        route_offsets=np.zeros(4, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
        origin=np.arange(3),
        source="et",
        semantics_checked=False,
    )
    assert simulate_tasks(g, topo(RING2)).finish_ns == pytest.approx(550.0)


def test_collc_et_read_as_foreign_matches_the_program(tmp_path: Path) -> None:
    # The same program through its ET files: identical times in both models (the ET writes
    # reductions of 0 µs, which the program's analytical run also assumes).
    p = ring_allreduce(4)
    t = topo("ring:4,bw=50GB/s,lat=500ns")
    write_et_files(p, tmp_path, "ring", CB)
    traces = read_et_folder(tmp_path)
    for model in ("congestion", "analytical"):
        a = simulate(p, t, CB, model=model)
        b = simulate_et(traces, t, model=model)
        assert b.finish_ns == pytest.approx(a.finish_ns)
        assert b.messages == a.messages == 24


def test_unsupported_and_malformed_nodes() -> None:
    coll = parse_et(_et(_node(1, COLL, comm_size=CB)), "c.0.et")
    with pytest.raises(SimError, match="COMM_COLL_NODE cannot be simulated"):
        tasks_from_et([coll])
    no_size = parse_et(_et(_node(1, SEND, comm_dst=1, comm_tag=0)), "s.0.et")
    other = parse_et(_et(_node(1, RECV, comm_src=0, comm_size=CB, comm_tag=0)), "s.1.et")
    with pytest.raises(SimError, match=r"s\.0\.et: rank 0 node 1: attribute comm_size is missing"):
        tasks_from_et([no_size, other])
    wrong_src = parse_et(
        _et(_node(1, SEND, comm_src=1, comm_dst=1, comm_size=CB, comm_tag=0)), "w.0.et"
    )
    with pytest.raises(SimError, match="comm_src is 1, but the sender is rank 0"):
        tasks_from_et([wrong_src, other])
    # Sizes must agree for a send and its receive to match (ASTRA-sim's rule).
    small = parse_et(_et(_node(1, RECV, comm_src=0, comm_size=10, comm_tag=0)), "m.1.et")
    good = parse_et(_et(_node(1, SEND, comm_dst=1, comm_size=CB, comm_tag=0)), "m.0.et")
    with pytest.raises(SimError, match="no receive matches"):
        simulate_et([good, small], topo(RING2))
