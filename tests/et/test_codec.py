"""The Program codec: exact round trips, the ASTRA-sim attributes with their exact oneof
members, comm_tag matching, and refusals."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_ir import (
    Buffer,
    Collective,
    CollectiveKind,
    Hints,
    Program,
    ProgramBuilder,
    Recv,
    Send,
    Slice,
)
from chakra_ir.collective import collective_from_dict
from chakra_ir.et import (
    EtDecodeError,
    EtEncodeError,
    comm_tags,
    decode_program,
    decode_rank_files,
    encode_program,
    iter_rank_files,
    layout,
    parse_et,
    program_from_traces,
    read_et_folder,
    write_et_files,
)
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.pbwrite import metadata_message_pb, serialize_nodes_pb
from chakra_ir.et.wire import key, varint
from chakra_ir.program import OpKind

from .helpers import attr, et_stream, pb_messages, programs, unknown_field

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def ring_allreduce(n: int) -> Program:
    c = Collective(CollectiveKind.ALLREDUCE, n, n)
    b = ProgramBuilder(c, auto_deps=True, name="ring")
    for s in range(n - 1):
        for r in range(n):
            b.send(
                r, (r + 1) % n, Slice(I, (r - s) % n), hints=Hints((r, 100 + r, (r + 1) % n), 0, 1)
            )
            b.recv(r, (r - 1) % n, Slice(I, (r - s - 1) % n), reduce=True)
    for s in range(n - 1):
        for r in range(n):
            b.send(r, (r + 1) % n, Slice(I, (r - s + 1) % n))
            b.recv(r, (r - 1) % n, Slice(I, (r - s) % n))
    for r in range(n):
        b.copy(r, Slice(I, 0, n), Slice(O, 0, n))
    return b.build()


def _values(a: pb.AttributeProto) -> tuple[str | None, Any]:
    which = a.WhichOneof("value")
    return which, getattr(a, which) if which else None


# -- round trips -----------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(programs(), st.sampled_from([1, 7, 1024, 2**40]), st.sampled_from([0, 3]))
def test_round_trip(p: Program, chunk_bytes: int, reduce_micros: int) -> None:
    files = encode_program(p, chunk_bytes, reduce_micros=reduce_micros)
    assert len(files) == p.num_ranks
    q = decode_program(files)
    assert q == p
    # In any order, and through the generic reader too.
    assert decode_program(files[::-1]) == p
    assert program_from_traces(parse_et(f, fast=False) for f in files) == p
    for f in files:
        assert list(parse_et(f).nodes()) == list(parse_et(f, fast=False).nodes())


@settings(max_examples=25, deadline=None)
@given(programs(max_ops=20), st.integers(1, 7))
def test_batches_do_not_change_the_bytes(p: Program, batch: int) -> None:
    whole = encode_program(p, 64)
    parts: dict[int, list[bytes]] = defaultdict(list)
    for rank, chunk in iter_rank_files(p, 64, batch_ops=batch):
        parts[rank].append(bytes(chunk))
    assert [b"".join(parts[r]) for r in range(p.num_ranks)] == whole


def test_round_trip_ring_and_files(tmp_path: Path) -> None:
    p = ring_allreduce(5)
    paths = write_et_files(p, tmp_path / "out", "ring", 4096, reduce_micros=2)
    assert [x.name for x in paths] == [f"ring.{r}.et" for r in range(5)]
    assert not [
        x for x in (tmp_path / "out").iterdir() if x.name.startswith(".")
    ]  # no temporaries left
    assert decode_program(paths) == p
    assert program_from_traces(read_et_folder(tmp_path / "out" / "ring")) == p
    assert [x.read_bytes() for x in paths] == encode_program(p, 4096, reduce_micros=2)


# -- what ASTRA-sim reads ---------------------------------------------------------------------


def test_astrasim_attributes_have_the_canonical_members() -> None:
    p = ring_allreduce(4)
    chunk = 1 << 20
    files = encode_program(p, chunk, reduce_micros=3)
    for rank, data in enumerate(files):
        meta, nodes = pb_messages(data)
        assert meta.version == "0.0.4"
        ops = p.ops(rank)
        assert [n.id for n in nodes] == list(range(len(nodes)))
        k = 0
        for i, node in enumerate(nodes):
            attrs = {a.name: _values(a) for a in node.attr}
            assert len(attrs) == len(node.attr)
            assert attrs["is_cpu_op"] == ("bool_val", False)
            assert not node.ctrl_deps
            if node.type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
                op = ops[k]
                assert isinstance(op, Send | Recv)
                count = op.dst.count if isinstance(op, Recv) else op.src.count
                assert attrs["comm_size"] == ("int64_val", count * chunk)
                assert attrs["comm_tag"][0] == "int32_val" and attrs["comm_tag"][1] >= 0
                assert attrs["comm_src"][0] == attrs["comm_dst"][0] == "int32_val"
                mine = ("int32_val", rank)
                assert (
                    attrs["comm_src"] if node.type == pb.COMM_SEND_NODE else attrs["comm_dst"]
                ) == mine
                assert (
                    attrs["comm_dst"] if node.type == pb.COMM_SEND_NODE else attrs["comm_src"]
                ) == ("int32_val", op.peer)
                assert attrs["msg_chunk_cnt"] == ("int32_val", 1)
                assert attrs["total_chunk_cnt"] == ("int32_val", p.collective.size_chunks)
                assert "num_ops" not in attrs and "tensor_size" not in attrs
                k += 1
            else:
                assert node.type == pb.COMP_NODE
                assert (
                    attrs["num_ops"][0] == "int64_val" and attrs["tensor_size"][0] == "uint64_val"
                )
                if node.name == "reduce_received":  # the reduction of the receive before it
                    assert list(node.data_deps) == [i - 1] and nodes[i - 1].name == "recv_reduce"
                    assert node.duration_micros == 3 and attrs["tensor_size"][1] == chunk
                    assert attrs["num_ops"][1] == chunk
                else:
                    assert node.name == "copy" and node.duration_micros == 0
                    assert attrs["tensor_size"][1] == p.collective.num_ranks * chunk
                    k += 1
        assert k == len(ops)


def test_dependants_of_a_reducing_receive_depend_on_its_reduction() -> None:
    p = ring_allreduce(3)
    _, nodes = pb_messages(encode_program(p, 8, reduce_micros=2)[0])
    by_id = {n.id: n for n in nodes}
    for n in nodes:
        for d in n.data_deps:
            if by_id[d].name == "recv_reduce":
                assert n.name == "reduce_received"


def test_a_reduction_of_no_time_has_no_node() -> None:
    # ASTRA-sim runs a 0 us COMP node for 1 ns, so a free reduction is left out: what depends
    # on the reducing receive depends on its receive node.
    p = ring_allreduce(3)
    _, nodes = pb_messages(encode_program(p, 8)[0])
    _, timed = pb_messages(encode_program(p, 8, reduce_micros=2)[0])
    rr = [n for n in nodes if n.name == "recv_reduce"]
    assert rr and not any(n.name == "reduce_received" for n in nodes)
    assert len(timed) == len(nodes) + len(rr)
    assert any(by.id in n.data_deps for by in rr for n in nodes)


def _as_format_1(data: bytes) -> bytes:
    """A file written with 1 us reductions, relabelled as format 1 of 0 us reductions: what
    collc wrote before reductions of no time lost their nodes."""
    meta, nodes = pb_messages(data)
    for a in meta.attr:
        if a.name == "collc_et_format":
            a.int32_val = 1
        if a.name == "collc_reduce_micros":
            a.int64_val = 0
    for n in nodes:
        if n.name == "reduce_received":
            n.duration_micros = 0
    return et_stream(meta, [n.SerializeToString() for n in nodes])


def test_format_1_files_still_decode() -> None:
    p = ring_allreduce(3)
    old = [_as_format_1(f) for f in encode_program(p, 8, reduce_micros=1)]
    assert decode_program(old) == p
    # A format 2 file of 0 us reductions must not carry reduction nodes.
    meta, nodes = pb_messages(old[0])
    for a in meta.attr:
        if a.name == "collc_et_format":
            a.int32_val = 2
    bad = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError, match="reductions take 0 µs and have none"):
        decode_program([bad, *encode_program(p, 8)[1:]])


def _messages(files: list[bytes]) -> list[tuple[str, int, int, int, int, int]]:
    out = []
    for rank, data in enumerate(files):
        _, nodes = pb_messages(data)
        for n in nodes:
            if n.type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
                a = {x.name: _values(x)[1] for x in n.attr}
                side = "send" if n.type == pb.COMM_SEND_NODE else "recv"
                out.append(
                    (side, rank, a["comm_src"], a["comm_dst"], a["comm_tag"], a["comm_size"])
                )
    return out


def _match_by_ir_rule(p: Program) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Pairs ((send rank, op), (recv rank, op)) by the IR's rule: same pair, same tag, k-th."""
    sends: dict[tuple[int, int, int], list[tuple[int, int]]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[tuple[int, int]]] = defaultdict(list)
    for r, i, op in p:
        if isinstance(op, Send):
            sends[(r, op.peer, op.tag)].append((r, i))
        elif isinstance(op, Recv):
            recvs[(op.peer, r, op.tag)].append((r, i))
    return [(s, r) for k in sends for s, r in zip(sends[k], recvs.get(k, []), strict=False)]


@settings(max_examples=80, deadline=None)
@given(programs(max_ops=15))
def test_comm_tags_unique_per_pair_and_equal_on_matching_ends(p: Program) -> None:
    tags = comm_tags(p)
    kind = p.kind
    rank = p.op_rank()
    seen: dict[tuple[str, int, int], Counter[int]] = defaultdict(Counter)
    for g in range(p.num_ops):
        if kind[g] == OpKind.SEND:
            seen[("send", int(rank[g]), int(p.peer[g]))][int(tags[g])] += 1
        elif kind[g] in (OpKind.RECV, OpKind.RECV_REDUCE):
            seen[("recv", int(p.peer[g]), int(rank[g]))][int(tags[g])] += 1
        else:
            assert tags[g] == -1
    for counter in seen.values():
        assert all(c == 1 for c in counter.values()), counter  # unique per ordered pair and side
    for (rs, i_s), (rr, i_r) in _match_by_ir_rule(p):
        gs, gr = p.global_index(rs, i_s), p.global_index(rr, i_r)
        assert tags[gs] == tags[gr] >= 0


def test_comm_tag_matching_with_interleaved_tags() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2, 3)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(I, 0), tag=5)
    b.send(0, 1, Slice(I, 1), tag=2)
    b.send(0, 1, Slice(I, 2), tag=5)
    b.recv(1, 0, Slice(O, 1), tag=2)  # matches the second send
    b.recv(1, 0, Slice(O, 0), tag=5)
    b.recv(1, 0, Slice(O, 2), tag=5)
    b.copy(0, Slice(I, 0, 3), Slice(O, 0, 3))
    p = b.build()
    msgs = _messages(encode_program(p, 16))
    send_tags = [m[4] for m in msgs if m[0] == "send"]
    recv_tags = [m[4] for m in msgs if m[0] == "recv"]
    assert len(set(send_tags)) == 3
    assert recv_tags == [send_tags[1], send_tags[0], send_tags[2]]
    # Every message has a partner with equal (src, dst, tag, size): ASTRA-sim's matching key.
    keys = Counter((m[2], m[3], m[4], m[5]) for m in msgs)
    assert set(keys.values()) == {2}


# -- metadata and layout details -------------------------------------------------------------


def test_metadata_carries_the_program() -> None:
    p = ring_allreduce(3)
    meta, _ = pb_messages(encode_program(p, 512, reduce_micros=1)[2])
    a = {x.name: _values(x) for x in meta.attr}
    assert a["collc_rank"] == ("int32_val", 2)
    assert a["collc_num_ranks"] == ("int32_val", 3)
    assert a["collc_chunk_bytes"] == ("int64_val", 512)
    assert a["collc_reduce_micros"] == ("int64_val", 1)
    assert a["collc_program"] == ("string_val", "ring")
    assert collective_from_dict(json.loads(a["collc_collective"][1])) == p.collective
    assert "collc_custom_input" not in a
    assert list(a["collc_buffer_sizes"][1].values) == [int(x) for x in p.buffer_sizes[2]]


def test_rank_without_operations_gets_an_idle_root() -> None:
    c = Collective(CollectiveKind.BROADCAST, 3, 1, root=0)
    b = ProgramBuilder(c)
    b.send(0, 2, Slice(I, 0))
    b.recv(2, 0, Slice(O, 0))
    p = b.build()
    files = encode_program(p, 10)
    _, nodes = pb_messages(files[1])
    assert len(nodes) == 1 and nodes[0].type == pb.COMP_NODE and nodes[0].name == "idle"
    assert decode_program(files) == p


def test_hints_and_defaults_are_attributes() -> None:
    p = ring_allreduce(3)
    t = parse_et(encode_program(p, 8)[0])
    first = t.node(0)
    assert first.attrs["collc_route"] == [0, 100, 1]
    assert first.attrs["collc_channel"] == 0 and first.attrs["collc_threadblock"] == 1
    assert "collc_dst_buf" not in first.attrs  # a send's destination is the default -1
    recv = t.node(1)
    assert "collc_src_buf" not in recv.attrs and "collc_route" not in recv.attrs


# -- refusals --------------------------------------------------------------------------------


def test_encode_refusals() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2, 1)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(I, 0, 0))
    with pytest.raises(EtEncodeError, match="at least 1 byte"):
        encode_program(b.build(), 8)
    p = ring_allreduce(2)
    with pytest.raises(EtEncodeError, match="chunk bytes"):
        encode_program(p, 0)
    with pytest.raises(EtEncodeError, match="reduction time"):
        encode_program(p, 8, reduce_micros=-1)
    bad = Program.from_columns(
        c,
        [0, 1, 1],
        {
            "kind": [0],
            "peer": [1],
            "src_buf": [0],
            "src_index": [0],
            "dst_buf": [-1],
            "dst_index": [-1],
            "count": [1],
        },
        [0, 1],
        [3],
        [[1, 2, 0], [1, 2, 0]],
    )
    with pytest.raises(EtEncodeError, match="depends on op 3"):
        encode_program(bad, 8)


def test_decode_refusals(tmp_path: Path) -> None:
    p = ring_allreduce(3)
    files = encode_program(p, 8)
    with pytest.raises(EtDecodeError, match="rank 2 is missing"):
        decode_program(files[:2])
    with pytest.raises(EtDecodeError, match="rank 1 also comes from"):
        decode_program([files[0], files[1], files[1]])
    other = encode_program(ring_allreduce(3), 16)
    with pytest.raises(EtDecodeError, match="chunk size differs"):
        decode_program([files[0], files[1], other[2]])
    foreign = et_stream(
        pb.GlobalMetadata(version="0.0.4", attr=[attr("schema", "string_val", "x")]),
        [pb.Node(id=0, type=pb.COMP_NODE).SerializeToString()],
    )
    with pytest.raises(EtDecodeError, match="no collc attributes") as info:
        decode_program([foreign])
    assert info.value.file == "<source 0>" and info.value.offset == 0
    path = tmp_path / "x.0.et"
    path.write_bytes(foreign)
    with pytest.raises(EtDecodeError, match="no collc attributes") as info:
        decode_program([path])
    assert info.value.file == str(path)
    assert str(path) in str(info.value)


def test_decode_refuses_a_broken_reduction_pair() -> None:
    p = ring_allreduce(2)
    meta, nodes = pb_messages(encode_program(p, 8, reduce_micros=1)[0])
    comp = next(i for i, n in enumerate(nodes) if n.name == "reduce_received")
    del nodes[comp].data_deps[:]
    blob = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError, match="must be followed by its reduction node"):
        decode_program([blob, encode_program(p, 8, reduce_micros=1)[1]])
    meta, nodes = pb_messages(encode_program(p, 8)[0])
    del nodes[0].attr[:]
    with pytest.raises(EtDecodeError, match="lacks the collc_op"):
        decode_program(
            [et_stream(meta, [n.SerializeToString() for n in nodes]), encode_program(p, 8)[1]]
        )


def test_programs_with_no_ranks_of_ops_still_round_trip() -> None:
    c = Collective(CollectiveKind.ALLREDUCE, 2, 1)
    p = ProgramBuilder(c).build()
    files = encode_program(p, 4)
    assert decode_program(files) == p
    assert np.array_equal(decode_program(files).buffer_sizes, p.buffer_sizes)


# -- against the generated bindings ----------------------------------------------------------


def reference_encode(p: Program, chunk_bytes: int, reduce_micros: int) -> list[bytes]:
    """The codec's files, every node serialized by the generated bindings."""
    lay = layout.ProgramLayout.of(p, chunk_bytes, reduce_micros)
    out = []
    for r in range(p.num_ranks):
        meta = metadata_message_pb(p, r, chunk_bytes, reduce_micros)
        g0, g1 = int(p.rank_offsets[r]), int(p.rank_offsets[r + 1])
        table = layout.node_table(lay, g0, g1)[0] if g1 > g0 else layout.idle_table(lay, r)
        (nodes,) = serialize_nodes_pb(table)
        out.append(meta + nodes)
    return out


def test_metadata_is_what_the_generated_bindings_write_and_refuse() -> None:
    # Written by hand (no protobuf at start-up): the same bytes, and the same errors.
    p = ring_allreduce(3)
    for program in (p, dataclasses.replace(p, name=""), dataclasses.replace(p, name="é✓")):
        for args in ((0, 1, 0), (2, 1 << 40, (1 << 63) - 1), (1, 8, 0)):
            assert layout.metadata_message(program, *args) == metadata_message_pb(program, *args)
    for args, error in (
        ((0, 1 << 63, 0), ValueError),
        ((0, 8, -(1 << 63) - 1), ValueError),
        ((0, 8.0, 0), TypeError),
    ):
        with pytest.raises(error) as ours:
            layout.metadata_message(p, *args)  # type: ignore[arg-type]
        with pytest.raises(error) as theirs:
            metadata_message_pb(p, *args)  # type: ignore[arg-type]
        assert str(ours.value) == str(theirs.value)
    bad = dataclasses.replace(p, name="\ud800")
    with pytest.raises(UnicodeEncodeError):
        layout.metadata_message(bad, 0, 8, 0)
    with pytest.raises(UnicodeEncodeError):
        metadata_message_pb(bad, 0, 8, 0)


@settings(max_examples=60, deadline=None)
@given(programs(), st.sampled_from([1, 3000]))
def test_encoding_is_what_the_generated_bindings_write(p: Program, chunk_bytes: int) -> None:
    assert encode_program(p, chunk_bytes, reduce_micros=2) == reference_encode(p, chunk_bytes, 2)


def _rewritten(data: bytes, rng: random.Random) -> bytes:
    """The same ET re-serialized with fields in shuffled order, unknown fields added and the
    dependencies unpacked: what another protobuf writer may legally produce."""
    meta, nodes = pb_messages(data)
    bodies = []
    for n in nodes:
        parts = [
            pb.Node(id=n.id).SerializeToString(),
            pb.Node(name=n.name, type=n.type).SerializeToString(),
        ]
        parts.append(b"".join(key(5, 0) + varint(d) for d in n.data_deps))  # unpacked
        parts += [pb.Node(duration_micros=n.duration_micros).SerializeToString()]
        parts += [pb.Node(attr=[a]).SerializeToString() for a in n.attr]
        parts.append(unknown_field(11, b"\x08\x01"))
        head, attrs = parts[: -len(n.attr) - 1], parts[-len(n.attr) - 1 :]
        rng.shuffle(head)
        bodies.append(b"".join(attrs + head))  # attributes first, keeping their order
    return et_stream(meta, bodies)


@settings(max_examples=30, deadline=None)
@given(programs(), st.randoms(use_true_random=False))
def test_files_rewritten_by_another_writer_decode(p: Program, rng: random.Random) -> None:
    files = [_rewritten(f, rng) for f in encode_program(p, 32)]
    assert decode_program(files) == p


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("collc_src_buf", 1000, "collc_src_buf 1000 names no buffer"),
        ("collc_src_buf", -1, "collc_src_buf -1 names no buffer"),
        ("collc_src_index", 1 << 40, f"collc_src_index {1 << 40} is outside int32"),
    ],
)
def test_decode_refuses_values_outside_the_columns(name: str, value: int, message: str) -> None:
    p = ring_allreduce(2)
    files = encode_program(p, 8)
    meta, nodes = pb_messages(files[0])
    for a in nodes[0].attr:
        if a.name == name:
            if a.WhichOneof("value") == "int32_val" and abs(value) >= 1 << 31:
                a.int64_val = value
            else:
                a.int32_val = value
    blob = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError, match=message) as info:
        decode_program([blob, files[1]])
    assert info.value.offset == len(layout.metadata_message(p, 0, 8, 0))


def test_decode_refuses_message_sizes_that_disagree_with_the_chunk_size() -> None:
    p = ring_allreduce(2)
    files = encode_program(p, 8)
    meta, nodes = pb_messages(files[0])
    sends = [n for n in nodes if any(a.name == "comm_size" for a in n.attr)]
    for a in sends[0].attr:
        if a.name == "comm_size":
            a.int64_val += 1
    blob = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError, match="comm_size 9 is not its 1 slots x collc_chunk_bytes 8"):
        decode_program([blob, files[1]])


def test_rank_files_must_hold_the_rank_of_their_name(tmp_path: Path) -> None:
    files = encode_program(ring_allreduce(3), 8)
    paths = [tmp_path / f"r.{r}.et" for r in range(3)]
    for path, blob in zip(paths, [files[0], files[2], files[1]], strict=True):
        path.write_bytes(blob)
    assert decode_program(paths) == ring_allreduce(3)  # any order is fine here
    with pytest.raises(EtDecodeError, match="holds rank 2, but its name makes it rank 1") as info:
        decode_rank_files(paths)
    assert info.value.file == str(paths[1])
