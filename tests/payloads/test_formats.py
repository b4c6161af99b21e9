"""Wire formats: every encoder decodes back to its input, and the closed forms equal the
bytes of the real encodings (scipy's arrays' nbytes at 32-bit indices)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from payloads.encoders import decode, encode, pack, unpack
from payloads.errors import PayloadError
from payloads.formats import (
    FORMATS,
    BlockStats,
    FormatParams,
    best_format,
    bits_per_element,
    fill_in,
    format_bytes,
)


def _random(
    shape: tuple[int, int], density: float, seed: int, dtype: str = "float16"
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.where(rng.random(shape) < density, rng.uniform(0.5, 2.0, shape), 0.0)
    return a.astype(dtype)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.integers(1, 40),
    density=st.sampled_from([0.0, 0.01, 0.1, 0.5, 0.9, 1.0]),
    seed=st.integers(0, 2**16),
    rlc=st.integers(1, 6),
    block=st.integers(1, 50),
    dtype=st.sampled_from(["float16", "float32", "int8", "float64"]),
)
def test_encode_decode_is_identity_and_sizes_are_closed_forms(
    rows: int, cols: int, density: float, seed: int, rlc: int, block: int, dtype: str
) -> None:
    a = _random((rows, cols), density, seed, dtype)
    params = FormatParams(value_bits=a.dtype.itemsize * 8, rlc_bits=rlc, block=block)
    stats = BlockStats.of_positions(rows, cols, np.flatnonzero(a.ravel()), params)
    for fmt in FORMATS:
        e = encode(a, fmt, params)
        back = decode(e)
        assert back.dtype == a.dtype
        assert np.array_equal(back, a), fmt
        assert e.nbytes == format_bytes(fmt, stats, params), fmt


def test_scipy_nbytes_equal_closed_forms_at_32_bit_indices() -> None:
    import scipy.sparse as sp

    params = FormatParams(value_bits=32, index_bits=32)
    for shape, d in (((300, 200), 0.05), ((64, 900), 0.3), ((1, 5000), 0.01)):
        a = _random(shape, d, 7, "float32")
        stats = BlockStats.of_positions(*shape, np.flatnonzero(a.ravel()), params)
        csr, csc, coo = sp.csr_array(a), sp.csc_array(a), sp.coo_array(a)
        assert csr.indices.dtype == np.int32
        assert format_bytes("csr", stats, params) == (
            csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
        )
        assert format_bytes("csc", stats, params) == (
            csc.data.nbytes + csc.indices.nbytes + csc.indptr.nbytes
        )
        assert format_bytes("coo", stats, params) == coo.data.nbytes + sum(
            np.asarray(c, dtype=np.int32).nbytes for c in coo.coords
        )
        for fmt in ("csr", "csc", "coo"):
            assert encode(a, fmt, params).nbytes == format_bytes(fmt, stats, params)


def test_negative_zero_is_a_zero() -> None:
    a = np.array([[0.0, -0.0, 1.5, 0.0]], dtype=np.float16)
    params = FormatParams()
    for fmt in FORMATS:
        e = encode(a, fmt, params)
        assert np.array_equal(decode(e), a)
    assert encode(a, "coo", params).arrays["values"][1] == 1


@pytest.mark.parametrize(
    ("density", "best"),
    [
        (1.0, "dense"),
        (0.5, "bitmap"),
        (0.25, "bitmap"),
        (0.1, "rlc"),
        (0.05, "csr"),
        (0.01, "csr"),
        (0.001, "csr"),
        (0.0001, "coo"),
    ],
)
def test_expected_sizes_give_the_known_best_format(density: float, best: str) -> None:
    """4096x4096 FP16, RLC with 4-bit runs: the table of bits per element and the winners
    (CSR and CSC tie on a square matrix; CSR is listed first)."""
    params = FormatParams()
    s = BlockStats.expected(4096, 4096, density, params)
    assert best_format(s, params) == best
    assert bits_per_element("dense", s, params) == 16
    assert bits_per_element("bitmap", s, params) == pytest.approx(1 + 16 * density)
    assert bits_per_element("coo", s, params) == pytest.approx(40 * density, rel=1e-3)


def test_rlc_expected_pads_match_the_table() -> None:
    params = FormatParams()
    for d, bits in ((0.1, 2.45), (0.01, 1.35), (0.0001, 1.25)):
        s = BlockStats.expected(4096, 4096, d, params)
        assert bits_per_element("rlc", s, params) == pytest.approx(bits, abs=0.01)


def test_shape_picks_csc_or_csr() -> None:
    params = FormatParams()
    tall = BlockStats.expected(65536, 256, 0.001, params)
    wide = BlockStats.expected(256, 65536, 0.001, params)
    assert best_format(tall, params) == "csc"
    assert best_format(wide, params) == "csr"
    assert bits_per_element("csr", tall, params) == pytest.approx(0.083, abs=0.001)
    assert bits_per_element("csc", tall, params) == pytest.approx(0.032, abs=0.001)


def test_expected_stats_are_close_to_counted_ones() -> None:
    params = FormatParams(block=16)
    a = _random((512, 512), 0.02, 3)
    counted = BlockStats.of_positions(512, 512, np.flatnonzero(a.ravel()), params)
    expected = BlockStats.expected(512, 512, 0.02, params)
    assert counted.nnz == pytest.approx(expected.nnz, rel=0.05)
    assert counted.rlc_pads == pytest.approx(expected.rlc_pads, rel=0.1)
    assert counted.nonzero_blocks == pytest.approx(expected.nonzero_blocks, rel=0.05)


def test_fill_in() -> None:
    assert fill_in(0.001, 64) == pytest.approx(0.062, abs=0.001)
    assert fill_in(0.01, 4) == pytest.approx(0.039, abs=0.001)
    assert fill_in(0.3, 1) == pytest.approx(0.3)


@given(st.lists(st.integers(0, 2**20 - 1), max_size=50), st.integers(20, 40))
def test_pack_unpack(values: list[int], width: int) -> None:
    packed = pack(np.array(values, dtype=np.int64), width)
    assert packed.size == -(-(len(values) * width) // 8)
    assert unpack(packed, len(values), width).tolist() == values


def test_bad_requests() -> None:
    with pytest.raises(PayloadError, match="does not fit"):
        pack(np.array([4]), 2)
    with pytest.raises(PayloadError, match="unknown format"):
        format_bytes("zip", BlockStats(1, 1, 0, 0, 0), FormatParams())
    with pytest.raises(PayloadError, match="16-bit"):
        encode(np.zeros(4, dtype=np.float32), "dense", FormatParams())
    with pytest.raises(PayloadError, match="value width"):
        FormatParams(value_bits=12)
