"""Gates: a Send's ``after`` hint becomes a 0 µs COMP node before it in the ET, so a simulator
that issues simultaneously ready nodes in any order still issues the send after the one it
names; decoding restores the hint, and the ASTRA-sim models count the gate's 1 ns."""

from __future__ import annotations

import numpy as np
import pytest

from backends.sim import simulate
from chakra_ir import Buffer, Collective, CollectiveKind, Hints, Program, ProgramBuilder, Slice
from chakra_ir.et import EtDecodeError, EtEncodeError, decode_program, encode_program
from chakra_ir.program import OpKind
from chakra_ir.text import format_program, parse_program
from chakra_ir.verify import verify
from tacos import chunks_for, synthesize
from topologies import parse_topology

from .helpers import pb_messages

I, O = Buffer.INPUT, Buffer.OUTPUT
CB = 128 << 10
NET = "bw=50GiB/s,lat=500ns"


def three_sends(after: tuple[int, int] = (1, 2)) -> Program:
    """A broadcast of 3 chunks over 2 ranks: the root sends all three at once; the second names
    the first in its ``after`` hint and the third the second (op ids 1, 2, 3)."""
    c = Collective(CollectiveKind.BROADCAST, 2, 3, root=0)
    b = ProgramBuilder(c, auto_deps=True, name="three-sends")
    b.copy(0, Slice(I, 0, 3), Slice(O, 0, 3))
    b.send(0, 1, Slice(I, 0))
    b.send(0, 1, Slice(I, 1), tag=1, hints=Hints(after=after[0]))
    b.send(0, 1, Slice(I, 2), tag=2, hints=Hints(after=after[1]))
    for i in range(3):
        b.recv(1, 0, Slice(O, i), tag=i)
    return b.build()


def test_the_et_puts_a_gate_before_each_hinted_send() -> None:
    p = three_sends()
    verify(p)
    _, nodes = pb_messages(encode_program(p, CB)[0])
    names = [n.name for n in nodes]
    assert names == ["copy", "send", "gate", "send", "gate", "send"]
    by_id = {n.id: n for n in nodes}
    # The first gate waits for what the first send waits for (its input was copied: nothing
    # here but the copy's reads do not block a send); each send waits for its gate last;
    # the second gate also waits for the first gate.
    g1, s2, g2, s3 = nodes[2], nodes[3], nodes[4], nodes[5]
    assert list(s2.data_deps)[-1] == g1.id and list(s3.data_deps)[-1] == g2.id
    assert list(g1.data_deps) == list(by_id[1].data_deps)
    assert g1.id in g2.data_deps
    assert all(by_id[i].duration_micros == 0 for i in (g1.id, g2.id))


def test_decoding_restores_the_hint() -> None:
    p = three_sends()
    back = decode_program(encode_program(p, CB))
    assert back == p
    assert [int(x) for x in back.after[: back.num_ops]][:4] == [-1, -1, 1, 2]
    text = format_program(p)
    assert "after=1" in text and "after=2" in text
    assert parse_program(text) == p


def test_only_a_send_may_carry_the_hint() -> None:
    p = three_sends()
    after = p.after.copy()
    after[0] = 1  # the copy
    bad = Program.from_columns(
        p.collective,
        p.rank_offsets,
        {
            **{k: getattr(p, k) for k in ("kind", "peer", "src_buf", "src_index")},
            **{k: getattr(p, k) for k in ("dst_buf", "dst_index", "count", "tag")},
            "after": after,
        },
        p.dep_offsets,
        p.deps,
        p.buffer_sizes,
    )
    with pytest.raises(EtEncodeError, match="only a send may carry an after hint"):
        encode_program(bad, CB)


def test_a_gate_without_its_send_is_refused() -> None:
    files = encode_program(three_sends(), CB)
    # Cut rank 0's file after its first gate: the gate is no longer followed by its send.
    meta, nodes = pb_messages(files[0])
    from chakra_ir.et.framing import frame

    cut = frame(meta.SerializeToString()) + b"".join(
        frame(n.SerializeToString()) for n in nodes[:3]
    )
    with pytest.raises(EtDecodeError, match="a gate must be followed by its send"):
        decode_program([cut, files[1]])


def test_astra_models_count_the_gates() -> None:
    # ASTRA-sim runs a 0 µs COMP node for 1 ns: without contention (the unaware model) the
    # second and third sends leave 1 and 2 ns later; collc's own model has no gate.
    t = parse_topology(f"ring:2,{NET}")
    plain = three_sends(after=(-1, -1))
    gated = three_sends()
    one = 2941.0  # trunc(500 + 131072 B / 53.6870912 B/ns)
    assert simulate(plain, t, CB, model="analytical").finish_ns == one
    assert simulate(gated, t, CB, model="analytical").finish_ns == one + 2
    # With the link shared (the aware model) the gates cost nothing: the sends queue anyway.
    assert (
        simulate(gated, t, CB, model="astra-aware").finish_ns
        == simulate(plain, t, CB, model="astra-aware").finish_ns
    )
    assert simulate(gated, t, CB).finish_ns == simulate(plain, t, CB).finish_ns


def test_tacos_gates_the_sends_released_together() -> None:
    # On a switch every rank's first sends share its up link and are ready at 0: all but the
    # first of each rank's up link are gated, each after the one before it.
    t = parse_topology(f"switch:8,{NET}")
    coll = Collective(CollectiveKind.ALLGATHER, 8, chunks_for(CollectiveKind.ALLGATHER, 8, 1))
    syn = synthesize(coll, t, CB)
    p = syn.program
    verify(p)
    gated = np.flatnonzero(p.after != -1)
    assert gated.size > 0
    assert (p.kind[gated] == OpKind.SEND).all()
    rank = p.op_rank()
    named = p.rank_offsets[rank[gated]] + p.after[gated]
    assert (p.kind[named] == OpKind.SEND).all()
    assert (named < gated).all()
    # The ASTRA-sim aware model agrees with the estimate to the ns of its truncation.
    aware = simulate(p, t, CB, model="astra-aware").finish_ns
    assert aware == pytest.approx(syn.estimated_ns, rel=1e-3)
