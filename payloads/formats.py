"""The wire formats of a block of a tensor and their sizes in closed form.

A block is an ``M x K`` matrix (a 1-D vector is ``1 x K``), laid out row-major, with ``nnz``
non-zero values of ``value_bits`` bits each. Every format is a few arrays, each packed on its
own to whole bytes (``ceil(entries x width / 8)``); the size of a block is the sum:

- ``dense``: ``M K`` values.
- ``bitmap``: a mask of ``M K`` bits, then the ``nnz`` values in order.
- ``rlc``: run-length coding with ``b``-bit runs (``rlc_bits``, default 4, runs up to
  ``L - 1`` with ``L = 2^b``): an entry is (zeros skipped, value); a gap of ``g`` zeros before
  a non-zero costs ``floor(g / L)`` pad entries (``L - 1`` zeros and a zero value) first.
  Zeros after the last non-zero are not coded. Arrays: the runs (``b`` bits) and the values.
- ``coo``: values, row indices (``i_M`` bits), column indices (``i_K`` bits).
- ``csr``: values, column indices (``i_K``), ``M + 1`` row pointers (``p`` bits).
- ``csc``: values, row indices (``i_M``), ``K + 1`` column pointers (``p`` bits).
- ``blocks``: OmniReduce's non-zero blocks of ``B`` elements (``block``, default 256) of the
  row-major order: the ids of the blocks holding a non-zero (``ceil(log2 nblocks)`` bits)
  and all their values (the last block padded with zeros to ``B``).

Index widths are the least that address the block (``i_M = ceil(log2 M)``, ``i_K = ceil(log2
K)``, ``p = ceil(log2(nnz + 1))``) unless ``index_bits`` fixes one width for every index and
pointer array (32: scipy's int32 arrays, byte for byte). The encoders of
`payloads.encoders` produce exactly these sizes; `BlockStats` holds what a size depends on, as
counted on real data (`BlockStats.of_positions`) or expected for independent supports of a
density (`BlockStats.expected`).
"""

from __future__ import annotations

from dataclasses import dataclass

from payloads.errors import PayloadError

FORMATS = ("dense", "bitmap", "rlc", "coo", "csr", "csc", "blocks")
"""Every wire format, in the order tables list them."""

VALUE_BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "int8": 8, "int32": 32}
"""Value types a payload may name, with their widths."""


def bits_for(n: int) -> int:
    """``ceil(log2 n)`` for ``n >= 1``: the bits that address ``n`` things (0 for one)."""
    return (n - 1).bit_length() if n > 1 else 0


def packed_bytes(entries: int, width: int) -> int:
    """Bytes of ``entries`` fields of ``width`` bits packed end to end."""
    return -(-(entries * width) // 8)


@dataclass(frozen=True)
class FormatParams:
    """What a format's size depends on besides the data: value width, index width (None: the
    least that addresses the block), RLC run bits and the non-zero block length."""

    value_bits: int = 16
    index_bits: int | None = None
    rlc_bits: int = 4
    block: int = 256

    def __post_init__(self) -> None:
        if self.value_bits <= 0 or self.value_bits % 8:
            raise PayloadError(
                f"value width must be a positive multiple of 8 bits, got {self.value_bits}"
            )
        if self.index_bits is not None and not 1 <= self.index_bits <= 64:
            raise PayloadError(f"index width must be 1..64 bits, got {self.index_bits}")
        if not 1 <= self.rlc_bits <= 16:
            raise PayloadError(f"RLC run width must be 1..16 bits, got {self.rlc_bits}")
        if self.block < 1:
            raise PayloadError(f"the non-zero block length must be at least 1, got {self.block}")

    def index(self, natural: int) -> int:
        """The width of an index array whose least width is ``natural``."""
        return natural if self.index_bits is None else self.index_bits


@dataclass(frozen=True)
class BlockStats:
    """What the size of a block depends on: its shape, its non-zeros, the RLC pad entries
    its gaps need and how many of its non-zero-format blocks hold a non-zero."""

    rows: int
    cols: int
    nnz: int
    rlc_pads: int
    nonzero_blocks: int

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @staticmethod
    def of_positions(rows: int, cols: int, positions: object, params: FormatParams) -> BlockStats:
        """Exact statistics of a block whose non-zeros sit at the sorted row-major
        ``positions`` (a 1-D integer numpy array)."""
        import numpy as np

        pos = np.asarray(positions, dtype=np.int64)
        nnz = int(pos.size)
        if nnz == 0:
            return BlockStats(rows, cols, 0, 0, 0)
        gaps = np.diff(pos, prepend=-1) - 1
        pads = int((gaps >> params.rlc_bits).sum())
        blocks = int(np.count_nonzero(np.diff(pos // params.block, prepend=-1)))
        return BlockStats(rows, cols, nnz, pads, blocks)

    @staticmethod
    def expected(rows: int, cols: int, density: float, params: FormatParams) -> BlockStats:
        """The expected statistics of a block whose elements are non-zero independently with
        probability ``density``, each rounded to the nearest whole count."""
        n = rows * cols
        d = min(max(density, 0.0), 1.0)
        nnz = round(n * d)
        q = 1.0 - d
        L = 1 << params.rlc_bits
        if d >= 1.0 or nnz == 0:
            pads = 0.0
        else:
            # A gap before a non-zero is geometric: P(g >= L j) = q^(L j), summed over j >= 1.
            qL = q**L
            pads = nnz * qL / (1.0 - qL)
        B = params.block
        full, tail = divmod(n, B)
        blocks = full * (1.0 - q**B) + (1.0 - q**tail if tail else 0.0)
        return BlockStats(rows, cols, nnz, round(pads), min(round(blocks), nnz))


def format_bytes(fmt: str, s: BlockStats, params: FormatParams) -> int:
    """The bytes of a block with statistics ``s`` in format ``fmt`` (closed form)."""
    w = params.value_bits
    values = packed_bytes(s.nnz, w)
    i_m = params.index(bits_for(s.rows))
    i_k = params.index(bits_for(s.cols))
    p = params.index(s.nnz.bit_length())
    if fmt == "dense":
        return packed_bytes(s.elements, w)
    if fmt == "bitmap":
        return packed_bytes(s.elements, 1) + values
    if fmt == "rlc":
        entries = s.nnz + s.rlc_pads
        return packed_bytes(entries, params.rlc_bits) + packed_bytes(entries, w)
    if fmt == "coo":
        return values + packed_bytes(s.nnz, i_m) + packed_bytes(s.nnz, i_k)
    if fmt == "csr":
        return values + packed_bytes(s.nnz, i_k) + packed_bytes(s.rows + 1, p)
    if fmt == "csc":
        return values + packed_bytes(s.nnz, i_m) + packed_bytes(s.cols + 1, p)
    if fmt == "blocks":
        nblocks = -(-s.elements // params.block)
        ids = packed_bytes(s.nonzero_blocks, params.index(bits_for(nblocks)))
        return ids + packed_bytes(s.nonzero_blocks * params.block, w)
    raise PayloadError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)}, or auto)")


def best_format(s: BlockStats, params: FormatParams, formats: tuple[str, ...] = FORMATS) -> str:
    """The smallest of ``formats`` for ``s`` (the first listed on a tie)."""
    return min(formats, key=lambda f: format_bytes(f, s, params))


def fill_in(density: float, k: int) -> float:
    """The density of the union of ``k`` independent supports of ``density``: 1-(1-rho)^k."""
    return 1.0 - (1.0 - density) ** k if k > 0 else 0.0


def check_format(name: str) -> str:
    """``name`` if it is a format (or ``auto``), else `PayloadError`."""
    if name == "auto" or name in FORMATS:
        return name
    raise PayloadError(f"unknown format {name!r} (expected one of {', '.join(FORMATS)}, or auto)")


def bits_per_element(fmt: str, s: BlockStats, params: FormatParams) -> float:
    """``format_bytes`` as bits per element of the block, as the format tables quote it."""
    return 8.0 * format_bytes(fmt, s, params) / max(1, s.elements)


__all__ = [
    "FORMATS",
    "VALUE_BITS",
    "BlockStats",
    "FormatParams",
    "best_format",
    "bits_for",
    "bits_per_element",
    "check_format",
    "fill_in",
    "format_bytes",
    "packed_bytes",
]
