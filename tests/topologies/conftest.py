"""Fixtures shared by the topology tests."""

from __future__ import annotations

import pytest

import topologies.topology


@pytest.fixture
def graph_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The source of every breadth-first search `Topology` runs from now on, in order: a
    complexity check that cannot flake, unlike a wall-clock limit."""
    searches: list[int] = []
    real = topologies.topology.bfs_parents

    def counted(succ: object, src: int) -> object:
        searches.append(src)
        return real(succ, src)  # type: ignore[arg-type]

    monkeypatch.setattr(topologies.topology, "bfs_parents", counted)
    return searches
