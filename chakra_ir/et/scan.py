"""The fast ET reader: a vectorized protobuf wire scanner over all nodes of a file at once.

`scan_fields` walks every message in lockstep: step ``k`` decodes the ``k``-th field of every
message that has one (its key, then a varint, a fixed value or a length), with a handful of
numpy operations per step, so the Python cost is per field position, not per node. Nodes are
scanned once, then their attribute sub-messages the same way. Field order, unknown fields and
optional fields cost nothing extra.

The scanner decodes the common shapes itself: varint scalars, packed varint lists, strings
(names), and every attribute member through the generated bindings one attribute at a time
when it is not a varint (floats, strings, bytes, other lists). Anything it does not handle
(unpacked dependencies, a repeated singular field, a wire type it does not expect for a known
field, a malformed message) raises `Fallback`, and the reader re-reads the whole file with
the generic reader (`chakra_ir.et.pbread`), which accepts everything protobuf accepts and
reports what it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et import schema as s
from chakra_ir.et.pbread import attr_value
from chakra_ir.et.trace import INTEGER_MEMBERS, AttrColumn, AttrValue, EtTrace, IOInfo
from chakra_ir.et.wire import (
    BOOL,
    I64,
    U8,
    U64,
    WT_I32,
    WT_I64,
    WT_LEN,
    WT_VARINT,
    expand_ranges,
    read_fixed,
    read_varints,
)

_BIG = np.uint64(1 << 63)


class Fallback(Exception):
    """The fast reader leaves this file to the generic reader (the message says why)."""


@dataclass
class Fields:
    """Every field of every scanned message, in scan order (step by step, messages ascending
    within a step). ``value`` is the varint or fixed value, or for a length-delimited field
    the payload's start; ``length`` the payload length (0 otherwise)."""

    msg: I64
    field: I64
    wire_type: I64
    value: U64
    length: I64

    def select(self, field: int) -> I64:
        """Indices of the records of ``field``."""
        out: I64 = np.flatnonzero(self.field == field)
        return out


def scan_fields(buf: U8, starts: I64, ends: I64) -> Fields:
    """Scan messages ``buf[starts[i]:ends[i]]`` field by field (see the module docstring).

    ``buf`` must be padded with `chakra_ir.et.wire.PAD` zero bytes. Raises Fallback on a
    malformed field (bad key, wire type 3/4/6/7, a field running past its message's end).
    """
    parts: list[tuple[I64, I64, I64, U64, I64]] = []
    act = np.flatnonzero(starts < ends)
    pos = starts[act]
    end = ends[act]
    while act.size:
        tag, tag_len, bad = read_varints(buf, pos)
        if bad.any() or int(tag.max()) >= 1 << 32 or int(tag.min()) < 8:
            raise Fallback("a field key is not a valid varint32 with a field number")
        field = (tag >> np.uint64(3)).astype(np.int64)
        wt = (tag & np.uint64(7)).astype(np.int64)
        q = pos + tag_len
        if not (wt & ~2).any():  # varints and length-delimited fields only: the usual case
            v, n, bad = read_varints(buf, q)
            if bad.any():
                raise Fallback("a varint is longer than 10 bytes")
            is_len = wt == WT_LEN
            length = np.where(is_len, v.view(np.int64), 0)
            if int(length.max()) >= 1 << 31 or int(length.min()) < 0:
                raise Fallback("a length is not a valid varint32")
            q += n
            value = np.where(is_len, q.view(np.uint64), v)
            nxt = q + length
        else:
            value, length, nxt = _mixed_values(buf, q, wt)
        if (nxt > end).any():
            raise Fallback("a field runs past the end of its message")
        parts.append((act, field, wt, value, length))
        more = nxt < end
        if more.all():
            pos = nxt
            continue
        act = act[more]
        pos = nxt[more]
        end = end[more]
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return Fields(z, z, z, np.zeros(0, dtype=np.uint64), z)
    return Fields(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
        np.concatenate([p[4] for p in parts]),
    )


def _mixed_values(buf: U8, q: I64, wt: I64) -> tuple[U64, I64, I64]:
    """Values, payload lengths and next positions of fields of any wire type at ``q``."""
    value = np.zeros(len(q), dtype=np.uint64)
    length = np.zeros(len(q), dtype=np.int64)
    nxt = np.empty(len(q), dtype=np.int64)
    for w in np.unique(wt).tolist():
        rows = np.flatnonzero(wt == w)
        qr = q[rows]
        if w == WT_VARINT:
            v, n, bad = read_varints(buf, qr)
            if bad.any():
                raise Fallback("a varint is longer than 10 bytes")
            value[rows] = v
            nxt[rows] = qr + n
        elif w == WT_LEN:
            v, n, bad = read_varints(buf, qr)
            if bad.any() or (v >= (1 << 31)).any():
                raise Fallback("a length is not a valid varint32")
            value[rows] = (qr + n).astype(np.uint64)
            length[rows] = v.astype(np.int64)
            nxt[rows] = qr + n + length[rows]
        elif w == WT_I64:
            value[rows] = read_fixed(buf, qr, 8)
            nxt[rows] = qr + 8
        elif w == WT_I32:
            value[rows] = read_fixed(buf, qr, 4)
            nxt[rows] = qr + 4
        else:
            raise Fallback(f"wire type {w} (groups or invalid)")
    return value, length, nxt


def _singular(f: Fields, field: int, wire_type: int, n: int) -> I64:
    """Records of a singular field: checked for the expected wire type and no repeats."""
    rec = f.select(field)
    if rec.size == 0:
        return rec
    if (f.wire_type[rec] != wire_type).any():
        raise Fallback(f"field {field} with an unexpected wire type")
    if np.bincount(f.msg[rec], minlength=n).max() > 1:
        raise Fallback(f"field {field} repeated in one message")
    return rec


def decode_packed(buf: U8, starts: I64, lengths: I64) -> tuple[I64, U64]:
    """Decode packed varint payloads ``buf[starts[i]:starts[i]+lengths[i]]``: CSR offsets
    over the payloads and the values. Raises Fallback when a payload ends inside a varint or
    holds one of more than 10 bytes."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    idx = expand_ranges(starts, lengths)
    if idx.size == 0:
        return offsets, np.zeros(0, dtype=np.uint64)
    b = buf[idx]
    term = b < 0x80
    nonempty = lengths > 0
    last = np.cumsum(lengths)[nonempty] - 1
    if not term[last].all():
        raise Fallback("a packed list ends inside a varint")
    elem_end = np.flatnonzero(term)
    elem_start = np.empty_like(elem_end)
    elem_start[0] = 0
    elem_start[1:] = elem_end[:-1] + 1
    elen = elem_end - elem_start + 1
    if elen.max() > 10:
        raise Fallback("a packed varint is longer than 10 bytes")
    k = np.arange(len(b), dtype=np.int64) - np.repeat(elem_start, elen)
    parts = (b & 0x7F).astype(np.uint64) << (7 * k).astype(np.uint64)
    values = np.bitwise_or.reduceat(parts, elem_start)
    cum = np.zeros(len(b) + 1, dtype=np.int64)
    np.cumsum(term, out=cum[1:])
    pay_end = np.cumsum(lengths)
    counts = cum[pay_end] - cum[pay_end - lengths]
    np.cumsum(counts, out=offsets[1:])
    return offsets, values


def member_ints(member: int, v: U64) -> tuple[I64, BOOL]:
    """Varint wire values as ``member`` reads them (int32 truncates and signs, sint zigzags,
    bool is 0/1): ``(values, huge)``, ``huge`` marking uint64 values of 2**63 or more."""
    huge = np.zeros(len(v), dtype=np.bool_)
    if member == s.INT32_VAL:
        out = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
    elif member == s.INT64_VAL:
        out = v.view(np.int64)
    elif member == s.UINT32_VAL:
        out = (v & np.uint64(0xFFFFFFFF)).astype(np.int64)
    elif member == s.UINT64_VAL:
        huge = v >= _BIG
        out = v.view(np.int64)
    elif member == s.SINT32_VAL:
        n = (v & np.uint64(0xFFFFFFFF)).astype(np.int64)
        out = (n >> 1) ^ -(n & 1)
    elif member == s.SINT64_VAL:
        out = ((v >> np.uint64(1)) ^ (np.uint64(0) - (v & np.uint64(1)))).view(np.int64)
    elif member == s.BOOL_VAL:
        out = (v != 0).astype(np.int64)
    else:  # pragma: no cover - callers pass varint members only
        raise ValueError(f"member {member} is not a varint scalar")
    return out, huge


_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
"""_MASKS[k] keeps the low k bytes of a word."""


def intern_strings(buf: U8, starts: I64, lengths: I64) -> tuple[I64, list[str]]:
    """Codes and table of the UTF-8 strings ``buf[starts[i]:starts[i]+lengths[i]]``.

    ``buf`` is padded and a multiple of 8 bytes long. Strings up to 64 bytes are compared as
    words (a hash picks candidates, a full compare confirms); longer ones go through Python.
    Raises Fallback on invalid UTF-8.
    """
    m = len(starts)
    if m == 0:
        return np.zeros(0, dtype=np.int64), []
    maxlen = int(lengths.max())
    if maxlen > 64 or len(buf) % 8:
        return _intern_slow(buf, starts, lengths)
    width = max(1, (maxlen + 7) // 8)
    aligned = buf.view("<u8")
    base = starts >> 3
    shift = ((starts & 7) << 3).astype(np.uint64)
    back = np.uint64(63) - shift
    words = np.empty((width, m), dtype=np.uint64)
    h = lengths.astype(np.uint64) * _C1
    nxt = aligned[base]
    for w in range(width):
        lo = nxt >> shift
        nxt = aligned[base + (w + 1)]
        x = lo | ((nxt << np.uint64(1)) << back)  # the unaligned word at starts + 8w
        keep = lengths - 8 * w
        if w == width - 1 or int(keep.min()) < 8:
            x &= _MASKS[np.clip(keep, 0, 8)]
        words[w] = x
        h = h * _C2 + x
    h ^= h >> np.uint64(29)
    h *= _C1
    h ^= h >> np.uint64(32)
    bucket = (h >> np.uint64(52)).astype(np.int64)
    table = np.full(1 << 12, -1, dtype=np.int64)
    table[bucket] = np.arange(m, dtype=np.int64)
    rep = table[bucket]
    if (h[rep] == h).all():
        used = np.zeros(1 << 12, dtype=np.bool_)
        used[bucket] = True
        dense = np.cumsum(used) - 1
        codes = dense[bucket]
        reps = table[np.flatnonzero(used)]
    else:  # two strings share a bucket: sort instead
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        codes = inverse.reshape(-1).astype(np.int64)
        reps = first
        rep = first[codes]
    if not ((lengths[rep] == lengths) & (words[:, rep] == words).all(axis=0)).all():
        return _intern_slow(buf, starts, lengths)  # a 64-bit hash collision
    try:
        names = [
            buf[starts[r] : starts[r] + lengths[r]].tobytes().decode("utf-8") for r in reps.tolist()
        ]
    except UnicodeDecodeError:
        raise Fallback("a string is not valid UTF-8") from None
    return codes, names


def _intern_slow(buf: U8, starts: I64, lengths: I64) -> tuple[I64, list[str]]:
    index: dict[bytes, int] = {}
    codes = np.empty(len(starts), dtype=np.int64)
    for i, (a, n) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        codes[i] = index.setdefault(buf[a : a + n].tobytes(), len(index))
    try:
        return codes, [b.decode("utf-8") for b in index]
    except UnicodeDecodeError:
        raise Fallback("a string is not valid UTF-8") from None


def scan_nodes(buf: U8, starts: I64, ends: I64, file: str, frame_offsets: I64) -> EtTrace:
    """Read the node messages ``buf[starts[i]:ends[i]]`` (``buf`` padded). Returns a trace
    with empty metadata, or raises Fallback."""
    n = len(starts)
    f = scan_fields(buf, starts, ends)
    known = {
        s.NODE_ID: WT_VARINT,
        s.NODE_NAME: WT_LEN,
        s.NODE_TYPE: WT_VARINT,
        s.NODE_CTRL_DEPS: WT_LEN,
        s.NODE_DATA_DEPS: WT_LEN,
        s.NODE_START_TIME: WT_VARINT,
        s.NODE_DURATION: WT_VARINT,
        s.NODE_INPUTS: WT_LEN,
        s.NODE_OUTPUTS: WT_LEN,
    }
    recs = {fld: _singular(f, fld, wt, n) for fld, wt in known.items()}

    def column(field: int, convert_int32: bool = False) -> I64:
        out = np.zeros(n, dtype=np.int64)
        r = recs[field]
        v = f.value[r]
        if convert_int32:
            out[f.msg[r]] = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
        else:
            if (v >= _BIG).any():
                raise Fallback(f"field {field} holds a value of 2**63 or more")
            out[f.msg[r]] = v.view(np.int64)
        return out

    ids = column(s.NODE_ID)
    types = column(s.NODE_TYPE, convert_int32=True)
    start_times = column(s.NODE_START_TIME)
    durations = column(s.NODE_DURATION)

    r = recs[s.NODE_NAME]
    name_start = np.zeros(n, dtype=np.int64)
    name_len = np.zeros(n, dtype=np.int64)  # a node without a name field has the empty name
    name_start[f.msg[r]] = f.value[r].view(np.int64)
    name_len[f.msg[r]] = f.length[r]
    name_codes, table = intern_strings(buf, name_start, name_len)

    dep_csr = []
    for field in (s.NODE_DATA_DEPS, s.NODE_CTRL_DEPS):
        r = recs[field]
        lengths = np.zeros(n, dtype=np.int64)
        starts_p = np.zeros(n, dtype=np.int64)
        lengths[f.msg[r]] = f.length[r]
        starts_p[f.msg[r]] = f.value[r].view(np.int64)
        offs, vals = decode_packed(buf, starts_p, lengths)
        if (vals >= _BIG).any():
            raise Fallback("a dependency of 2**63 or more")
        dep_csr.append((offs, vals.view(np.int64)))

    io: dict[int, tuple[IOInfo | None, IOInfo | None]] = {}
    for slot, field in enumerate((s.NODE_INPUTS, s.NODE_OUTPUTS)):
        for rec in recs[field].tolist():
            a = int(f.value[rec])
            try:
                x = pb.IOInfo.FromString(buf[a : a + int(f.length[rec])].tobytes())
            except DecodeError:
                raise Fallback("an IOInfo does not parse") from None
            node = int(f.msg[rec])
            pair = list(io.get(node, (None, None)))
            pair[slot] = (x.values, x.shapes, x.types)
            io[node] = (pair[0], pair[1])

    attr_rec = f.select(s.NODE_ATTR)
    if (f.wire_type[attr_rec] != WT_LEN).any():
        raise Fallback("an attribute with an unexpected wire type")
    attrs = _scan_attrs(
        buf, f.msg[attr_rec], f.value[attr_rec].view(np.int64), f.length[attr_rec], n
    )
    return EtTrace(
        file=file,
        version="",
        metadata={},
        offsets=frame_offsets,
        ids=ids,
        types=types,
        name_codes=name_codes,
        name_table=table,
        start_times=start_times,
        durations=durations,
        data_dep_offsets=dep_csr[0][0],
        data_deps=dep_csr[0][1],
        ctrl_dep_offsets=dep_csr[1][0],
        ctrl_deps=dep_csr[1][1],
        attrs=attrs,
        io=io,
        decoder="fast",
    )


def _scan_attrs(
    buf: U8, node: I64, start: I64, length: I64, num_nodes: int
) -> dict[str, AttrColumn]:
    """Decode AttributeProto messages ``buf[start[j]:start[j]+length[j]]`` of ``node[j]``
    into one column per name. Raises Fallback where a node repeats a name."""
    a = len(node)
    f = scan_fields(buf, start, start + length)
    name_rec = _singular(f, s.ATTR_NAME, WT_LEN, a)
    doc_rec = f.select(s.ATTR_DOC)
    if (f.wire_type[doc_rec] != WT_LEN).any():
        raise Fallback("doc_string with an unexpected wire type")
    val_rec = np.flatnonzero((f.field >= 3) & (f.field <= 32))
    if np.bincount(f.msg[val_rec], minlength=a).max(initial=0) > 1:
        raise Fallback("an attribute sets its value twice")

    if len(name_rec) == a:
        name_start = np.empty(a, dtype=np.int64)
        name_len = np.empty(a, dtype=np.int64)
    else:
        name_start = np.zeros(a, dtype=np.int64)
        name_len = np.zeros(a, dtype=np.int64)
    name_start[f.msg[name_rec]] = f.value[name_rec].view(np.int64)
    name_len[f.msg[name_rec]] = f.length[name_rec]
    codes, table = intern_strings(buf, name_start, name_len)

    member = np.zeros(a, dtype=np.uint8)
    ints = np.zeros(a, dtype=np.int64)
    objects: dict[int, AttrValue] = {}
    list_entries: list[I64] = []
    list_counts: list[I64] = []
    list_chunks: list[I64] = []

    vf = f.field[val_rec]
    vw = f.wire_type[val_rec]
    ventry = f.msg[val_rec]
    member[ventry] = vf
    slow: list[int] = []
    for m in np.flatnonzero(np.bincount(vf, minlength=33)).tolist():
        sel = vf == m
        recs = val_rec[sel]
        entries = ventry[sel]
        wts = vw[sel]
        if m in s.VARINT_SCALARS:
            if (wts != WT_VARINT).any():
                raise Fallback(f"member {m} with an unexpected wire type")
            vals, huge = member_ints(m, f.value[recs])
            ints[entries] = vals
            for e, v in zip(entries[huge].tolist(), f.value[recs][huge].tolist(), strict=True):
                objects[e] = int(v)
        elif m in s.VARINT_LISTS:
            if (wts != WT_LEN).any():
                raise Fallback(f"member {m} with an unexpected wire type")
            simple, p_start, p_len = _simple_wrappers(
                buf, f.value[recs].view(np.int64), f.length[recs]
            )
            slow.extend(entries[~simple].tolist())
            e_ok = entries[simple]
            offs, raw = decode_packed(buf, p_start[simple], p_len[simple])
            vals, huge = member_ints(s.LIST_ELEMENT[m], raw)
            if huge.any():
                slow.extend(e_ok.tolist())
                continue
            list_entries.append(e_ok)
            list_counts.append(np.diff(offs))
            list_chunks.append(vals)
        else:
            slow.extend(entries.tolist())
    for e in slow:
        a0 = int(start[e])
        try:
            msg = pb.AttributeProto.FromString(buf[a0 : a0 + int(length[e])].tobytes())
        except DecodeError:
            raise Fallback("an attribute does not parse") from None
        m2, value = attr_value(msg)
        member[e] = m2
        if m2 in INTEGER_MEMBERS and isinstance(value, int) and not value >= 1 << 63:
            ints[e] = int(value)
        elif (
            m2 in s.VARINT_LISTS
            and isinstance(value, list)
            and all(int(x) < 1 << 63 for x in value)
        ):
            list_entries.append(np.array([e], dtype=np.int64))
            list_counts.append(np.array([len(value)], dtype=np.int64))
            list_chunks.append(np.array([int(x) for x in value], dtype=np.int64))
        else:
            objects[e] = value

    # Per-entry list rows (entries without a varint list get an empty row).
    row_len = np.zeros(a, dtype=np.int64)
    row_start = np.zeros(a, dtype=np.int64)
    list_values = np.zeros(0, dtype=np.int64)
    if list_entries:
        le = np.concatenate(list_entries)
        lc = np.concatenate(list_counts)
        list_values = np.concatenate(list_chunks)
        row_len[le] = lc
        row_start[le] = np.cumsum(lc) - lc

    # Group entries by name, each group by node (a node has each name at most once).
    by_name = np.argsort(codes.astype(np.uint16) if len(table) < 1 << 16 else codes, kind="stable")
    bounds = np.zeros(len(table) + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=len(table)), out=bounds[1:])
    slot = np.full(num_nodes, -1, dtype=np.int64)
    out: dict[str, AttrColumn] = {}
    groups = []
    for c, name in enumerate(table):
        e = by_name[bounds[c] : bounds[c + 1]]
        ne = node[e]
        slot[ne] = e
        nodes = np.flatnonzero(slot >= 0)
        if len(nodes) != len(e):
            raise Fallback(f"a node repeats the attribute {name!r}")
        es = slot[nodes]
        slot[ne] = -1
        groups.append(
            (int(ne.min()) if len(ne) else 0, int(es[0]) if len(es) else 0, c, name, nodes, es)
        )
    # Columns in order of first appearance in the file.
    for _, _, _, name, nodes, es in sorted(groups, key=lambda g: (g[0], g[1])):
        rl = row_len[es]
        lo = np.zeros(len(es) + 1, dtype=np.int64)
        np.cumsum(rl, out=lo[1:])
        lv = list_values[expand_ranges(row_start[es], rl)] if len(list_values) else list_values
        col_objects: dict[int, AttrValue] = {}
        if objects:
            pos_of = {int(x): j for j, x in enumerate(es.tolist())}
            col_objects = {pos_of[k]: v for k, v in objects.items() if k in pos_of}
        out[name] = AttrColumn(name, nodes, member[es], ints[es], lo, lv, col_objects)
    return out


def _simple_wrappers(buf: U8, start: I64, length: I64) -> tuple[BOOL, I64, I64]:
    """List wrappers that are empty or exactly one packed ``values`` field: which ones, and
    the packed payload of each (empty for an empty wrapper)."""
    n = len(start)
    simple = length == 0
    p_start = start.copy()
    p_len = np.zeros(n, dtype=np.int64)
    rows = np.flatnonzero(length > 0)
    if rows.size:
        first = buf[start[rows]]
        v, k, bad = read_varints(buf, start[rows] + 1)
        ok = (first == 0x0A) & ~bad & (1 + k + v.astype(np.int64) == length[rows])
        simple[rows] = ok
        p_start[rows] = start[rows] + 1 + k
        p_len[rows] = np.where(ok, v.astype(np.int64), 0)
    return simple, p_start, p_len
