"""TACOS for collc: topology-aware collective synthesis by link-chunk matching on a
time-expanded network, timed by the shared cost model.

`synthesize` is the library entry; `Tacos` is the producer the CLI registers as "tacos";
`tacos.bounds.lower_bounds` gives the lower bounds it is measured against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import Program
from tacos.errors import TacosError
from tacos.kinds import SUPPORTED
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.lazy import lazy_exports
from topologies.topology import Topology

# Start-up (issue 12): the synthesizer is imported on first use, so `tacos.bounds` (which
# `collc compile` runs) does not load it.
if TYPE_CHECKING:
    from payloads.describe import Payload
    from tacos.result import Progress
    from tacos.result import Synthesis as Synthesis
    from tacos.synthesis import chunks_for as chunks_for
    from tacos.synthesis import synthesize as synthesize

__all__ = ["Synthesis", "Tacos", "TacosError", "chunks_for", "synthesize"]

_LAZY = {
    "Synthesis": "tacos.result",
    "chunks_for": "tacos.synthesis",
    "synthesize": "tacos.synthesis",
}
"""The names of the synthesizer this package offers, imported on first use."""

__getattr__ = lazy_exports(__name__, _LAZY, globals())


class Tacos:
    """The TACOS producer: ``generate`` synthesizes a program for a collective on a topology.

    The schedule depends on the bytes per chunk, so the producer holds the collective's size
    (``size_bytes``, nccl-tests convention: the largest buffer), the chunk granularity
    (``chunks_per_npu``, see `chunks_for`), the ``seed`` and how many seeds to try (``seeds``).
    With a sparse ``payload`` it plans with the sizes its messages will have under that
    payload and ``converter`` (`tacos.sized`); a real-tensor payload sets the chunk size.
    """

    name = "tacos"
    description = (
        "TACOS: greedy link-chunk matching on a time-expanded network (any topology, "
        "switches, failures, heterogeneous links); RS/Reduce/Scatter by reversal, AR = RS + AG"
    )
    collectives: frozenset[CollectiveKind] = SUPPORTED

    def __init__(
        self,
        *,
        size_bytes: int = 1 << 20,
        chunks_per_npu: int = 1,
        seed: int = 0,
        seeds: int = 1,
        cost: CostModel = DEFAULT_COST_MODEL,
        progress: Progress | None = None,
        groups_independent: bool = False,
        payload: Payload | None = None,
        converter: str = "sw",
    ) -> None:
        if size_bytes <= 0:
            raise TacosError(f"size must be positive, got {size_bytes} bytes")
        if chunks_per_npu < 1:
            raise TacosError(f"chunks per NPU must be at least 1, got {chunks_per_npu}")
        if seeds < 1:
            raise TacosError(f"seeds must be at least 1, got {seeds}")
        self.size_bytes = size_bytes
        self.chunks_per_npu = chunks_per_npu
        self.seed = seed
        self.seeds = seeds
        self.cost = cost
        self.progress = progress
        self.groups_independent = groups_independent
        self.payload = None if payload is None or payload.dense else payload
        self.converter = converter
        self.last: Synthesis | None = None

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int:
        """``Collective.chunks_per_rank`` for this producer's ``chunks_per_npu`` (1 by default:
        the natural granularity of one chunk per NPU); see `chunks_for`."""
        from tacos.synthesis import chunks_for

        return chunks_for(kind, num_ranks, self.chunks_per_npu)

    def chunks_on(self, kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
        """`chunks_per_rank` for ``len(npus)`` ranks: TACOS's split does not depend on where
        they sit."""
        return self.chunks_per_rank(kind, len(npus))

    def generate(self, collective: Collective, topology: Topology) -> Program:
        """Synthesize ``collective`` on ``topology`` with the held size, seed and seeds.

        The chunk size is ``chunk_bytes_for(collective, size_bytes)`` (the size over the
        collective's size in chunks, rounded up). The full result, with the estimate, stays in
        ``self.last``. A collective split into process groups is synthesized jointly
        (`tacos.groups.synthesize_groups`), or group by group with ``groups_independent``.
        Raises TacosError as `synthesize` does.
        """
        from tacos.synthesis import synthesize

        chunk_bytes = chunk_bytes_for(collective, self.size_bytes)
        if self.payload is not None:
            from payloads.sizes import payload_chunk_bytes
            from tacos.sized import synthesize_sized  # only a sparse payload loads it

            self.last = synthesize_sized(
                collective,
                topology,
                payload_chunk_bytes(self.payload, collective) or chunk_bytes,
                self.payload,
                converter=self.converter,
                seed=self.seed,
                seeds=self.seeds,
                cost=self.cost,
                progress=self.progress,
            )
            return self.last.program
        if collective.groups:
            from tacos.groups import synthesize_groups  # only for process groups (start-up)

            self.last = synthesize_groups(
                collective,
                topology,
                chunk_bytes,
                seed=self.seed,
                seeds=self.seeds,
                cost=self.cost,
                independent=self.groups_independent,
                progress=self.progress,
            )
            return self.last.program
        self.last = synthesize(
            collective,
            topology,
            chunk_bytes,
            seed=self.seed,
            seeds=self.seeds,
            cost=self.cost,
            progress=self.progress,
        )
        return self.last.program
