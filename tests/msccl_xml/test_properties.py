"""Property tests: random valid Programs -> XML -> Program verifies and is a fixed point."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.msccl_xml import XmlOptions, program_to_xml
from chakra_ir import Buffer, Program
from chakra_ir.verify import verify
from mscclang_frontend.xml import read_xml
from tests.msccl_xml.programs import tree_allreduce, tree_broadcast


def _ops(p: Program, rank: int) -> Counter[tuple[int, int, int, int, int, int, int]]:
    """Operations of a rank as a multiset of (kind, peer, src, dst, count), slots physical."""
    c = p.collective
    out: Counter[tuple[int, int, int, int, int, int, int]] = Counter()
    for g in range(int(p.rank_offsets[rank]), int(p.rank_offsets[rank + 1])):
        slots = []
        for buf, idx in ((p.src_buf[g], p.src_index[g]), (p.dst_buf[g], p.dst_index[g])):
            if buf < 0:
                slots += [-1, -1]
            else:
                b, i = c.physical(rank, Buffer(int(buf)), int(idx))
                slots += [int(b), i]
        out[(int(p.kind[g]), int(p.peer[g]), *slots, int(p.count[g]))] += 1
    return out


def _check(p: Program, fusion: bool) -> None:
    verify(p)
    opts = XmlOptions(fusion=fusion)
    q = read_xml(program_to_xml(p, opts)).program
    verify(q)
    assert q.collective == p.collective
    assert q.name == (p.name or p.collective.kind.value)
    for r in range(p.num_ranks):
        assert _ops(q, r) == _ops(p, r)
    assert read_xml(program_to_xml(q, opts)).program == q


cases = st.tuples(st.integers(2, 8), st.integers(1, 3), st.integers(0, 10**6), st.booleans())


@settings(max_examples=40, deadline=None)
@given(cases)
def test_random_tree_broadcasts(case: tuple[int, int, int, bool]) -> None:
    n, cf, seed, fusion = case
    _check(tree_broadcast(n, cf, random.Random(seed)), fusion)


@settings(max_examples=40, deadline=None)
@given(cases, st.booleans())
def test_random_tree_allreduces(case: tuple[int, int, int, bool], inplace: bool) -> None:
    n, cf, seed, fusion = case
    _check(tree_allreduce(n, cf, random.Random(seed), inplace=inplace), fusion)
