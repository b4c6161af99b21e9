"""All-to-all: TACOS's personalised-chunk synthesis (`tacos.alltoall`), the dimensional
baseline, and the hop-bytes bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.sim import simulate
from baselines import ALGORITHMS
from baselines.base import BaselineError
from baselines.hierarchical import topology_grid
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import decode_program, encode_program
from chakra_ir.verify import verify, verify_routes
from tacos.alltoall import synthesize_alltoall
from tacos.bounds import lower_bounds
from tacos.errors import TacosError
from tacos.personal import shortest_times
from tests.cli.test_cli import run
from topologies import parse_topology

A2A = CollectiveKind.ALLTOALL
TOPOLOGIES = [
    "ring:5",
    "uniring:4",
    "torus:4x4",
    "mesh:3x4",
    "switch:6",
    "fc:4",
    "stack:ring2*switch3",
    "hypercube:3",
    "torus:4x4,fail=0-1;5>6",
    "mesh:4x4,bw=[50GB/s,20GB/s]",
]


@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.parametrize("cf", [1, 2])
@pytest.mark.parametrize("inplace", [False, True])
def test_tacos_alltoall_is_correct_and_runs_as_planned(spec: str, cf: int, inplace: bool) -> None:
    topo = parse_topology(spec)
    c = Collective(A2A, topo.num_npus, cf, inplace=inplace)
    syn = synthesize_alltoall(c, topo, 4096.0)
    p = syn.program
    verify(p)
    verify_routes(p, topo)
    assert decode_program(encode_program(p, 4096)) == p
    took = simulate(p, topo, 4096).finish_ns
    # Every send keeps its link's planned order and never waits for more than its data.
    assert took <= syn.estimated_ns + 1e-6
    bounds = lower_bounds(A2A, topo, 4096 * c.size_chunks, chunks_per_npu=cf)
    for name, ns in bounds.items.items():
        assert took >= ns * (1 - 1e-9), (name, ns, took)


def test_a_subset_of_npus_relays_through_the_others() -> None:
    topo = parse_topology("torus:4x4")
    c = Collective(A2A, 4, 1, placement=(0, 5, 10, 15))
    p = synthesize_alltoall(c, topo, 8192.0).program
    verify(p)
    verify_routes(p, topo)
    assert max(len(p.route_of(g)) for g in range(p.num_ops)) > 2  # multi-hop channels


def test_messages_follow_shortest_paths_only() -> None:
    topo = parse_topology("torus:4x4x4")
    c = Collective(A2A, 64, 1)
    p = synthesize_alltoall(c, topo, 1 << 14).program
    hops = sum(max(len(p.route_of(g)) - 1, 0) for g in range(p.num_ops))
    # Sum over ordered pairs of their distances: from each NPU, 3 dimensions of ring-4
    # distances (0 + 1 + 2 + 1) over the 16 NPUs of each other dimension pair: 3 * 4 * 16.
    assert hops == 64 * 3 * 4 * 16
    assert p.num_ops == 2 * hops + 64  # a send and a receive per hop, one own-block copy each


def test_same_arguments_same_program_and_seeds_keep_the_best() -> None:
    topo = parse_topology("mesh:4x4")
    c = Collective(A2A, 16, 1)
    a = synthesize_alltoall(c, topo, 1e4, seed=2)
    assert a.program == synthesize_alltoall(c, topo, 1e4, seed=2).program
    best = synthesize_alltoall(c, topo, 1e4, seed=0, seeds=3)
    singles = [synthesize_alltoall(c, topo, 1e4, seed=s).estimated_ns for s in range(3)]
    assert best.estimated_ns == min(singles)
    assert best.seed == singles.index(min(singles))


def test_beats_the_baselines_on_a_torus_and_ties_direct_on_a_switch() -> None:
    for spec, better in (("torus:4x4x4", True), ("switch:16", False)):
        topo = parse_topology(spec)
        n = topo.num_npus
        c = Collective(A2A, n, 1)
        cb = (16 << 20) // n
        tacos = simulate(synthesize_alltoall(c, topo, cb).program, topo, cb).finish_ns
        direct = simulate(ALGORITHMS["direct"].generate(c, topo), topo, cb).finish_ns
        if better:
            assert tacos < 0.8 * direct
        else:
            assert tacos == pytest.approx(direct, rel=0.01)


def test_refusals() -> None:
    topo = parse_topology("ring:4")
    with pytest.raises(TacosError, match="serves alltoall"):
        synthesize_alltoall(Collective(CollectiveKind.ALLGATHER, 4, 1), topo, 1e3)
    with pytest.raises(TacosError, match="chunk size"):
        synthesize_alltoall(Collective(A2A, 4, 1), topo, float("inf"))


def test_shortest_times_are_symmetric_on_a_torus() -> None:
    from tacos.channels import Net, build_channels, time_channel
    from topologies.cost_model import DEFAULT_COST_MODEL

    topo = parse_topology("torus:3x4")
    net = Net.of(topo)
    ch = build_channels(net, list(range(12)))
    dur = [time_channel(net, x, 1000.0, DEFAULT_COST_MODEL).dur for x in ch]
    dist = shortest_times(12, ch, dur)
    assert all(dist[a][b] == dist[b][a] for a in range(12) for b in range(12))
    assert dist[0][0] == 0 and dist[0][5] == 2 * dur[0]


@pytest.mark.parametrize("spec", ["torus:4x4", "mesh:2x3x2", "stack:ring4*switch4", "ring:8"])
@pytest.mark.parametrize("inplace", [False, True])
def test_dimensional_baseline(spec: str, inplace: bool) -> None:
    topo = parse_topology(spec)
    algo = ALGORITHMS["dimensional"]
    c = Collective(
        A2A, topo.num_npus, algo.chunks_per_rank(A2A, topo.num_npus) * 2, inplace=inplace
    )
    p = algo.generate(c, topo)
    verify(p)
    # Every message stays inside one line of one dimension.
    shape = topology_grid(topo).shape
    for r in range(p.num_ranks):
        for op in p.ops(r):
            peer = getattr(op, "peer", None)
            if peer is None:
                continue
            differ = [
                d
                for d in range(len(shape))
                if (r // _stride(shape, d)) % shape[d] != (peer // _stride(shape, d)) % shape[d]
            ]
            assert len(differ) == 1


def _stride(shape: tuple[int, ...], d: int) -> int:
    out = 1
    for s in shape[:d]:
        out *= s
    return out


def test_dimensional_refuses_what_it_cannot_serve() -> None:
    algo = ALGORITHMS["dimensional"]
    with pytest.raises(BaselineError, match="dimensional needs a topology with a grid"):
        algo.generate(Collective(A2A, 4, 1), parse_topology("graph:4,links=0-1;1-2;2-3;3-0"))
    with pytest.raises(BaselineError, match="one rank on every NPU"):
        algo.generate(Collective(A2A, 2, 1, placement=(0, 1)), parse_topology("torus:2x2"))


def test_hop_bytes_bound() -> None:
    topo = parse_topology("torus:4x4x4,bw=50GB/s")
    size = 64 << 20
    b = lower_bounds(A2A, topo, size)
    block = size / 64
    # 64*63 pairs at 3 * 64/63 * ... hops: sum over pairs of hops = 64 * 64 * 3 (ring-4 mean 1).
    expect = 64 * 64 * 3 * block / 50.0 / (64 * 6)
    assert b.items["hop-bytes"] == pytest.approx(expect)
    hetero = lower_bounds(A2A, parse_topology("mesh:2x2,bw=[10GB/s,40GB/s]"), 4096)
    # Pairs: 4 one-hop over 10 GB/s, 4 over 40 GB/s, 4 two-hop (one of each); 8 links.
    per_byte = 4 / 10 + 4 / 40 + 4 * (1 / 10 + 1 / 40)
    assert hetero.items["hop-bytes"] == pytest.approx(per_byte * 1024 / 8)


def test_cli_synthesize_and_bench(tmp_path: Path) -> None:
    res = run(
        "synthesize", "-t", "torus:4x4", "-c", "alltoall", "-o", str(tmp_path / "a"), "--json"
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["algorithm"] == "tacos" and s["estimated_ns"] > 0
    sim = json.loads(run("simulate", str(tmp_path / "a"), "--json").output)
    assert sim["finish_ns"] == pytest.approx(s["estimated_ns"])
    res = run(
        "bench", "-t", "torus:4x4", "-c", "alltoall", "--sizes", "1MiB",
        "--algorithms", "tacos,direct,dimensional", "--json",
    )  # fmt: skip
    rows = {r["algorithm"]: r for r in json.loads(res.output)["rows"]}
    assert rows["tacos"]["time_ns"] < rows["direct"]["time_ns"]
    assert rows["dimensional"]["time_ns"] > 0


def test_bench_rows_of_astra_sims_native_collectives() -> None:
    from collc.bench import format_report, run_bench

    report = run_bench(
        "torus:4x4",
        A2A,
        [1 << 20],
        algorithms=["direct"],
        astra_native=["direct", "halvingDoubling"],
    )
    rows = {r.algorithm: r for r in report.rows}
    assert rows["astra:direct"].model == "astra-analytical"
    assert rows["astra:direct"].time_ns is not None and rows["astra:direct"].time_ns > 0
    assert "does not implement all-to-all" in rows["astra:halvingDoubling"].error
    # Only collc-simulated rows set the best baseline.
    assert rows["direct"].speedup == 1.0
    assert "ASTRA-sim's analytical model" in format_report(report)
