"""Joint synthesis of one collective run by several process groups at once.

Every group runs the same collective among its own ranks (`Collective.groups`), all at the same
time, on one network: their messages share links. `synthesize_groups` plans them together: one
link-chunk matching over the chunks of every group (a chunk is offered only to the ranks of its
group, over channels between ranks of its group, whose interiors may cross other NPUs as
relays), so each link's time is shared among the groups as they need it. Each group's part of
the plan is then lowered on its own (groups exchange nothing) and the programs merged
(`chakra_ir.grouping.merge_groups`). ``independent=True`` synthesizes every group alone, as if
it had the network to itself, and merges those programs: the comparison a user wants.

All-Gather, Reduce-Scatter, All-Reduce and All-to-All are served (the kinds process groups run
in training; rooted kinds take no groups); All-to-All by `tacos.alltoall`, whose matching takes
every group's pairs at once. All-Reduce is the joint Reduce-Scatter followed by the joint
All-Gather. The time of the merged program is not predicted here: the groups' shared links make
it the simulator's to tell (the CLI simulates every synthesized program).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.grouping import merge_groups
from chakra_ir.program import Program
from tacos.channels import Channel, Net, check_placement, group_channels, time_channel
from tacos.errors import TacosError
from tacos.lowering import Phase, Transfers, lower
from tacos.matching import Plan, spread, trials
from tacos.result import Progress, Synthesis, check_arguments
from tacos.reversal import forward_phase, reverse_phase
from tacos.routes import Routes
from tacos.synthesis import _finished, _scaled, _transpose_plan, synthesize
from tacos.timing import replay, replay_single_hop
from topologies.cost_model import DEFAULT_COST_MODEL, PS_PER_NS, CostModel
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]

GROUP_KINDS = frozenset(
    {
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLREDUCE,
        CollectiveKind.ALLTOALL,
    }
)
"""The kinds `synthesize_groups` serves."""


def synthesize_groups(
    collective: Collective,
    topology: Topology,
    chunk_bytes: float,
    *,
    seed: int = 0,
    seeds: int = 1,
    cost: CostModel = DEFAULT_COST_MODEL,
    independent: bool = False,
    progress: Progress | None = None,
) -> Synthesis:
    """Synthesize ``collective`` (split into groups) on ``topology``; see the module docstring.

    Contract: the program satisfies ``collective`` (every group's pre- and postcondition) and
    carries the routes it was charged for; the same arguments give the same program.
    ``estimated_ns`` of the result is the longest group's planned makespan (joint) or the
    longest group's own estimate (independent), a planning figure: simulate the program for
    its time. Raises TacosError for a kind without groups support, a bad chunk size or seed
    count, and groups whose ranks cannot reach each other.
    """
    t0 = time.perf_counter()
    c = collective
    if not c.groups:
        raise TacosError("synthesize_groups needs a collective split into groups")
    if c.kind not in GROUP_KINDS:
        served = ", ".join(sorted(k.value for k in GROUP_KINDS))
        raise TacosError(f"tacos synthesizes {c.kind.value} only without groups (groups: {served})")
    check_arguments(chunk_bytes, seeds)
    check_placement(c, topology)
    say = progress or (lambda _f: None)
    G = len(c.groups)
    if independent:
        programs: list[Program] = []
        est = 0.0
        for g in range(G):
            syn = synthesize(
                c.group_collective(g), topology, chunk_bytes, seed=seed, seeds=seeds, cost=cost
            )
            programs.append(syn.program)
            est = max(est, syn.estimated_ns)
            say((g + 1) / G)
        name = f"tacos-{c.kind.value}-independent"
        return Synthesis(
            merge_groups(c, programs, name),
            est,
            time.perf_counter() - t0,
            seed,
            chunk_bytes,
            transfers=sum(int((p.kind == 0).sum()) for p in programs),
        )
    if c.kind is CollectiveKind.ALLTOALL:
        from tacos.alltoall import synthesize_alltoall  # only all-to-all loads it (start-up)

        return synthesize_alltoall(
            c, topology, chunk_bytes, seed=seed, seeds=seeds, cost=cost, progress=progress
        )
    return _joint(c, topology, chunk_bytes, seed, seeds, cost, say, t0)


def _joint(
    c: Collective,
    topology: Topology,
    chunk_bytes: float,
    seed: int,
    seeds: int,
    cost: CostModel,
    say: Progress,
    t0: float,
) -> Synthesis:
    kind, G, n = c.kind, len(c.groups), c.group_size
    cf = c.chunks_per_rank
    # Chunk ids: group g owns ids g*Kg .. (g+1)*Kg - 1, laid out as a lone group's would be.
    if kind is CollectiveKind.ALLREDUCE:
        local_src = [(x * n) // cf for x in range(cf)]
    else:
        local_src = [x // cf for x in range(n * cf)]
    Kg = len(local_src)
    chunk_src = [c.groups[g][s] for g in range(G) for s in local_src]
    want = [0] * c.num_ranks
    for g, members in enumerate(c.groups):
        mask = ((1 << Kg) - 1) << (g * Kg)
        for r in members:
            want[r] = mask
    net = Net.of(topology)
    routes = Routes(net, chunk_bytes, cost)

    def solve(
        on: Net,
        lo: float,
        hi: float,
        ready: Sequence[int] = (),
        busy_until: dict[int, int] | None = None,
    ) -> tuple[Plan, list[Channel], int]:
        channels = group_channels(on, c)
        timing = [time_channel(on, ch, chunk_bytes, cost) for ch in channels]
        best: tuple[Plan, int] | None = None
        for i, (s, rule) in enumerate(trials(channels, seed, seeds)):
            a = lo + (hi - lo) * i / seeds
            b = lo + (hi - lo) * (i + 1) / seeds
            plan = spread(
                c.num_ranks,
                channels,
                timing,
                chunk_src,
                seed=s,
                progress=_scaled(say, a, b),
                on_arrival=cost.on_arrival,
                ready=ready,
                busy_until=busy_until,
                want=want,
                rule=rule,
            )
            if best is None or plan.makespan < best[0].makespan:
                best = (plan, s)
        assert best is not None
        return best[0], channels, best[1]

    phases: list[Phase] = []
    phases_ns: dict[str, float] = {}
    if kind is CollectiveKind.ALLGATHER:
        plan, chans, used = solve(net, 0.0, 0.8)
        phases.append(Phase(forward_phase(plan, chans, routes), True, False))
        phases_ns[kind.value] = plan.makespan / PS_PER_NS
        span = plan.makespan
    elif kind is CollectiveKind.REDUCE_SCATTER:
        t_net = net.transpose()
        plan, chans, used = solve(t_net, 0.0, 0.8)
        tm = [time_channel(t_net, ch, chunk_bytes, cost) for ch in chans]
        phases.append(Phase(reverse_phase(plan, chans, tm, routes), False, True))
        phases_ns[kind.value] = plan.makespan / PS_PER_NS
        span = plan.makespan
    else:
        if net.is_self_transpose():
            plan, chans, used = solve(net, 0.0, 0.4)
            t_chans, t_plan = _transpose_plan(net, plan, chans)
        else:
            t_plan, t_chans, used = solve(net.transpose(), 0.0, 0.4)
            plan, chans, _ = solve(net, 0.4, 0.8)
        t_net = net.transpose()
        t_tm = [time_channel(t_net, ch, chunk_bytes, cost) for ch in t_chans]
        rs = reverse_phase(t_plan, t_chans, t_tm, routes)
        phases.append(Phase(rs, False, True))
        # As for one group (`tacos.synthesis`): the All-Gather after the Reduce-Scatter, or
        # each chunk started where and when the Reduce-Scatter finishes it; the shorter kept.
        ready, busy_until = _finished(rs, routes, np.array(chunk_src, dtype=np.int64))
        early, e_chans, _ = solve(net, 0.8, 0.85, ready, busy_until)
        classic = t_plan.makespan + plan.makespan
        if early.makespan < classic:
            phases.append(Phase(forward_phase(early, e_chans, routes), True, False))
            span = early.makespan
            ag_ns = (early.makespan - min(ready)) / PS_PER_NS
        else:
            phases.append(
                Phase(forward_phase(plan, chans, routes), True, False, shift=t_plan.makespan)
            )
            span = classic
            ag_ns = plan.makespan / PS_PER_NS
        phases_ns[CollectiveKind.REDUCE_SCATTER.value] = t_plan.makespan / PS_PER_NS
        phases_ns[CollectiveKind.ALLGATHER.value] = ag_ns
    say(0.85)
    arrays = routes.arrays()
    single = all(len(tm.hops) == 1 for tm in routes.timed)
    reduce_ns = cost.reduction_ns(chunk_bytes)
    origin_local = np.array(local_src, dtype=np.int64)
    programs = []
    transfers = 0
    name = f"tacos-{kind.value}"
    for g in range(G):
        sub = [_group_phase(p, c, g, Kg) for p in phases]
        transfers += sum(len(p.transfers["chunk"]) for p in sub)

        def timer(tr: Transfers) -> tuple[I64, I64]:
            rp = (replay_single_hop if single else replay)(
                tr, routes.timed, reduce_ns, cost.on_arrival
            )
            return rp.events, rp.start

        low = lower(
            c.group_collective(g),
            sub,
            arrays,
            Kg,
            origin_local,
            name=name,
            timer=timer,
            on_arrival=cost.on_arrival,
        )
        programs.append(low.program)
        say(0.85 + 0.15 * (g + 1) / G)
    return Synthesis(
        merge_groups(c, programs, name),
        span / PS_PER_NS,
        time.perf_counter() - t0,
        used,
        chunk_bytes,
        phases_ns,
        transfers,
        plan_exact=False,
    )


def _group_phase(phase: Phase, c: Collective, g: int, Kg: int) -> Phase:
    """Group ``g``'s transfers of a joint phase, in its own ranks and chunk ids."""
    t = phase.transfers
    chunk = t["chunk"]
    sel = np.flatnonzero(chunk // Kg == g)
    local = np.full(c.num_ranks, -1, dtype=np.int64)
    local[list(c.groups[g])] = np.arange(len(c.groups[g]))
    # tdep names a transfer of the same phase by index: renumber within the group.
    renum = np.full(len(chunk), -1, dtype=np.int64)
    renum[sel] = np.arange(len(sel))
    tdep = t["tdep"][sel]
    has = tdep >= 0
    tdep = np.where(has, 2 * renum[np.maximum(tdep, 0) >> 1] + (tdep & 1), -1)
    if (has & (tdep < 0)).any():
        raise TacosError("internal: a timing dependency crosses process groups")
    out: dict[str, I64] = {
        "chunk": chunk[sel] - g * Kg,
        "src": local[t["src"][sel]],
        "dst": local[t["dst"][sel]],
        "route": t["route"][sel],
        "start": t["start"][sel],
        "tdep": tdep,
    }
    return Phase(out, phase.forward, phase.reduce, phase.shift)
