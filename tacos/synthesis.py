"""`synthesize`: a collective on a topology -> a verified-shape Program and its estimated time.

All-Gather, Broadcast and Gather are synthesized forward (`tacos.matching`). All-to-All has a
matching of its own (`tacos.alltoall`). Reduce-Scatter,
Reduce and Scatter are the reversal (`tacos.reversal`) of All-Gather, Broadcast and Gather
synthesized on the transposed topology. All-Reduce is that Reduce-Scatter followed by an
All-Gather; on a topology that is its own transpose one synthesis serves both halves.

The estimate is the cost-model time of the program (`tacos.timing.replay`): for forward kinds it
equals the synthesized schedule's makespan by construction; for the others the replay also lets
each send start as soon as its dependencies allow, as a simulator does.

`Synthesis`, `Progress` and `check_arguments`, which every synthesizer shares, live in
`tacos.result` and are importable from here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.program import Program, ProgramBuilder, Slice
from tacos.bound_terms import allreduce_volume_bound_ns
from tacos.channels import (
    Channel,
    Net,
    Timed,
    build_channels,
    check_placement,
    time_channel,
)
from tacos.errors import TacosError
from tacos.kinds import SUPPORTED
from tacos.lowering import Lowered, Phase, Timer, Transfers, lower
from tacos.matching import Plan, spread, trials
from tacos.result import Progress as Progress
from tacos.result import Synthesis as Synthesis
from tacos.result import check_arguments as check_arguments
from tacos.reversal import forward_phase, reverse_phase
from tacos.routes import Routes
from tacos.timing import Replay, replay, replay_single_hop
from topologies.cost_model import DEFAULT_COST_MODEL, PS_PER_NS, CostModel, to_ps
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]


def chunks_for(kind: CollectiveKind, num_ranks: int, chunks_per_npu: int) -> int:
    """The ``Collective.chunks_per_rank`` that gives "``chunks_per_npu`` chunks per NPU".

    All-Gather, Reduce-Scatter, Gather, Scatter: each rank contributes (or owns)
    ``chunks_per_npu`` chunks, so ``chunks_per_npu``. All-to-All: ``chunks_per_npu`` chunks
    for every pair of ranks. All-Reduce, Broadcast, Reduce: one buffer
    cut into ``num_ranks * chunks_per_npu`` chunks (All-Reduce's Reduce-Scatter half then leaves
    ``chunks_per_npu`` reduced chunks on each rank). Raises TacosError for values below 1 or a
    kind TACOS does not synthesize.
    """
    _check_kind(kind)
    if num_ranks < 1:
        raise TacosError(f"a collective needs at least 1 rank, got {num_ranks}")
    if chunks_per_npu < 1:
        raise TacosError(f"chunks per NPU must be at least 1, got {chunks_per_npu}")
    if kind in (CollectiveKind.ALLREDUCE, CollectiveKind.BROADCAST, CollectiveKind.REDUCE):
        return num_ranks * chunks_per_npu
    return chunks_per_npu


def _check_kind(kind: CollectiveKind) -> None:
    if kind not in SUPPORTED:
        served = ", ".join(sorted(k.value for k in SUPPORTED))
        raise TacosError(f"tacos does not synthesize {kind.value} (it serves {served})")


def synthesize(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int = 0,
    seeds: int = 1,
    cost: CostModel = DEFAULT_COST_MODEL,
    progress: Progress | None = None,
) -> Synthesis:
    """Synthesize ``collective`` on ``topology`` with chunks of ``chunk_bytes`` bytes
    (planned for dense chunks; `tacos.sized` plans with a sparse payload's sizes).

    Contract: the program satisfies ``collective`` (it passes `chakra_ir.verify.verify` and
    `verify_routes` against ``topology``); each Send carries the route it was charged for; the
    same arguments give the identical program; with ``seeds=K`` the seeds ``seed..seed+K-1``
    are tried and the schedule with the shortest synthesized makespan kept. ``progress``, when
    given, is called with the fraction done (0..1). Raises TacosError (a CollcError) for a kind
    TACOS does not serve, a non-positive chunk size or seed count, ranks that are not NPUs of
    the topology, or ranks that cannot reach each other.
    """
    t0 = time.perf_counter()
    kind = collective.kind
    _check_kind(kind)
    if kind is CollectiveKind.ALLTOALL:
        from tacos.alltoall import synthesize_alltoall  # only all-to-all loads it (start-up)

        return synthesize_alltoall(
            collective, topology, chunk_bytes, seed=seed, seeds=seeds, cost=cost, progress=progress
        )
    check_arguments(chunk_bytes, seeds)
    check_placement(collective, topology)
    R = collective.num_ranks
    name = f"tacos-{kind.value}"
    if R == 1:
        return Synthesis(
            _trivial(collective, name), 0.0, time.perf_counter() - t0, seed, chunk_bytes
        )
    say = progress or (lambda _f: None)
    sch = schedule(collective, topology, chunk_bytes, seed=seed, seeds=seeds, cost=cost, say=say)
    routes = sch.routes
    say(0.85)
    single = all(len(tm.hops) == 1 for tm in routes.timed)
    timed: list[Replay] = []

    def timer(tr: Transfers) -> tuple[I64, I64]:
        rp = (replay_single_hop if single else replay)(
            tr, routes.timed, cost.reduction_ns(chunk_bytes), cost.on_arrival
        )
        timed.append(rp)
        return rp.events, rp.start

    low = _lower(collective, sch.phases, routes, sch.origin, name, timer, cost.on_arrival)
    say(0.92)
    estimate_ps = timed[0].finish_ps
    say(1.0)
    return Synthesis(
        low.program,
        estimate_ps / PS_PER_NS,
        time.perf_counter() - t0,
        sch.seed,
        chunk_bytes,
        sch.phases_ns,
        len(low.transfers.src),
        bool(np.array_equal(timed[0].start, low.transfers.start)),
        sch.rule,
    )


@dataclass
class Schedule:
    """A synthesized schedule before lowering: its ``phases``, the ``routes`` they take (timed
    at the reverse phases' planning size, else the forward ones'), each chunk's ``origin``,
    the seed kept, each phase's planned makespan (ns) and the matching rule(s) of the kept
    plans (`tacos.matching.RULES`, ``/``-joined when the phases differ)."""

    phases: list[Phase]
    routes: Routes
    origin: I64
    seed: int
    phases_ns: dict[str, float]
    rule: str = ""


def schedule(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int,
    seeds: int,
    cost: CostModel,
    say: Progress,
    reverse_bytes: float | None = None,
    forward_bytes: float | None = None,
) -> Schedule:
    """The phases of ``collective`` (not all-to-all, at least 2 ranks) planned by the matching
    with chunks of ``chunk_bytes``, or with the sizes its messages will have: reverse phases
    (reductions, Scatter) with ``reverse_bytes`` and forward ones with ``forward_bytes`` when
    given (`tacos.sized`); progress goes to ``say`` up to 0.8."""
    kind = collective.kind
    npus = check_placement(collective, topology)
    R, cf = collective.num_ranks, collective.chunks_per_rank
    rev_b = chunk_bytes if reverse_bytes is None else reverse_bytes
    fwd_b = chunk_bytes if forward_bytes is None else forward_bytes
    sized = rev_b != chunk_bytes or fwd_b != chunk_bytes
    forward = kind in (CollectiveKind.ALLGATHER, CollectiveKind.BROADCAST, CollectiveKind.GATHER)
    net = Net.of(topology)
    routes = Routes(net, fwd_b if forward else rev_b, cost)
    root = collective.root
    rules_used: list[str] = []

    def solve(
        on: Net,
        chunk_src: list[int],
        sink: int,
        lo: float,
        hi: float,
        nbytes: float,
        ready: Sequence[int] = (),
        busy_until: dict[int, int] | None = None,
    ) -> tuple[Plan, list[Channel], list[Timed], int]:
        channels = build_channels(on, npus)
        timing = [time_channel(on, ch, nbytes, cost) for ch in channels]
        best: tuple[Plan, int, str] | None = None
        for i, (s, rule) in enumerate(trials(channels, seed, seeds)):
            a = lo + (hi - lo) * i / seeds
            b = lo + (hi - lo) * (i + 1) / seeds
            plan = spread(
                R,
                channels,
                timing,
                chunk_src,
                seed=s,
                sink=sink,
                progress=_scaled(say, a, b),
                on_arrival=cost.on_arrival,
                ready=ready,
                busy_until=busy_until,
                rule=rule,
            )
            if best is None or plan.makespan < best[0].makespan:
                best = (plan, s, rule)
        assert best is not None
        rules_used.append(best[2])
        return best[0], channels, timing, best[1]

    phases: list[Phase] = []
    phases_ns: dict[str, float] = {}
    if kind in (
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.GATHER,
        CollectiveKind.SCATTER,
    ):
        src = [x // cf for x in range(R * cf)]
        origin = np.array(src, dtype=np.int64)
    elif kind is CollectiveKind.ALLREDUCE:
        src = [(x * R) // cf for x in range(cf)]
        origin = np.array(src, dtype=np.int64)
    else:
        src = [root] * cf
        origin = np.full(cf, root, dtype=np.int64)
    sink = root if kind in (CollectiveKind.GATHER, CollectiveKind.SCATTER) else -1
    if forward:
        plan, chans, _tm, used = solve(net, src, sink, 0.0, 0.8, fwd_b)
        phases.append(Phase(forward_phase(plan, chans, routes), True, False))
        phases_ns[kind.value] = plan.makespan / PS_PER_NS
    elif kind is not CollectiveKind.ALLREDUCE:
        plan, chans, tm, used = solve(net.transpose(), src, sink, 0.0, 0.8, rev_b)
        phases.append(
            Phase(reverse_phase(plan, chans, tm, routes), False, kind is not CollectiveKind.SCATTER)
        )
        phases_ns[kind.value] = plan.makespan / PS_PER_NS
    else:
        if net.is_self_transpose() and rev_b == fwd_b:
            plan, chans, tm, used = solve(net, src, -1, 0.0, 0.35, fwd_b)
            t_chans, t_plan = _transpose_plan(net, plan, chans)
            t_net = net.transpose()
            t_tm = [time_channel(t_net, ch, rev_b, cost) for ch in t_chans]
            rs = reverse_phase(t_plan, t_chans, t_tm, routes)
            rs_span = plan.makespan
        else:
            t_plan, t_chans, t_tm, used = solve(net.transpose(), src, -1, 0.0, 0.25, rev_b)
            rs = reverse_phase(t_plan, t_chans, t_tm, routes)
            rs_span = t_plan.makespan
            plan, chans, _tm, _ = solve(net, src, -1, 0.25, 0.5, fwd_b)
        # Two ways to follow the Reduce-Scatter, the planned-shorter kept: the All-Gather
        # planned as if every chunk were ready at once, after it; or each chunk started where
        # and when the Reduce-Scatter finishes it, on links as they come free of it.
        # The second is skipped when the first is within 0.5% of the cheap lower bound (a
        # bound for dense chunks only).
        classic = rs_span + plan.makespan
        early: Plan | None = None
        if sized or classic > to_ps(allreduce_volume_bound_ns(net, npus, chunk_bytes, cf)) * 1.005:
            ready, busy_until = _finished(rs, routes, origin)
            early, e_chans, _e, _ = solve(net, src, -1, 0.5, 0.8, fwd_b, ready, busy_until)
        phases.append(Phase(rs, False, True))
        if early is not None and early.makespan < classic:
            phases.append(Phase(forward_phase(early, e_chans, routes), True, False))
            ag_ns = (early.makespan - min(ready)) / PS_PER_NS
        else:
            phases.append(Phase(forward_phase(plan, chans, routes), True, False, shift=rs_span))
            ag_ns = plan.makespan / PS_PER_NS
        phases_ns[CollectiveKind.REDUCE_SCATTER.value] = rs_span / PS_PER_NS
        phases_ns[CollectiveKind.ALLGATHER.value] = ag_ns
    if fwd_b != routes.chunk_bytes:
        # Forward phases planned at their own size: their routes' timing at that size.
        at = [time_channel(net, ch, fwd_b, cost) for ch in routes.channels]
        timing = (
            np.array([tm.dur for tm in at], dtype=np.int64),
            np.array([tm.hops[0][2] for tm in at], dtype=np.int64),
        )
        phases = [dataclasses.replace(p, timing=timing) if p.forward else p for p in phases]
    return Schedule(phases, routes, origin, used, phases_ns, "/".join(dict.fromkeys(rules_used)))


def lowered(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int = 0,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> tuple[Synthesis, Lowered, Routes]:
    """Like `synthesize` (one seed), also returning the transfer graph and routes, for tests
    and tools that replay the schedule themselves."""
    holder: dict[str, object] = {}
    global _KEEP
    _KEEP = holder
    try:
        syn = synthesize(collective, topology, chunk_bytes, seed=seed, cost=cost)
    finally:
        _KEEP = None
    low = holder.get("low")
    routes = holder.get("routes")
    assert isinstance(low, Lowered) and isinstance(routes, Routes)
    return syn, low, routes


_KEEP: dict[str, object] | None = None


def _lower(
    collective: Collective,
    phases: list[Phase],
    routes: Routes,
    origin: I64,
    name: str,
    timer: Timer,
    on_arrival: bool,
) -> Lowered:
    num_chunks = len(origin)
    low = lower(
        collective,
        phases,
        routes.arrays(),
        num_chunks,
        origin,
        name=name,
        timer=timer,
        on_arrival=on_arrival,
    )
    if _KEEP is not None:
        _KEEP["low"] = low
        _KEEP["routes"] = routes
    return low


def _finished(rs: dict[str, I64], routes: Routes, owner: I64) -> tuple[list[int], dict[int, int]]:
    """When the planned Reduce-Scatter ``rs`` finishes each chunk at its owner (its last
    arrival there, ps), and until when it holds each link."""
    timed = routes.timed
    ready = np.zeros(len(owner), dtype=np.int64)
    dur = np.array([tm.dur for tm in timed], dtype=np.int64)
    arrive = rs["start"] + dur[rs["route"]]
    at_owner = rs["dst"] == owner[rs["chunk"]]
    np.maximum.at(ready, rs["chunk"][at_owner], arrive[at_owner])
    busy: dict[int, int] = {}
    for rid, st in zip(rs["route"].tolist(), rs["start"].tolist(), strict=True):
        for li, off, ser in timed[rid].hops:
            end = st + off + ser
            if end > busy.get(li, 0):
                busy[li] = end
    return ready.tolist(), busy


def _transpose_plan(net: Net, plan: Plan, chans: list[Channel]) -> tuple[list[Channel], Plan]:
    """A plan on ``net`` seen as a plan on its transpose (``net`` must be its own transpose):
    each channel is replaced by the transposed channel with the same node path and cost."""
    t_net = net.transpose()
    by_key: dict[tuple[tuple[int, ...], float, float], list[int]] = {}
    for li, lk in enumerate(net.links):
        by_key.setdefault(((lk.src, lk.dst), lk.latency_ns, lk.bandwidth_bytes_per_ns), []).append(
            li
        )
    # For each link of net, a link of the transpose joining the same nodes with the same cost.
    t_by_key: dict[tuple[tuple[int, ...], float, float], list[int]] = {}
    for li, lk in enumerate(t_net.links):
        t_by_key.setdefault(
            ((lk.src, lk.dst), lk.latency_ns, lk.bandwidth_bytes_per_ns), []
        ).append(li)
    link_map: dict[int, int] = {}
    for key, lst in by_key.items():
        for a, b in zip(lst, t_by_key[key], strict=True):
            link_map[a] = b
    t_chans = [Channel(c.src, c.dst, c.nodes, tuple(link_map[x] for x in c.links)) for c in chans]
    return t_chans, plan


def _trivial(c: Collective, name: str) -> Program:
    b = ProgramBuilder(c, auto_deps=True, name=name)
    if not c.inplace:
        n_in, n_out = c.input_chunks(0), c.output_chunks(0)
        n = min(n_in, n_out)
        b.copy(0, Slice(Buffer.INPUT, 0, n), Slice(Buffer.OUTPUT, 0, n))
    return b.build()


def _scaled(say: Progress, a: float, b: float) -> Progress:
    """``say`` for a part of the work that spans fractions ``a..b`` of the whole."""
    return lambda f: say(a + (b - a) * f)
