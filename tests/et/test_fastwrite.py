"""The fast serializer writes exactly the bytes of the generated bindings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_ir.et import schema as s
from chakra_ir.et.fastwrite import serialize_nodes
from chakra_ir.et.pbwrite import serialize_nodes_pb
from chakra_ir.et.table import AttrSpec, NodeTable
from chakra_ir.et.wire import as_u64, put_varints, read_varints, varint, varint_len

RANGES = {
    s.INT32_VAL: (-(2**31), 2**31 - 1),
    s.INT64_VAL: (-(2**63), 2**63 - 1),
    s.UINT32_VAL: (0, 2**32 - 1),
    s.UINT64_VAL: (0, 2**63 - 1),
    s.SINT32_VAL: (-(2**31), 2**31 - 1),
    s.SINT64_VAL: (-(2**63), 2**63 - 1),
    s.BOOL_VAL: (0, 1),
}
LIST_RANGES = {lst: RANGES[el] for lst, el in s.LIST_ELEMENT.items()}


def _interesting(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = [
        x for x in (lo, hi, 0, 1, 127, 128, 16383, 16384, -1, 2**31 - 1, 2**32 - 1) if lo <= x <= hi
    ]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


@st.composite
def tables(draw: st.DrawFn) -> NodeTable:
    files = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    n = sum(files)
    file_offsets = np.concatenate([[0], np.cumsum(files)]).astype(np.int64)
    names = tuple(draw(st.lists(st.text(max_size=8) | st.just("n" * 200), min_size=1, max_size=4)))
    ids = np.array(
        draw(st.lists(_interesting(0, 2**63 - 1), min_size=n, max_size=n)), dtype=np.int64
    )
    types = np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)), dtype=np.int64)
    codes = np.array(
        draw(st.lists(st.integers(0, len(names) - 1), min_size=n, max_size=n)), dtype=np.int64
    )
    dep_rows = [draw(st.lists(_interesting(0, 2**63 - 1), max_size=4)) for _ in range(n)]
    dep_offsets = np.concatenate([[0], np.cumsum([len(r) for r in dep_rows])]).astype(np.int64)
    deps = np.array([x for r in dep_rows for x in r], dtype=np.int64)
    durs = np.array(
        draw(st.lists(_interesting(0, 2**63 - 1), min_size=n, max_size=n)), dtype=np.int64
    )
    attrs = []
    for i, member in enumerate(
        draw(st.lists(st.sampled_from(sorted(RANGES) + sorted(LIST_RANGES)), max_size=6))
    ):
        name = draw(st.sampled_from(["comm_size", "a", "", "x" * 130, f"attr{i}"]))
        if member in RANGES:
            lo, hi = RANGES[member]
            vals = np.array(
                draw(st.lists(_interesting(lo, hi), min_size=n, max_size=n)), dtype=np.int64
            )
            present = (
                None
                if draw(st.booleans())
                else np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
            )
            attrs.append(AttrSpec(name, member, vals, present))
        else:
            lo, hi = LIST_RANGES[member]
            rows = [draw(st.lists(_interesting(lo, hi), max_size=3)) for _ in range(n)]
            offs = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
            attrs.append(
                AttrSpec(
                    name,
                    member,
                    list_offsets=offs,
                    list_values=np.array([x for r in rows for x in r], dtype=np.int64),
                )
            )
    return NodeTable(file_offsets, ids, types, codes, names, dep_offsets, deps, durs, tuple(attrs))


@settings(max_examples=150, deadline=None)
@given(tables())
def test_fast_serializer_matches_generated_bindings(table: NodeTable) -> None:
    data, bounds = serialize_nodes(table)
    ref = serialize_nodes_pb(table)
    assert len(bounds) == table.num_files + 1
    for f in range(table.num_files):
        assert data[bounds[f] : bounds[f + 1]].tobytes() == ref[f]


@given(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=20))
def test_varint_columns(values: list[int]) -> None:
    arr = np.array([v & (2**64 - 1) for v in values], dtype=np.uint64)
    lens = varint_len(arr)
    assert [int(x) for x in lens] == [len(varint(v)) for v in values]
    pos = (np.cumsum(lens) - lens).astype(np.int64)
    out = np.zeros(int(lens.sum()) + 16, dtype=np.uint8)
    put_varints(out, pos, arr)
    assert out[: int(lens.sum())].tobytes() == b"".join(varint(v) for v in values)
    got, n, bad = read_varints(out, pos)
    assert not bad.any()
    assert got.tolist() == arr.tolist() and n.tolist() == lens.tolist()


def test_signed_columns_sign_extend() -> None:
    assert as_u64(np.array([-1], dtype=np.int32))[0] == 2**64 - 1
    assert varint(-1) == b"\xff" * 9 + b"\x01"
