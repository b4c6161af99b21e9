"""Property tests: random correct programs verify; mutations that break one are caught."""

from __future__ import annotations

import contextlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_ir import (
    Collective,
    CollectiveKind,
    Program,
    ProgramBuilder,
    Slice,
    format_program,
    parse_program,
)
from chakra_ir.verify import VerifyError, verify
from tests.chakra_ir.helpers import I, O, S

Edge = tuple[int, int]


def _tree(n: int, root: int, rng: random.Random) -> list[Edge]:
    """Random spanning tree edges (parent, child) in an order where parents are covered first."""
    covered = [root]
    rest = [r for r in range(n) if r != root]
    rng.shuffle(rest)
    edges = []
    for r in rest:
        edges.append((rng.choice(covered), r))
        covered.append(r)
    return edges


def broadcast(n: int, root: int, edges: list[Edge]) -> Program:
    b = ProgramBuilder(Collective(CollectiveKind.BROADCAST, n, 1, root=root), auto_deps=True)
    b.copy(root, Slice(I, 0), Slice(O, 0))
    for parent, child in edges:
        b.send(parent, child, Slice(O, 0))
        b.recv(child, parent, Slice(O, 0))
    return b.build()


def allreduce(n: int, edges: list[Edge], extra: Edge | None = None) -> Program:
    """Reduce up the tree (children before parents), then broadcast down."""
    root = edges[0][0] if edges else 0
    b = ProgramBuilder(Collective(CollectiveKind.ALLREDUCE, n, 1, inplace=True), auto_deps=True)
    up = list(reversed(edges))
    if extra is not None:
        up.append(extra)
    for parent, child in up:
        b.send(child, parent, Slice(I, 0))
        b.recv(parent, child, Slice(I, 0), reduce=True)
    for parent, child in edges:
        b.send(parent, child, Slice(I, 0))
        b.recv(child, parent, Slice(I, 0))
    del root
    return b.build()


trees = st.tuples(st.integers(2, 9), st.integers(0, 10**6)).map(
    lambda t: (t[0], _tree(t[0], 0, random.Random(t[1])))
)


@settings(max_examples=60, deadline=None)
@given(trees)
def test_random_broadcast_trees_verify(case: tuple[int, list[Edge]]) -> None:
    n, edges = case
    verify(broadcast(n, 0, edges))


@settings(max_examples=60, deadline=None)
@given(trees, st.data())
def test_dropping_any_edge_is_caught(case: tuple[int, list[Edge]], data: st.DataObject) -> None:
    n, edges = case
    drop = data.draw(st.integers(0, len(edges) - 1))
    bad = edges[:drop] + edges[drop + 1 :]
    try:
        verify(broadcast(n, 0, bad))
    except VerifyError as e:
        assert e.check == "semantics"
    else:
        raise AssertionError("a broadcast missing an edge verified")


@settings(max_examples=60, deadline=None)
@given(trees)
def test_random_tree_allreduce_verifies(case: tuple[int, list[Edge]]) -> None:
    n, edges = case
    verify(allreduce(n, edges))


@settings(max_examples=60, deadline=None)
@given(trees, st.data())
def test_reducing_an_edge_twice_is_caught(
    case: tuple[int, list[Edge]], data: st.DataObject
) -> None:
    n, edges = case
    again = data.draw(st.sampled_from(edges))
    try:
        verify(allreduce(n, edges, extra=again))
    except VerifyError as e:
        assert e.check == "semantics"
        assert "count twice" in str(e)
    else:
        raise AssertionError("a contribution reduced twice verified")


slices = st.builds(
    lambda b, i, c: Slice(b, i, c),
    st.sampled_from([I, O, S]),
    st.integers(0, 5),
    st.integers(1, 3),
)


@st.composite
def arbitrary_programs(draw: st.DrawFn) -> Program:
    """Programs that need not be correct: the text form must carry any of them."""
    n = draw(st.integers(1, 4))
    kind = draw(st.sampled_from([k for k in CollectiveKind if k is not CollectiveKind.CUSTOM]))
    root = draw(st.integers(0, n - 1)) if kind.rooted else -1
    c = Collective(kind, n, draw(st.integers(1, 3)), inplace=draw(st.booleans()), root=root)
    b = ProgramBuilder(c, name=draw(st.sampled_from(["", "x", "ring-2"])))
    from chakra_ir.program import Hints

    for r in range(n):
        for i in range(draw(st.integers(0, 5))):
            deps = (
                tuple(sorted(set(draw(st.lists(st.integers(0, max(i - 1, 0)), max_size=3)))))
                if i
                else ()
            )
            hints = Hints(
                tuple(draw(st.lists(st.integers(0, 9), max_size=3))),
                draw(st.integers(-1, 3)),
                draw(st.integers(-1, 3)),
            )
            op = draw(st.integers(0, 3))
            peer = draw(st.integers(0, n - 1))
            if op == 0:
                b.send(r, peer, draw(slices), tag=draw(st.integers(0, 5)), deps=deps, hints=hints)
            elif op == 1:
                b.recv(
                    r,
                    peer,
                    draw(slices),
                    tag=draw(st.integers(0, 5)),
                    reduce=draw(st.booleans()),
                    deps=deps,
                    hints=hints,
                )
            else:
                s = draw(slices)
                d = Slice(draw(st.sampled_from([I, O, S])), draw(st.integers(0, 5)), s.count)
                (b.copy if op == 2 else b.reduce)(r, s, d, deps=deps, hints=hints)
    return b.build()


@settings(max_examples=100, deadline=None)
@given(arbitrary_programs())
def test_text_form_round_trips(p: Program) -> None:
    assert parse_program(format_program(p)) == p


@settings(max_examples=100, deadline=None)
@given(arbitrary_programs())
def test_verify_never_crashes(p: Program) -> None:
    with contextlib.suppress(VerifyError):
        verify(p)
