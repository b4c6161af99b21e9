"""TACOS planned with the sizes its messages will have under a sparse payload.

Under a payload (`payloads.describe`) a message weighs what it carries: a chunk summed over
``k`` ranks costs its ``k``-way size (``1-(1-rho)^k`` of its elements for a statistical
payload, the exact union for real tensors) in the format ``auto`` or the payload chooses, and
a receive does the format's conversion and merge work (`payloads.sizes`, `payloads.endpoint`).
In a Reduce-Scatter the sizes grow along each reduction tree; an All-Gather's messages all
carry whole sums.

The matching times every message of a phase alike (`tacos.matching`), so each phase is planned
with one size: the mean size of that phase's messages. Those depend on the trees the plan
builds, so planning runs in rounds:

1. round 0 is the plan for dense chunks (what `tacos.synthesis.synthesize` makes without a
   payload);
2. every round's program is weighed by `payloads.sizes.message_sizes` (the same table the
   simulator takes) and lowered again with its link-order dependencies chosen by the replay of
   those sizes and that endpoint work (`tacos.timing`), which gives its estimate;
3. the next round plans each phase with the mean message size the last round's program had
   in that phase; rounds stop after `ROUNDS` or when the sizes repeat.

The program with the least estimate is kept (the first on a tie). Its estimate is its time
under the payload, as ``collc simulate --payload`` computes it on the congestion model.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.verify import message_contents
from payloads.describe import Payload
from payloads.sizes import message_sizes
from tacos.channels import Timed, time_channel
from tacos.errors import TacosError
from tacos.kinds import SUPPORTED
from tacos.lowering import Lowered, Transfers
from tacos.result import Progress, Synthesis, check_arguments
from tacos.routes import Routes
from tacos.synthesis import Schedule, _lower, _scaled, _trivial, schedule, synthesize
from tacos.timing import Replay, replay, replay_single_hop
from topologies.cost_model import DEFAULT_COST_MODEL, PS_PER_NS, CostModel
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]

ROUNDS = 3
"""Plans made at most: the dense one, then re-plans with the last one's mean message sizes."""


def synthesize_sized(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    payload: Payload,
    *,
    converter: str = "sw",
    seed: int = 0,
    seeds: int = 1,
    cost: CostModel = DEFAULT_COST_MODEL,
    progress: Progress | None = None,
) -> Synthesis:
    """`tacos.synthesis.synthesize` planned with the message sizes of ``payload`` under
    ``converter`` (``sw`` or ``hw``); see the module docstring. A dense payload gives exactly
    `synthesize`'s result. Raises TacosError as `synthesize` does, and for all-to-all and
    process groups (planned for dense chunks only); `PayloadError` for tensors that do not fit
    the collective."""
    if payload.dense:
        return synthesize(
            collective,
            topology,
            chunk_bytes,
            seed=seed,
            seeds=seeds,
            cost=cost,
            progress=progress,
        )
    t0 = time.perf_counter()
    kind = collective.kind
    if kind not in SUPPORTED:
        synthesize(collective, topology, chunk_bytes)  # raises the kind's error
    if kind is CollectiveKind.ALLTOALL or collective.groups:
        raise TacosError(
            "TACOS plans all-to-all and process groups for dense chunks only: a sparse payload "
            "applies to the other kinds, on one group"
        )
    check_arguments(chunk_bytes, seeds)
    name = f"tacos-{collective.kind.value}"
    if collective.num_ranks == 1:
        return Synthesis(
            _trivial(collective, name), 0.0, time.perf_counter() - t0, seed, chunk_bytes
        )
    say = progress or (lambda _f: None)
    best: tuple[int, Lowered, Schedule] | None = None
    sizes: tuple[int, int] | None = None
    tried: set[tuple[int, int] | None] = set()
    for r in range(ROUNDS):
        part = _scaled(say, r / ROUNDS, (r + 1) / ROUNDS)
        rev_b, fwd_b = sizes if sizes is not None else (None, None)
        sch = schedule(
            collective,
            topology,
            chunk_bytes,
            seed=seed,
            seeds=seeds,
            cost=cost,
            say=_scaled(part, 0.0, 0.6),
            reverse_bytes=rev_b,
            forward_bytes=fwd_b,
        )
        tried.add(sizes)
        planned = _per_phase(sch, rev_b or chunk_bytes, fwd_b or chunk_bytes)
        first = _lower(
            collective,
            sch.phases,
            sch.routes,
            sch.origin,
            name,
            _timer(sch.routes, cost, planned, _reduction_ps(cost, planned, sch), []),
            cost.on_arrival,
        )
        part(0.7)
        program = first.program
        trace = message_contents(program)
        table = message_sizes(
            program, payload, int(chunk_bytes), converter=converter, trace=trace, topology=topology
        )
        key = first.transfers.key
        recv_of = np.full(program.num_ops, -1, dtype=np.int64)
        recvs = np.flatnonzero(trace.match >= 0)
        recv_of[trace.match[recvs]] = recvs
        nbytes = table.op_bytes[key]
        work_ns = table.compute_ns[recv_of[key]]
        out: list[Replay] = []
        low = _lower(
            collective,
            sch.phases,
            sch.routes,
            sch.origin,
            name,
            _timer(sch.routes, cost, nbytes, _receive_ps(cost, nbytes, work_ns, sch), out),
            cost.on_arrival,
        )
        part(0.95)
        if best is None or out[0].finish_ps < best[0]:
            best = (out[0].finish_ps, low, sch)
        sizes = _mean_sizes(sch, nbytes)
        if sizes in tried:
            break
    assert best is not None
    finish_ps, low, sch = best
    say(1.0)
    return Synthesis(
        low.program,
        finish_ps / PS_PER_NS,
        time.perf_counter() - t0,
        sch.seed,
        chunk_bytes,
        sch.phases_ns,
        len(low.transfers.src),
        False,
        sch.rule,
    )


def _phase_of(sch: Schedule) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Per transfer (in lowering order), its phase and whether that phase is forward."""
    counts = [len(p.transfers["chunk"]) for p in sch.phases]
    phase = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    forward = np.array([p.forward for p in sch.phases], dtype=bool)[phase]
    return phase, forward


def _per_phase(sch: Schedule, rev_b: float, fwd_b: float) -> I64:
    """Per transfer, the size its phase was planned with (whole bytes)."""
    _, forward = _phase_of(sch)
    return np.where(forward, round(fwd_b), round(rev_b)).astype(np.int64)


def _mean_sizes(sch: Schedule, nbytes: I64) -> tuple[int, int]:
    """The mean message size of the reverse phases and of the forward ones (whole bytes, at
    least 1; a kind without one repeats the other)."""
    _, forward = _phase_of(sch)
    means = []
    for side in (~forward, forward):
        means.append(max(1, round(float(nbytes[side].mean()))) if side.any() else 0)
    rev, fwd = means
    return (rev or fwd, fwd or rev)


def _reduction_ps(cost: CostModel, nbytes: I64, sch: Schedule) -> I64:
    """Per transfer, the cost model's reduction time of a reducing receive (ps)."""
    return _receive_ps(cost, nbytes, np.zeros(len(nbytes), dtype=np.float64), sch)


def _receive_ps(
    cost: CostModel, nbytes: I64, work_ns: npt.NDArray[np.float64], sch: Schedule
) -> I64:
    """Per transfer, a receive's time after its message arrived: the cost model's reduction
    of its bytes when it reduces, plus its endpoint work, rounded once to ps as the simulator
    rounds a task's duration (`backends.sim.tasks`)."""
    counts = [len(p.transfers["chunk"]) for p in sch.phases]
    reduce = np.repeat(np.array([p.reduce for p in sch.phases], dtype=bool), counts)
    uniq, inv = np.unique(nbytes, return_inverse=True)
    red = np.array([cost.reduction_ns(int(b)) for b in uniq], dtype=np.float64)[inv.reshape(-1)]
    ns = np.where(reduce, red, 0.0)
    busy = work_ns > 0
    ns[busy] += work_ns[busy]
    out: I64 = np.rint(ns * PS_PER_NS).astype(np.int64)
    return out


def _timer(
    routes: Routes, cost: CostModel, nbytes: I64, recv_ps: I64, out: list[Replay]
) -> Callable[[Transfers], tuple[I64, I64]]:
    """A lowering timer replaying every transfer at its own size ``nbytes`` with receive
    times ``recv_ps``; the replay is appended to ``out``."""

    def timer(tr: Transfers) -> tuple[I64, I64]:
        pairs = np.stack([tr.route, nbytes])
        uniq, inv = np.unique(pairs, axis=1, return_inverse=True)
        timed: list[Timed] = [
            time_channel(routes.net, routes.channels[int(r)], int(b), cost) for r, b in uniq.T
        ]
        single = all(len(tm.hops) == 1 for tm in timed)
        sized = dataclasses.replace(tr, route=inv.reshape(-1).astype(np.int64))
        rp = (replay_single_hop if single else replay)(sized, timed, 0.0, cost.on_arrival, recv_ps)
        out.append(rp)
        return rp.events, rp.start

    return timer
