"""The registry of baselines, granularities and the errors of unsupported requests."""

from __future__ import annotations

import pytest

from baselines import ALGORITHMS, Baseline, BaselineError
from chakra_ir import Collective, CollectiveKind
from topologies import parse_topology
from topologies.errors import CollcError

AG = CollectiveKind.ALLGATHER
RS = CollectiveKind.REDUCE_SCATTER
AR = CollectiveKind.ALLREDUCE
A2A = CollectiveKind.ALLTOALL
BC = CollectiveKind.BROADCAST
RED = CollectiveKind.REDUCE


def test_names() -> None:
    assert list(ALGORITHMS) == [
        "ring",
        "ring-bidir",
        "direct",
        "rhd",
        "dbt",
        "dimensional",
        "hierarchical",
        "themis",
        "swing",
        "swing-latency",
        "fred-innetwork",
        "sparcml-rd",
        "sparcml-split",
        "oktopk",
    ]
    for name, entry in ALGORITHMS.items():
        assert isinstance(entry, Baseline)
        assert entry.name == name
        assert entry.description
        assert entry.collectives


def test_served_collectives() -> None:
    assert ALGORITHMS["ring"].collectives == {AG, RS, AR}
    assert ALGORITHMS["ring-bidir"].collectives == {AG, RS, AR}
    assert ALGORITHMS["direct"].collectives == {AG, RS, AR, A2A}
    assert ALGORITHMS["rhd"].collectives == {AG, RS, AR}
    assert ALGORITHMS["dbt"].collectives == {AR, BC, RED}


@pytest.mark.parametrize(
    ("name", "kind", "n", "expected"),
    [
        ("ring", AR, 8, 8),
        ("ring", AR, 5, 5),
        ("ring", AG, 8, 1),
        ("ring", RS, 8, 1),
        ("ring-bidir", AR, 6, 12),
        ("ring-bidir", AG, 6, 2),
        ("ring-bidir", RS, 6, 2),
        ("direct", AR, 7, 7),
        ("direct", AG, 7, 1),
        ("direct", RS, 7, 1),
        ("direct", A2A, 7, 1),
        ("rhd", AR, 8, 8),
        ("rhd", AR, 12, 8),
        ("rhd", AR, 1, 1),
        ("rhd", AG, 12, 1),
        ("rhd", RS, 12, 1),
        ("dbt", AR, 9, 2),
        ("dbt", BC, 9, 2),
        ("dbt", RED, 9, 2),
    ],
)
def test_granularity(name: str, kind: CollectiveKind, n: int, expected: int) -> None:
    assert ALGORITHMS[name].chunks_per_rank(kind, n) == expected


@pytest.mark.parametrize(
    ("name", "kind"),
    [("ring", A2A), ("ring", BC), ("ring-bidir", RED), ("direct", BC), ("rhd", A2A), ("dbt", AG)],
)
def test_unsupported_kind(name: str, kind: CollectiveKind) -> None:
    entry = ALGORITHMS[name]
    assert not entry.supports(kind, 8)
    with pytest.raises(BaselineError, match=f"{name} does not implement {kind.value}"):
        entry.chunks_per_rank(kind, 8)
    root = 0 if kind.rooted else -1
    with pytest.raises(BaselineError, match="does not implement"):
        entry.generate(Collective(kind, 8, 8, root=root), parse_topology("ring:8"))


def test_supports() -> None:
    assert ALGORITHMS["ring"].supports(AR, 8)
    assert ALGORITHMS["rhd"].supports(AR, 6)
    assert not ALGORITHMS["ring"].supports(AR, 0)


@pytest.mark.parametrize(
    ("name", "kind", "n", "cf", "natural"),
    [
        ("ring", AR, 4, 3, 4),
        ("ring", AR, 4, 6, 4),
        ("ring-bidir", AG, 4, 3, 2),
        ("direct", AR, 5, 4, 5),
        ("rhd", AR, 6, 6, 4),
        ("dbt", AR, 4, 3, 2),
    ],
)
def test_chunk_count_not_a_multiple(
    name: str, kind: CollectiveKind, n: int, cf: int, natural: int
) -> None:
    with pytest.raises(BaselineError, match=f"multiple of {natural} chunks per rank, got {cf}"):
        ALGORITHMS[name].generate(Collective(kind, n, cf), parse_topology("fc:8"))


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_placement_outside_topology(name: str) -> None:
    entry = ALGORITHMS[name]
    kind = AR if AR in entry.collectives else sorted(entry.collectives)[0]
    cf = entry.chunks_per_rank(kind, 4)
    c = Collective(kind, 4, cf, placement=(0, 1, 2, 9))
    with pytest.raises(BaselineError, match="rank 3 is placed on node 9"):
        entry.generate(c, parse_topology("mesh:2x4"))


def test_placement_on_a_switch() -> None:
    topo = parse_topology("switch:4")
    switch = next(n for link in topo.links for n in (link.src, link.dst) if topo.is_switch(n))
    c = Collective(AR, 2, 2, placement=(0, switch))
    with pytest.raises(BaselineError, match="not an NPU"):
        ALGORITHMS["ring"].generate(c, topo)


def test_errors_are_collc_errors() -> None:
    assert issubclass(BaselineError, CollcError)
