"""A verified program bound to a size: the `Result` every producing step returns, the lower
bounds that apply to it, and `bind_size`, which makes its manifest."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import Manifest, chunk_bytes_for
from collc.request import Request, call_groups
from topologies.cost_model import DEFAULT_COMPLETION, Completion, CostModel

if TYPE_CHECKING:
    from chakra_ir.program import Program
    from chakra_ir.verify import VerifyReport
    from tacos.bounds import Bounds
    from topologies import Topology


@dataclass(frozen=True)
class Result:
    program: Program
    manifest: Manifest
    topology: Topology
    report: VerifyReport
    seconds: dict[str, float]
    estimated_ns: float | None
    """The producer's own estimate of the collective time (TACOS), if it makes one."""
    bounds: Bounds
    bound: tuple[str, float]
    """The tightest lower bound that applies to this program: (name, ns)."""
    bounds_chunks: int | None = None
    """TACOS's chunks per NPU when ``bounds`` assume its chunking (tighter than the bounds
    for any program, which ``collc simulate`` prints); None when they hold for any program."""

    @property
    def ratio(self) -> float | None:
        """Estimate over the best lower bound."""
        if self.estimated_ns is None or self.bound[1] <= 0:
            return None
        return self.estimated_ns / self.bound[1]


def bounds_for(
    req: Request,
    topology: Topology,
    n: int,
    placement: Sequence[int],
    *,
    any_chunking: bool = False,
) -> Bounds:
    """The lower bounds of a request's collective (rooted kinds use ``req.root``; process
    groups, the joint bounds of `tacos.group_bounds`).

    Without ``any_chunking`` they assume TACOS's chunking (``req.chunks_per_npu``); with it
    they hold for any program (see `tacos.bounds.lower_bounds`).
    """
    from tacos.bounds import lower_bounds
    from tacos.group_bounds import group_bounds

    if req.groups:
        groups = call_groups(req.groups, topology, placement)
        return group_bounds(
            req.collective,
            topology,
            req.size_bytes,
            groups.members,
            chunks_per_npu=req.chunks_per_npu,
            any_chunking=any_chunking,
        )
    return lower_bounds(
        req.collective,
        topology,
        req.size_bytes,
        placement=placement or tuple(range(n)),
        chunks_per_npu=req.chunks_per_npu,
        root=req.root if req.collective.rooted else 0,
        any_chunking=any_chunking,
    )


def program_bounds(
    program: Program, topology: Topology, size_bytes: int, tacos_chunks: int | None = None
) -> Bounds:
    """Lower bounds on ``program``'s collective at ``size_bytes``: for TACOS's chunking when
    ``tacos_chunks`` is given, else those that hold for any program. None for custom ones."""
    from tacos.bounds import Bounds, lower_bounds
    from tacos.group_bounds import group_bounds

    c = program.collective
    if c.kind is CollectiveKind.CUSTOM:
        return Bounds({})
    if c.groups:
        return group_bounds(
            c.kind,
            topology,
            size_bytes,
            [[c.npu(r) for r in g] for g in c.groups],
            chunks_per_npu=tacos_chunks or 1,
            any_chunking=tacos_chunks is None,
        )
    return lower_bounds(
        c.kind,
        topology,
        size_bytes,
        placement=[c.npu(r) for r in range(c.num_ranks)],
        chunks_per_npu=tacos_chunks or 1,
        root=max(c.root, 0),
        any_chunking=tacos_chunks is None,
    )


def bind_size(
    program: Program,
    topology: Topology,
    size_bytes: int,
    algorithm: str,
    report: VerifyReport,
    seconds: dict[str, float],
    estimate: float | None = None,
    seed: int | None = None,
    tacos_chunks: int | None = None,
    extra: dict[str, Any] | None = None,
    *,
    completion: Completion = DEFAULT_COMPLETION,
) -> Result:
    """Bind a size to a verified program: lower bound, manifest, result.

    ``tacos_chunks`` is TACOS's chunks per NPU: its estimate is compared with the bounds for
    its own chunking. Any other program cuts the buffer its own way, so only the bounds that
    hold for any chunking apply to it; and it gets the ``after`` hints that keep its sends
    released together in order in ASTRA-sim (`backends.sim.gates`).
    """
    c = program.collective
    t = time.perf_counter()
    bounds = program_bounds(program, topology, size_bytes, tacos_chunks)
    seconds["bounds"] = time.perf_counter() - t
    bound = bounds.best if bounds.items else ("none", 0.0)
    chunk_bytes = chunk_bytes_for(c, size_bytes)
    if tacos_chunks is None and program.num_ops:
        # TACOS gates its sends itself; any other program is gated from one simulation.
        from backends.sim.gates import gate_ties

        t = time.perf_counter()
        program = gate_ties(program, topology, chunk_bytes, CostModel(completion=completion))
        seconds["gates"] = time.perf_counter() - t
    info: dict[str, Any] = {"lower_bound_ns": bound[1], "lower_bound": bound[0], "reduce_micros": 0}
    if estimate is not None:
        info["estimated_ns"] = estimate
    info.update(extra or {})
    manifest = Manifest(
        collective=c,
        topology=topology.spec,
        size_bytes=chunk_bytes * c.size_chunks,
        chunk_bytes=chunk_bytes,
        et_prefix=c.kind.value,
        algorithm=algorithm,
        seed=seed,
        extra=info,
        completion=completion.value,
    )
    return Result(
        program, manifest, topology, report, seconds, estimate, bounds, bound, tacos_chunks
    )
