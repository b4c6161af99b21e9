"""Swing (baselines/swing.py): the peer sequence, the programs verify on many tori, each
instance uses its own port, and topologies Swing does not serve are refused in one line."""

from __future__ import annotations

import random

import pytest
from click.testing import CliRunner

from baselines import ALGORITHMS
from baselines.base import BaselineError
from baselines.swing import instance_steps, rho, swing_grid, swing_peer
from chakra_ir import Collective, CollectiveKind, Program, Send
from chakra_ir.verify import verify, verify_routes
from topologies import parse_topology

AR = CollectiveKind.ALLREDUCE
VARIANTS = ["swing", "swing-latency"]


def test_rho_is_the_papers_sequence() -> None:
    assert [rho(s) for s in range(7)] == [1, -1, 3, -5, 11, -21, 43]
    for s in range(12):
        assert abs(rho(s)) < 2 ** (s + 1)


def test_swing_peer_pairs_are_symmetric() -> None:
    for p in (2, 4, 8, 16, 32):
        for s in range(p.bit_length() - 1):
            for mirrored in (False, True):
                for c in range(p):
                    q = swing_peer(c, s, p, mirrored=mirrored)
                    assert q != c
                    assert swing_peer(q, s, p, mirrored=mirrored) == c


def _program(name: str, spec: str, *, inplace: bool = False, mult: int = 1) -> Program:
    topo = parse_topology(spec)
    entry = ALGORITHMS[name]
    npus = tuple(range(topo.num_npus))
    cf = entry.chunks_on(AR, npus, topo) * mult
    program = entry.generate(Collective(AR, topo.num_npus, cf, inplace=inplace), topo)
    verify(program)
    verify_routes(program, topo)
    return program


def _sends(program: Program, rank: int, tag: int) -> list[Send]:
    return [op for op in program.ops(rank) if isinstance(op, Send) and op.tag == tag]


@pytest.mark.parametrize("p", [4, 8, 16, 32])
def test_per_step_peer_distances_follow_the_sequence(p: int) -> None:
    """On a ring of p NPUs, instance 0 (tag 0) of every rank sends at reduce-scatter step s to
    the rank at signed distance +rho(s) (even ranks) or -rho(s) (odd ranks), and the all-gather
    walks the same peers backwards; the mirrored instance (tag 1) takes the other sign."""
    steps = p.bit_length() - 1
    for name in VARIANTS:
        program = _program(name, f"ring:{p}")
        for r in range(p):
            for tag, mirrored in ((0, False), (1, True)):
                sign = 1 if (r % 2 == 0) != mirrored else -1
                want = [(r + sign * rho(s)) % p for s in range(steps)]
                if name == "swing":
                    want += want[::-1]
                assert [op.peer for op in _sends(program, r, tag)] == want


def test_bandwidth_optimal_halves_the_data_every_step() -> None:
    program = _program("swing", "ring:16")
    share = program.collective.chunks_per_rank // 2
    sizes = [op.src.count for op in _sends(program, 5, 0)]
    halves = [share >> (s + 1) for s in range(4)]
    assert sizes == halves + halves[::-1]


def test_dimensions_alternate_and_rotations_start_apart() -> None:
    assert instance_steps((2, 2), 0) == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert instance_steps((2, 2), 1) == [(1, 0), (0, 0), (1, 1), (0, 1)]
    assert instance_steps((3, 1, 2), 2) == [(2, 0), (0, 0), (1, 0), (2, 1), (0, 1), (0, 2)]
    # torus 4x4: instance 2 starts on dimension 1. Rank 5 is (1, 1), odd in dimension 1, so
    # it goes -rho(0) = -1 there, to (1, 0) = rank 1; instance 0 goes to (0, 1) = rank 4.
    program = _program("swing", "torus:4x4")
    assert _sends(program, 5, 2)[0].peer == 1
    assert _sends(program, 5, 0)[0].peer == 4
    assert _sends(program, 5, 3)[0].peer == 9  # mirrored: +1 in dimension 1


@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4", "torus:8x8", "torus:4x4x4"])
def test_every_port_carries_an_instance_at_every_step(spec: str) -> None:
    """On a torus of equal dimensions (longer than 2, so that + and - are two links), the 2D
    instances of a step leave every rank on 2D different first links."""
    topo = parse_topology(spec)
    program = _program("swing", spec)
    parts = 2 * len([p for p in topo.layout.shape if p > 1]) if topo.layout else 0
    for r in range(topo.num_npus):
        per_tag = [_sends(program, r, tag) for tag in range(parts)]
        for s in range(len(per_tag[0])):
            first_hops = {topo.route(r, sends[s].peer)[1] for sends in per_tag}
            assert len(first_hops) == parts, (r, s)


SHAPES = [
    "ring:2",
    "ring:3",
    "torus:5",
    "ring:16",
    "torus:4x4",
    "torus:8x8",
    "torus:3x4",
    "torus:6x5",
    "torus:4x4x4",
    "torus:2x3x4",
    "torus:2x2x2x2",
    "torus:3x2x2x3",
    "stack:ring4*ring2",
    "mesh:4x4",
    "mesh:3x5",
    "hypercube:3",
]


@pytest.mark.parametrize("spec", SHAPES)
@pytest.mark.parametrize("name", VARIANTS)
def test_verifies_on_many_shapes(name: str, spec: str) -> None:
    for inplace in (False, True):
        _program(name, spec, inplace=inplace, mult=1 + int(inplace))


@pytest.mark.parametrize("name", VARIANTS)
def test_sub_tori_and_permuted_placements(name: str) -> None:
    """Ranks on one row, one plane, or the whole torus in a shuffled order."""
    topo = parse_topology("torus:4x3x2")
    entry = ALGORITHMS[name]
    row = (4, 5, 6, 7)  # dimension 0 at y=1, z=0
    plane = tuple(x for x in range(24) if x // 12 == 1)  # z=1: 4x3
    column = (1, 5, 9)  # dimension 1 at x=1, z=0
    shuffled = tuple(random.Random(3).sample(range(24), 24))
    for npus in (row, plane, column, shuffled):
        cf = entry.chunks_on(AR, npus, topo)
        program = entry.generate(Collective(AR, len(npus), cf, placement=npus), topo)
        verify(program)
        verify_routes(program, topo)
    assert swing_grid(Collective(AR, 4, 1, placement=row), topo).shape == (4,)
    assert swing_grid(Collective(AR, 12, 1, placement=plane), topo).shape == (4, 3)


@pytest.mark.parametrize(
    ("spec", "npus", "words"),
    [
        ("switch:16", None, "is not one"),
        ("fc:8", None, "is not one"),
        ("uniring:8", None, "is not one"),
        ("fred:16", None, "is not one"),
        ("torus:2x2x2x2x2", None, "1 to 4 dimensions"),
        ("torus:4x4", (0, 1, 2, 4), "sub-torus"),
        ("torus:4x4", (0, 1, 4, 5), "sub-torus"),
    ],
)
def test_refuses_what_it_does_not_serve(
    spec: str, npus: tuple[int, ...] | None, words: str
) -> None:
    topo = parse_topology(spec)
    placement = npus or tuple(range(topo.num_npus))
    for name in VARIANTS:
        with pytest.raises(BaselineError, match=words) as e:
            ALGORITHMS[name].chunks_on(AR, placement, topo)
        assert "\n" not in str(e.value)


def test_serves_only_allreduce() -> None:
    with pytest.raises(BaselineError, match="does not implement allgather"):
        ALGORITHMS["swing"].chunks_on(CollectiveKind.ALLGATHER, (0, 1), parse_topology("ring:2"))


def test_cli_synthesize_and_refusal(tmp_path: object) -> None:
    from collc.cli import cli

    runner = CliRunner()
    out = f"{tmp_path}/o"
    ok = runner.invoke(
        cli, ["synthesize", "-t", "torus:4x4", "-c", "allreduce", "-a", "swing", "-o", out]
    )
    assert ok.exit_code == 0, ok.output
    argv = ["synthesize", "-t", "switch:8", "-c", "allreduce", "-a", "swing", "-o", out + "2"]
    bad = runner.invoke(cli, argv)
    assert bad.exit_code == 2
    assert "swing serves tori" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
