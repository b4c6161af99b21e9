"""The synthesizer's estimate and the simulator's replay agree: both use the one cost model."""

from __future__ import annotations

import pytest

from backends.sim import simulate
from chakra_ir.collective import Collective, CollectiveKind
from tacos import chunks_for, synthesize
from topologies import parse_topology

CASES = [
    ("mesh:4x4", CollectiveKind.ALLGATHER, 1),
    ("mesh:4x4", CollectiveKind.ALLREDUCE, 2),
    ("torus:3x3x2", CollectiveKind.ALLREDUCE, 1),
    ("torus:4x4,fail=0-1;5>6", CollectiveKind.REDUCE_SCATTER, 2),
    ("mesh:4x4,bw=[50GB/s,12.5GB/s]", CollectiveKind.ALLREDUCE, 3),
    ("hypercube:4", CollectiveKind.ALLGATHER, 1),
    ("switch:8", CollectiveKind.ALLGATHER, 1),
    ("stack:ring4*switch2", CollectiveKind.ALLREDUCE, 1),
    ("uniring:5", CollectiveKind.REDUCE_SCATTER, 1),
    ("ring:6", CollectiveKind.BROADCAST, 2),
]


@pytest.mark.parametrize(("spec", "kind", "c"), CASES)
def test_simulated_time_matches_the_estimate(spec: str, kind: CollectiveKind, c: int) -> None:
    topology = parse_topology(spec)
    n = topology.num_npus
    collective = Collective(kind, n, chunks_for(kind, n, c), root=0 if kind.rooted else -1)
    chunk_bytes = 1 << 18
    s = synthesize(collective, topology, chunk_bytes, seed=3)
    result = simulate(s.program, topology, chunk_bytes)
    assert result.finish_ns == pytest.approx(s.estimated_ns, rel=0.01)
