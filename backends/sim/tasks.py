"""The neutral task graph every simulation model runs on, and its construction from a Program.

A `TaskGraph` is what the engines see: per rank, tasks with rank-local dependencies, each a
``SEND`` (a message of ``nbytes`` to ``peer`` with ``tag``, optionally along a route hint), a
``RECV`` (from ``peer``) or a ``COMP`` (local work of a given duration). It is built from a
collc Program plus its chunk size (`tasks_from_program`) or from node-level ET traces written
by any tool (`backends.sim.et_tasks.tasks_from_et`), so the engines know nothing of buffers,
chunks or ET attributes.

Sends and receives match per ordered pair of ranks, in task order, on equal tag and byte count
(`TaskGraph.partners`): the IR's non-overtaking rule, and ASTRA-sim's (tag, src, dst, size) rule
for foreign ETs. For a verified Program, adding the byte count to the key changes nothing.

A Program maps onto tasks the way the ET codec lays it out (``chakra_ir.et.layout``): a Send
is a SEND, a Recv a RECV, a reducing Recv a RECV followed by a COMP (the reduction) that
depends on it alone, and Copy/Reduce are COMPs. Each COMP carries two durations: ``duration_ns``
under collc's cost model (a reduction costs ``cost.reduction_ns(bytes)``, a copy nothing) and
``duration_us``, the whole microseconds an ET states (ASTRA-sim's unit). With
``fold_reductions`` a reducing Recv stays one RECV task whose ``duration_ns`` is its reduction,
done after the message has arrived: the same times under collc's cost model, fewer tasks.
Without it, a Send with an ``after`` hint is preceded by its gate, a COMP task of no work that
depends on what the named send depends on (and on that send's gate), as the ET writes it; with
it the gate is left out (it takes no time under collc's cost model, and the program's own
dependencies already order the link).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from backends.sim.errors import SimError
from chakra_ir.program import OpKind, Program
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology

I8 = npt.NDArray[np.int8]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


class TaskKind(IntEnum):
    """What the engine does with a task (`TaskGraph.kind`)."""

    SEND = 0
    RECV = 1
    COMP = 2


class Detail(IntEnum):
    """What a task stands for (`TaskGraph.detail`), for timelines and messages."""

    SEND = 0
    RECV = 1
    RECV_REDUCE = 2
    """The receive half of a reducing receive."""
    COPY = 3
    REDUCE = 4
    REDUCE_RECEIVED = 5
    """The reduction half of a reducing receive."""
    COMP = 6
    """A compute node of a foreign ET."""
    NOOP = 7
    """A foreign node that takes no time (INVALID_NODE, METADATA_NODE)."""
    GATE = 8
    """The gate node the ET writer puts before a send with an ``after`` hint."""
    FLOW_IN = 9
    """A FlowIn: its piece sends to the first switch, and the task that joins them."""
    FLOW_OUT = 10
    """A FlowOut: its piece receives from the last switch, and the task that joins them."""
    SWITCH = 11
    """A switch forwarding, reducing or copying a piece of an in-network flow."""


DETAIL_NAMES = (
    "send",
    "recv",
    "recv",
    "copy",
    "reduce",
    "reduce",
    "comp",
    "noop",
    "gate",
    "flow-in",
    "flow-out",
    "switch",
)
"""Short name per `Detail` value."""


@dataclass(eq=False)
class TaskGraph:
    """Per-rank tasks, column-wise; ranks laid out one after another (``rank_offsets``).

    Columns (one entry per task): ``kind`` (`TaskKind`), ``detail`` (`Detail`), ``peer`` (the
    other rank of a SEND/RECV, -1 for COMP), ``nbytes`` (message bytes; bytes worked on for a
    COMP, 0 when unknown), ``tag``, ``duration_ns`` and ``duration_us`` (COMP: its work; RECV: work after the message
    arrived, a folded reduction; see the module docstring), ``origin`` (the rank-local Program op id or ET node id the task comes
    from). CSR: ``dep_offsets``/``deps`` (global task indices of the same rank),
    ``route_offsets``/``route_nodes`` (a SEND's node path hint, NPU ... NPU; empty when none).
    ``npus[r]`` is the NPU of rank ``r``. ``semantics_checked`` is False for foreign ETs
    (timing only); ``notes`` travel into the result.
    """

    npus: tuple[int, ...]
    rank_offsets: I64
    kind: I8
    detail: I8
    peer: I64
    nbytes: I64
    tag: I64
    duration_ns: F64
    duration_us: I64
    dep_offsets: I64
    deps: I64
    route_offsets: I64
    route_nodes: I64
    origin: I64
    source: str = "program"
    semantics_checked: bool = True
    notes: tuple[str, ...] = ()
    merged: bool = False
    """The ranks of several program instances run together (`backends.sim.concurrent`):
    ranks of different instances may share an NPU, and a start gate may depend on tasks of
    other ranks."""
    switch_ranks: tuple[int, ...] = ()
    """Ranks that stand for switches running in-network flows (`expand_flows`): placed on
    switch nodes, not NPUs."""
    _partners: I64 | None = field(default=None, repr=False)
    _succ: tuple[I64, I64] | None = field(default=None, repr=False)

    @property
    def num_ranks(self) -> int:
        return len(self.rank_offsets) - 1

    @property
    def num_tasks(self) -> int:
        return int(self.rank_offsets[-1])

    def task_rank(self) -> I64:
        """The rank of every task (a column)."""
        return np.repeat(np.arange(self.num_ranks, dtype=np.int64), np.diff(self.rank_offsets))

    def rank_of(self, t: int) -> int:
        return int(np.searchsorted(self.rank_offsets, t, side="right") - 1)

    def describe(self, t: int) -> str:
        """``rank 3 op 17 (recv from 2, tag 0, 4096 B)`` for messages."""
        r = self.rank_of(t)
        what = "op" if self.source == "program" else "node"
        k = int(self.kind[t])
        name = DETAIL_NAMES[int(self.detail[t])]
        if k == TaskKind.SEND:
            body = f"{name} to {int(self.peer[t])}, tag {int(self.tag[t])}, {int(self.nbytes[t])} B"
        elif k == TaskKind.RECV:
            body = (
                f"{name} from {int(self.peer[t])}, tag {int(self.tag[t])}, {int(self.nbytes[t])} B"
            )
        else:
            body = name
        return f"rank {r} {what} {int(self.origin[t])} ({body})"

    # -- structure -----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise SimError unless the columns are consistent: column lengths, dependencies
        that name tasks of the same rank, peers that are ranks, messages of at least 1 byte,
        route hints on sends only, running from the sender's NPU to the receiver's."""
        n, R = self.num_tasks, self.num_ranks
        for name in ("kind", "detail", "peer", "nbytes", "tag", "duration_ns", "duration_us"):
            if len(getattr(self, name)) != n:
                raise SimError(
                    f"task column {name} has {len(getattr(self, name))} entries, not {n}"
                )
        if len(self.npus) != R:
            raise SimError(f"the task graph places {len(self.npus)} NPUs for {R} ranks")
        if len(self.dep_offsets) != n + 1 or len(self.route_offsets) != n + 1:
            raise SimError("task dependency or route offsets do not cover every task")
        rank = self.task_rank()
        comm = self.kind != TaskKind.COMP
        bad = np.flatnonzero(comm & ((self.peer < 0) | (self.peer >= R)))
        if bad.size:
            t = int(bad[0])
            raise SimError(
                f"{self.describe(t)}: peer {int(self.peer[t])} is not a rank (0..{R - 1})"
            )
        bad = np.flatnonzero(comm & (self.nbytes <= 0))
        if bad.size:
            raise SimError(f"{self.describe(int(bad[0]))}: a message must carry at least 1 byte")
        if len(self.deps):
            owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.dep_offsets))
            out = (self.deps < 0) | (self.deps >= n)
            if out.any():
                t = int(owner[np.flatnonzero(out)[0]])
                raise SimError(f"{self.describe(t)}: a dependency names no task")
            cross = rank[self.deps] != rank[owner]
            if cross.any() and not self.merged:
                t = int(owner[np.flatnonzero(cross)[0]])
                raise SimError(f"{self.describe(t)}: a dependency names a task of another rank")
        routed = np.flatnonzero(np.diff(self.route_offsets) > 0)
        if routed.size:
            bad = routed[self.kind[routed] != TaskKind.SEND]
            if bad.size:
                raise SimError(f"{self.describe(int(bad[0]))}: only a send may carry a route")
            npus = np.asarray(self.npus, dtype=np.int64)
            first = self.route_nodes[self.route_offsets[routed]]
            last = self.route_nodes[self.route_offsets[routed + 1] - 1]
            src, dst = npus[rank[routed]], npus[self.peer[routed]]
            wrong = np.flatnonzero((first != src) | (last != dst))
            if wrong.size:
                i = int(wrong[0])
                t = int(routed[i])
                raise SimError(
                    f"{self.describe(t)}: its route hint runs {int(first[i])}..{int(last[i])}, "
                    f"not from NPU {int(src[i])} to NPU {int(dst[i])}"
                )

    def successors(self) -> tuple[I64, I64]:
        """``(offsets, tasks)``: the tasks depending on each task (CSR), in task order."""
        if self._succ is None:
            n = self.num_tasks
            owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.dep_offsets))
            order = np.argsort(self.deps, kind="stable")
            succ = owner[order]
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.deps, minlength=n), out=offsets[1:])
            self._succ = (offsets, succ)
        return self._succ

    def partners(self) -> I64:
        """Per task, the matching task of its message (-1 for COMP).

        The k-th send from a to b with tag t and n bytes matches the k-th receive on b from a
        with tag t and n bytes (task order). Raises SimError naming an unmatched send or
        receive.
        """
        if self._partners is not None:
            return self._partners
        n = self.num_tasks
        out = np.full(n, -1, dtype=np.int64)
        rank = self.task_rank()
        sends = np.flatnonzero(self.kind == TaskKind.SEND)
        recvs = np.flatnonzero(self.kind == TaskKind.RECV)

        def keyed(idx: I64, src: I64, dst: I64) -> tuple[I64, list[I64]]:
            cols = [src, dst, self.tag[idx], self.nbytes[idx]]
            order = np.lexsort((idx, *reversed(cols)))  # by key, then task order
            keys = [c[order] for c in cols]
            return idx[order], keys

        s_idx, s_keys = keyed(sends, rank[sends], self.peer[sends])
        r_idx, r_keys = keyed(recvs, self.peer[recvs], rank[recvs])
        if len(s_idx) == len(r_idx) and all(
            np.array_equal(a, b) for a, b in zip(s_keys, r_keys, strict=True)
        ):
            out[s_idx] = r_idx
            out[r_idx] = s_idx
            self._partners = out
            return out
        # Find an unmatched task to name: compare the multisets of keys.
        self._raise_unmatched(s_idx, s_keys, r_idx, r_keys)
        raise AssertionError("unreachable")

    def _raise_unmatched(
        self, s_idx: I64, s_keys: list[I64], r_idx: I64, r_keys: list[I64]
    ) -> None:
        def tuples(keys: list[I64]) -> list[tuple[int, ...]]:
            return list(zip(*(k.tolist() for k in keys), strict=True))

        from collections import Counter

        sk, rk = tuples(s_keys), tuples(r_keys)
        s_count, r_count = Counter(sk), Counter(rk)
        seen: Counter[tuple[int, ...]] = Counter()
        for i, k in enumerate(sk):
            seen[k] += 1
            if seen[k] > r_count.get(k, 0):
                t = int(s_idx[i])
                raise SimError(f"{self.describe(t)}: no receive matches this send")
        seen.clear()
        for i, k in enumerate(rk):
            seen[k] += 1
            if seen[k] > s_count.get(k, 0):
                t = int(r_idx[i])
                raise SimError(f"{self.describe(t)}: no send matches this receive")


def reduction_micros(duration_ns: F64) -> I64:
    """Whole microseconds for an ET: nearest, halves to even (``numpy.rint``)."""
    return np.rint(np.asarray(duration_ns, dtype=np.float64) / 1000.0).astype(np.int64)


def tasks_from_program(
    program: Program,
    chunk_bytes: int,
    cost: CostModel = DEFAULT_COST_MODEL,
    *,
    reduce_micros: int | None = None,
    fold_reductions: bool = False,
    topology: Topology | None = None,
    message_bytes: I64 | None = None,
    receive_work_ns: F64 | None = None,
) -> TaskGraph:
    """The task graph of ``program`` with chunks of ``chunk_bytes``.

    ``message_bytes`` (one entry per operation, a payload's per-message size table,
    `payloads.sizes.MessageSizes`) replaces ``count x chunk_bytes`` for every message and
    reduction; ``receive_work_ns`` adds work to a Recv after its message has arrived (on the
    reduction half of a split reducing receive). In-network flows keep ``count x chunk_bytes``.

    A program with in-network flows needs its ``topology`` (the flows' trees): see
    `expand_flows`.

    Message bytes are ``count x chunk_bytes``. Reductions (Reduce, and the reduction half of a
    reducing Recv) take ``cost.reduction_ns(bytes)``; copies take nothing. ``duration_us`` of a
    reduction is ``reduce_micros`` when given (the value the ET writer was given), else the
    cost model's time rounded to the nearest microsecond; a copy's is 0. ``fold_reductions``
    keeps a reducing Recv as one RECV task carrying its reduction time. Raises SimError for a
    chunk size below 1 byte.
    """
    if chunk_bytes <= 0:
        raise SimError(f"the chunk size must be at least 1 byte, got {chunk_bytes}")
    p = program
    nops = p.num_ops
    op_kind = p.kind.astype(np.int64)
    is_rr = op_kind == OpKind.RECV_REDUCE
    split = np.zeros_like(is_rr) if fold_reductions else is_rr
    gate = np.zeros_like(is_rr) if fold_reductions else (p.after != -1)
    per_op = 1 + split.astype(np.int64) + gate
    first = np.zeros(nops + 1, dtype=np.int64)
    np.cumsum(per_op, out=first[1:])
    f = first[:-1] + gate  # each op's own task (after its gate)
    last = f + split
    n = int(first[-1])
    g_ops = np.flatnonzero(gate)
    g_task = f[g_ops] - 1

    detail_of_op = np.array(
        [
            Detail.SEND,
            Detail.RECV,
            Detail.RECV_REDUCE,
            Detail.COPY,
            Detail.REDUCE,
            Detail.NOOP,
            Detail.NOOP,
            Detail.NOOP,
            Detail.FLOW_IN,
            Detail.FLOW_OUT,
        ],
        dtype=np.int8,
    )
    kind_of_op = np.array(
        [
            TaskKind.SEND,
            TaskKind.RECV,
            TaskKind.RECV,
            TaskKind.COMP,
            TaskKind.COMP,
            TaskKind.COMP,
            TaskKind.COMP,
            TaskKind.COMP,
            TaskKind.COMP,
            TaskKind.COMP,
        ],
        dtype=np.int8,
    )
    kind = np.full(n, TaskKind.COMP, dtype=np.int8)
    detail = np.full(n, Detail.REDUCE_RECEIVED, dtype=np.int8)
    kind[f] = kind_of_op[op_kind]
    detail[f] = detail_of_op[op_kind]
    detail[g_task] = Detail.GATE

    if message_bytes is not None:
        op_bytes = np.asarray(message_bytes, dtype=np.int64)
    else:
        op_bytes = p.count.astype(np.int64) * int(chunk_bytes)
    op_of_task = np.repeat(np.arange(nops, dtype=np.int64), per_op)
    nbytes = op_bytes[op_of_task]
    nbytes[g_task] = 0
    peer = np.full(n, -1, dtype=np.int64)
    comm = kind != TaskKind.COMP
    peer[comm] = p.peer.astype(np.int64)[op_of_task[comm]]
    tag = np.zeros(n, dtype=np.int64)
    tag[comm] = p.tag.astype(np.int64)[op_of_task[comm]]

    reducing = (detail == Detail.REDUCE) | (detail == Detail.REDUCE_RECEIVED)
    if fold_reductions:
        reducing |= detail == Detail.RECV_REDUCE
    duration_ns = np.zeros(n, dtype=np.float64)
    if reducing.any():
        sizes, inverse = np.unique(nbytes[reducing], return_inverse=True)
        per_size = np.array([cost.reduction_ns(int(b)) for b in sizes], dtype=np.float64)
        duration_ns[reducing] = per_size[inverse.reshape(-1)]
    duration_us = np.zeros(n, dtype=np.int64)
    if reduce_micros is not None:
        duration_us[reducing] = int(reduce_micros)
    else:
        duration_us[reducing] = reduction_micros(duration_ns[reducing])
    if receive_work_ns is not None:
        work = np.asarray(receive_work_ns, dtype=np.float64)
        busy = np.flatnonzero(work > 0)
        duration_ns[last[busy]] += work[busy]
        duration_us[last[busy]] = reduction_micros(duration_ns[last[busy]])

    # Dependencies: an op's deps (rank-local op ids) become deps of its first task on the last
    # task of each named op; a reduction half depends on its receive half.
    op_rank = p.op_rank().astype(np.int64)
    op_ndeps = np.diff(p.dep_offsets)
    waits = p.gate_waits(g_ops)
    g_after, a_ndeps = waits.named, waits.count
    a_gated = gate[g_after]
    task_ndeps = np.zeros(n, dtype=np.int64)
    task_ndeps[f] = op_ndeps + gate
    task_ndeps[f[split] + 1] = 1
    task_ndeps[g_task] = a_ndeps + a_gated
    dep_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(task_ndeps, out=dep_offsets[1:])
    deps = np.zeros(int(dep_offsets[-1]), dtype=np.int64)
    if len(p.deps):
        owner = np.repeat(np.arange(nops, dtype=np.int64), op_ndeps)
        within = np.arange(len(p.deps), dtype=np.int64) - p.dep_offsets[owner]
        target_op = p.rank_offsets[op_rank[owner]] + p.deps.astype(np.int64)
        if (p.deps < 0).any() or (target_op >= p.rank_offsets[op_rank[owner] + 1]).any():
            bad = int(
                owner[
                    np.flatnonzero(
                        (p.deps < 0) | (target_op >= p.rank_offsets[op_rank[owner] + 1])
                    )[0]
                ]
            )
            raise SimError(f"{p.describe_op(bad)}: a dependency names no operation of its rank")
        deps[dep_offsets[f[owner]] + within] = last[target_op]
    rr_first = f[split]
    deps[dep_offsets[rr_first + 1]] = rr_first
    # A gated send depends on its gate last; a gate on what the named send depends on, then
    # on that send's own gate.
    deps[dep_offsets[f[g_ops]] + op_ndeps[g_ops]] = g_task
    deps[dep_offsets[g_task[waits.owner]] + waits.within] = last[waits.target]
    sel = np.flatnonzero(a_gated)
    deps[dep_offsets[g_task[sel]] + a_ndeps[sel]] = f[g_after[sel]] - 1

    route_len = np.zeros(n, dtype=np.int64)
    route_len[f] = np.diff(p.route_offsets)
    route_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(route_len, out=route_offsets[1:])

    local = p.local_ids().astype(np.int64)
    c = p.collective
    graph = TaskGraph(
        npus=tuple(c.npu(r) for r in range(p.num_ranks)),
        rank_offsets=first[p.rank_offsets],
        kind=kind,
        detail=detail,
        peer=peer,
        nbytes=nbytes,
        tag=tag,
        duration_ns=duration_ns,
        duration_us=duration_us,
        dep_offsets=dep_offsets,
        deps=deps,
        route_offsets=route_offsets,
        route_nodes=p.route_nodes.astype(np.int64),
        origin=local[op_of_task],
        source="program",
        semantics_checked=True,
    )
    if not p.has_flows:
        return graph
    if topology is None:
        raise SimError("the program has in-network flows: simulating it needs its topology")
    return expand_flows(graph, p, f, topology, chunk_bytes, cost)


def expand_flows(
    graph: TaskGraph,
    program: Program,
    own_task: I64,
    topology: Topology,
    chunk_bytes: int,
    cost: CostModel,
) -> TaskGraph:
    """``graph`` with every in-network flow run piece by piece through its tree.

    In ``graph`` each FlowIn and FlowOut is one COMP task of no work (``own_task[op]``).
    Here that task becomes the join of the op's piece messages, which take over its
    dependencies: a FlowIn sends each piece to its NPU's switch, a FlowOut receives each from
    its switch. Every switch of a flow's tree gets a rank of its own (appended after the
    program's ranks, in switch order) whose tasks receive each piece from the up children,
    send it on to the parent (the reduction, at line rate) or, at the root and on the way
    down, to every down child (the multicast). Messages carry the flow id as their tag and
    route over the one link between the two nodes; the rules are `topologies.cost_model`'s.
    """
    from topologies.errors import TopologyError
    from topologies.innetwork import FlowTrees

    p, c = program, program.collective
    try:
        trees = FlowTrees(topology)
    except TopologyError as e:
        raise SimError(e.message) from None
    R = graph.num_ranks
    op_rank = p.op_rank()

    # Rows of new tasks: (kind, detail, peer, nbytes, tag, origin, route), with deps given as
    # (False, base task) or (True, row) references, resolved once every index is known.
    inserted: dict[int, list[int]] = {}  # base join task -> rows of its pieces
    rows: list[tuple[int, int, int, int, int, int, tuple[int, ...]]] = []
    row_deps: list[list[tuple[bool, int]]] = []
    row_rank: list[int] = []
    switch_rank: dict[int, int] = {}

    def sw(node: int) -> int:
        if node not in switch_rank:
            switch_rank[node] = R + len(switch_rank)
        return switch_rank[node]

    def add(
        rank: int,
        row: tuple[int, int, int, int, int, int, tuple[int, ...]],
        deps: list[tuple[bool, int]],
    ) -> int:
        rows.append(row)
        row_deps.append(deps)
        row_rank.append(rank)
        return len(rows) - 1

    base_deps = graph.dep_offsets
    for f, (fi, fo) in sorted(p.flows().items()):
        npu_rank = {c.npu(int(op_rank[g])): int(op_rank[g]) for g in fi + fo}
        tree = trees.tree(
            [c.npu(int(op_rank[g])) for g in fi], [c.npu(int(op_rank[g])) for g in fo]
        )
        pieces = cost.flow_pieces(int(p.count[fi[0]]) * int(chunk_bytes))

        def agent(node: int, npu_rank: dict[int, int] = npu_rank) -> int:
            return npu_rank[node] if node < topology.num_npus else sw(node)

        # The NPUs' piece sends and receives, in front of their join tasks.
        for g, task_kind, det in (
            *((g, TaskKind.SEND, Detail.FLOW_IN) for g in fi),
            *((g, TaskKind.RECV, Detail.FLOW_OUT) for g in fo),
        ):
            r = int(op_rank[g])
            v = c.npu(r)
            s_node = trees.parent[v]
            t = int(own_task[g])
            old = [(False, int(d)) for d in graph.deps[base_deps[t] : base_deps[t + 1]]]
            route = (v, s_node) if task_kind == TaskKind.SEND else ()
            op_origin = int(graph.origin[t])
            inserted[t] = [
                add(r, (task_kind, det, sw(s_node), b, f, op_origin, route), old) for b in pieces
            ]
        # The switches, piece by piece.
        up_children: dict[int, list[int]] = {}
        up_parent: dict[int, int] = {}
        for a, b in tree.up:
            up_children.setdefault(b, []).append(a)
            up_parent[a] = b
        down_children: dict[int, list[int]] = {}
        down_parent: dict[int, int] = {}
        for a, b in tree.down:
            down_children.setdefault(a, []).append(b)
            down_parent[b] = a
        nodes = sorted(
            x for x in {*up_children, *down_children, *down_parent} if x >= topology.num_npus
        )
        sw_detail = int(Detail.SWITCH)
        for j, b in enumerate(pieces):
            del j
            for s in nodes:
                rs = sw(s)
                have: list[tuple[bool, int]] = []
                if s in up_children:
                    have = [
                        (True, add(rs, (TaskKind.RECV, sw_detail, agent(ch), b, f, -1, ()), []))
                        for ch in up_children[s]
                    ]
                    if s != tree.root:
                        pa = up_parent[s]
                        add(rs, (TaskKind.SEND, sw_detail, agent(pa), b, f, -1, (s, pa)), have)
                if s in down_parent:
                    pa = down_parent[s]
                    have = [
                        (True, add(rs, (TaskKind.RECV, sw_detail, agent(pa), b, f, -1, ()), []))
                    ]
                for ch in down_children.get(s, ()):
                    add(rs, (TaskKind.SEND, sw_detail, agent(ch), b, f, -1, (s, ch)), have)

    # Lay out: each program rank's base tasks with the pieces in front of their joins, then
    # the switch ranks' rows in order.
    n = graph.num_tasks
    ins_count = np.zeros(n, dtype=np.int64)
    for t, rs_ in inserted.items():
        ins_count[t] = len(rs_)
    new_of = np.arange(n, dtype=np.int64) + np.cumsum(ins_count)
    before = np.concatenate(([0], np.cumsum(ins_count)))
    new_rank_offsets = np.zeros(R + 1 + len(switch_rank), dtype=np.int64)
    new_rank_offsets[: R + 1] = graph.rank_offsets + before[graph.rank_offsets]
    program_tasks = int(new_rank_offsets[R])
    row_at = np.full(len(rows), -1, dtype=np.int64)
    for t, rs_ in inserted.items():
        start = int(new_of[t]) - len(rs_)
        row_at[rs_] = np.arange(start, start + len(rs_), dtype=np.int64)
    sw_rows = np.flatnonzero(row_at < 0)
    rr = np.asarray(row_rank, dtype=np.int64)[sw_rows]
    order = sw_rows[np.argsort(rr, kind="stable")]
    row_at[order] = program_tasks + np.arange(len(order), dtype=np.int64)
    per_switch = np.bincount(rr - R, minlength=len(switch_rank))
    new_rank_offsets[R + 1 :] = program_tasks + np.cumsum(per_switch)
    total = program_tasks + len(order)

    kind = np.empty(total, dtype=np.int8)
    detail = np.empty(total, dtype=np.int8)
    peer = np.empty(total, dtype=np.int64)
    nbytes = np.empty(total, dtype=np.int64)
    tag = np.empty(total, dtype=np.int64)
    origin = np.empty(total, dtype=np.int64)
    duration_ns = np.zeros(total, dtype=np.float64)
    duration_us = np.zeros(total, dtype=np.int64)
    for name, arr in (
        ("kind", kind),
        ("detail", detail),
        ("peer", peer),
        ("nbytes", nbytes),
        ("tag", tag),
        ("origin", origin),
        ("duration_ns", duration_ns),
        ("duration_us", duration_us),
    ):
        arr[new_of] = getattr(graph, name)
    if rows:
        cols = list(zip(*rows, strict=True))
        targets: tuple[npt.NDArray[np.integer[Any]], ...] = (
            kind,
            detail,
            peer,
            nbytes,
            tag,
            origin,
        )
        for i, col in enumerate(targets):
            col[row_at] = np.asarray(cols[i], dtype=col.dtype)
    # Dependencies and routes, task by task in the new order.
    dep_lists: list[list[int]] = [[] for _ in range(total)]
    routes: list[tuple[int, ...]] = [()] * total
    old_deps = graph.deps.tolist()
    new_of_l = new_of.tolist()
    for t in range(n):
        nt = new_of_l[t]
        if t in inserted:
            dep_lists[nt] = [int(row_at[x]) for x in inserted[t]]
        else:
            dep_lists[nt] = [new_of_l[d] for d in old_deps[base_deps[t] : base_deps[t + 1]]]
        a, b = int(graph.route_offsets[t]), int(graph.route_offsets[t + 1])
        if b > a:
            routes[nt] = tuple(int(x) for x in graph.route_nodes[a:b])
    for i, deps_i in enumerate(row_deps):
        at = int(row_at[i])
        dep_lists[at] = [int(row_at[x]) if is_row else new_of_l[x] for is_row, x in deps_i]
        routes[at] = rows[i][6]
    dep_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum([len(d) for d in dep_lists], out=dep_offsets[1:])
    deps = np.fromiter(
        (x for d in dep_lists for x in d), dtype=np.int64, count=int(dep_offsets[-1])
    )
    route_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum([len(rt) for rt in routes], out=route_offsets[1:])
    route_nodes = np.fromiter(
        (x for rt in routes for x in rt), dtype=np.int64, count=int(route_offsets[-1])
    )
    switches = sorted(switch_rank, key=switch_rank.__getitem__)
    return TaskGraph(
        npus=(*graph.npus, *switches),
        rank_offsets=new_rank_offsets,
        kind=kind,
        detail=detail,
        peer=peer,
        nbytes=nbytes,
        tag=tag,
        duration_ns=duration_ns,
        duration_us=duration_us,
        dep_offsets=dep_offsets,
        deps=deps,
        route_offsets=route_offsets,
        route_nodes=route_nodes,
        origin=origin,
        source=graph.source,
        semantics_checked=graph.semantics_checked,
        notes=(
            *graph.notes,
            "in-network flows cut into pieces that pipeline through the switches "
            "(reduction at line rate, multicast at the switch)",
        ),
        switch_ranks=tuple(range(R, R + len(switch_rank))),
    )
