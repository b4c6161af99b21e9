"""Result figures, JSON, determinism, the timeline and the errors."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from backends.sim import SimError, busbw_factor, simulate, write_timeline
from chakra_ir import Collective, CollectiveKind, ProgramBuilder, Slice
from tests.sim.helpers import I, O, direct_allgather, one_message, ring_allreduce, topo
from topologies.errors import CollcError

CB = 1000


@pytest.mark.parametrize(
    ("kind", "factor"),
    [
        ("allreduce", 2 * 7 / 8),
        ("allgather", 7 / 8),
        ("reduce_scatter", 7 / 8),
        ("alltoall", 7 / 8),
        ("broadcast", 1.0),
        ("reduce", 1.0),
        (None, 1.0),
    ],
)
def test_busbw_factors(kind: str | None, factor: float) -> None:
    assert busbw_factor(kind, 8) == pytest.approx(factor)


def test_allgather_size_is_the_output() -> None:
    # fc:4 has a link per ordered pair, so the 3 messages of each rank travel at once: 520 ns.
    # nccl-tests size: the output, 4 x 1000 B; busbw = algbw x 3/4.
    r = simulate(direct_allgather(4), topo("fc:4,bw=50GB/s,lat=500ns"), CB)
    assert r.size_bytes == 4 * CB
    assert r.finish_ns == pytest.approx(520.0)
    assert r.algbw_gb_per_s == pytest.approx(4000 / 520)
    assert r.busbw_gb_per_s == pytest.approx(4000 / 520 * 0.75)


def test_to_json_and_summary() -> None:
    r = simulate(ring_allreduce(4), topo("ring:4,bw=50GB/s,lat=500ns"), CB)
    d = r.to_json()
    text = json.dumps(d)
    assert json.loads(text)["finish_ns"] == pytest.approx(3120.0)
    assert d["busiest_link"]["busy_ns"] == pytest.approx(120.0)
    assert len(d["links"]) == 8 and len(d["rank_finish_ns"]) == 4
    assert d["collective"] == "allreduce" and d["semantics_checked"] is True
    assert "3.120 us" in r.summary()
    assert d["bound_ratio"] is None
    r.lower_bound_ns, r.lower_bound_name = 1560.0, "latency"
    assert r.to_json()["bound_ratio"] == pytest.approx(2.0)
    assert "(latency, for any program): 2.000x" in r.summary()


def test_deterministic() -> None:
    t = topo("torus:4x4,bw=50GB/s,lat=500ns")
    p = direct_allgather(16)
    runs = [simulate(p, t, CB, keep_timeline=True) for _ in range(2)]
    a, b = (x.to_json() for x in runs)
    a.pop("wall_seconds")
    b.pop("wall_seconds")
    assert a == b
    ra, rb = (x.timeline.records for x in runs)  # type: ignore[union-attr]
    assert ra is not None and rb is not None
    for col in ("link", "start_ns", "dur_ns", "task"):
        assert np.array_equal(getattr(ra, col), getattr(rb, col))


def test_timeline_json(tmp_path: Path) -> None:
    t = topo("ring:4,bw=50GB/s,lat=500ns")
    r = simulate(ring_allreduce(4), t, CB, keep_timeline=True)
    path = tmp_path / "t.json"
    write_timeline(r, path)
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary left
    doc = json.loads(path.read_text())
    ev = doc["traceEvents"]
    links = [e for e in ev if e["ph"] == "X" and e["pid"] == 1]
    ranks = [e for e in ev if e["ph"] == "X" and e["pid"] >= 100]
    assert len(links) == r.hops == 24
    assert len({e["tid"] for e in links}) == 4  # the clockwise links
    assert all(e["dur"] == pytest.approx(0.02) for e in links)  # 20 ns in µs
    assert max(e["ts"] + e["dur"] for e in ranks) == pytest.approx(3.12)
    assert len(ranks) == 48  # 24 sends + 24 receives
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert any(n.startswith("link ") and "->" in n for n in names.values())
    procs = {e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert {"links", "rank 0 (NPU 0)", "rank 3 (NPU 3)"} <= procs
    # Events on one thread never overlap.
    by_thread: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in links + ranks:
        by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))


def test_timeline_needs_kept_events(tmp_path: Path) -> None:
    r = simulate(one_message(), topo("ring:2"), CB)
    with pytest.raises(SimError, match="keep_timeline"):
        write_timeline(r, tmp_path / "t.json")
    assert not list(tmp_path.iterdir())


def test_analytical_timeline_has_rank_tracks(tmp_path: Path) -> None:
    r = simulate(ring_allreduce(4), topo("ring:4"), CB, model="analytical", keep_timeline=True)
    write_timeline(r, tmp_path / "t.json")
    ev = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["pid"] >= 100 for e in ev)
    assert not any(e["ph"] == "X" and e["pid"] == 1 for e in ev)


# -- errors ------------------------------------------------------------------------------------
def test_errors_are_collc_errors_with_one_line_messages() -> None:
    t = topo("ring:4")
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: simulate(ring_allreduce(4), topo("ring:2"), CB), "4 ranks but ring:2"),
        (lambda: simulate(ring_allreduce(4), t, 0), "size must be positive"),
        (lambda: simulate(ring_allreduce(4), t, CB, model="ns3"), "unknown model 'ns3'"),
        (
            lambda: simulate(ring_allreduce(4), t, CB, model="analytical", packet_bytes=64),
            "congestion model only",
        ),
        (lambda: simulate(ring_allreduce(4), t, CB, packet_bytes=0), "packet size"),
        (lambda: simulate(one_message(placement=(0, 9)), t, CB), "NPU 9"),
        (lambda: simulate(one_message(route=(0, 2, 1)), t, CB), "0>2"),
    ]
    for run, message in cases:
        with pytest.raises(CollcError) as info:
            run()
        assert isinstance(info.value, SimError)
        assert message in str(info.value)
        assert "\n" not in str(info.value)


def test_unmatched_and_deadlock() -> None:
    c = Collective(CollectiveKind.BROADCAST, 2, 1, root=0)
    b = ProgramBuilder(c, name="unmatched")
    b.send(0, 1, Slice(I, 0))
    with pytest.raises(SimError, match="no receive matches"):
        simulate(b.build(), topo("ring:2"), CB)
    # Both ranks receive before they send: nothing can start.
    c = Collective(CollectiveKind.ALLGATHER, 2, 1)
    b = ProgramBuilder(c, name="deadlock")
    for r in range(2):
        rv = b.recv(r, 1 - r, Slice(O, 1 - r))
        b.send(r, 1 - r, Slice(I, 0), deps=[rv])
    with pytest.raises(SimError, match=r"deadlock: rank 0 op 0 .*never sent"):
        simulate(b.build(), topo("ring:2"), CB)
