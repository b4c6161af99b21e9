"""The fast serializer of a `NodeTable`: whole columns at once, no per-node Python.

Every node's message is a sequence of pieces (a field key, a varint, a constant name...). The
serializer computes each piece's length for every node as a column, the message and frame
lengths from their sum, each node's start by a cumulative sum, and then writes each piece for
all nodes with a few numpy scatters (`chakra_ir.et.wire.put_varints`, `put_const`). The
output is byte for byte what the generated bindings write (`chakra_ir.et.pbwrite`).
"""

from __future__ import annotations

import numpy as np

from chakra_ir.et import schema as s
from chakra_ir.et.table import AttrSpec, NodeTable
from chakra_ir.et.wire import (
    BOOL,
    I64,
    U8,
    U64,
    WT_LEN,
    WT_VARINT,
    as_u64,
    key,
    put_const,
    put_varints,
    segment_sums,
    varint,
    varint_len,
)


def wire_values(member: int, values: I64) -> U64:
    """The uint64 varint payload protobuf writes for a column of ``member`` values."""
    if member in (s.SINT32_VAL, s.SINT32_LIST):
        v32 = values.astype(np.int32)
        return ((v32 << 1) ^ (v32 >> 31)).view(np.uint32).astype(np.uint64)
    if member in (s.SINT64_VAL, s.SINT64_LIST):
        v64 = values.astype(np.int64)
        out: U64 = ((v64 << 1) ^ (v64 >> 63)).view(np.uint64)
        return out
    if member in (s.BOOL_VAL, s.BOOL_LIST):
        flags: U64 = (values != 0).astype(np.uint64)
        return flags
    return as_u64(values)


def serialize_nodes(table: NodeTable) -> tuple[U8, I64]:
    """All nodes of ``table`` framed back to back, and each file's byte range.

    Returns ``(data, bounds)``: file ``f``'s node stream is ``data[bounds[f]:bounds[f+1]]``.
    """
    n = table.num_nodes
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(table.num_files + 1, dtype=np.int64)
    body = np.zeros(n, dtype=np.int64)

    # id (1), omitted when 0.
    ids = as_u64(table.ids)
    id_mask = ids != 0
    id_len = np.where(id_mask, 1 + varint_len(ids), 0)
    body += id_len

    # name (2): one precomputed field per distinct name.
    name_fields = [
        key(s.NODE_NAME, WT_LEN) + varint(len(b)) + b if b else b""
        for b in (x.encode() for x in table.names)
    ]
    name_field_len = np.array([len(x) for x in name_fields], dtype=np.int64)
    body += name_field_len[table.name_codes]

    # type (3), omitted when 0.
    types = as_u64(table.types)
    type_mask = types != 0
    body += np.where(type_mask, 1 + varint_len(types), 0)

    # data_deps (5), packed.
    deps = as_u64(table.deps)
    dep_elem_len = varint_len(deps)
    dep_payload = segment_sums(dep_elem_len, table.dep_offsets)
    dep_mask = np.diff(table.dep_offsets) > 0
    body += np.where(dep_mask, 1 + varint_len(dep_payload.view(np.uint64)) + dep_payload, 0)

    # duration_micros (7), omitted when 0.
    durs = as_u64(table.durations)
    dur_mask = durs != 0
    body += np.where(dur_mask, 1 + varint_len(durs), 0)

    # attributes (10)
    attr_plans = [_AttrPlan(spec, n) for spec in table.attrs]
    for plan in attr_plans:
        body += plan.field_len

    frame_len = varint_len(body.view(np.uint64)) + body
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(frame_len, out=starts[1:])
    out = np.zeros(int(starts[-1]), dtype=np.uint8)
    cur = starts[:-1].copy()

    put_varints(out, cur, body.view(np.uint64))
    cur += frame_len - body

    _put_tagged_varint(out, cur, id_mask, key(s.NODE_ID, WT_VARINT), ids)
    cur += id_len

    for code, field in enumerate(name_fields):
        if field:
            where = np.flatnonzero(table.name_codes == code)
            put_const(out, cur[where], field)
    cur += name_field_len[table.name_codes]

    _put_tagged_varint(out, cur, type_mask, key(s.NODE_TYPE, WT_VARINT), types)
    cur += np.where(type_mask, 1 + varint_len(types), 0)

    if dep_mask.any():
        rows = np.flatnonzero(dep_mask)
        p = cur[rows]
        out[p] = key(s.NODE_DATA_DEPS, WT_LEN)[0]
        pl = dep_payload[rows].view(np.uint64)
        put_varints(out, p + 1, pl)
        cur[rows] += 1 + varint_len(pl)
        _put_csr_varints(out, cur, table.dep_offsets, deps, dep_elem_len)
        cur += dep_payload * dep_mask

    _put_tagged_varint(out, cur, dur_mask, key(s.NODE_DURATION, WT_VARINT), durs)
    cur += np.where(dur_mask, 1 + varint_len(durs), 0)

    for plan in attr_plans:
        plan.write(out, cur)
        cur += plan.field_len

    bounds = starts[table.file_offsets]
    return out, bounds


def _put_tagged_varint(out: U8, cur: I64, mask: BOOL, tag: bytes, values: U64) -> None:
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return
    p = cur[rows]
    put_const(out, p, tag)
    put_varints(out, p + len(tag), values[rows])


def _put_csr_varints(out: U8, cur: I64, offsets: I64, values: U64, elem_len: I64) -> None:
    """Write each CSR row's values as consecutive varints starting at ``cur[row]``."""
    counts = np.diff(offsets)
    if len(values) == 0:
        return
    # Position of element e: cur[row(e)] + (sum of lengths of earlier elements of its row).
    c = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(elem_len, out=c[1:])
    row_base = cur - c[offsets[:-1]]
    pos = np.repeat(row_base, counts) + c[:-1]
    put_varints(out, pos, values)


class _AttrPlan:
    """Lengths and writer of one attribute across all nodes."""

    def __init__(self, spec: AttrSpec, n: int) -> None:
        self.spec = spec
        self.mask = spec.present_mask(n)
        name = spec.name.encode()
        # The attribute message: name field, value key, value.
        name_field = (
            key(s.ATTR_NAME, WT_LEN) + varint(len(name)) + name if name else b""
        )  # proto3 omits ""
        self.head = name_field + key(spec.member, WT_LEN if spec.is_list else WT_VARINT)
        if spec.is_list:
            assert spec.list_offsets is not None and spec.list_values is not None
            self.values = wire_values(spec.member, spec.list_values)
            self.elem_len = varint_len(self.values)
            self.packed = segment_sums(self.elem_len, spec.list_offsets)
            # wrapper: key(1, LEN) varint(packed) packed  (empty rows are not written)
            self.wrapper = 1 + varint_len(self.packed.view(np.uint64)) + self.packed
            value_len = varint_len(self.wrapper.view(np.uint64)) + self.wrapper
        else:
            assert spec.values is not None
            self.values = wire_values(spec.member, spec.values)
            value_len = varint_len(self.values)
        self.attr_len = len(self.head) + value_len
        self.field_len: I64 = np.where(
            self.mask, 1 + varint_len(self.attr_len.view(np.uint64)) + self.attr_len, 0
        )

    def write(self, out: U8, cur: I64) -> None:
        """Write the attribute of every node that has it at ``cur[node]``."""
        all_rows = bool(self.mask.all())
        rows = None if all_rows else np.flatnonzero(self.mask)
        p = cur.copy() if rows is None else cur[rows]
        if len(p) == 0:
            return
        alen = self.attr_len if rows is None else self.attr_len[rows]
        out[p] = key(s.NODE_ATTR, WT_LEN)[0]
        p += 1
        alen_u = alen.view(np.uint64)
        put_varints(out, p, alen_u)
        p += varint_len(alen_u)
        put_const(out, p, self.head)
        p += len(self.head)
        if not self.spec.is_list:
            put_varints(out, p, self.values if rows is None else self.values[rows])
            return
        assert self.spec.list_offsets is not None
        wrapper = (self.wrapper if rows is None else self.wrapper[rows]).view(np.uint64)
        put_varints(out, p, wrapper)
        p += varint_len(wrapper)
        out[p] = key(1, WT_LEN)[0]
        p += 1
        packed = (self.packed if rows is None else self.packed[rows]).view(np.uint64)
        put_varints(out, p, packed)
        p += varint_len(packed)
        full = np.zeros(len(self.mask), dtype=np.int64)
        full[self.mask] = p
        _put_csr_varints(out, full, self.spec.list_offsets, self.values, self.elem_len)
