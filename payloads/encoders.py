"""Real encodings of a block in every wire format, and their decoders.

`encode` turns a 2-D numpy array (a 1-D vector is one row) into an `Encoded`: the format's
arrays, each packed at its width into bytes exactly as `payloads.formats` counts them, so
``encoded.nbytes == format_bytes(fmt, stats, params)``. CSR, CSC and COO come from
``scipy.sparse`` (its ``data``, ``indices``, ``indptr`` and ``coords`` arrays, re-packed at the
stated index width); Bitmap, RLC and the non-zero blocks are encoded here with numpy. `decode`
inverts every format: ``decode(encode(a, f, p)) == a`` for every array, format and width wide
enough for the block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from payloads.errors import PayloadError
from payloads.formats import FORMATS, FormatParams, bits_for

U8 = npt.NDArray[np.uint8]
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_PIECE = 1 << 20
"""Fields packed per step (a multiple of 8, so every piece ends on a byte)."""


def pack(values: npt.NDArray[np.integer], width: int) -> U8:
    """Unsigned ``values`` as ``width``-bit fields, most significant bit first, end to end."""
    v = np.asarray(values).astype(np.uint64).ravel()
    if width == 0:
        return np.zeros(0, dtype=np.uint8)
    if v.size and width < 64 and int(v.max()) >> width:
        raise PayloadError(f"a value of {int(v.max())} does not fit in {width} bits")
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64)
    parts = []
    for a in range(0, v.size, _PIECE):
        bits = ((v[a : a + _PIECE, None] >> shifts) & np.uint64(1)).astype(np.uint8)
        parts.append(np.packbits(bits.ravel()))
    out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    assert out.size == -(-(v.size * width) // 8)
    return out


def unpack(data: U8, count: int, width: int) -> npt.NDArray[np.int64]:
    """The ``count`` fields of ``width`` bits that `pack` wrote."""
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.int64)
    weights = np.uint64(1) << np.arange(width - 1, -1, -1, dtype=np.uint64)
    out = np.empty(count, dtype=np.uint64)
    for a in range(0, count, _PIECE):
        n = min(_PIECE, count - a)
        start = a * width // 8
        bits = np.unpackbits(data[start : start + -(-(n * width) // 8)])[: n * width]
        out[a : a + n] = (bits.reshape(n, width).astype(np.uint64) * weights).sum(axis=1)
    return out.astype(np.int64)


@dataclass(frozen=True)
class Encoded:
    """One block in one format: its shape, value type and the packed arrays by name, with the
    count and width of each (to unpack them)."""

    fmt: str
    shape: tuple[int, int]
    dtype: np.dtype[np.generic]
    arrays: dict[str, tuple[U8, int, int]]
    params: FormatParams

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: the packed arrays together."""
        return sum(a.nbytes for a, _, _ in self.arrays.values())


def _values(v: npt.NDArray[np.generic]) -> tuple[U8, int, int]:
    raw = np.ascontiguousarray(v).view(np.uint8).ravel()
    return raw, int(v.size), v.dtype.itemsize * 8


def _check_value_width(dtype: np.dtype[np.generic], params: FormatParams) -> None:
    if dtype.itemsize * 8 != params.value_bits:
        raise PayloadError(
            f"the values are {dtype} ({dtype.itemsize * 8} bits) but the format is set for "
            f"{params.value_bits}-bit values"
        )


def encode(array: npt.ArrayLike, fmt: str, params: FormatParams) -> Encoded:
    """``array`` (2-D, or 1-D as one row) in format ``fmt``; see the module docstring."""
    a = np.asarray(array)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise PayloadError(f"a block is a matrix or a vector, got {a.ndim} dimensions")
    _check_value_width(a.dtype, params)
    M, K = a.shape
    pi = params.index
    arrays: dict[str, tuple[U8, int, int]] = {}
    if fmt == "dense":
        arrays["values"] = _values(a)
    elif fmt == "bitmap":
        mask = a.ravel() != 0
        arrays["mask"] = (np.packbits(mask), mask.size, 1)
        arrays["values"] = _values(a.ravel()[mask])
    elif fmt == "rlc":
        flat = a.ravel()
        pos = np.flatnonzero(flat)
        L = 1 << params.rlc_bits
        gaps = np.diff(pos, prepend=-1) - 1
        pads = gaps // L
        # Entry j of a gap's pads, then the value: every entry but the value is a pad.
        entries = int(pos.size + pads.sum())
        runs = np.full(entries, L - 1, dtype=np.int64)
        vals = np.zeros(entries, dtype=a.dtype)
        at = np.cumsum(pads + 1) - 1  # where each value's entry lands
        runs[at] = gaps - pads * L
        vals[at] = flat[pos]
        arrays["runs"] = (pack(runs, params.rlc_bits), entries, params.rlc_bits)
        arrays["values"] = _values(vals)
    elif fmt in ("coo", "csr", "csc"):
        import scipy.sparse as sp

        # scipy.sparse has no float16: it encodes the values' bit patterns (zeros, -0.0
        # included, made +0.0 first, so that exactly the non-zero values are kept).
        raw = np.where(a != 0, a, np.zeros(1, dtype=a.dtype)).view(_UINT[a.dtype.itemsize])
        if fmt == "coo":
            m = sp.coo_array(raw)
            row, col = (np.asarray(c) for c in m.coords)
            order = np.lexsort((col, row))
            row, col = row[order], col[order]
            arrays["values"] = _values(np.asarray(m.data)[order].view(a.dtype))
            arrays["rows"] = (pack(row, pi(bits_for(M))), row.size, pi(bits_for(M)))
            arrays["cols"] = (pack(col, pi(bits_for(K))), col.size, pi(bits_for(K)))
        else:
            m2 = sp.csr_array(raw) if fmt == "csr" else sp.csc_array(raw)
            m2.sort_indices()
            minor = bits_for(K if fmt == "csr" else M)
            nnz = int(m2.nnz)
            p = pi(nnz.bit_length())
            arrays["values"] = _values(np.asarray(m2.data).view(a.dtype))
            arrays["indices"] = (pack(m2.indices, pi(minor)), nnz, pi(minor))
            arrays["indptr"] = (pack(m2.indptr, p), m2.indptr.size, p)
    elif fmt == "blocks":
        flat = a.ravel()
        B = params.block
        nblocks = -(-flat.size // B)
        padded = np.zeros(nblocks * B, dtype=a.dtype)
        padded[: flat.size] = flat
        ids = np.flatnonzero((padded.reshape(nblocks, B) != 0).any(axis=1))
        width = pi(bits_for(nblocks))
        arrays["ids"] = (pack(ids, width), ids.size, width)
        arrays["values"] = _values(padded.reshape(nblocks, B)[ids])
    else:
        raise PayloadError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return Encoded(fmt, (M, K), a.dtype, arrays, params)


def _vals(e: Encoded) -> npt.NDArray[np.generic]:
    raw, count, _ = e.arrays["values"]
    return raw.view(e.dtype)[:count]


def decode(e: Encoded) -> npt.NDArray[np.generic]:
    """The 2-D array that `encode` encoded into ``e``."""
    M, K = e.shape
    n = M * K
    if e.fmt == "dense":
        return _vals(e).reshape(M, K).copy()
    out = np.zeros(n, dtype=e.dtype)
    if e.fmt == "bitmap":
        raw, count, _ = e.arrays["mask"]
        mask = np.unpackbits(raw)[:count].astype(bool)
        out[mask] = _vals(e)
    elif e.fmt == "rlc":
        raw, count, width = e.arrays["runs"]
        runs = unpack(raw, count, width)
        # Every entry skips its run and takes one position (a pad's value is a zero).
        pos = np.cumsum(runs + 1) - 1
        out[pos] = _vals(e)
    elif e.fmt in ("coo", "csr", "csc"):
        import scipy.sparse as sp

        vals = _vals(e).view(_UINT[e.dtype.itemsize])
        if e.fmt == "coo":
            rows = unpack(*e.arrays["rows"])
            cols = unpack(*e.arrays["cols"])
            dense = sp.coo_array((vals, (rows, cols)), shape=(M, K)).toarray()
        else:
            idx = unpack(*e.arrays["indices"])
            ptr = unpack(*e.arrays["indptr"])
            ctor = sp.csr_array if e.fmt == "csr" else sp.csc_array
            dense = ctor((vals, idx, ptr), shape=(M, K)).toarray()
        return np.asarray(dense).view(e.dtype)
    elif e.fmt == "blocks":
        B = e.params.block
        ids = unpack(*e.arrays["ids"])
        padded = np.zeros(-(-n // B) * B, dtype=e.dtype)
        padded.reshape(-1, B)[ids] = _vals(e).reshape(-1, B)
        out = padded[:n]
    else:
        raise PayloadError(f"unknown format {e.fmt!r}")
    return out.reshape(M, K)
