"""The producers collc offers by name: TACOS and the baselines, each behind the `Producer`
protocol, made from a `Request` only when it runs (a producer's package is imported then)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from chakra_ir.collective import Collective, CollectiveKind
from collc import registry
from collc.request import Request, payload_of

if TYPE_CHECKING:
    from baselines.base import Baseline
    from chakra_ir.program import Program
    from topologies import Topology


class Producer(Protocol):
    """An algorithm that makes a Program for a collective on a topology."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def collectives(self) -> frozenset[CollectiveKind]: ...

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int: ...

    def chunks_on(self, kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
        """``chunks_per_rank`` for ranks on ``npus`` of ``topology`` (an algorithm whose split
        depends on the network's shape cuts exactly as fine as that shape needs)."""
        ...

    def generate(self, collective: Collective, topology: Topology) -> Program: ...


Progress = Callable[[float], None]
"""Told the fraction of a synthesis done (1.0 when it is)."""
ProducerFactory = Callable[[Request, Progress | None], Producer]
"""Makes a request's producer; TACOS reports its progress to the callback."""


@dataclass(frozen=True)
class _Pipelined:
    """A baseline at its default pipelining, cut ``factor`` times finer (``--chunks-per-npu``)."""

    base: Baseline
    factor: int

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def description(self) -> str:
        return self.base.description

    @property
    def collectives(self) -> frozenset[CollectiveKind]:
        return self.base.collectives

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int:
        natural = self.base.chunks_per_rank(kind, num_ranks)
        return natural * self.base.pipeline_default * self.factor

    def chunks_on(self, kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
        natural = self.base.chunks_on(kind, npus, topology)
        return natural * self.base.pipeline_default * self.factor

    def generate(self, collective: Collective, topology: Topology) -> Program:
        return self.base.generate(collective, topology)


def _tacos(req: Request, progress: Progress | None) -> Producer:
    from tacos import Tacos

    return Tacos(
        payload=payload_of(req.payload) if req.payload else None,
        converter=req.converter,
        size_bytes=req.size_bytes,
        chunks_per_npu=req.chunks_per_npu,
        seed=req.seed,
        seeds=req.seeds,
        cost=req.cost_model(),
        progress=progress,
        groups_independent=req.groups_independent,
    )


def _baseline(name: str) -> ProducerFactory:
    def make(req: Request, _progress: Progress | None) -> Producer:
        from baselines import ALGORITHMS as BASELINES

        return _Pipelined(BASELINES[name], req.chunks_per_npu)

    return make


ALGORITHMS: dict[str, ProducerFactory] = {
    "tacos": _tacos,
    **{name: _baseline(name) for name in registry.ALGORITHMS if name != "tacos"},
}
"""Every producer the CLI offers, by name; the CLI builds its choices from this dict. The
names are `collc.registry`'s static copy (TACOS, then `baselines.ALGORITHMS` in order), so
that a producer's package is imported only when it is used; ``tests/test_cli_startup.py``
holds that copy equal to the real registries."""


def descriptions() -> dict[str, str]:
    """Every producer's description, by name, as the producers themselves state it (imports
    TACOS and every baseline); also `collc.pipeline.DESCRIPTIONS`."""
    from baselines import ALGORITHMS as BASELINES
    from tacos import Tacos

    return {"tacos": Tacos.description, **{name: b.description for name, b in BASELINES.items()}}
