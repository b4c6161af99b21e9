"""TACOS planned with a payload's message sizes (`tacos.sized`): its estimate is the
simulated time under the payload, a dense payload changes nothing, and the plan is never
slower under the payload than the plan for dense chunks; `auto`'s choice by time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends.sim import simulate
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.program import OpKind
from chakra_ir.verify import message_contents, verify, verify_routes
from payloads.describe import parse_payload
from payloads.endpoint import endpoint_ns
from payloads.formats import FORMATS
from payloads.sizes import fastest, message_sizes, payload_chunk_bytes
from tacos import Tacos, chunks_for, synthesize
from tacos.errors import TacosError
from tacos.sized import synthesize_sized
from topologies import parse_topology
from topologies.cost_model import Completion, CostModel


def _collective(kind: CollectiveKind, n: int, cpn: int = 1) -> Collective:
    return Collective(kind, n, chunks_for(kind, n, cpn), root=1 if kind.rooted else -1)


CASES = [
    ("ring:8", CollectiveKind.ALLREDUCE, "sparse:density=0.01", 1, "on-arrival"),
    ("torus:2x2x2", CollectiveKind.ALLREDUCE, "sparse:density=0.1", 2, "on-departure"),
    ("mesh:3x3", CollectiveKind.REDUCE_SCATTER, "sparse:density=0.05,format=rlc", 1, "on-arrival"),
    ("switch:8", CollectiveKind.ALLREDUCE, "sparse:density=0.001", 1, "on-arrival"),
    (
        "torus:2x4,bw=[50GB/s,25GB/s]",
        CollectiveKind.ALLREDUCE,
        "sparse:density=0.2",
        1,
        "on-arrival",
    ),
    ("uniring:5", CollectiveKind.ALLGATHER, "sparse:density=0.3,format=bitmap", 2, "on-arrival"),
    ("mesh:2x3", CollectiveKind.REDUCE, "sparse:density=0.02", 1, "on-departure"),
    ("ring:6", CollectiveKind.BROADCAST, "sparse:density=0.02,format=coo", 1, "on-arrival"),
    ("switch:6", CollectiveKind.GATHER, "sparse:density=0.5", 1, "on-arrival"),
    ("mesh:2x2", CollectiveKind.SCATTER, "sparse:density=0.05", 2, "on-arrival"),
    (
        "hypercube:3",
        CollectiveKind.ALLREDUCE,
        "sparse:density=0.01,convert=20GB/s",
        1,
        "on-arrival",
    ),
]


@pytest.mark.parametrize(("spec", "kind", "payload", "cpn", "completion"), CASES)
@pytest.mark.parametrize("converter", ["sw", "hw"])
def test_the_estimate_is_the_simulated_time_under_the_payload(
    spec: str, kind: CollectiveKind, payload: str, cpn: int, completion: str, converter: str
) -> None:
    topo = parse_topology(spec)
    c = _collective(kind, topo.num_npus, cpn)
    cost = CostModel(completion=Completion.parse(completion))
    cb = 3 << 16
    pl = parse_payload(payload)
    syn = synthesize_sized(c, topo, cb, pl, converter=converter, cost=cost)
    verify(syn.program)
    verify_routes(syn.program, topo)
    sizes = message_sizes(syn.program, pl, cb, converter=converter, topology=topo)
    assert simulate(syn.program, topo, cb, cost=cost, sizes=sizes).finish_ns == pytest.approx(
        syn.estimated_ns, abs=1e-9
    )
    # Round 0 is the plan for dense chunks: planning with the sizes never loses to it.
    dense_plan = synthesize(c, topo, cb, cost=cost).program
    weighed = message_sizes(dense_plan, pl, cb, converter=converter, topology=topo)
    assert syn.estimated_ns <= simulate(dense_plan, topo, cb, cost=cost, sizes=weighed).finish_ns


def test_real_tensors_plan_and_estimate_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {}
    for r in range(8):
        a = np.zeros(4096, dtype=np.float32)
        pos = rng.choice(4096, size=200 + 40 * r, replace=False)
        a[pos] = rng.uniform(1, 2, size=pos.size)
        arrays[f"r{r}"] = a
    path = tmp_path / "g.npz"
    np.savez(path, **arrays)
    pl = parse_payload(f"tensor:{path}")
    topo = parse_topology("torus:2x2x2")
    c = _collective(CollectiveKind.ALLREDUCE, 8)
    cb = payload_chunk_bytes(pl, c)
    assert cb == 4096 * 4 // 8
    tacos = Tacos(size_bytes=4096 * 4, payload=pl)
    prog = tacos.generate(c, topo)
    assert tacos.last is not None
    sizes = message_sizes(prog, pl, cb, topology=topo)
    assert simulate(prog, topo, cb, sizes=sizes).finish_ns == pytest.approx(
        tacos.last.estimated_ns, abs=1e-9
    )
    # The planned messages weigh the exact unions of the ranks' supports they carry.
    trace = message_contents(prog)
    sends = np.flatnonzero(prog.kind == OpKind.SEND)
    k = [sum(m.bit_count() for ct in trace.carried[int(g)] for _, m in ct) for g in sends]
    assert max(k) == 8 and min(k) == 1
    assert len(set(sizes.op_bytes[sends].tolist())) > 8


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("torus:2x2x2", CollectiveKind.ALLREDUCE),
        ("switch:8", CollectiveKind.REDUCE_SCATTER),
        ("mesh:2x3", CollectiveKind.ALLGATHER),
        ("fc:4", CollectiveKind.ALLTOALL),
    ],
)
def test_a_dense_payload_leaves_tacos_byte_identical(spec: str, kind: CollectiveKind) -> None:
    topo = parse_topology(spec)
    c = _collective(kind, topo.num_npus, 2)
    plain = Tacos(size_bytes=1 << 20, chunks_per_npu=2)
    dense = Tacos(size_bytes=1 << 20, chunks_per_npu=2, payload=parse_payload("dense"))
    a, b = plain.generate(c, topo), dense.generate(c, topo)
    assert a == b
    assert plain.last is not None and dense.last is not None
    assert plain.last.estimated_ns == dense.last.estimated_ns
    s = synthesize_sized(c, topo, 1 << 15, parse_payload("dense"))
    assert s.program == synthesize(c, topo, 1 << 15).program


def test_sparse_planning_refuses_all_to_all() -> None:
    topo = parse_topology("fc:4")
    c = _collective(CollectiveKind.ALLTOALL, 4)
    with pytest.raises(TacosError, match="all-to-all"):
        synthesize_sized(c, topo, 1024, parse_payload("sparse:density=0.1"))


def test_auto_picks_the_fastest_format_on_the_route() -> None:
    # Dense needs no conversion: on a fast link it beats a smaller sparse format whose
    # conversion costs more than the bytes it saves; on a slow link the sparse one wins.
    nbytes = np.array([1000, 600, 900, 2000, 2000, 2000, 1000], dtype=np.int64)
    work = [0.0, 20.0, 5.0, 40.0, 40.0, 40.0, 0.0]
    for reduce in (True, False):
        assert fastest(nbytes, work, 1 / 400, reduce) == 0  # 2.5 ns dense vs >= 20 ns
        assert fastest(nbytes, work, 1.0, reduce) == 1  # 1000 ns dense vs 620 (600) ns
    # A reduction adds its merge to the wire; a plain receive overlaps them.
    nb = np.array([100, 60, 100, 100, 100, 100, 100], dtype=np.int64)
    w = [0.0, 50.0] + [90.0] * 5
    assert fastest(nb, w, 1.0, True) == 0  # 100 vs 110 ns
    assert fastest(nb, w, 1.0, False) == 1  # 100 vs max(60, 50) ns
    # Ties go to the smaller.
    assert fastest(np.array([10, 5, 10, 10, 10, 10, 10]), [0.0, 5.0] + [9.0] * 5, 1.0, True) == 1


def test_auto_on_a_topology_is_the_per_message_fastest() -> None:
    topo = parse_topology("ring:8,bw=50GB/s")
    c = _collective(CollectiveKind.ALLREDUCE, 8)
    prog = synthesize(c, topo, 1 << 16).program
    pl = parse_payload("sparse:density=0.1")
    trace = message_contents(prog)
    auto = message_sizes(prog, pl, 1 << 16, trace=trace, topology=topo)
    fixed = {
        f: message_sizes(
            prog, parse_payload(f"sparse:density=0.1,format={f}"), 1 << 16, trace=trace
        )
        for f in FORMATS
    }
    recv_of = {int(trace.match[r]): int(r) for r in np.flatnonzero(trace.match >= 0)}
    sends = np.flatnonzero(prog.kind == OpKind.SEND)
    for g in sends.tolist():
        rv = recv_of[g]
        reduce = bool(prog.kind[rv] == OpKind.RECV_REDUCE)
        # One hop at 50 GB/s; a reduction's merge follows its transfer, a copy's overlaps.
        wire = [fixed[f].op_bytes[g] / 50.0 for f in FORMATS]
        work = [fixed[f].compute_ns[rv] for f in FORMATS]
        times = [a + b if reduce else max(a, b) for a, b in zip(wire, work, strict=True)]
        assert times[auto.op_format[g]] == pytest.approx(min(times))
        held = fixed[FORMATS[auto.op_format[g]]].compute_ns[rv]
        assert auto.compute_ns[rv] == pytest.approx(held)
        if auto.op_format[g] == 0:
            assert endpoint_ns(pl, "dense", int(auto.op_bytes[g]), 0, reduce, "sw") == 0.0
    # Conversion outweighs the bytes saved on well-filled messages only: they stay dense.
    used = auto.formats_used(prog)
    assert "dense" in used and len(used) >= 2
