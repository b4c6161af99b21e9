"""The schema: wire compatibility with upstream Chakra, current bindings, codec constants."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf.descriptor import FieldDescriptor as FD

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et import schema
from chakra_ir.et.framing import frame
from chakra_ir.et.regenerate import GENERATED, HERE, regenerate

# Upstream et_def.proto v0.0.4 as the fact sheet gives it: message -> field -> (number, type).
NODE = {
    "id": (1, FD.TYPE_UINT64),
    "name": (2, FD.TYPE_STRING),
    "type": (3, FD.TYPE_ENUM),
    "ctrl_deps": (4, FD.TYPE_UINT64),
    "data_deps": (5, FD.TYPE_UINT64),
    "start_time_micros": (6, FD.TYPE_UINT64),
    "duration_micros": (7, FD.TYPE_UINT64),
    "inputs": (8, FD.TYPE_MESSAGE),
    "outputs": (9, FD.TYPE_MESSAGE),
    "attr": (10, FD.TYPE_MESSAGE),
}
SCALARS = {
    "double": FD.TYPE_DOUBLE,
    "float": FD.TYPE_FLOAT,
    "int32": FD.TYPE_INT32,
    "int64": FD.TYPE_INT64,
    "uint32": FD.TYPE_UINT32,
    "uint64": FD.TYPE_UINT64,
    "sint32": FD.TYPE_SINT32,
    "sint64": FD.TYPE_SINT64,
    "fixed32": FD.TYPE_FIXED32,
    "fixed64": FD.TYPE_FIXED64,
    "sfixed32": FD.TYPE_SFIXED32,
    "sfixed64": FD.TYPE_SFIXED64,
    "bool": FD.TYPE_BOOL,
    "string": FD.TYPE_STRING,
    "bytes": FD.TYPE_BYTES,
}


def _fields(msg: type) -> dict[str, tuple[int, int]]:
    return {f.name: (f.number, f.type) for f in msg.DESCRIPTOR.fields}  # type: ignore[attr-defined]


def test_package_is_our_own() -> None:
    assert pb.DESCRIPTOR.package == "collc.chakra_et"
    assert pb.DESCRIPTOR.name == "chakra_ir/et/et_def.proto"


def test_node_fields_match_upstream() -> None:
    assert _fields(pb.Node) == NODE
    repeated = {f.name for f in pb.Node.DESCRIPTOR.fields if f.is_repeated}
    assert repeated == {"ctrl_deps", "data_deps", "attr"}
    enum = pb.Node.DESCRIPTOR.fields_by_name["type"].enum_type
    assert enum is not None and enum.name == "NodeType"


def test_other_messages_match_upstream() -> None:
    assert _fields(pb.GlobalMetadata) == {
        "version": (1, FD.TYPE_STRING),
        "attr": (2, FD.TYPE_MESSAGE),
    }
    assert _fields(pb.IOInfo) == {
        n: (i, FD.TYPE_STRING) for i, n in enumerate(("values", "shapes", "types"), 1)
    }
    tensor = {
        n: (i, FD.TYPE_UINT64)
        for i, n in enumerate(("tensor_id", "storage_id", "offset", "num_elem", "elem_bytes"), 1)
    }
    assert _fields(pb.Tensor) == {**tensor, "device": (6, FD.TYPE_STRING)}


def test_attribute_oneof_and_list_wrappers() -> None:
    d = pb.AttributeProto.DESCRIPTOR
    assert _fields(pb.AttributeProto)["name"] == (1, FD.TYPE_STRING)
    assert _fields(pb.AttributeProto)["doc_string"] == (2, FD.TYPE_STRING)
    oneof = d.oneofs_by_name["value"]
    assert [f.number for f in oneof.fields] == list(range(3, 33))
    for i, scalar in enumerate(SCALARS):
        val = d.fields_by_name[f"{scalar}_val"]
        lst = d.fields_by_name[f"{scalar}_list"]
        assert (val.number, val.type) == (3 + 2 * i, SCALARS[scalar])
        assert lst.number == 4 + 2 * i
        wrapper = lst.message_type
        assert wrapper is not None
        assert wrapper.name == scalar.capitalize() + "List"
        (values,) = wrapper.fields
        assert (values.name, values.number, values.type, values.is_repeated) == (
            "values",
            1,
            SCALARS[scalar],
            True,
        )
    assert {f.number: f.name for f in oneof.fields} == schema.MEMBERS


def test_enums_match_upstream() -> None:
    assert {v.name: v.number for v in pb.NodeType.DESCRIPTOR.values} == {
        t.name: t.value for t in schema.NodeType
    }
    assert [v.name for v in pb.NodeType.DESCRIPTOR.values][4:7] == [
        "COMP_NODE",
        "COMM_SEND_NODE",
        "COMM_RECV_NODE",
    ]
    comm = {v.name: v.number for v in pb.CollectiveCommType.DESCRIPTOR.values}
    assert comm == {
        "ALL_REDUCE": 0,
        "REDUCE": 1,
        "ALL_GATHER": 2,
        "GATHER": 3,
        "SCATTER": 4,
        "BROADCAST": 5,
        "ALL_TO_ALL": 6,
        "REDUCE_SCATTER": 7,
        "REDUCE_SCATTER_BLOCK": 8,
        "BARRIER": 9,
    }


def test_upstream_example_bytes() -> None:
    """The sheet's 83-byte ASTRA-sim microbenchmark file, rebuilt with our bindings."""
    meta = pb.GlobalMetadata(version="0.0.4").SerializeToString()
    node = pb.Node(id=3, name="x" * 20, type=pb.COMM_COLL_NODE)
    for name, member, value in (
        ("is_cpu_op", "bool_val", False),
        ("comm_type", "int64_val", 0),
        ("comm_size", "int64_val", 1048576),
    ):
        a = node.attr.add(name=name)
        setattr(a, member, value)
    body = node.SerializeToString()
    assert meta == b"\x0a\x05" + b"0.0.4"
    assert len(meta) == 7 and len(body) == 74
    assert len(frame(meta) + frame(body)) == 83
    assert frame(body)[:1] == b"\x4a"
    assert b"\xd8\x01\x00" in body  # bool_val false is written


def _normalized(text: str) -> str:
    """Generated code without the generator's version numbers."""
    text = re.sub(r"Protobuf Python Version: [0-9.]+", "Protobuf Python Version: X", text)
    return re.sub(r"_runtime_version\.Domain\.PUBLIC,\s*\d+,\s*\d+,\s*\d+,", "VERSION", text)


def test_committed_bindings_are_current(tmp_path: Path) -> None:
    """Regenerating from et_def.proto gives the committed et_def_pb2.py / .pyi."""
    made = regenerate(tmp_path)
    assert [p.name for p in made] == list(GENERATED)
    for name in GENERATED:
        fresh = (tmp_path / name).read_text()
        committed = (HERE / name).read_text()
        assert _normalized(fresh) == _normalized(committed), (
            f"{name} is stale: run python -m chakra_ir.et.regenerate"
        )


def test_canonical_types_are_astrasim_table() -> None:
    m = {v: k for k, v in schema.MEMBERS.items()}
    expected = {
        "is_cpu_op": "bool_val",
        "num_ops": "int64_val",
        "tensor_size": "uint64_val",
        "comm_type": "int64_val",
        "comm_size": "int64_val",
        "comm_src": "int32_val",
        "comm_dst": "int32_val",
        "comm_tag": "int32_val",
        "comm_priority": "int32_val",
        "pg_name": "string_val",
        "involved_dim": "bool_list",
        "msg_chunk_cnt": "int32_val",
        "total_chunk_cnt": "int32_val",
    }
    assert {k: m[v] for k, v in expected.items()} == schema.CANONICAL_TYPES
