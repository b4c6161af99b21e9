"""In-network flows in the IR: builder, text form, ET codec, verify."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.innetwork import INNETWORK_KINDS, innetwork_program
from chakra_ir import Buffer, FlowIn, FlowOut, ProgramBuilder, Slice
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import decode_program, encode_program
from chakra_ir.grouping import merge_groups, split_groups
from chakra_ir.program import OpKind, Program
from chakra_ir.text import format_program, parse_program
from chakra_ir.verify import VerifyError, verify, verify_routes
from topologies import parse_topology

K = CollectiveKind
FRED = parse_topology("fred:8")
I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def one(buf: Buffer, index: int = 0, count: int = 1) -> Slice:
    return Slice(buf, index, count)


def allreduce_flow(n: int = 4, inplace: bool = False) -> Program:
    b = ProgramBuilder(Collective(K.ALLREDUCE, n, 1, inplace))
    for r in range(n):
        b.flow_in(r, 0, one(I))
    for r in range(n):
        b.flow_out(r, 0, one(O))
    return b.build()


def test_object_view_and_text_round_trip() -> None:
    p = allreduce_flow()
    assert p.has_flows
    assert p.ops(1) == [FlowIn(0, one(I)), FlowOut(0, one(O))]
    assert int(p.kind[0]) == OpKind.FLOW_IN and int(p.peer[0]) == -1
    text = format_program(p)
    assert "0 flow-in flow=0 src=input[0]" in text
    assert "1 flow-out flow=0 dst=output[0]" in text
    assert parse_program(text) == p
    verify(p)


def test_codec_round_trip() -> None:
    for kind in sorted(INNETWORK_KINDS):
        for inplace in (False, True):
            c = Collective(kind, 6, 2, inplace, 2 if kind.rooted else -1)
            p = innetwork_program(c, FRED, "x")
            assert decode_program(encode_program(p, 4096)) == p


def test_every_innetwork_program_verifies_grouped_too() -> None:
    for kind in sorted(INNETWORK_KINDS):
        for n in (2, 3, 8):
            c = Collective(kind, n, 1, False, n - 1 if kind.rooted else -1)
            p = innetwork_program(c, FRED)
            verify(p)
            verify_routes(p, FRED)
    c = Collective(K.ALLREDUCE, 8, 1, groups=((0, 2, 4, 6), (1, 3, 5, 7)))
    parts = [innetwork_program(c.group_collective(g), FRED) for g in range(2)]
    merged = merge_groups(c, parts)
    verify(merged)
    # Flow ids are program-wide: the second group's flow was renumbered, and split restores it.
    assert sorted(set(merged.tag.tolist())) == [0, 1]
    assert split_groups(merged)[1].tag.tolist() == [1] * 8


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda b: b.flow_in(0, 0, one(I)) and None, "flow 0 has no output"),
        (lambda b: b.flow_out(0, 0, one(O)) and None, "flow 0 has no input"),
        (
            lambda b: (b.flow_in(0, 0, one(I)), b.flow_in(0, 0, one(I)), b.flow_out(1, 0, one(O))),
            "rank 0 contributes to flow 0 twice",
        ),
        (
            lambda b: (b.flow_in(0, 0, one(I)), b.flow_out(0, 0, one(O))),
            "involves rank 0 only",
        ),
        (
            lambda b: (b.flow_in(0, 3, Slice(I, 0, 1)), b.flow_out(1, 3, Slice(S, 0, 2))),
            "moves 2 slots, but flow 3 moves 1",
        ),
        (lambda b: (b.flow_in(0, -1, one(I)), b.flow_out(1, -1, one(O))), "negative flow id"),
    ],
)
def test_structure_errors(build: object, message: str) -> None:
    b = ProgramBuilder(Collective(K.ALLREDUCE, 2, 1))
    build(b)  # type: ignore[operator]
    with pytest.raises(VerifyError, match=message) as e:
        verify(b.build())
    assert e.value.check == "structure"


def test_flow_across_groups_is_refused() -> None:
    c = Collective(K.ALLREDUCE, 4, 1, groups=((0, 1), (2, 3)))
    b = ProgramBuilder(c)
    for r in range(4):
        b.flow_in(r, 0, one(I))
        b.flow_out(r, 0, one(O))
    with pytest.raises(VerifyError, match="spans ranks of groups 0, 1"):
        verify(b.build())


def test_a_contribution_summed_twice_inside_the_network() -> None:
    b = ProgramBuilder(Collective(K.ALLREDUCE, 2, 1))
    b.copy(0, one(I), one(S))
    b.flow_in(0, 0, one(S), deps=[0])
    b.flow_in(1, 0, one(I))
    b.flow_in(1, 1, one(I))
    b.flow_out(0, 1, one(O))
    b.flow_out(1, 0, one(O))
    b.flow_in(0, 1, one(I))  # flow 1 sums rank 1's input and rank 0's; flow 0 likewise
    verify(b.build())  # each flow sums each contribution once: correct
    b = ProgramBuilder(Collective(K.ALLREDUCE, 2, 1))
    b.flow_in(0, 0, one(I))
    b.flow_in(1, 0, one(I))
    b.flow_out(0, 0, one(S))
    b.flow_in(0, 1, one(S), deps=[1])  # the sum of flow 0 already holds rank 1's input...
    b.flow_in(1, 1, one(I))  # ...which flow 1 adds again
    b.flow_out(0, 1, one(O))
    b.flow_out(1, 1, one(O))
    with pytest.raises(VerifyError, match=r"contributes .* to flow 1.*count twice") as e:
        verify(b.build())
    assert e.value.check == "semantics"


def test_wrong_result_and_race() -> None:
    b = ProgramBuilder(Collective(K.ALLREDUCE, 3, 1))
    for r in range(2):  # rank 2 never contributes
        b.flow_in(r, 0, one(I))
    for r in range(3):
        b.flow_out(r, 0, one(O))
    with pytest.raises(VerifyError, match="chunk\\(2,0\\) is missing"):
        verify(b.build())
    # A flow's result lands in a slot another, unordered operation reads.
    b = ProgramBuilder(Collective(K.ALLREDUCE, 2, 1))
    b.copy(0, one(I), one(S))
    b.flow_in(0, 0, one(S), deps=[0])
    b.flow_in(1, 0, one(I))
    b.flow_out(1, 0, one(O))
    b.flow_out(0, 0, one(O))
    b.flow_in(0, 1, one(S), deps=[0])
    b.flow_in(1, 1, one(I))
    b.flow_out(0, 1, one(S))  # overwrites scratch[0], unordered with flow-in 1 of rank 0
    with pytest.raises(VerifyError, match="race"):
        verify(b.build())


def test_deadlock_through_a_flow() -> None:
    b = ProgramBuilder(Collective(K.ALLREDUCE, 2, 1))
    b.flow_out(0, 0, one(O))
    b.flow_in(0, 0, one(I), deps=[0])  # waits for the flow it feeds
    b.flow_in(1, 0, one(I))
    b.flow_out(1, 0, one(O))
    with pytest.raises(VerifyError) as e:
        verify(b.build())
    assert e.value.check == "progress"


def test_topologies_without_reducing_switches_refuse_flows() -> None:
    p = allreduce_flow(4)
    verify_routes(p, parse_topology("switch:4,innet=yes"))
    for spec in ("switch:4", "fred:4,innet=no", "ring:4"):
        with pytest.raises(VerifyError, match="needs switches that reduce and multicast"):
            verify_routes(p, parse_topology(spec))


@st.composite
def flow_programs(draw: st.DrawFn) -> tuple[Program, bool]:
    """Random flows over a 4-rank custom all-reduce-like layout: each flow sums a random set
    of ranks' inputs into scratch slots of random ranks; the result is correct exactly when
    no rank's input is summed twice into one slot (never here: inputs are distinct)."""
    n = 4
    flows = draw(st.integers(1, 4))
    b = ProgramBuilder(Collective(K.ALLREDUCE, n, 1))
    expect_ok = True
    scratch = [0] * n
    for f in range(flows):
        ins = draw(st.sets(st.integers(0, n - 1), min_size=1))
        outs = draw(st.sets(st.integers(0, n - 1), min_size=1))
        if len(ins | outs) < 2:
            expect_ok = False
        for r in sorted(ins):
            b.flow_in(r, f, one(I))
        for r in sorted(outs):
            b.flow_out(r, f, one(S, scratch[r]))
            scratch[r] += 1
    for r in range(n):
        b.flow_in(r, flows, one(I))
        b.flow_out(r, flows, one(O))
    return b.build(), expect_ok


@settings(max_examples=80, deadline=None)
@given(flow_programs())
def test_random_flows(case: tuple[Program, bool]) -> None:
    p, ok = case
    if ok:
        verify(p)
        assert parse_program(format_program(p)) == p
        assert decode_program(encode_program(p, 64)) == p
    else:
        with pytest.raises(VerifyError, match="involves rank"):
            verify(p)
