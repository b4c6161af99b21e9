"""The generic ET reader, through the generated bindings: any valid file, ~10 µs a node.

It parses each message with `et_def_pb2`, so it accepts everything protobuf accepts (fields in
any order, unpacked repeated fields, unknown fields, repeated singular fields) and reports a
message that does not parse with its index and byte offset. The fast reader
(`chakra_ir.et.scan`) hands files it does not fully understand to this one.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et import schema as s
from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.trace import AttrValue, ColumnBuilder, EtTrace, IOInfo
from chakra_ir.et.wire import I64

_MAX = (1 << 63) - 1


def attr_value(a: pb.AttributeProto) -> tuple[int, AttrValue]:
    """``(member field number, Python value)`` of an AttributeProto; ``(0, None)`` if unset."""
    which = a.WhichOneof("value")
    if which is None:
        return 0, None
    member = s.MEMBER_FIELDS[which]
    v = getattr(a, which)
    if member % 2 == 0:  # list wrappers
        return member, list(v.values)
    return member, v


def metadata_attrs(meta: pb.GlobalMetadata) -> dict[str, AttrValue]:
    """The GlobalMetadata attributes as a dict (a repeated name keeps the later value)."""
    return {a.name: attr_value(a)[1] for a in meta.attr}


def parse_metadata(
    data: bytes, start: int, end: int, file: str, frame_at: int
) -> pb.GlobalMetadata:
    """Parse message ``data[start:end]`` as the GlobalMetadata, refusing a Node in its place."""
    body = data[start:end]
    if _looks_like_node(body):
        raise EtDecodeError(
            "missing GlobalMetadata: the first message is a Node (it has a node id or type)",
            file,
            frame_at,
        )
    try:
        return pb.GlobalMetadata.FromString(body)
    except DecodeError as e:
        raise EtDecodeError(
            f"the GlobalMetadata message does not parse: {e}", file, frame_at
        ) from None


def _looks_like_node(body: bytes) -> bool:
    """True when the message has varint fields 1 or 3 (Node.id, Node.type), which a
    GlobalMetadata (fields 1 and 2, both length-delimited) cannot have."""
    from chakra_ir.et.wire import read_varint

    pos, end = 0, len(body)
    try:
        while pos < end:
            tag, pos = read_varint(body, pos, end)
            field, wt = tag >> 3, tag & 7
            if wt == 0:
                if field in (s.NODE_ID, s.NODE_TYPE):
                    return True
                _, pos = read_varint(body, pos, end)
            elif wt == 2:
                length, pos = read_varint(body, pos, end)
                pos += length
            elif wt == 1:
                pos += 8
            elif wt == 5:
                pos += 4
            else:
                return False
    except ValueError:
        return False
    return False


def read_nodes_pb(data: bytes, starts: I64, ends: I64, file: str, frame_offsets: I64) -> EtTrace:
    """Parse every node message ``data[starts[i]:ends[i]]`` with the generated bindings.

    Returns a trace with empty metadata (the caller fills it in). Raises EtDecodeError naming
    the node's index and frame offset when a message fails to parse or holds a node id,
    dependency or time of 2**63 or more.
    """
    n = len(starts)
    ids = np.zeros(n, dtype=np.int64)
    types = np.zeros(n, dtype=np.int64)
    codes = np.zeros(n, dtype=np.int64)
    starts_t = np.zeros(n, dtype=np.int64)
    durs = np.zeros(n, dtype=np.int64)
    data_rows: list[list[int]] = []
    ctrl_rows: list[list[int]] = []
    name_index: dict[str, int] = {}
    builders: dict[str, ColumnBuilder] = {}
    io: dict[int, tuple[IOInfo | None, IOInfo | None]] = {}
    for i in range(n):
        at = int(frame_offsets[i])
        try:
            node = pb.Node.FromString(data[int(starts[i]) : int(ends[i])])
        except DecodeError as e:
            raise EtDecodeError(f"node message {i} does not parse: {e}", file, at) from None
        big = [
            v
            for v in (
                node.id,
                node.start_time_micros,
                node.duration_micros,
                *node.data_deps,
                *node.ctrl_deps,
            )
            if v > _MAX
        ]
        if big:
            raise EtDecodeError(
                f"node message {i} holds the value {big[0]}, out of range (2**63 or more)", file, at
            )
        ids[i] = node.id
        types[i] = node.type
        code = name_index.setdefault(node.name, len(name_index))
        codes[i] = code
        starts_t[i] = node.start_time_micros
        durs[i] = node.duration_micros
        data_rows.append(list(node.data_deps))
        ctrl_rows.append(list(node.ctrl_deps))
        if node.HasField("inputs") or node.HasField("outputs"):
            io[i] = (
                _io(node.inputs) if node.HasField("inputs") else None,
                _io(node.outputs) if node.HasField("outputs") else None,
            )
        for a in node.attr:
            member, value = attr_value(a)
            b = builders.get(a.name)
            if b is None:
                b = builders[a.name] = ColumnBuilder(a.name)
            b.add(i, member, value)
    d_off, d_val = _csr(data_rows)
    c_off, c_val = _csr(ctrl_rows)
    return EtTrace(
        file=file,
        version="",
        metadata={},
        offsets=frame_offsets,
        ids=ids,
        types=types,
        name_codes=codes,
        name_table=list(name_index),
        start_times=starts_t,
        durations=durs,
        data_dep_offsets=d_off,
        data_deps=d_val,
        ctrl_dep_offsets=c_off,
        ctrl_deps=c_val,
        attrs={name: b.build() for name, b in builders.items()},
        io=io,
        decoder="generic",
    )


def _io(x: pb.IOInfo) -> IOInfo:
    return (x.values, x.shapes, x.types)


def _csr(rows: list[list[int]]) -> tuple[I64, I64]:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = np.fromiter((x for r in rows for x in r), dtype=np.int64, count=int(offsets[-1]))
    return offsets, values
