"""The contention mode: every collective of a workload expanded into a collc program on its
group's NPUs, and the whole iteration simulated as one task graph, so collectives of
different groups (and pipeline messages) contend for links.

Two passes:

1. The workload runs by ASTRA-sim's workload rules (`workloads.engine.run_workload`) with
   each collective timed alone on an idle network (its program simulated by itself, once per
   distinct collective) and each message at its uncontended time. This fixes, per NPU, the
   order in which nodes are issued.
2. One task graph holds every NPU's workload nodes (compute as timed tasks, messages as
   sends and receives) and every collective's program ranks, placed on the members' NPUs. A
   collective's ranks on an NPU start when that NPU issues the collective and its node ends
   when they are done. The per-NPU resources of ASTRA-sim (one compute, one communication,
   one CPU op at a time; receives exempt) become chains in the issue order of pass 1. The
   graph runs on the chosen simulator model, with contention.

The result is exact when contention does not change which ready node an NPU issues first
(it only delays them); the order is that of pass 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from backends.sim.models import get_model, simulate, simulate_tasks
from backends.sim.results import SimResult
from backends.sim.tasks import Detail, TaskGraph, TaskKind, tasks_from_program
from chakra_ir.program import Program
from topologies.cost_model import CostModel
from topologies.topology import Topology
from workloads.engine import (
    CollCall,
    CollInstance,
    Roofline,
    WorkloadRun,
    local_ns,
    resource,
    run_workload,
)
from workloads.model import CollKind, NodeKind, Workload

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Expansion:
    """A collective's program, placed on the group's NPUs, with its chunk size in bytes."""

    program: Program
    chunk_bytes: int


ProgramFor = Callable[[CollCall], Expansion]
"""Makes the program of one collective (cached by the caller or not: called once per distinct
`CollCall`)."""


@dataclass
class ContendedRun:
    """The contention mode's answer: ``run`` (times per NPU, node and collective, from the
    contended simulation), ``uncontended`` (pass 1), ``sim`` (the simulation of the whole
    graph: links, messages) and ``programs`` (distinct collectives expanded)."""

    run: WorkloadRun
    uncontended: WorkloadRun
    sim: SimResult
    programs: int


def run_contended(
    w: Workload,
    topology: Topology,
    program_for: ProgramFor,
    *,
    model: str = "congestion",
    cost: CostModel,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    phase: Callable[[str], None] | None = None,
) -> ContendedRun:
    """Run ``w`` on ``topology`` with every collective expanded by ``program_for``; see the
    module docstring. ``w`` must have passed `workloads.model.check_workload`. ``phase`` is
    told what is being done (for a progress line)."""
    say = phase or (lambda _msg: None)
    m = get_model(model)
    expansions: dict[CollCall, Expansion] = {}
    graphs: dict[CollCall, TaskGraph] = {}
    alone: dict[CollCall, float] = {}

    def expansion(call: CollCall) -> Expansion:
        e = expansions.get(call)
        if e is None:
            e = program_for(call)
            expansions[call] = e
        return e

    def coll_time(call: CollCall) -> float:
        t = alone.get(call)
        if t is None:
            e = expansion(call)
            t = simulate(e.program, topology, e.chunk_bytes, model=model, cost=cost).finish_ns
            alone[call] = t
        return t

    p2p_cache: dict[tuple[int, int, int], float] = {}

    def p2p_time(src: int, dst: int, nbytes: int) -> float:
        key = (src, dst, nbytes)
        t = p2p_cache.get(key)
        if t is None:
            links = [topology.links[i] for i in topology.route_links(src, dst)]
            t = cost.path_ns(links, nbytes)
            p2p_cache[key] = t
        return t

    say("pass 1: each collective expanded and timed alone")
    first = run_workload(w, coll_time, p2p_time, roofline=roofline, remote_mem=remote_mem)
    say(f"pass 2: merging {len(first.collectives):,} collectives into one task graph")

    def graph_of(call: CollCall) -> TaskGraph:
        g = graphs.get(call)
        if g is None:
            e = expansion(call)
            g = tasks_from_program(
                e.program,
                e.chunk_bytes,
                cost,
                fold_reductions=m.fold_reductions,
                topology=topology,
            )
            graphs[call] = g
        return g

    merged, layout = _merge(w, first, graph_of, roofline, remote_mem)
    say(f"pass 2: simulating {merged.num_tasks:,} tasks with contention")
    sim = simulate_tasks(merged, topology, model=model, cost=cost, keep_timeline=True)
    run = _times(w, first, sim, layout)
    return ContendedRun(run, first, sim, len(expansions))


@dataclass
class _Layout:
    """Where things are in the merged graph: ``node_task[npu][i]`` (a COLL node: its end
    marker), ``issue_task[npu][i]`` (a COLL node's issue gate, else -1), ``coll_ranks[c]``
    (the merged ranks of collective instance ``c``), ``coll_issue[c]`` (its members' issue
    gates)."""

    node_task: list[list[int]]
    issue_task: list[list[int]]
    coll_ranks: list[list[int]]
    coll_issue: list[list[int]]


class _Columns:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.detail: list[int] = []
        self.peer: list[int] = []
        self.nbytes: list[int] = []
        self.tag: list[int] = []
        self.dur: list[float] = []
        self.origin: list[int] = []

    def add(
        self, kind: int, detail: int, peer: int, nbytes: int, tag: int, dur: float, origin: int
    ) -> int:
        self.kind.append(kind)
        self.detail.append(detail)
        self.peer.append(peer)
        self.nbytes.append(nbytes)
        self.tag.append(tag)
        self.dur.append(dur)
        self.origin.append(origin)
        return len(self.kind) - 1


def _merge(
    w: Workload,
    first: WorkloadRun,
    graph_of: Callable[[CollCall], TaskGraph],
    roofline: Roofline | None,
    remote_mem: tuple[float, float] | None,
) -> tuple[TaskGraph, _Layout]:
    n = w.num_npus
    cols = _Columns()
    deps: list[list[int]] = []
    npus: list[int] = []
    rank_offsets = [0]
    node_task: list[list[int]] = []
    issue_task: list[list[int]] = []
    # Which instance each COLL node belongs to: the k-th on its group.
    inst_index: dict[tuple[str, int], int] = {
        (c.call.pg_name, c.index): k for k, c in enumerate(first.collectives)
    }
    coll_of: list[dict[int, int]] = []
    # Workload ranks 0..n-1 first.
    for npu, nodes in enumerate(w.ranks):
        count: dict[str, int] = {}
        mine: dict[int, int] = {}
        tasks = [0] * len(nodes)
        for i in first.issue_order[npu]:
            nd = nodes[i]
            if nd.kind == NodeKind.COLL and nd.comm_type != CollKind.BROADCAST:
                pg = nd.pg_name if nd.pg_name != "0" else ""
                k = count.get(pg, 0)
                count[pg] = k + 1
                mine[i] = inst_index[(pg, k)]
        coll_of.append(mine)
        for i, nd in enumerate(nodes):
            if nd.kind in (NodeKind.SEND, NodeKind.RECV):
                send = nd.kind == NodeKind.SEND
                peer = nd.comm_dst if send else nd.comm_src
                assert peer is not None
                kind, detail = (
                    (TaskKind.SEND, Detail.SEND) if send else (TaskKind.RECV, Detail.RECV)
                )
                t = cols.add(kind, detail, peer, nd.comm_size or 0, nd.comm_tag or 0, 0.0, nd.id)
            else:
                dt = 0.0 if i in mine else local_ns(w, npu, nd, roofline, remote_mem)
                detail = Detail.COMP if nd.kind == NodeKind.COMP else Detail.NOOP
                t = cols.add(TaskKind.COMP, detail, -1, 0, 0, dt, nd.id)
            tasks[i] = t
            deps.append([])
        issues = [-1] * len(nodes)
        for i in sorted(mine):
            issues[i] = cols.add(TaskKind.COMP, Detail.GATE, -1, 0, 0, 0.0, nodes[i].id)
            deps.append([])
        pos = {nd.id: i for i, nd in enumerate(nodes)}
        for i, nd in enumerate(nodes):
            target = issues[i] if issues[i] >= 0 else tasks[i]
            deps[target].extend(tasks[pos[d]] for d in set(nd.deps))
            if issues[i] >= 0:
                deps[tasks[i]].append(issues[i])
        last: dict[str, int] = {}
        for i in first.issue_order[npu]:
            res = resource(nodes[i])
            if res == "none":
                continue
            target = issues[i] if issues[i] >= 0 else tasks[i]
            if res in last:
                deps[target].append(last[res])
            last[res] = tasks[i]
        node_task.append(tasks)
        issue_task.append(issues)
        npus.append(npu)
        rank_offsets.append(len(cols.kind))
    # The collectives' ranks, one block of a program's task graph per instance.
    n_work = len(cols.kind)
    own: list[I64] = []  # dependency pairs (task, on), in order per task
    on: list[I64] = []
    pairs = [(t, d) for t, ds in enumerate(deps) for d in ds]
    own.append(np.fromiter((t for t, _ in pairs), dtype=np.int64, count=len(pairs)))
    on.append(np.fromiter((d for _, d in pairs), dtype=np.int64, count=len(pairs)))
    del pairs
    blocks: list[TaskGraph] = []
    block_offsets: list[int] = []
    block_ranks: list[int] = []
    coll_ranks: list[list[int]] = []
    members_issue: list[dict[int, int]] = [dict() for _ in first.collectives]
    members_end: list[dict[int, int]] = [dict() for _ in first.collectives]
    for npu in range(n):
        for i, c in coll_of[npu].items():
            members_issue[c][npu] = issue_task[npu][i]
            members_end[c][npu] = node_task[npu][i]
    shape: dict[int, tuple[I64, I64, I64, I64]] = {}  # id(graph) -> roots, their ranks, sinks, ...
    switch_ranks: list[int] = []
    offset = n_work
    for c, inst in enumerate(first.collectives):
        g = graph_of(inst.call)
        info = shape.get(id(g))
        if info is None:
            counts = np.diff(g.dep_offsets)
            roots = np.flatnonzero(counts == 0)
            has_succ = np.zeros(g.num_tasks, dtype=bool)
            has_succ[g.deps] = True
            sinks = np.flatnonzero(~has_succ)
            owner = np.repeat(np.arange(g.num_tasks, dtype=np.int64), counts)
            info = (roots, sinks, owner, g.task_rank())
            shape[id(g)] = info
        roots, sinks, owner, task_rank = info
        base_rank = len(npus)
        # Switch ranks (in-network flows) only forward pieces: they wait for messages, not
        # for an NPU's issue, and no NPU waits for them.
        switch = set(g.switch_ranks)
        npu_rank = np.array([r not in switch for r in range(g.num_ranks)], dtype=bool)
        issue_of_rank = np.array(
            [members_issue[c][x] if npu_rank[r] else -1 for r, x in enumerate(g.npus)],
            dtype=np.int64,
        )
        end_of_rank = np.array(
            [members_end[c][x] if npu_rank[r] else -1 for r, x in enumerate(g.npus)],
            dtype=np.int64,
        )
        roots = roots[npu_rank[task_rank[roots]]]
        sinks = sinks[npu_rank[task_rank[sinks]]]
        switch_ranks.extend(base_rank + r for r in g.switch_ranks)
        own.append(owner + offset)
        on.append(g.deps + offset)
        own.append(roots + offset)
        on.append(issue_of_rank[task_rank[roots]])
        own.append(end_of_rank[task_rank[sinks]])
        on.append(sinks + offset)
        blocks.append(g)
        block_offsets.append(offset)
        block_ranks.append(base_rank)
        coll_ranks.append(list(range(base_rank, base_rank + g.num_ranks)))
        npus.extend(g.npus)
        rank_offsets.extend((g.rank_offsets[1:] + offset).tolist())
        offset += g.num_tasks
    total = offset

    def column(name: str, work: list[int] | list[float], dtype: type) -> npt.NDArray[Any]:
        parts: list[npt.NDArray[Any]] = [np.asarray(work, dtype=dtype)]
        for g, base in zip(blocks, block_ranks, strict=True):
            col = getattr(g, name)
            if name == "peer":
                col = np.where(col >= 0, col + base, -1)
            parts.append(col.astype(dtype, copy=False))
        return np.concatenate(parts)

    own_a = np.concatenate(own)
    on_a = np.concatenate(on)
    order = np.argsort(own_a, kind="stable")
    dep_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(np.bincount(own_a, minlength=total), out=dep_offsets[1:])
    route_len = np.concatenate(
        [np.zeros(n_work, dtype=np.int64), *[np.diff(g.route_offsets) for g in blocks]]
    )
    route_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(route_len, out=route_offsets[1:])
    route_nodes = np.concatenate(
        [np.zeros(0, dtype=np.int64), *[g.route_nodes.astype(np.int64) for g in blocks]]
    )
    dur = column("duration_ns", cols.dur, np.float64)
    graph = TaskGraph(
        npus=tuple(npus),
        rank_offsets=np.asarray(rank_offsets, dtype=np.int64),
        kind=column("kind", cols.kind, np.int8),
        detail=column("detail", cols.detail, np.int8),
        peer=column("peer", cols.peer, np.int64),
        nbytes=column("nbytes", cols.nbytes, np.int64),
        tag=column("tag", cols.tag, np.int64),
        duration_ns=dur,
        duration_us=column("duration_us", [int(x // 1000) for x in cols.dur], np.int64),
        dep_offsets=dep_offsets,
        deps=on_a[order],
        route_offsets=route_offsets,
        route_nodes=route_nodes,
        origin=column("origin", cols.origin, np.int64),
        source="workload",
        semantics_checked=False,
        merged=True,
        switch_ranks=tuple(switch_ranks),
    )
    coll_issue = [list(x.values()) for x in members_issue]
    return graph, _Layout(node_task, issue_task, coll_ranks, coll_issue)


def _times(w: Workload, first: WorkloadRun, sim: SimResult, lay: _Layout) -> WorkloadRun:
    tl = sim.timeline
    assert tl is not None
    start, end = tl.issue_ns, tl.finish_ns
    starts: list[list[float]] = []
    ends: list[list[float]] = []
    finish: list[float] = []
    for npu, nodes in enumerate(w.ranks):
        s_row, e_row = [], []
        for i in range(len(nodes)):
            t = lay.node_task[npu][i]
            g = lay.issue_task[npu][i]
            s_row.append(float(end[g]) if g >= 0 else float(start[t]))
            e_row.append(float(end[t]))
        starts.append(s_row)
        ends.append(e_row)
        finish.append(max(e_row) if e_row else 0.0)
    colls: list[CollInstance] = []
    for c, inst in enumerate(first.collectives):
        ranks = lay.coll_ranks[c]
        lo = min(float(end[g]) for g in lay.coll_issue[c])
        hi = max(float(sim.rank_finish_ns[r]) for r in ranks) if ranks else lo
        colls.append(CollInstance(inst.call, inst.index, inst.name, lo, hi))
    colls.sort(key=lambda x: (x.start_ns, x.call.pg_name, x.index))
    compute = first.compute_ns
    return WorkloadRun(finish, list(compute), starts, ends, colls, first.issue_order)
