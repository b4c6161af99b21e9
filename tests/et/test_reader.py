"""Node-level reading: the fast reader agrees with the generated bindings on any ET, corrupted
input gives EtDecodeError naming the file and byte offset, and foreign ETs load."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_ir.et import (
    EtDecodeError,
    decode_program,
    et_rank_files,
    parse_et,
    read_et_file,
    read_et_folder,
)
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.trace import EtTrace
from chakra_ir.et.wire import key, varint

from .helpers import attr, et_stream, frame, unknown_field

META = pb.GlobalMetadata(version="0.0.4")

_I32 = st.integers(-(2**31), 2**31 - 1)
_I64 = st.integers(-(2**63), 2**63 - 1)
_U32 = st.integers(0, 2**32 - 1)
_U64 = st.integers(0, 2**64 - 1)
_F32 = st.floats(width=32, allow_nan=False)
_F64 = st.floats(allow_nan=False)
_VALUES: dict[str, st.SearchStrategy[object]] = {
    "double": _F64,
    "float": _F32,
    "int32": _I32,
    "int64": _I64,
    "uint32": _U32,
    "uint64": _U64,
    "sint32": _I32,
    "sint64": _I64,
    "fixed32": _U32,
    "fixed64": _U64,
    "sfixed32": _I32,
    "sfixed64": _I64,
    "bool": st.booleans(),
    "string": st.text(max_size=5),
    "bytes": st.binary(max_size=5),
}


@st.composite
def attributes(draw: st.DrawFn) -> pb.AttributeProto:
    scalar = draw(st.sampled_from(sorted(_VALUES)))
    name = draw(st.sampled_from(["comm_size", "comm_src", "a", "", "é" * 3, "x" * 70]))
    a = pb.AttributeProto(name=name)
    if draw(st.booleans()):
        a.doc_string = draw(st.text(max_size=3))
    kind = draw(st.sampled_from(["val", "list", "unset"]))
    if kind == "val":
        setattr(a, f"{scalar}_val", draw(_VALUES[scalar]))
    elif kind == "list":
        getattr(a, f"{scalar}_list").values.extend(draw(st.lists(_VALUES[scalar], max_size=3)))
        if not getattr(a, f"{scalar}_list").values:
            getattr(a, f"{scalar}_list").SetInParent()
    return a


@st.composite
def node_bodies(draw: st.DrawFn, node_id: int) -> bytes:
    """A Node message, possibly as partial messages in shuffled order, with unknown fields."""
    parts: list[bytes] = []
    if node_id:
        parts.append(pb.Node(id=node_id).SerializeToString())
    if draw(st.booleans()):
        parts.append(pb.Node(name=draw(st.text(max_size=6))).SerializeToString())
    parts.append(pb.Node(type=draw(st.integers(0, 12))).SerializeToString())  # type: ignore[arg-type]
    for field in ("data_deps", "ctrl_deps"):
        deps = draw(st.lists(st.integers(0, node_id), max_size=3)) if node_id else []
        if deps:
            n = pb.Node()
            getattr(n, field).extend(deps)
            parts.append(n.SerializeToString())
    for field in ("start_time_micros", "duration_micros"):
        if draw(st.booleans()):
            n = pb.Node()
            setattr(n, field, draw(st.integers(0, 2**63 - 1)))
            parts.append(n.SerializeToString())
    if draw(st.integers(0, 4)) == 0:
        parts.append(
            pb.Node(inputs=pb.IOInfo(values="v", shapes="[[1]]", types="t")).SerializeToString()
        )
    for i, a in enumerate(draw(st.lists(attributes(), max_size=5))):
        if draw(st.integers(0, 5)):  # mostly distinct names; sometimes a repeated one
            a.name = f"{a.name}{i}"
        parts.append(pb.Node(attr=[a]).SerializeToString())
    if draw(st.integers(0, 3)) == 0:
        parts.append(unknown_field(draw(st.sampled_from([11, 20, 300])), b"\x08\x01"))
    if draw(st.booleans()):
        parts = draw(st.permutations(parts))
    return b"".join(parts)


def _same(fast: EtTrace, generic: EtTrace) -> None:
    assert fast.version == generic.version and fast.metadata == generic.metadata
    assert list(fast.nodes()) == list(generic.nodes())
    for name, col in generic.attrs.items():
        assert name in fast.attrs
        v1, p1 = fast.int_attr(name)
        v2, p2 = col.int_values(len(generic))
        assert np.array_equal(p1, p2) and np.array_equal(v1, v2)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fast_reader_agrees_with_generated_bindings(data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 8))
    bodies = [
        data.draw(node_bodies(i)) or pb.Node(type=pb.COMP_NODE).SerializeToString()
        for i in range(n)
    ]
    blob = et_stream(META, bodies)
    fast = parse_et(blob, "f.et")
    generic = parse_et(blob, "f.et", fast=False)
    assert generic.decoder == "generic"
    _same(fast, generic)
    for node, body in zip(generic.nodes(), bodies, strict=True):
        ref = pb.Node.FromString(body)
        assert node.id == ref.id and node.name == ref.name and node.type == ref.type
        assert node.data_deps == tuple(ref.data_deps) and node.ctrl_deps == tuple(ref.ctrl_deps)


def _node(
    i: int,
    *attrs: pb.AttributeProto,
    data_deps: tuple[int, ...] = (),
    ctrl_deps: tuple[int, ...] = (),
) -> bytes:
    node = pb.Node(id=i, name=f"n{i}", type=pb.COMP_NODE, attr=list(attrs))
    node.data_deps.extend(data_deps)
    node.ctrl_deps.extend(ctrl_deps)
    return node.SerializeToString()


def test_unusual_encodings_fall_back_and_agree() -> None:
    plain = _node(0, attr("comm_size", "int64_val", 5))
    reversed_fields = (
        pb.Node(attr=[attr("comm_tag", "int32_val", -7)]).SerializeToString()
        + pb.Node(id=1, type=pb.COMM_SEND_NODE).SerializeToString()
    )
    unpacked = (
        pb.Node(id=2, type=pb.COMP_NODE).SerializeToString()
        + key(5, 0)
        + varint(0)
        + key(5, 0)
        + varint(1)
    )
    repeated_id = (
        pb.Node(id=9).SerializeToString() + pb.Node(id=3, name="again").SerializeToString()
    )
    dup_attr = _node(4, attr("x", "int32_val", 1), attr("x", "int32_val", 2))
    unknown_in_attr = (
        pb.Node(id=5).SerializeToString()
        + key(10, 2)
        + varint(len(b := attr("y", "int64_val", 3).SerializeToString() + unknown_field(40, b"zz")))
        + b
    )
    blob = et_stream(
        META, [plain, reversed_fields, unpacked, repeated_id, dup_attr, unknown_in_attr]
    )
    fast = parse_et(blob)
    generic = parse_et(blob, fast=False)
    _same(fast, generic)
    assert fast.decoder == "generic"  # unpacked deps and repeated fields: left to the bindings
    nodes = list(fast.nodes())
    assert nodes[1].id == 1 and nodes[1].attrs == {"comm_tag": -7}
    assert nodes[2].data_deps == (0, 1)
    assert nodes[3].id == 3 and nodes[3].name == "again"
    assert nodes[4].attrs == {"x": 2}
    assert nodes[5].attrs == {"y": 3}
    # Without the unpacked deps, repeated id and repeated name the fast path keeps the file.
    blob2 = et_stream(META, [plain, reversed_fields, unknown_in_attr])
    assert parse_et(blob2).decoder == "fast"
    _same(parse_et(blob2), parse_et(blob2, fast=False))


def test_attribute_values_of_every_member() -> None:
    attrs = [
        attr("d", "double_val", 1.5),
        attr("f", "float_val", 0.25),
        attr("i32", "int32_val", -5),
        attr("i64", "int64_val", -(2**40)),
        attr("u32", "uint32_val", 2**32 - 1),
        attr("u64", "uint64_val", 2**64 - 1),
        attr("s32", "sint32_val", -3),
        attr("s64", "sint64_val", -(2**50)),
        attr("fx32", "fixed32_val", 7),
        attr("fx64", "fixed64_val", 2**63 + 1),
        attr("sf32", "sfixed32_val", -8),
        attr("sf64", "sfixed64_val", -9),
        attr("b", "bool_val", True),
        attr("s", "string_val", "héllo"),
        attr("by", "bytes_val", b"\x00\xff"),
        attr("li", "int64_list", [1, -2, 3]),
        attr("lb", "bool_list", [True, False]),
        attr("ls", "string_list", ["a", "b"]),
        attr("ld", "double_list", [0.5]),
        attr("lu", "uint64_list", [2**64 - 1]),
        attr("le", "int32_list", []),
        pb.AttributeProto(name="unset"),
    ]
    blob = et_stream(META, [_node(0, *attrs)])
    t = parse_et(blob)
    assert t.decoder == "fast"
    _same(t, parse_et(blob, fast=False))
    got = t.node(0).attrs
    assert got == {
        "d": 1.5,
        "f": 0.25,
        "i32": -5,
        "i64": -(2**40),
        "u32": 2**32 - 1,
        "u64": 2**64 - 1,
        "s32": -3,
        "s64": -(2**50),
        "fx32": 7,
        "fx64": 2**63 + 1,
        "sf32": -8,
        "sf64": -9,
        "b": True,
        "s": "héllo",
        "by": b"\x00\xff",
        "li": [1, -2, 3],
        "lb": [True, False],
        "ls": ["a", "b"],
        "ld": [0.5],
        "lu": [2**64 - 1],
        "le": [],
        "unset": None,
    }
    assert type(got["b"]) is bool
    values, present = t.int_attr("i32")
    assert present.tolist() == [True] and values.tolist() == [-5]
    assert t.int_attr("s")[1].tolist() == [False]  # a string is no integer
    assert t.int_attr("u64")[1].tolist() == [False]  # beyond int64


# -- corrupted input -------------------------------------------------------------------------


def _err(blob: bytes, tmp_path: Path, name: str = "bad.et") -> EtDecodeError:
    path = tmp_path / name
    path.write_bytes(blob)
    with pytest.raises(EtDecodeError) as info:
        read_et_file(path)
    err = info.value
    assert err.file.startswith(str(path)) and str(path) in str(err)
    return err


GOOD = et_stream(META, [_node(0), _node(1, data_deps=(0,))])


def test_empty_file(tmp_path: Path) -> None:
    err = _err(b"", tmp_path)
    assert "empty file" in err.message and err.offset == 0


def test_truncated_varint(tmp_path: Path) -> None:
    err = _err(GOOD + b"\x80\x80", tmp_path)
    assert "truncated length varint" in err.message and err.offset == len(GOOD)
    assert f"(byte {len(GOOD)})" in str(err)


def test_length_past_end_of_file(tmp_path: Path) -> None:
    err = _err(GOOD[:-3], tmp_path)
    assert "truncated file" in err.message
    assert err.offset == len(et_stream(META, [_node(0)]))


def test_message_that_does_not_parse(tmp_path: Path) -> None:
    bad = b"\x0a\x05ab"  # a name field claiming 5 bytes in a 4-byte message
    err = _err(GOOD + frame(bad), tmp_path)
    assert "node message 2 does not parse" in err.message and err.offset == len(GOOD)


def test_garbage_bytes(tmp_path: Path) -> None:
    err = _err(bytes(range(255, 155, -1)), tmp_path)
    assert err.offset >= 0


def test_long_length_varint(tmp_path: Path) -> None:
    err = _err(b"\xff" * 6 + b"\x01", tmp_path)
    assert "longer than 5 bytes" in err.message and err.offset == 0


def test_zero_length_message(tmp_path: Path) -> None:
    err = _err(GOOD + b"\x00", tmp_path)
    assert "length 0" in err.message and err.offset == len(GOOD)
    err = _err(b"\x00", tmp_path)
    assert err.offset == 0


def test_missing_global_metadata(tmp_path: Path) -> None:
    err = _err(frame(_node(3)) + frame(_node(4)), tmp_path)
    assert "missing GlobalMetadata" in err.message and err.offset == 0


def test_dependency_on_missing_node(tmp_path: Path) -> None:
    blob = et_stream(META, [_node(0), _node(1, data_deps=(0, 7))])
    err = _err(blob, tmp_path)
    assert "dependency on node 7" in err.message and "not in the file" in err.message
    assert err.offset == len(et_stream(META, [_node(0)]))
    blob = et_stream(META, [_node(0, ctrl_deps=(5,))])
    assert "ctrl dependency on node 5" in _err(blob, tmp_path).message


def test_duplicate_node_id(tmp_path: Path) -> None:
    err = _err(et_stream(META, [_node(0), _node(0)]), tmp_path)
    assert "appears twice" in err.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EtDecodeError, match="cannot read"):
        read_et_file(tmp_path / "nope.et")


def test_gzip_is_decompressed(tmp_path: Path) -> None:
    path = tmp_path / "z.0.et"
    path.write_bytes(gzip.compress(GOOD))
    t = read_et_file(path)
    assert len(t) == 2 and "gunzipped" in t.file
    path.write_bytes(gzip.compress(GOOD)[:-10])
    with pytest.raises(EtDecodeError, match="corrupt gzip"):
        read_et_file(path)
    path.write_bytes(gzip.compress(GOOD[:-1]))
    with pytest.raises(EtDecodeError, match=r"gunzipped\] \(byte"):
        read_et_file(path)
    # Several members read as one stream, as gzip itself does; zero padding may follow.
    half = len(GOOD) // 2
    path.write_bytes(gzip.compress(GOOD[:half]) + gzip.compress(GOOD[half:]) + bytes(8))
    assert len(read_et_file(path)) == 2
    path.write_bytes(gzip.compress(GOOD) + b"junk")
    with pytest.raises(EtDecodeError, match="not gzip after the last member"):
        read_et_file(path)


def test_files_and_gzip_streams_beyond_the_limit_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong path or a gzip bomb ends in one line, reading no more than the limit."""
    monkeypatch.setenv("COLLC_MAX_ET_BYTES", str(len(GOOD)))
    path = tmp_path / "z.0.et"
    path.write_bytes(GOOD)
    assert len(read_et_file(path)) == 2  # exactly at the limit
    path.write_bytes(GOOD + bytes(1))
    with pytest.raises(EtDecodeError, match=r"the file holds more than \d+ bytes") as e:
        read_et_file(path)
    assert "COLLC_MAX_ET_BYTES" in e.value.message and "\n" not in str(e.value)
    monkeypatch.setenv("COLLC_MAX_ET_BYTES", "4096")
    path.write_bytes(gzip.compress(bytes(1 << 20)))  # 1 MiB of zeros in about 1 KiB
    assert path.stat().st_size < 4096
    with pytest.raises(EtDecodeError, match="unpacked, the gzip file holds more than"):
        read_et_file(path)


# -- foreign ETs -----------------------------------------------------------------------------


def msccl_converter_example(tmp_path: Path, npus: int = 8) -> Path:
    """Like the MSCCL converter's shipped example: no version, attrs schema/input_file/
    collective, per threadblock a SEND -> RECV -> COMP chain linked by data_deps, comm_size
    131072, COMP 7 µs, and comm_type=5 on SEND nodes."""
    meta = pb.GlobalMetadata(
        attr=[
            attr("schema", "string_val", "1.0.2-chakra.0.0.4"),
            attr("input_file", "string_val", "allreduce_ring.xml"),
            attr("collective", "string_val", "allreduce"),
        ]
    )
    for rank in range(npus):
        nodes = []
        nid = 0
        prev: list[int] = []
        for step in range(3):
            send = pb.Node(id=nid, name=f"send_{step}", type=pb.COMM_SEND_NODE, data_deps=prev)
            send.attr.extend(
                [
                    attr("is_cpu_op", "bool_val", False),
                    attr("comm_type", "int64_val", 5),
                    attr("comm_dst", "int32_val", (rank + 1) % npus),
                    attr("comm_size", "int64_val", 131072),
                    attr("comm_tag", "int32_val", step),
                ]
            )
            recv = pb.Node(id=nid + 1, name=f"recv_{step}", type=pb.COMM_RECV_NODE, data_deps=[nid])
            recv.attr.extend(
                [
                    attr("is_cpu_op", "bool_val", False),
                    attr("comm_src", "int32_val", (rank - 1) % npus),
                    attr("comm_size", "int64_val", 131072),
                    attr("comm_tag", "int32_val", step),
                ]
            )
            comp = pb.Node(
                id=nid + 2,
                name=f"comp_{step}",
                type=pb.COMP_NODE,
                data_deps=[nid + 1],
                duration_micros=7,
            )
            comp.attr.append(attr("is_cpu_op", "bool_val", False))
            nodes += [send.SerializeToString(), recv.SerializeToString(), comp.SerializeToString()]
            prev = [nid + 2]
            nid += 3
        (tmp_path / f"allreduce.{rank}.et").write_bytes(et_stream(meta, nodes))
    return tmp_path / "allreduce"


def test_foreign_et_loads_at_node_level(tmp_path: Path) -> None:
    prefix = msccl_converter_example(tmp_path)
    traces = read_et_folder(prefix)
    assert len(traces) == 8
    t = traces[3]
    assert t.version == "" and t.metadata["schema"] == "1.0.2-chakra.0.0.4"
    assert [n.type_name for n in t.nodes()][:3] == ["COMM_SEND_NODE", "COMM_RECV_NODE", "COMP_NODE"]
    assert t.node(2).duration_micros == 7 and t.node(2).data_deps == (1,)
    assert t.int_attr("comm_size")[0][:2].tolist() == [131072, 131072]
    assert t.node(0).attrs["comm_dst"] == 4
    assert read_et_folder(tmp_path)[0].metadata == traces[0].metadata  # the folder form


def test_foreign_et_is_refused_by_decode_program(tmp_path: Path) -> None:
    prefix = msccl_converter_example(tmp_path)
    with pytest.raises(EtDecodeError, match="no collc attributes") as info:
        decode_program(et_rank_files(prefix))
    assert "semantics cannot be checked" in info.value.message
    assert info.value.file.endswith("allreduce.0.et")


def test_rank_file_discovery(tmp_path: Path) -> None:
    for r in (0, 1, 2):
        (tmp_path / f"a.{r}.et").write_bytes(GOOD)
    assert [p.name for p in et_rank_files(tmp_path / "a")] == ["a.0.et", "a.1.et", "a.2.et"]
    assert len(et_rank_files(tmp_path)) == 3
    (tmp_path / "b.0.et").write_bytes(GOOD)
    with pytest.raises(EtDecodeError, match="several ET sets"):
        et_rank_files(tmp_path)
    (tmp_path / "c.1.et").write_bytes(GOOD)
    with pytest.raises(EtDecodeError, match="lacks rank 0"):
        et_rank_files(tmp_path / "c")
    with pytest.raises(EtDecodeError, match="no ET files"):
        et_rank_files(tmp_path / "zzz")
    with pytest.raises(EtDecodeError, match="no ET files"):
        (tmp_path / "sub").mkdir()
        et_rank_files(tmp_path / "sub")


def test_trace_lookups() -> None:
    blob = et_stream(META, [_node(5), _node(2, data_deps=(5,)), _node(9, data_deps=(2, 5))])
    t = parse_et(blob)
    assert t.names() == ["n5", "n2", "n9"]
    assert t.index_of([9, 5, 2]).tolist() == [2, 0, 1]
    assert t.node(2).data_deps == (2, 5) and t.node(0).offset == len(
        frame(META.SerializeToString())
    )
    assert t.int_attr("missing")[1].tolist() == [False] * 3
