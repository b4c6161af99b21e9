"""The fast construction paths build exactly what ProgramBuilder(auto_deps=True) builds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines import ALGORITHMS
from baselines.base import TrackedBuilder
from baselines.dbt import dbt_program
from baselines.direct import direct_program
from baselines.rhd import rhd_program
from chakra_ir import Buffer, Collective, CollectiveKind, ProgramBuilder, Slice
from tests.baselines.baseline_checker import check
from topologies import parse_topology

AG = CollectiveKind.ALLGATHER
RS = CollectiveKind.REDUCE_SCATTER
AR = CollectiveKind.ALLREDUCE
A2A = CollectiveKind.ALLTOALL
BC = CollectiveKind.BROADCAST
RED = CollectiveKind.REDUCE


@pytest.mark.parametrize("kind", [AG, RS, AR, A2A])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("mult", [1, 2])
def test_direct_vectorized_equals_builder(
    kind: CollectiveKind, n: int, inplace: bool, mult: int
) -> None:
    cf = (n if kind is AR else 1) * mult
    c = Collective(kind, n, cf, inplace)
    assert direct_program(c, name="d") == direct_program(c, name="d", vectorized=False)


@pytest.mark.parametrize("kind", [AG, RS, AR])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 12])
@pytest.mark.parametrize("inplace", [False, True])
def test_rhd_tracked_equals_builder(kind: CollectiveKind, n: int, inplace: bool) -> None:
    cf = (1 << (n.bit_length() - 1) if kind is AR else 1) * 2
    c = Collective(kind, n, cf, inplace)
    assert rhd_program(c, name="r") == rhd_program(c, name="r", tracked=False)


@pytest.mark.parametrize("kind", [AR, BC, RED])
@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("inplace", [False, True])
def test_dbt_tracked_equals_builder(kind: CollectiveKind, n: int, inplace: bool) -> None:
    c = Collective(kind, n, 6, inplace, root=n - 1 if kind.rooted else -1)
    assert dbt_program(c, name="t") == dbt_program(c, name="t", tracked=False)


@st.composite
def op_script(draw: st.DrawFn) -> tuple[Collective, list[tuple[str, int, Slice, Slice]]]:
    kind = draw(st.sampled_from([AG, RS, AR, A2A]))
    c = Collective(kind, 2, draw(st.integers(1, 4)), draw(st.booleans()))
    script = []
    for _ in range(draw(st.integers(1, 25))):
        what = draw(st.sampled_from(["send", "recv", "recv-reduce", "copy", "reduce"]))
        rank = draw(st.integers(0, 1))

        def slice_(rank: int) -> Slice:
            buf = draw(st.sampled_from(list(Buffer)))
            size = {
                Buffer.INPUT: c.input_chunks(rank),
                Buffer.OUTPUT: c.output_chunks(rank),
                Buffer.SCRATCH: 6,
            }[buf]
            start = draw(st.integers(0, size - 1))
            return Slice(buf, start, draw(st.integers(1, size - start)))

        a = slice_(rank)
        b = slice_(rank)
        if what in ("copy", "reduce"):
            count = min(a.count, b.count)
            a, b = Slice(a.buffer, a.index, count), Slice(b.buffer, b.index, count)
        script.append((what, rank, a, b))
    return c, script


@settings(max_examples=200, deadline=None)
@given(op_script())
def test_tracked_builder_equals_auto_deps(
    case: tuple[Collective, list[tuple[str, int, Slice, Slice]]],
) -> None:
    c, script = case
    fast = TrackedBuilder(c, name="s")
    ref = ProgramBuilder(c, auto_deps=True, name="s")
    for what, rank, a, b in script:
        peer = 1 - rank
        if what == "send":
            fast.send(rank, peer, a)
            ref.send(rank, peer, a)
        elif what in ("recv", "recv-reduce"):
            fast.recv(rank, peer, a, reduce=what == "recv-reduce")
            ref.recv(rank, peer, a, reduce=what == "recv-reduce")
        elif what == "copy":
            fast.copy(rank, a, b)
            ref.copy(rank, a, b)
        else:
            fast.reduce(rank, a, b)
            ref.reduce(rank, a, b)
    assert fast.build() == ref.build()


@pytest.mark.parametrize("name", ["ring", "ring-bidir", "direct", "rhd", "dbt"])
def test_large_programs_verify(name: str) -> None:

    entry = ALGORITHMS[name]
    for kind in sorted(entry.collectives):
        n = 64
        c = Collective(kind, n, entry.chunks_per_rank(kind, n), root=5 if kind.rooted else -1)
        program = entry.generate(c, parse_topology("torus:4x4x4"))
        check(program)
