"""The sparse all-reduce producers: verified programs whose messages carry what SparCML and
Ok-Topk send, and Ok-Topk's volume between its two bounds."""

from __future__ import annotations

import numpy as np
import pytest

from backends.sim import simulate
from baselines import ALGORITHMS, BaselineError
from chakra_ir import Collective, CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import OpKind
from chakra_ir.verify import message_contents, verify
from payloads.describe import parse_payload
from payloads.sizes import message_sizes
from topologies import parse_topology


def _program(name: str, n: int, inplace: bool = False):  # type: ignore[no-untyped-def]
    b = ALGORITHMS[name]
    cf = b.chunks_per_rank(CollectiveKind.ALLREDUCE, n)
    c = Collective(CollectiveKind.ALLREDUCE, n, cf, inplace=inplace)
    return b.generate(c, parse_topology(f"switch:{n}"))


@pytest.mark.parametrize("name", ["sparcml-rd", "sparcml-split", "oktopk"])
@pytest.mark.parametrize("n", [2, 3, 4, 6, 8, 13, 16])
@pytest.mark.parametrize("inplace", [False, True])
def test_programs_verify(name: str, n: int, inplace: bool) -> None:
    verify(_program(name, n, inplace))


def test_kinds() -> None:
    for name in ("sparcml-rd", "sparcml-split", "oktopk"):
        assert ALGORITHMS[name].supports(CollectiveKind.ALLREDUCE, 6)
        assert not ALGORITHMS[name].supports(CollectiveKind.ALLGATHER, 8)
    with pytest.raises(BaselineError, match="does not implement"):
        ALGORITHMS["sparcml-rd"].chunks_per_rank(CollectiveKind.BROADCAST, 4)


def test_folded_recursive_doubling() -> None:
    # 6 ranks: 2 extras fold into 0 and 1 (1 contribution), the core of 4 doubles twice
    # (0 and 1 then send 2, then 4 contributions; 2 and 3 send 1, then 2), the result 6
    assert sorted(set(_contributions("sparcml-rd", 6))) == [1, 2, 4, 6]


def _contributions(name: str, n: int) -> list[int]:
    p = _program(name, n)
    t = message_contents(p)
    return [
        sum(m.bit_count() for c in t.carried[g] for _, m in c) // int(p.count[g])
        for g in np.flatnonzero(p.kind == OpKind.SEND).tolist()
    ]


def test_messages_carry_what_the_algorithms_send() -> None:
    # recursive doubling: step s carries 2^s contributions, one message per rank and step
    assert sorted(set(_contributions("sparcml-rd", 8))) == [1, 2, 4]
    # split all-gather: single contributions in the reduce-scatter, complete sums after it
    assert sorted(set(_contributions("sparcml-split", 8))) == [1, 8]


def test_oktopk_volume_lies_between_its_bounds() -> None:
    n, size = 16, 1 << 24
    p = _program("oktopk", n)
    cb = chunk_bytes_for(p.collective, size)
    rho = 0.01
    k = size // 2 * rho  # non-zeros per rank
    lo, hi = 2 * k * (n - 1) / n, 6 * k * (n - 1) / n
    payload = parse_payload(f"sparse:density={rho}").with_topk()
    sizes = message_sizes(p, payload, cb)
    values = sizes.sent_nnz(p)
    wire = sizes.sent(p) / payload.value_bytes  # wire bytes in values, indices included
    assert (values >= lo * 0.99).all() and (values <= hi).all()
    assert (wire >= lo).all() and (wire <= hi).all()
    # without the top-k re-selection the all-gather would move the fill-in
    plain = message_sizes(p, parse_payload(f"sparse:density={rho}"), cb).sent_nnz(p)
    assert (plain > hi).all()


def test_oktopk_on_real_tensors(tmp_path: object) -> None:
    from pathlib import Path

    n, elems = 8, 1 << 16
    rng = np.random.default_rng(2)
    arrays = [
        np.where(rng.random(elems) < 0.01, rng.standard_normal(elems), 0).astype(np.float16)
        for _ in range(n)
    ]
    path = Path(str(tmp_path)) / "g.npz"
    np.savez(path, *arrays)
    p = _program("oktopk", n)
    payload = parse_payload(f"tensor:{path}").with_topk()
    cb = elems * 2 // p.collective.input_chunks(0)
    values = message_sizes(p, payload, cb).sent_nnz(p)
    k = np.mean([np.count_nonzero(a) for a in arrays])
    assert (values >= 2 * k * (n - 1) / n * 0.8).all()
    assert (values <= 6 * k * (n - 1) / n).all()


def test_sparse_producers_beat_dense_under_a_sparse_payload() -> None:
    topo = parse_topology("switch:16")
    times = {}
    for name in ("ring", "sparcml-rd", "sparcml-split", "oktopk"):
        p = _program(name, 16)
        cb = chunk_bytes_for(p.collective, 1 << 26)
        payload = parse_payload("sparse:density=0.001")
        if ALGORITHMS[name].topk:
            payload = payload.with_topk()
        dense = simulate(p, topo, cb).finish_ns
        times[name] = simulate(p, topo, cb, sizes=message_sizes(p, payload, cb)).finish_ns
        assert times[name] < dense, name
    assert times["oktopk"] < times["sparcml-split"]
