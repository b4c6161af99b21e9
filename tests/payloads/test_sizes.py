"""Per-message sizes: a dense payload changes no time of any producer; sparse sizes follow the
contributions each message carries; the endpoint model and the bound."""

from __future__ import annotations

import numpy as np
import pytest

from backends.sim import simulate
from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import OpKind, Program
from chakra_ir.verify import message_contents
from collc.bench import _program
from collc.pipeline import ALGORITHMS, Request
from payloads.bounds import needed_values, sparse_bound
from payloads.describe import parse_payload
from payloads.errors import PayloadError
from payloads.formats import FORMATS, BlockStats, FormatParams, fill_in, format_bytes
from payloads.sizes import message_sizes
from topologies import Topology, parse_topology

SIZE = 1 << 20


def _programs(spec: str, kind: CollectiveKind) -> list[tuple[str, Program, Topology]]:
    topo = parse_topology(spec)
    out = []
    for name in ALGORITHMS:
        prog = _program(name, Request(spec, kind, size_bytes=SIZE), topo, (), {})
        if not isinstance(prog, str):
            out.append((name, prog, topo))
    return out


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("torus:2x2x2", CollectiveKind.ALLREDUCE),
        ("switch:8,innet=yes", CollectiveKind.ALLREDUCE),
        ("mesh:2x3", CollectiveKind.REDUCE_SCATTER),
        ("ring:6", CollectiveKind.ALLGATHER),
        ("fc:4", CollectiveKind.ALLTOALL),
    ],
)
def test_a_dense_payload_changes_no_time(spec: str, kind: CollectiveKind) -> None:
    runs = _programs(spec, kind)
    assert len(runs) >= 3
    dense = parse_payload("dense")
    for name, prog, topo in runs:
        cb = chunk_bytes_for(prog.collective, SIZE)
        a = simulate(prog, topo, cb)
        b = simulate(prog, topo, cb, sizes=message_sizes(prog, dense, cb))
        assert a.finish_ns == b.finish_ns, name
        assert np.array_equal(a.link_busy_ns, b.link_busy_ns), name
        assert a.events == b.events, name


def test_sparse_sizes_follow_the_contributions() -> None:
    """Ring all-reduce: a reduce-scatter message carries k contributions, so it weighs a
    block of density 1-(1-rho)^k in its format; each receive equals its send."""
    (_name, prog, _topo) = next(
        r for r in _programs("ring:8", CollectiveKind.ALLREDUCE) if r[0] == "ring"
    )
    cb = chunk_bytes_for(prog.collective, SIZE)
    payload = parse_payload("sparse:density=0.01,format=coo")
    sizes = message_sizes(prog, payload, cb)
    trace = message_contents(prog)
    E = cb // 2
    params = FormatParams()
    seen_k = set()
    for g in np.flatnonzero(prog.kind == OpKind.SEND).tolist():
        want = 0
        for contents in trace.carried[g]:
            k = sum(m.bit_count() for _, m in contents)
            seen_k.add(k)
            want += format_bytes("coo", BlockStats.expected(1, E, fill_in(0.01, k), params), params)
        assert sizes.op_bytes[g] == want
        rv = int(np.flatnonzero(trace.match == g)[0])
        assert sizes.op_bytes[rv] == want
    assert seen_k == set(range(1, 9))
    assert int(sizes.sent(prog).sum()) < SIZE * 2


def test_auto_is_the_smallest_format_per_message() -> None:
    (_, prog, _) = next(
        r for r in _programs("ring:8", CollectiveKind.ALLREDUCE) if r[0] == "direct"
    )
    cb = chunk_bytes_for(prog.collective, SIZE)
    auto = message_sizes(prog, parse_payload("sparse:density=0.05"), cb)
    fixed = [
        message_sizes(prog, parse_payload(f"sparse:density=0.05,format={f}"), cb) for f in FORMATS
    ]
    best = np.min(np.stack([f.op_bytes for f in fixed]), axis=0)
    assert np.array_equal(auto.op_bytes, best)
    used = auto.formats_used(prog)
    assert len(used) >= 2  # leaves and fully reduced chunks differ


def test_real_tensors_give_exact_unions(tmp_path: object) -> None:
    from pathlib import Path

    rng = np.random.default_rng(5)
    n, elems = 4, 4096
    arrays = [np.where(rng.random(elems) < 0.02, 1.0, 0.0).astype(np.float16) for _ in range(n)]
    path = Path(str(tmp_path)) / "g.npz"
    np.savez(path, *arrays)
    payload = parse_payload(f"tensor:{path},format=coo")
    (_, prog, topo) = next(
        r for r in _programs("ring:4", CollectiveKind.ALLREDUCE) if r[0] == "direct"
    )
    cb = elems * 2 // prog.collective.input_chunks(0)
    sizes = message_sizes(prog, payload, cb)
    trace = message_contents(prog)
    E = elems // prog.collective.input_chunks(0)
    for g in np.flatnonzero(prog.kind == OpKind.SEND).tolist():
        (contents,) = trace.carried[g]
        ((idx, mask),) = contents
        ranks = [r for r in range(n) if mask >> r & 1]
        union = np.zeros(E, dtype=bool)
        for r in ranks:
            union |= arrays[r][idx * E : (idx + 1) * E] != 0
        assert sizes.op_nnz[g] == int(union.sum())
    vals = needed_values(prog, payload, cb)
    every = np.zeros(elems, dtype=bool)
    for r in range(1, n):
        every |= arrays[r] != 0
    assert vals[0] == int(every.sum())
    assert sparse_bound(prog, payload, cb, topo)[1] > 0


def test_tensors_must_fit_the_ranks(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "g.npz"
    np.savez(path, np.ones(8, dtype=np.float16), np.ones(8, dtype=np.float16))
    (_, prog, _) = _programs("ring:4", CollectiveKind.ALLREDUCE)[1]
    with pytest.raises(PayloadError, match="2 tensors for 4 ranks"):
        message_sizes(prog, parse_payload(f"tensor:{path}"), 4)
    np.savez(path, np.ones(8, dtype=np.float16), np.ones(9, dtype=np.float16))
    with pytest.raises(PayloadError, match="one shape"):
        parse_payload(f"tensor:{path}")


def test_hw_converter_is_faster_and_merges_cost_time() -> None:
    (_, prog, topo) = next(
        r for r in _programs("ring:8", CollectiveKind.ALLREDUCE) if r[0] == "ring"
    )
    cb = chunk_bytes_for(prog.collective, SIZE)
    p = parse_payload("sparse:density=0.01")
    sw = message_sizes(prog, p, cb, converter="sw")
    hw = message_sizes(prog, p, cb, converter="hw")
    assert np.array_equal(sw.op_bytes, hw.op_bytes)
    busy = sw.compute_ns > 0
    assert busy.any()
    rr = prog.kind == OpKind.RECV_REDUCE
    # a reducing receive pays the merge under both converters, so hw is less than 4x faster
    assert (hw.compute_ns[busy & rr] > sw.compute_ns[busy & rr] / 4).all()
    assert (hw.compute_ns[busy] < sw.compute_ns[busy]).all()
    t_sw = simulate(prog, topo, cb, sizes=sw).finish_ns
    t_hw = simulate(prog, topo, cb, sizes=hw).finish_ns
    t_free = simulate(
        prog,
        topo,
        cb,
        sizes=message_sizes(
            prog, parse_payload("sparse:density=0.01,convert=1000000TB/s,merge=1000000TB/s"), cb
        ),
    ).finish_ns
    assert t_free < t_hw < t_sw


def test_in_network_flows_carry_dense_data() -> None:
    (_, prog, _topo) = next(
        r
        for r in _programs("switch:8,innet=yes", CollectiveKind.ALLREDUCE)
        if r[0] == "fred-innetwork"
    )
    cb = chunk_bytes_for(prog.collective, SIZE)
    sizes = message_sizes(prog, parse_payload("sparse:density=0.001"), cb)
    flows = prog.kind >= OpKind.FLOW_IN
    assert flows.any()
    assert np.array_equal(sizes.op_bytes[flows], prog.count[flows].astype(np.int64) * cb)
