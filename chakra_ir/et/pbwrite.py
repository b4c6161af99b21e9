"""The reference serializer of a `NodeTable`, through the generated bindings.

About 10 µs a node: the fast serializer (`chakra_ir.et.fastwrite`) is what the codec uses, and
tests require both to produce the same bytes. This one is the statement of what those bytes
are.
"""

from __future__ import annotations

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et import schema as s
from chakra_ir.et.framing import frame
from chakra_ir.et.layout import metadata_attrs
from chakra_ir.et.schema import MEMBERS, VARINT_LISTS
from chakra_ir.et.table import NodeTable
from chakra_ir.program import Program


def serialize_nodes_pb(table: NodeTable) -> list[bytes]:
    """Per file of ``table``, the framed Node messages (no GlobalMetadata), via et_def_pb2."""
    n = table.num_nodes
    present = [a.present_mask(n) for a in table.attrs]
    out: list[bytes] = []
    for f in range(table.num_files):
        parts: list[bytes] = []
        for i in range(int(table.file_offsets[f]), int(table.file_offsets[f + 1])):
            node = pb.Node(
                id=int(table.ids[i]),
                name=table.names[int(table.name_codes[i])],
                type=int(table.types[i]),  # type: ignore[arg-type]
                data_deps=[
                    int(d) for d in table.deps[table.dep_offsets[i] : table.dep_offsets[i + 1]]
                ],
                duration_micros=int(table.durations[i]),
            )
            for spec, mask in zip(table.attrs, present, strict=True):
                if not mask[i]:
                    continue
                a = node.attr.add()
                a.name = spec.name
                member = MEMBERS[spec.member]
                if spec.member in VARINT_LISTS:
                    assert spec.list_offsets is not None and spec.list_values is not None
                    row = spec.list_values[spec.list_offsets[i] : spec.list_offsets[i + 1]]
                    getattr(a, member).values.extend(int(x) for x in row)
                else:
                    assert spec.values is not None
                    setattr(a, member, _scalar(spec.member, int(spec.values[i])))
            parts.append(frame(node.SerializeToString()))
        out.append(b"".join(parts))
    return out


def _scalar(member: int, value: int) -> int | bool:
    if MEMBERS[member] == "bool_val":
        return bool(value)
    return value


def metadata_message_pb(
    p: Program, rank: int, chunk_bytes: int, reduce_micros: int, coll_json: str | None = None
) -> bytes:
    """`chakra_ir.et.layout.metadata_message` through the generated bindings."""
    meta = pb.GlobalMetadata(version=s.VERSION)
    for name, member, value in metadata_attrs(p, rank, chunk_bytes, reduce_micros, coll_json):
        a = meta.attr.add()
        a.name = name
        if member in VARINT_LISTS:
            getattr(a, MEMBERS[member]).values.extend(value)
        else:
            setattr(a, MEMBERS[member], value)
    return frame(meta.SerializeToString())
