"""Protocol-buffer wire primitives, scalar and vectorized over numpy columns.

The fast codec writes and reads the wire format directly; this module holds the pieces both
directions share: varints (one value, or whole columns at once), field keys, and unaligned
little-endian reads. Vectorized readers take a byte buffer that is padded with at least
`PAD` zero bytes past the data, so a read that runs past the end of a message never indexes
outside the array; callers check every decoded extent against the message end themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

PAD = 80
"""Zero bytes a scanned buffer carries past its data (longest unaligned gather + slack)."""

WT_VARINT, WT_I64, WT_LEN, WT_I32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """The varint encoding of ``value``; negative values as their 64-bit two's complement
    (10 bytes), as protobuf writes negative int32/int64."""
    v = value & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field: int, wire_type: int) -> bytes:
    """The encoded key (tag) of ``field`` with ``wire_type``."""
    return varint((field << 3) | wire_type)


def read_varint(data: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode one varint of ``data[pos:end]``: ``(value, next position)``.

    Raises ValueError when it runs past ``end`` or is longer than 10 bytes.
    """
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def as_u64(values: npt.ArrayLike) -> U64:
    """A column as uint64 wire values: signed integers sign-extend to 64 bits (two's
    complement), as protobuf encodes negative int32/int64."""
    arr = np.asarray(values)
    if arr.dtype == np.uint64:
        return arr
    if arr.dtype == np.bool_:
        return arr.astype(np.uint64)
    return arr.astype(np.int64).view(np.uint64)


def varint_len(values: U64) -> I64:
    """Bytes each uint64 value takes as a varint (1..10)."""
    n = np.ones(len(values), dtype=np.int64)
    if len(values) == 0:
        return n
    top = int(values.max())
    for k in range(1, 10):
        threshold = 1 << (7 * k)
        if top < threshold:
            break
        n += values >= np.uint64(threshold)
    return n


def put_varints(out: U8, pos: I64, values: U64) -> None:
    """Write ``values[i]`` as a varint at ``out[pos[i]]`` for every i."""
    if len(values) == 0:
        return
    if int(values.max()) < 0x80:
        out[pos] = values
        return
    v = values
    p = pos
    while True:
        more = v >= 0x80
        out[p] = (v & 0x7F) | (more.astype(np.uint64) << 7)
        if not more.any():
            return
        idx = np.flatnonzero(more)
        p = p[idx] + 1
        v = v[idx] >> np.uint64(7)


def put_const(out: U8, pos: I64, const: bytes) -> None:
    """Write the bytes ``const`` at every position of ``pos``."""
    if len(pos) == 0:
        return
    for k, byte in enumerate(const):
        out[pos + k if k else pos] = byte


def read_varints(buf: U8, pos: I64) -> tuple[U64, I64, BOOL]:
    """Decode the varint at each ``buf[pos[i]]``: ``(values, lengths, too_long)``.

    ``too_long[i]`` marks a varint of more than 10 bytes (malformed); its value is garbage.
    The buffer must be padded (`PAD`): a varint cut off by the end of the data runs into the
    zero padding and ends there, so callers must check ``pos + lengths`` against their ends.
    """
    b = buf[pos]
    values = (b & 0x7F).astype(np.uint64)
    lengths = np.ones(len(pos), dtype=np.int64)
    too_long = np.zeros(len(pos), dtype=np.bool_)
    active = np.flatnonzero(b >= 0x80)
    shift = 7
    while active.size:
        if shift >= 70:
            too_long[active] = True
            break
        b = buf[pos[active] + lengths[active]]
        values[active] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        lengths[active] += 1
        active = active[b >= 0x80]
        shift += 7
    return values, lengths, too_long


def read_fixed(buf: U8, pos: I64, width: int) -> U64:
    """The little-endian unsigned integer of ``width`` (4 or 8) bytes at each position."""
    idx = pos[:, None] + np.arange(width, dtype=np.int64)
    raw = np.ascontiguousarray(buf[idx])
    dtype: Any = np.dtype("<u4") if width == 4 else np.dtype("<u8")
    out: U64 = raw.view(dtype).reshape(-1).astype(np.uint64)
    return out


def segment_sums(values: I64, offsets: I64) -> I64:
    """Sums of ``values[offsets[i]:offsets[i+1]]`` for every i (CSR rows; empty rows give 0)."""
    c = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=c[1:])
    out: I64 = c[offsets[1:]] - c[offsets[:-1]]
    return out


def expand_ranges(starts: I64, lengths: I64) -> I64:
    """The concatenation of ``arange(starts[i], starts[i] + lengths[i])`` over i."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    base = np.repeat(starts - (ends - lengths), lengths)
    out: I64 = base + np.arange(total, dtype=np.int64)
    return out
