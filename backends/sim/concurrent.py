"""Several programs at once on one topology: `simulate_instances`.

A training step runs many collectives at the same time on different process groups, and they
share links. An `Instance` is one program (its own ranks, buffers and chunk size) placed on
NPUs of the topology, with a start gate: a time, and the instances that must finish first. The
instances' task graphs are merged into one graph and run by one engine, so their messages
contend for links under the cost model exactly as one program's would.

Rules:

- Ranks of different instances may share an NPU (a tensor-parallel and a data-parallel
  collective on the same NPU); they keep their own tasks and never exchange messages.
- The merged graph lists ranks by NPU, then by instance (the order of ``instances``), and each
  rank's tasks in their own order. The engines break ties by task order, so a program split
  into groups (`chakra_ir.grouping.split_groups`) over NPU-ordered ranks runs exactly as the
  whole program does.
- An instance's gate opens at ``start_ns`` or when the last task of every instance in ``after``
  has finished, whichever is later (``after_npu``: each rank waits only for the ranks of those
  instances on its own NPU, and for the start time). A gate is a task of no work in front of the
  instance's first tasks; an instance without a start time or ``after`` has none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from backends.sim.errors import SimError
from backends.sim.models import get_model, simulate_tasks
from backends.sim.results import InstanceTiming, SimResult
from backends.sim.tasks import Detail, TaskGraph, TaskKind, tasks_from_program
from chakra_ir.program import Program
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Instance:
    """One program run among others: ``name`` (unique), the ``program`` with its
    ``chunk_bytes``, and its start gate (``start_ns``, ``after``, ``after_npu``; see the
    module docstring)."""

    name: str
    program: Program
    chunk_bytes: int
    start_ns: float = 0.0
    after: tuple[str, ...] = ()
    after_npu: bool = False


def simulate_instances(
    instances: Sequence[Instance],
    topology: Topology,
    *,
    model: str = "congestion",
    cost: CostModel = DEFAULT_COST_MODEL,
    packet_bytes: int | None = None,
    keep_timeline: bool = False,
) -> SimResult:
    """Run ``instances`` together on ``topology``; see the module docstring.

    The result's ``instances`` give each one's gate opening and finish; ``rank_finish_ns`` and
    the timeline list the merged ranks (by NPU, then instance). Programs are not verified here.
    Raises SimError for an empty list, duplicate or unknown names, a cycle among ``after``, a
    negative or non-finite start, a chunk size below 1 byte, and everything `simulate_tasks`
    refuses.
    """
    if not instances:
        raise SimError("no program instances to simulate")
    names = [x.name for x in instances]
    index = {nm: i for i, nm in enumerate(names)}
    if len(index) != len(names):
        dup = next(nm for nm in names if names.count(nm) > 1)
        raise SimError(f"two program instances are called {dup!r}")
    for x in instances:
        if not np.isfinite(x.start_ns) or x.start_ns < 0:
            raise SimError(f"instance {x.name!r}: start time {x.start_ns} ns is not a time")
        for a in x.after:
            if a not in index:
                raise SimError(f"instance {x.name!r} waits for {a!r}, which is no instance")
            if a == x.name:
                raise SimError(f"instance {x.name!r} waits for itself")
    _check_acyclic(instances, index)
    m = get_model(model)
    graphs = [
        tasks_from_program(
            x.program,
            x.chunk_bytes,
            cost,
            fold_reductions=m.fold_reductions,
            topology=topology,
        )
        for x in instances
    ]
    merged, rank_map = _merge(instances, graphs, index)
    result = simulate_tasks(
        merged,
        topology,
        model=model,
        cost=cost,
        packet_bytes=packet_bytes,
        keep_timeline=keep_timeline,
    )
    finish = [
        float(result.rank_finish_ns[ranks].max()) if len(ranks) else 0.0 for ranks in rank_map
    ]
    timings = []
    for i, x in enumerate(instances):
        # The gate opens for each rank at the start time and after what it waits for.
        release = np.full(graphs[i].num_ranks, x.start_ns)
        for a in x.after:
            j = index[a]
            if not x.after_npu:
                release = np.maximum(release, finish[j])
                continue
            done_on: dict[int, float] = {}
            for k, npu in zip(rank_map[j].tolist(), graphs[j].npus, strict=True):
                done_on[npu] = max(done_on.get(npu, 0.0), float(result.rank_finish_ns[k]))
            release = np.maximum(release, [done_on.get(npu, 0.0) for npu in graphs[i].npus])
        start = float(release.min()) if len(release) else x.start_ns
        timings.append(InstanceTiming(x.name, graphs[i].npus, start, finish[i]))
    return dataclasses.replace(result, instances=tuple(timings))


def _check_acyclic(instances: Sequence[Instance], index: dict[str, int]) -> None:
    state = [0] * len(instances)  # 0 new, 1 on the path, 2 done

    def visit(i: int, path: list[str]) -> None:
        if state[i] == 2:
            return
        if state[i] == 1:
            cycle = [*path[path.index(instances[i].name) :], instances[i].name]
            raise SimError("program instances wait for each other: " + " -> ".join(cycle))
        state[i] = 1
        for a in instances[i].after:
            visit(index[a], [*path, instances[i].name])
        state[i] = 2

    for i in range(len(instances)):
        visit(i, [])


def _merge(
    instances: Sequence[Instance], graphs: Sequence[TaskGraph], index: dict[str, int]
) -> tuple[TaskGraph, list[I64]]:
    """The merged graph and each instance's merged ranks.

    A gated rank starts with a timer task (a COMP of ``start_ns``, when positive) and a gate
    task (no work; it waits for the timer and for the ``after`` instances' last tasks) when
    the instance has ``after``; the rank's first tasks wait for the last of these."""
    owners = sorted((npu, i, r) for i, g in enumerate(graphs) for r, npu in enumerate(g.npus))
    new_rank = [np.zeros(g.num_ranks, dtype=np.int64) for g in graphs]
    for k, (_, i, r) in enumerate(owners):
        new_rank[i][r] = k
    timer = [x.start_ns > 0 for x in instances]
    gate = [bool(x.after) for x in instances]
    extra = [int(timer[i]) + int(gate[i]) for i in range(len(instances))]
    counts = np.array(
        [
            int(graphs[i].rank_offsets[r + 1] - graphs[i].rank_offsets[r]) + extra[i]
            for _, i, r in owners
        ],
        dtype=np.int64,
    )
    rank_offsets = np.zeros(len(owners) + 1, dtype=np.int64)
    np.cumsum(counts, out=rank_offsets[1:])
    n = int(rank_offsets[-1])
    task_pos: list[I64] = []
    head: list[I64] = []  # per instance rank: the merged index of its first extra task
    for i, g in enumerate(graphs):
        local = np.arange(g.num_tasks, dtype=np.int64) - np.repeat(
            g.rank_offsets[:-1], np.diff(g.rank_offsets)
        )
        head.append(rank_offsets[new_rank[i]])
        task_pos.append(head[i][g.task_rank()] + extra[i] + local)
    cols: dict[str, npt.NDArray[np.generic]] = {}
    for name, dtype, fill in (
        ("kind", np.int8, int(TaskKind.COMP)),
        ("detail", np.int8, int(Detail.GATE)),
        ("peer", np.int64, -1),
        ("nbytes", np.int64, 0),
        ("tag", np.int64, 0),
        ("duration_ns", np.float64, 0.0),
        ("duration_us", np.int64, 0),
        ("origin", np.int64, -1),
    ):
        col = np.full(n, fill, dtype=dtype)
        for i, g in enumerate(graphs):
            src = getattr(g, name)
            if name == "peer":
                src = np.where(src >= 0, new_rank[i][np.maximum(src, 0)], -1)
            col[task_pos[i]] = src
        cols[name] = col
    own: list[I64] = []  # dependency pairs (task, on), in order per task
    on: list[I64] = []
    for i, (x, g) in enumerate(zip(instances, graphs, strict=True)):
        if timer[i]:
            cols["duration_ns"][head[i]] = x.start_ns
            cols["duration_us"][head[i]] = int(x.start_ns // 1000)
        owner = np.repeat(np.arange(g.num_tasks, dtype=np.int64), np.diff(g.dep_offsets))
        own.append(task_pos[i][owner])
        on.append(task_pos[i][g.deps])
        if extra[i]:
            last = head[i] + extra[i] - 1
            if timer[i] and gate[i]:
                own.append(last)
                on.append(head[i])
            roots = np.flatnonzero(np.diff(g.dep_offsets) == 0)
            own.append(task_pos[i][roots])
            on.append(last[g.task_rank()[roots]])
        for a in x.after:
            j = index[a]
            sinks = _sinks(graphs[j])
            sink_npu = np.asarray(graphs[j].npus, dtype=np.int64)[graphs[j].task_rank()[sinks]]
            gates = head[i] + extra[i] - 1
            for r, npu in enumerate(g.npus):
                pick = sinks[sink_npu == npu] if x.after_npu else sinks
                own.append(np.full(len(pick), int(gates[r]), dtype=np.int64))
                on.append(task_pos[j][pick])
    own_a = np.concatenate(own) if own else np.zeros(0, dtype=np.int64)
    on_a = np.concatenate(on) if on else np.zeros(0, dtype=np.int64)
    order = np.argsort(own_a, kind="stable")
    deps = on_a[order]
    dep_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(own_a, minlength=n), out=dep_offsets[1:])
    route_len = np.zeros(n, dtype=np.int64)
    for i, g in enumerate(graphs):
        route_len[task_pos[i]] = np.diff(g.route_offsets)
    route_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(route_len, out=route_offsets[1:])
    route_nodes = np.zeros(int(route_offsets[-1]), dtype=np.int64)
    for i, g in enumerate(graphs):
        rl = np.diff(g.route_offsets)
        routed = np.flatnonzero(rl)
        if routed.size:
            lengths = rl[routed]
            dst = _spans(route_offsets[task_pos[i][routed]], lengths)
            route_nodes[dst] = g.route_nodes[_spans(g.route_offsets[routed], lengths)]
    switch_sets = [set(g.switch_ranks) for g in graphs]
    merged = TaskGraph(
        npus=tuple(npu for npu, _, _ in owners),
        rank_offsets=rank_offsets,
        kind=cols["kind"].astype(np.int8),
        detail=cols["detail"].astype(np.int8),
        peer=cols["peer"].astype(np.int64),
        nbytes=cols["nbytes"].astype(np.int64),
        tag=cols["tag"].astype(np.int64),
        duration_ns=cols["duration_ns"].astype(np.float64),
        duration_us=cols["duration_us"].astype(np.int64),
        dep_offsets=dep_offsets,
        deps=deps,
        route_offsets=route_offsets,
        route_nodes=route_nodes,
        origin=cols["origin"].astype(np.int64),
        source="program",
        semantics_checked=all(g.semantics_checked for g in graphs),
        notes=tuple(dict.fromkeys(nt for g in graphs for nt in g.notes)),
        merged=True,
        switch_ranks=tuple(k for k, (_, i, r) in enumerate(owners) if r in switch_sets[i]),
    )
    return merged, new_rank


def _sinks(g: TaskGraph) -> I64:
    """The tasks nothing depends on (every rank's last work)."""
    has_succ = np.zeros(g.num_tasks, dtype=bool)
    has_succ[g.deps] = True
    return np.flatnonzero(~has_succ)


def _spans(starts: I64, lengths: I64) -> I64:
    """The indices ``starts[k] .. starts[k] + lengths[k] - 1`` for every ``k``, concatenated."""
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
