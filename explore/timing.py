"""LIBRA's time model as a task graph whose iteration time is a function of the bandwidths
(docs/libra.md, section 2).

A `TaskGraph` is a set of tasks in topological order. Task t takes ``const_ns[t]`` plus, when
it communicates, ``max_d traffic[v][d] / bw[d]`` for its traffic vector v (bytes per NPU per
dimension, `explore.network`); it starts when all its predecessors have ended. The iteration
time is the latest end (`TaskGraph.evaluate`). With ``x[d] = 1/bw[d]`` every task's time is a
maximum of linear functions of x and the iteration time a maximum over paths of their sums:
convex and piecewise linear in x, which is what `explore.solve_lp` exploits.

Where the graphs come from:

- `serial_graph`: LIBRA's own loop (its ``no_overlap`` training loop): every layer's forward
  compute and collective, then, layers reversed, input-gradient compute and collective and
  weight-gradient compute and collective, one after another;
- `workload_graph`: a Chakra workload run by ASTRA-sim's workload rules
  (`workloads.engine`): the nodes' dependencies, a collective joining its group's members, a
  receive waiting for its send, and per NPU the order in which a run issued the nodes of each
  resource (one compute, one communication and one CPU op at a time). The run that fixes the
  order comes from `predict`; for that order the graph's iteration time equals the engine's
  (`predict`) for every allocation, and the solvers iterate when a new allocation changes it.
  NPUs that run identical nodes (the stages of a generated workload) are represented once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from explore.network import ExploreError, Network, dim_bytes, group_shape, p2p_bytes
from workloads.engine import CollCall, Roofline, WorkloadRun, local_ns, resource, run_workload
from workloads.model import CollKind, NodeKind, Workload, describe, npu_classes
from workloads.symmetry import run_by_classes


@dataclass
class TaskGraph:
    """Tasks in topological order (every predecessor has a lower index). ``traffic`` holds
    the distinct traffic vectors (bytes per dimension); ``vector[t]`` is task t's (-1: none).
    ``names[t]`` labels a task for reports."""

    ndims: int
    const_ns: list[float] = field(default_factory=list)
    vector: list[int] = field(default_factory=list)
    preds: list[tuple[int, ...]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    traffic: list[tuple[float, ...]] = field(default_factory=list)

    @property
    def num_tasks(self) -> int:
        return len(self.const_ns)

    def used_dims(self) -> tuple[bool, ...]:
        """Whether any task puts traffic on each dimension."""
        return tuple(any(v[d] > 0 for v in self.traffic) for d in range(self.ndims))

    def comm_times(self, bw: Sequence[float]) -> list[float]:
        """Per traffic vector, ``max_d bytes[d] / bw[d]`` in ns (inf when a dimension with
        traffic has no bandwidth)."""
        out = []
        for v in self.traffic:
            t = 0.0
            for b, w in zip(v, bw, strict=True):
                if b > 0:
                    t = max(t, b / w if w > 0 else math.inf)
            out.append(t)
        return out

    def ends(self, bw: Sequence[float]) -> list[float]:
        """Every task's end time (ns) under the allocation ``bw`` (bytes per ns)."""
        comm = self.comm_times(bw)
        end = [0.0] * self.num_tasks
        for t in range(self.num_tasks):
            start = max((end[p] for p in self.preds[t]), default=0.0)
            v = self.vector[t]
            end[t] = start + self.const_ns[t] + (comm[v] if v >= 0 else 0.0)
        return end

    def evaluate(self, bw: Sequence[float]) -> float:
        """The iteration time (ns): the latest end of a task."""
        return max(self.ends(bw), default=0.0)

    def evaluate_many(self, bws: Sequence[Sequence[float]]) -> list[float]:
        """`evaluate` for many allocations at once (numpy, for grids)."""
        import numpy as np

        b = np.asarray(bws, dtype=float).reshape(-1, self.ndims)
        with np.errstate(divide="ignore"):
            inv = np.where(b > 0, 1.0 / np.where(b > 0, b, 1.0), np.inf)
        tr = np.asarray(self.traffic, dtype=float).reshape(-1, self.ndims)
        comm = np.zeros((len(self.traffic), b.shape[0]))
        for v in range(len(self.traffic)):
            cols = [d for d in range(self.ndims) if tr[v, d] > 0]
            if cols:
                comm[v] = np.max(tr[v, cols] * inv[:, cols], axis=1)
        end = np.zeros((self.num_tasks, b.shape[0]))
        for t in range(self.num_tasks):
            ps = self.preds[t]
            start = end[list(ps)].max(axis=0) if ps else 0.0
            v = self.vector[t]
            end[t] = start + self.const_ns[t] + (comm[v] if v >= 0 else 0.0)
        return [float(x) for x in end.max(axis=0)] if self.num_tasks else [0.0] * b.shape[0]


class _Builder:
    """Tasks added in any order, sorted topologically by `finish`."""

    def __init__(self, ndims: int) -> None:
        self.ndims = ndims
        self.const: list[float] = []
        self.vec: list[int] = []
        self.preds: list[set[int]] = []
        self.names: list[str] = []
        self.vectors: dict[tuple[float, ...], int] = {}

    def add(self, name: str, const_ns: float = 0.0, traffic: Sequence[float] | None = None) -> int:
        v = -1
        if traffic is not None and any(x > 0 for x in traffic):
            v = self.vectors.setdefault(tuple(float(x) for x in traffic), len(self.vectors))
        self.const.append(float(const_ns))
        self.vec.append(v)
        self.preds.append(set())
        self.names.append(name)
        return len(self.const) - 1

    def finish(self) -> TaskGraph:
        n = len(self.const)
        succ: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for t, ps in enumerate(self.preds):
            for p in ps:
                succ[p].append(t)
                indeg[t] += 1
        order = [t for t in range(n) if indeg[t] == 0]
        i = 0
        while i < len(order):
            for s in succ[order[i]]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    order.append(s)
            i += 1
        if len(order) != n:
            raise ExploreError("the workload's dependencies and issue order form a cycle")
        new = [0] * n
        for k, t in enumerate(order):
            new[t] = k
        g = TaskGraph(self.ndims)
        g.traffic = [v for v, _ in sorted(self.vectors.items(), key=lambda kv: kv[1])]
        for t in order:
            g.const_ns.append(self.const[t])
            g.vector.append(self.vec[t])
            g.preds.append(tuple(sorted(new[p] for p in self.preds[t])))
            g.names.append(self.names[t])
        return g


@dataclass(frozen=True)
class Phase:
    """One phase of a layer in LIBRA's text workload: compute ns, then a collective of
    ``kind`` (None: no communication) and ``size`` bytes on a group spanning ``shape``."""

    compute_ns: float
    kind: CollKind | None
    size: float
    shape: tuple[int, ...]


def serial_graph(ndims: int, layers: Sequence[tuple[str, Phase, Phase, Phase]]) -> TaskGraph:
    """LIBRA's no-overlap loop over ``layers`` (name, forward, input-gradient and
    weight-gradient phases): forward in order, then the backward phases in reverse layer
    order, each compute followed by its collective, all one chain."""
    b = _Builder(ndims)
    prev: int | None = None

    def step(name: str, ph: Phase) -> None:
        nonlocal prev
        for label, const, tr in (
            (f"{name} compute", ph.compute_ns, None),
            (
                f"{name} collective",
                0.0,
                None if ph.kind is None else dim_bytes(ph.kind, ph.size, ph.shape),
            ),
        ):
            if tr is None and const == 0 and label.endswith("collective"):
                continue
            t = b.add(label, const, tr)
            if prev is not None:
                b.preds[t].add(prev)
            prev = t

    for name, fwd, _, _ in layers:
        step(f"{name} forward", fwd)
    for name, _, ig, wg in reversed(layers):
        step(f"{name} input-grad", ig)
        step(f"{name} weight-grad", wg)
    return b.finish()


class WorkloadShapes:
    """Per communicator group of a workload, its shape on the network's dimensions
    (`explore.network.group_shape`), computed once; ExploreError for a group that does not
    fit."""

    def __init__(self, w: Workload, net: Network) -> None:
        if w.num_npus != net.num_npus:
            raise ExploreError(
                f"the workload has {w.num_npus} NPUs, {net.label()} has {net.num_npus}"
            )
        self.w = w
        self.net = net
        self._shapes: dict[str, tuple[int, ...]] = {}

    def shape(self, pg: str) -> tuple[int, ...]:
        pg = "" if pg == "0" else pg
        s = self._shapes.get(pg)
        if s is None:
            s = group_shape(self.net, self.w.members(pg), pg or "of every NPU")
            self._shapes[pg] = s
        return s

    def check_all(self) -> None:
        """Map every group a collective uses (so a group that does not fit fails first)."""
        for nodes in self.w.ranks:
            for n in nodes:
                if n.kind == NodeKind.COLL and n.comm_type != CollKind.BROADCAST:
                    self.shape(n.pg_name)


def predict(
    shapes: WorkloadShapes,
    bw: Sequence[float],
    *,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    classes: list[int] | None = None,
) -> WorkloadRun:
    """The workload run by ASTRA-sim's workload rules with LIBRA's times: a collective
    ``max_d bytes[d]/bw[d]``, a message its bytes over the slowest dimension it crosses."""
    net, w = shapes.net, shapes.w
    bwt = tuple(float(x) for x in bw)

    def slowest(tr: Sequence[float]) -> float:
        t = 0.0
        for b, x in zip(tr, bwt, strict=True):
            if b > 0:
                t = max(t, b / x if x > 0 else math.inf)
        return t

    def coll(call: CollCall) -> float:
        return slowest(dim_bytes(call.kind, call.comm_size, shapes.shape(call.pg_name)))

    def p2p(src: int, dst: int, nbytes: int) -> float:
        return slowest(p2p_bytes(net, src, dst, nbytes))

    run = run_by_classes(w, coll, p2p, roofline=roofline, remote_mem=remote_mem, classes=classes)
    return run or run_workload(w, coll, p2p, roofline=roofline, remote_mem=remote_mem)


def _symmetric_reps(shapes: WorkloadShapes, cls: list[int]) -> list[int] | None:
    """One NPU per class when every class's NPUs put the same traffic on the dimensions at
    every node (groups inside the class, same group shapes, same message vectors, peers in
    one class); None otherwise."""
    w, net = shapes.w, shapes.net
    reps: list[int] = []
    for npu, c in enumerate(cls):
        if c == len(reps):
            reps.append(npu)
    if len(reps) == w.num_npus:
        return None
    seen: dict[tuple[int, int], object] = {}
    for npu, nodes in enumerate(w.ranks):
        c = cls[npu]
        for i, n in enumerate(nodes):
            key: object
            if n.kind == NodeKind.COLL and n.comm_type != CollKind.BROADCAST:
                pg = n.pg_name
                if {cls[m] for m in w.members(pg)} != {c}:
                    return None
                key = shapes.shape(pg)
            elif n.kind == NodeKind.SEND:
                assert n.comm_dst is not None
                key = (cls[n.comm_dst], p2p_bytes(net, npu, n.comm_dst, n.comm_size or 0))
            elif n.kind == NodeKind.RECV:
                assert n.comm_src is not None
                key = cls[n.comm_src]
            else:
                continue
            if seen.setdefault((c, i), key) != key:
                return None
    return reps


def workload_graph(
    shapes: WorkloadShapes,
    run: WorkloadRun,
    *,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    classes: list[int] | None = None,
) -> TaskGraph:
    """The task graph of a Chakra workload with the per-NPU issue order of ``run`` (module
    docstring)."""
    w, net = shapes.w, shapes.net
    cls = npu_classes(w) if classes is None else classes
    reps = _symmetric_reps(shapes, cls)
    npus = reps if reps is not None else list(range(w.num_npus))
    rep_of = [reps[c] for c in cls] if reps is not None else list(range(w.num_npus))
    b = _Builder(net.ndims)
    task: dict[tuple[int, int], int] = {}
    coll_task: dict[tuple[str, int], int] = {}
    for npu in npus:
        count: dict[str, int] = defaultdict(int)
        nodes = w.ranks[npu]
        for i in run.issue_order[npu]:
            nd = nodes[i]
            label = f"NPU {npu} {describe(nd)}"
            if nd.kind == NodeKind.COLL and nd.comm_type != CollKind.BROADCAST:
                pg = "" if nd.pg_name == "0" else nd.pg_name
                key = (pg, count[pg])
                count[pg] += 1
                t = coll_task.get(key)
                if t is None:
                    assert nd.comm_type is not None and nd.comm_size is not None
                    tr = dim_bytes(CollKind(nd.comm_type), nd.comm_size, shapes.shape(pg))
                    t = coll_task[key] = b.add(label, 0.0, tr)
            elif nd.kind == NodeKind.SEND:
                assert nd.comm_dst is not None
                t = b.add(label, 0.0, p2p_bytes(net, npu, nd.comm_dst, nd.comm_size or 0))
            elif nd.kind in (NodeKind.RECV, NodeKind.METADATA, NodeKind.INVALID):
                t = b.add(label)
            else:
                t = b.add(label, local_ns(w, npu, nd, roofline, remote_mem))
            task[(npu, i)] = t
    # Dependencies, resource chains in issue order, receives after their sends.
    sends: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    wanted = {nd.comm_src for npu in npus for nd in w.ranks[npu] if nd.kind == NodeKind.RECV}
    for s in sorted(x for x in wanted if x is not None):
        for j in run.issue_order[s]:
            nd = w.ranks[s][j]
            if nd.kind == NodeKind.SEND:
                assert nd.comm_dst is not None and nd.comm_tag is not None
                sends[(s, nd.comm_dst, nd.comm_tag, nd.comm_size or 0)].append(j)
    taken: dict[tuple[int, int, int, int], int] = defaultdict(int)
    for npu in npus:
        nodes = w.ranks[npu]
        pos = {nd.id: i for i, nd in enumerate(nodes)}
        last: dict[str, int] = {}
        for i in run.issue_order[npu]:
            nd = nodes[i]
            t = task[(npu, i)]
            for d in nd.deps:
                b.preds[t].add(task[(npu, pos[d])])
            res = resource(nd)
            if res != "none":
                if res in last:
                    b.preds[t].add(task[(npu, last[res])])
                last[res] = i
            if nd.kind == NodeKind.RECV:
                assert nd.comm_src is not None and nd.comm_tag is not None
                mkey = (nd.comm_src, npu, nd.comm_tag, nd.comm_size or 0)
                k = taken[mkey]
                taken[mkey] += 1
                if k >= len(sends[mkey]):
                    raise ExploreError(f"{describe(nd)} of NPU {npu} has no matching send")
                j = sends[mkey][k]
                b.preds[t].add(task[(rep_of[nd.comm_src], j)])
    for t, ps in enumerate(b.preds):
        ps.discard(t)
    return b.finish()
