"""Symmetric synthesis: the orbit form is verified on its own, expands to a program the full
verifier accepts, and simulates in its own form to the full simulator's time exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends.sim import simulate
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et.codec import decode_program, write_et_files
from chakra_ir.program import OpKind
from chakra_ir.symmetric import SymmetricProgram, TranslationGroup
from chakra_ir.symmetric_export import write_symmetric_et_files
from chakra_ir.verify import verify
from chakra_ir.verify_error import VerifyError
from chakra_ir.verify_symmetric import verify_symmetric
from tacos import TacosError
from tacos.bounds import lower_bounds
from tacos.symmetric import match_allgather, symmetry_of, synthesize_symmetric
from tacos.symmetric_timing import replay_symmetric
from topologies import parse_topology
from topologies.cost_model import Completion, CostModel

AG, AR = CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE
CASES = [
    ("ring:8", AG, 2),
    ("ring:6", AR, 1),
    ("uniring:5", AG, 1),
    ("torus:4x4", AG, 1),
    ("torus:3x4x2", AR, 1),
    ("torus:4x4,bw=[50GB/s,25GB/s]", AR, 2),
    ("hypercube:3", AR, 1),
    ("hypercube:4", AG, 3),
    ("fc:5", AG, 2),
    ("fc:4", AR, 1),
    ("stack:ring4*fc3", AR, 1),
]


def _collective(kind: CollectiveKind, n: int, k: int, inplace: bool = False) -> Collective:
    return Collective(kind, n, k * n if kind is AR else k, inplace=inplace)


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize(("spec", "kind", "k"), CASES)
def test_symmetric_matches_full(spec: str, kind: CollectiveKind, k: int, inplace: bool) -> None:
    topo = parse_topology(spec)
    c = _collective(kind, topo.num_npus, k, inplace)
    sp = synthesize_symmetric(c, topo, 1 << 20, seed=3)
    report = verify_symmetric(sp)
    assert report.operations == sp.num_ops
    full = sp.expand()
    assert full.num_ops == sp.num_ops
    verify(full)
    for completion in Completion:
        cost = CostModel(completion=completion)
        mine = replay_symmetric(sp, topo, 1 << 20, cost=cost)
        assert mine == simulate(full, topo, 1 << 20, cost=cost).finish_ns
    assert replay_symmetric(sp, topo, 1 << 20) == sp.planned_ns


@pytest.mark.parametrize("spec", ["torus:4x4x4", "torus:8x8", "hypercube:6", "ring:16"])
def test_quality_near_bound(spec: str) -> None:
    topo = parse_topology(spec)
    n = topo.num_npus
    for kind in (AG, AR):
        c = _collective(kind, n, 1)
        size = 1 << 30
        sp = synthesize_symmetric(c, topo, size // c.size_chunks)
        bound = lower_bounds(kind, topo, size).best[1]
        assert bound <= sp.planned_ns <= 1.07 * bound


@pytest.mark.parametrize(
    "spec",
    [
        "mesh:4x4",
        "torus:4x4,fail=0-1",
        "switch:8",
        "ring:8,linkbw=0-1:10GB/s",
        "fred:8",
    ],
)
def test_not_symmetric(spec: str) -> None:
    topo = parse_topology(spec)
    c = _collective(AG, topo.num_npus, 1)
    assert symmetry_of(topo, c) is None
    with pytest.raises(TacosError, match="not translation-symmetric"):
        synthesize_symmetric(c, topo, 1024)


def test_other_kinds_and_placement_refused() -> None:
    topo = parse_topology("ring:4")
    assert symmetry_of(topo, Collective(CollectiveKind.BROADCAST, 4, 4, root=0)) is None
    assert symmetry_of(topo, Collective(AG, 4, 1, placement=(1, 0, 2, 3))) is None
    with pytest.raises(TacosError, match="without a reverse"):
        synthesize_symmetric(_collective(AR, 5, 1), parse_topology("uniring:5"), 1024)


def test_group_arithmetic() -> None:
    g = TranslationGroup((4, 3))
    x = np.arange(12)
    assert (g.sub(g.add(x, 7), 7) == x).all()
    assert (g.add(x, g.neg(x)) == 0).all()
    assert g.add([3, 3], [1, 4]).tolist() == [0, 7]  # (3,0)+(1,0) = (0,0); (3,0)+(0,1) = (3,1)
    h = TranslationGroup((2, 2, 2))
    assert (h.add(x[:8], 5) == (x[:8] ^ 5)).all()  # the hypercube: addition is XOR


def _good() -> SymmetricProgram:
    topo = parse_topology("torus:3x3")
    return synthesize_symmetric(_collective(AR, 9, 1), topo, 1 << 20)


def _with(sp: SymmetricProgram, **changes: tuple[int, int]) -> SymmetricProgram:
    cols = {k: v.copy() for k, v in sp.columns.items()}
    for name, (j, value) in changes.items():
        cols[name][j] = value
    return SymmetricProgram(sp.collective, sp.group, sp.block, cols, sp.dep_offsets, sp.deps)


def _first(sp: SymmetricProgram, kind: OpKind) -> int:
    return int(np.flatnonzero(sp.columns["kind"] == int(kind))[0])


def test_verify_refuses_wrong_slot() -> None:
    sp = _good()
    j = _first(sp, OpKind.RECV)
    bad = _with(sp, dst_elem=(j, (int(sp.columns["dst_elem"][j]) + 1) % 9))
    with pytest.raises(VerifyError, match=r"semantics|races"):
        verify_symmetric(bad)
    with pytest.raises(VerifyError):
        verify(bad.expand())


def test_verify_refuses_unmatched_send() -> None:
    sp = _good()
    j = _first(sp, OpKind.SEND)
    bad = _with(sp, kind=(j, int(OpKind.COPY)), direction=(j, -1), dst_buf=(j, 1), dst_elem=(j, 0))
    with pytest.raises(VerifyError, match="structure"):
        verify_symmetric(bad)


def test_verify_refuses_deadlock_and_race() -> None:
    sp = _good()
    # the first send waits on a receive whose message that very send brings (by symmetry)
    j = _first(sp, OpKind.SEND)
    cols = sp.columns
    g = int(cols["direction"][j])
    back = int(sp.group.neg(g)[0])
    recvs = np.flatnonzero((cols["kind"] >= int(OpKind.RECV)) & (cols["direction"] == back))
    r = int(recvs[0])
    deps = [
        list(sp.deps[sp.dep_offsets[i] : sp.dep_offsets[i + 1]]) for i in range(sp.template_len)
    ]
    deps[j] = sorted({*deps[j], r})
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in deps])])
    flat = np.array([x for d in deps for x in d], dtype=np.int32)
    cyc = SymmetricProgram(sp.collective, sp.group, sp.block, sp.columns, offsets, flat)
    with pytest.raises(VerifyError, match="progress"):
        verify_symmetric(cyc)
    # dropping every dependency leaves sends reading slots their receives write, unordered
    free = SymmetricProgram(
        sp.collective,
        sp.group,
        sp.block,
        sp.columns,
        np.zeros(sp.template_len + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
    )
    with pytest.raises(VerifyError, match=r"semantics|races"):
        verify_symmetric(free)


@pytest.mark.parametrize(("spec", "kind"), [("torus:3x4", AR), ("hypercube:3", AG), ("fc:4", AR)])
def test_streamed_et_files_equal_the_full_export(
    tmp_path: Path, spec: str, kind: CollectiveKind
) -> None:
    topo = parse_topology(spec)
    sp = synthesize_symmetric(_collective(kind, topo.num_npus, 2), topo, 1 << 20)
    mine = write_symmetric_et_files(sp, tmp_path / "a", "x", 1 << 19)
    full = write_et_files(sp.expand(), tmp_path / "b", "x", 1 << 19)
    assert [p.read_bytes() for p in mine] == [p.read_bytes() for p in full]
    assert decode_program(mine) == sp.expand()


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:4x4x4", "hypercube:5", "ring:9", "fc:6"])
@pytest.mark.parametrize("seed", [0, 1])
def test_replay_keeps_the_plan(spec: str, seed: int) -> None:
    """The timing dependencies keep every send at its planned start: the All-Gather's
    replayed time is its planned makespan."""
    topo = parse_topology(spec)
    c = _collective(AG, topo.num_npus, 2)
    sym = symmetry_of(topo, c)
    assert sym is not None
    plan = match_allgather(sym, topo, 2, 1 << 20, CostModel(), seed)
    sp = synthesize_symmetric(c, topo, 1 << 20, seed=seed)
    assert sp.planned_ns * 1000 == pytest.approx(plan.makespan_ps, abs=0.5)
