"""Lower bounds on topologies whose optimum is known by hand."""

from __future__ import annotations

import pytest

from chakra_ir.collective import CollectiveKind
from tacos import TacosError, synthesize
from tacos.bounds import lower_bounds
from tests.tacos.helpers import collective
from topologies import parse_topology

M = 64 * 2**20
A = 500.0  # default latency, ns
B = 50.0  # default bandwidth, bytes per ns


def test_ring() -> None:
    n = 8
    sigma = M / n / B
    b = lower_bounds(CollectiveKind.ALLGATHER, parse_topology(f"ring:{n}"), M)
    # The farthest chunk crosses n/2 links store-and-forward.
    assert b.items["latency"] == pytest.approx(4 * (A + sigma))
    assert b.best[1] == pytest.approx(4 * (A + sigma))
    assert b.items["ingress"] == pytest.approx(A + (n - 1) * M / n / (2 * B))
    ar = lower_bounds(CollectiveKind.ALLREDUCE, parse_topology(f"ring:{n}"), M)
    # All-Reduce: 2(n-1) values per element leave the ranks over their 2n out-links; each rank
    # receives the whole buffer over its 2 in-links; the farthest chunk as for the All-Gather
    # (a program may overlap the phases, so their bounds do not add up).
    assert ar.items["total"] == pytest.approx(A + 2 * (n - 1) * M / (2 * n * B))
    assert ar.items["ingress"] == pytest.approx(A + M / (2 * B))
    assert ar.items["latency"] == pytest.approx(4 * (A + sigma))
    assert ar.best[1] == pytest.approx(max(ar.items.values()))


def test_ring_bidirectional_allreduce_meets_the_total_bound() -> None:
    # The bidirectional ring with fine pipelining reaches the total bound: it is tight there.
    from collc.bench import run_bench

    rep = run_bench("ring:8,bw=50GiB/s,lat=500ns", CollectiveKind.ALLREDUCE, [1 << 20],
                    algorithms=["ring-bidir"], chunks_per_npu=2)  # fmt: skip
    (row,) = rep.rows
    assert row.time_ns is not None and row.ratio is not None
    assert 1.0 <= row.ratio < 1.001


def test_tacos_on_a_switch_meets_the_bound_for_its_chunking() -> None:
    # Through a store-and-forward switch, the first chunk must come up a link before any
    # down-link can start: total-in = (A + s/B) + A + 2(n-1)/n M/B. TACOS reaches it for its chunk
    # size s, and the bidirectional ring cut into as many chunks (its flag counts chunks per
    # direction) is no faster.
    from collc.bench import run_bench

    topo = "switch:8,bw=50GiB/s,lat=500ns"
    for c in (4, 8):
        tacos = run_bench(topo, CollectiveKind.ALLREDUCE, [1 << 20], algorithms=["tacos"],
                          chunks_per_npu=c).rows[0]  # fmt: skip
        ring = run_bench(topo, CollectiveKind.ALLREDUCE, [1 << 20], algorithms=["ring-bidir"],
                         chunks_per_npu=c // 2).rows[0]  # fmt: skip
        b = lower_bounds(CollectiveKind.ALLREDUCE, parse_topology(topo), 1 << 20,
                         chunks_per_npu=c)  # fmt: skip
        bw = 50 * 2**30 / 1e9
        s = (1 << 20) / (8 * c)
        assert b.best[0] == "total-in"
        assert b.best[1] == pytest.approx(500 + s / bw + 500 + 2 * 7 / 8 * (1 << 20) / bw)
        assert tacos.time_ns == pytest.approx(b.best[1], rel=1e-6)  # whole picoseconds
        assert ring.time_ns is not None and ring.time_ns >= tacos.time_ns * (1 - 1e-6)


def test_fully_connected() -> None:
    n = 8
    sigma = M / n / B
    b = lower_bounds(CollectiveKind.ALLGATHER, parse_topology(f"fc:{n}"), M)
    assert b.best[1] == pytest.approx(A + sigma)
    assert b.items["cut"] == pytest.approx(A + sigma)
    assert b.exact_cut


def test_star_switch() -> None:
    n = 8
    sigma = M / n / B
    t = parse_topology(f"switch:{n}")
    b = lower_bounds(CollectiveKind.ALLGATHER, t, M)
    # A rank's one in-link leaves the switch, which holds nothing before a whole chunk has
    # come up a link (A + sigma); then the link delivers (n-1) chunks and the last one lands A
    # later. With chunks cut any way the switch can start after A alone.
    assert b.items["ingress"] == pytest.approx(2 * A + n * sigma)
    assert b.items["chunk"] == pytest.approx(2 * A + n * sigma)
    assert b.items["latency"] == pytest.approx(2 * (A + sigma))
    anyway = lower_bounds(CollectiveKind.ALLGATHER, t, M, any_chunking=True)
    assert anyway.items["ingress"] == pytest.approx(2 * A + (n - 1) * sigma)
    rs = lower_bounds(CollectiveKind.REDUCE_SCATTER, t, M)
    assert rs.best[1] == pytest.approx(b.best[1])
    g = lower_bounds(CollectiveKind.GATHER, t, M, root=3)
    assert g.best[1] == pytest.approx(A + (n - 1) * sigma)


def test_cut_family_on_large_mesh() -> None:
    t = parse_topology("mesh:8x8")
    b = lower_bounds(CollectiveKind.ALLGATHER, t, M)
    assert not b.exact_cut
    # The half cut: 32 ranks' data over 8 links.
    assert b.items["cut"] >= A + 32 * (M / 64) / (8 * B) - 1e-6


def test_synthesis_respects_bounds() -> None:
    for spec in ("mesh:3x3", "torus:4x4", "switch:5", "uniring:4", "stack:switch2*switch2"):
        t = parse_topology(spec)
        for kind in (CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE, CollectiveKind.BROADCAST):
            c = collective(kind, t.num_npus, 2)
            syn = synthesize(c, t, M / c.size_chunks)
            b = lower_bounds(kind, t, M, chunks_per_npu=2)
            assert syn.estimated_ns >= b.best[1] * (1 - 1e-6), (spec, kind, b.best)


def test_bound_errors() -> None:
    t = parse_topology("ring:4")
    with pytest.raises(TacosError, match="size"):
        lower_bounds(CollectiveKind.ALLGATHER, t, 0)
    with pytest.raises(TacosError, match="root"):
        lower_bounds(CollectiveKind.BROADCAST, t, M, root=5)
    with pytest.raises(TacosError, match="chunks"):
        lower_bounds(CollectiveKind.ALLGATHER, t, M, chunks_per_npu=0)


def test_torus_allgather_within_one_step_of_bound() -> None:
    # Every NPU takes N-1 chunks through its 4 in-links: the greedy must keep them all busy.
    for spec in ("torus:8x8", "torus:12x12", "torus:16x8"):
        t = parse_topology(spec)
        n = t.num_npus
        syn = synthesize(collective(CollectiveKind.ALLGATHER, n, 1), t, M / n)
        b = lower_bounds(CollectiveKind.ALLGATHER, t, M)
        step = A + M / n / B
        assert syn.estimated_ns <= b.best[1] + step + 1e-6, (spec, syn.estimated_ns, b.best)
