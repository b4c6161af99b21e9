"""Run a workload by ASTRA-sim's workload-layer rules, with collective times from a timer.

The rules (ASTRA-sim's ``Workload`` and ``HardwareResource``, docs/workloads.md):

- A node is ready when every node of its ``data_deps`` and ``ctrl_deps`` has finished.
- Whenever something finishes on an NPU, its ready nodes are scanned in ascending id order and
  each is issued if its resource is free. Resources per NPU: one CPU op (``is_cpu_op``), one
  GPU compute op (``COMP_NODE``) and one communication op (every other type but
  ``COMM_RECV_NODE``, which is exempt). Compute and communication overlap.
- ``COMP_NODE``: ``duration_micros`` x 1000 ns (0 becomes 1 ns); with the roofline,
  ``num_ops / min(local_mem_bw x num_ops / tensor_size, peak_perf)`` (truncated to whole ns; a
  ``tensor_size`` of 0 completes at once).
- ``COMM_COLL_NODE``: the k-th collective an NPU issues on a communicator group is the k-th of
  every member. It starts when the last member has issued it and finishes on every member
  together, after the time the `CollectiveTimer` gives (BROADCAST: ``duration_micros``, on
  its own NPU). This is exact when the members issue at the same time, as data- and
  tensor-parallel groups of a generated workload do; otherwise ASTRA-sim lets early members
  start their first steps alone. A `MemberTimer` may time it per member instead, from each
  member's issue time (the analytical mode does on groups whose ring is uneven).
- ``COMM_SEND_NODE``: completes when its message has arrived (both ASTRA-sim backends);
  ``COMM_RECV_NODE``: when the matching message (src, dst, tag, size; first come, first
  matched) has arrived and the receive is posted.
- ``MEM_LOAD/STORE_NODE``: ``remote_mem`` latency + size / bandwidth (ASTRA-sim's per-NPU
  memory expansion); refused without it, as ASTRA-sim's default memory exits.
- ``METADATA_NODE`` and ``INVALID_NODE`` finish at once.

The run reports per NPU the finish time, the compute time (GPU ops) and exposed communication
(finish minus compute, as ASTRA-sim prints it), and every node's start and end.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from topologies.units import MAX_TIME_NS
from workloads.model import CollKind, NodeKind, WNode, Workload, WorkloadError, describe


@dataclass(frozen=True)
class CollCall:
    """One collective as a group runs it: ``kind``, ``comm_size`` (ASTRA-sim's bytes: the
    per-rank input for an all-gather), the ``members`` (NPUs ascending), ``pg_name`` ("" for
    every NPU) and ``involved_dim`` (None: every dimension)."""

    kind: CollKind
    comm_size: int
    members: tuple[int, ...]
    pg_name: str = ""
    involved_dim: tuple[bool, ...] | None = None


CollectiveTimer = Callable[[CollCall], float]
"""The time in ns a collective takes once every member has issued it."""

MemberTimer = Callable[[CollCall, tuple[float, ...]], "list[float] | None"]
"""Given a collective and when each member (``members`` order) issued it, when it ends on each
member; None when the members end together after the `CollectiveTimer`'s time."""

P2pTimer = Callable[[int, int, int], float]
"""The delivery time in ns of a message (src NPU, dst NPU, bytes)."""


class CommService(Protocol):
    """Times collectives and messages that delay each other (`run_workload`'s ``service``):
    told when each starts, it says when the next of them may finish (`next_ns`) and, moved
    to that time (`advance`), which did: a finished collective as its `CollInstance`, a
    finished message as the ``token`` it was started with."""

    def start_collective(self, inst: CollInstance, now: float) -> None: ...

    def start_message(
        self, token: tuple[int, int], src: int, dst: int, nbytes: int, now: float
    ) -> None: ...

    def next_ns(self) -> float: ...

    def advance(self, now: float) -> list[CollInstance | tuple[int, int]]: ...


@dataclass(frozen=True)
class Roofline:
    """ASTRA-sim's roofline: ``peak_flops`` (FLOP/s) and ``mem_bw`` (bytes/s)."""

    peak_flops: float
    mem_bw: float

    def compute_ns(self, num_ops: int, tensor_size: int) -> float | None:
        """Whole ns for a node, or None when ``tensor_size`` is 0 (the node is skipped)."""
        if tensor_size == 0:
            return None
        oi = num_ops / tensor_size
        perf = min(self.mem_bw * oi, self.peak_flops)
        if perf <= 0:
            raise WorkloadError("the roofline needs a positive peak-perf and local-mem-bw")
        t = num_ops / perf * 1e9
        return int(t) if t <= MAX_NODE_NS else math.inf  # `local_ns` refuses the latter


@dataclass
class CollInstance:
    """One collective of a run: which, on which group, when it started and ended."""

    call: CollCall
    index: int
    """Its position among the group's collectives (0, 1, ...)."""
    name: str
    start_ns: float = math.nan
    end_ns: float = math.nan
    issued: dict[int, float] = field(default_factory=dict)


@dataclass
class WorkloadRun:
    """What `run_workload` measured. Per NPU: ``finish_ns``, ``compute_ns`` (GPU compute,
    as ASTRA-sim's ``tics_gpu_ops``), ``exposed_ns`` (finish minus compute). Per node:
    ``starts[npu][i]`` and ``ends[npu][i]`` (file order). ``collectives`` in start order;
    ``issue_order[npu]`` the positions of the NPU's nodes in the order they were issued."""

    finish_ns: list[float]
    compute_ns: list[float]
    starts: list[list[float]]
    ends: list[list[float]]
    collectives: list[CollInstance]
    issue_order: list[list[int]]

    @property
    def time_ns(self) -> float:
        """The iteration time: the last NPU's finish."""
        return max(self.finish_ns) if self.finish_ns else 0.0

    @property
    def exposed_ns(self) -> list[float]:
        return [f - c for f, c in zip(self.finish_ns, self.compute_ns, strict=True)]


_SEND, _DONE = 0, 1


MAX_NODE_NS = MAX_TIME_NS
"""The longest a node may take; beyond it (a corrupt duration, a roofline of 1e-300 TFLOPS)
a run is refused, naming the node, since its times would no longer be exact."""


def local_ns(
    w: Workload,
    npu: int,
    nd: WNode,
    roofline: Roofline | None,
    remote_mem: tuple[float, float] | None,
) -> float:
    """The time of a node that involves no other NPU: COMP (trace duration, 0 -> 1 ns, or the
    roofline), MEM_LOAD/STORE (remote memory), BROADCAST (its duration); 0 for the rest.
    Raises WorkloadError when it is longer than `MAX_NODE_NS`."""
    k = nd.kind
    t: float = 0.0
    if k == NodeKind.COMP:
        if roofline is not None and not nd.is_cpu_op:
            t = roofline.compute_ns(nd.num_ops or 0, nd.tensor_size or 0) or 0.0
        else:
            t = nd.duration_micros * 1000 if nd.duration_micros else 1
    elif k in (NodeKind.MEM_LOAD, NodeKind.MEM_STORE):
        if remote_mem is None:
            raise WorkloadError(
                f"{describe(nd)}: a remote-memory node, but no remote memory is configured "
                "(ASTRA-sim's NO_MEMORY_EXPANSION exits here); give --remote-mem",
                w.where(npu),
            )
        lat, bw = remote_mem
        x = (nd.tensor_size or 0) / bw
        t = lat + int(x) if x <= MAX_NODE_NS else math.inf
    elif k == NodeKind.COLL and nd.comm_type == CollKind.BROADCAST:
        t = nd.duration_micros * 1000 or 1
    if not t <= MAX_NODE_NS:  # NaN fails too
        raise WorkloadError(
            f"{describe(nd)}: takes {t:.3g} ns, more than the {MAX_NODE_NS:g} ns a node may take",
            w.where(npu),
        )
    return float(t)


def resource(nd: WNode) -> str:
    """The per-NPU resource a node holds while it runs: ``cpu`` (is_cpu_op), ``comp``
    (COMP_NODE), ``none`` (COMM_RECV_NODE) or ``comm`` (everything else)."""
    if nd.is_cpu_op:
        return "cpu"
    if nd.kind == NodeKind.COMP:
        return "comp"
    if nd.kind == NodeKind.RECV:
        return "none"
    return "comm"


def run_workload(
    w: Workload,
    collective_time: CollectiveTimer,
    p2p_time: P2pTimer,
    *,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    service: CommService | None = None,
    member_time: MemberTimer | None = None,
) -> WorkloadRun:
    """Run ``w`` (checked by `workloads.model.check_workload` first) by the rules of the module
    docstring. ``remote_mem``: (latency ns, bytes per ns) of per-NPU remote memory. With a
    ``service``, collectives and messages end when it says (``collective_time`` and
    ``p2p_time`` are then unused). With a ``member_time`` that answers, a collective starts on
    each member when it issued it and ends on each when that says. Raises WorkloadError when the run cannot finish (a node
    that never becomes ready)."""
    n = w.num_npus
    pos = [{nd.id: i for i, nd in enumerate(nodes)} for nodes in w.ranks]
    succ: list[list[list[int]]] = [[[] for _ in nodes] for nodes in w.ranks]
    pending: list[list[int]] = [[0] * len(nodes) for nodes in w.ranks]
    for r, nodes in enumerate(w.ranks):
        for i, nd in enumerate(nodes):
            for d in set(nd.deps):
                pending[r][i] += 1
                succ[r][pos[r][d]].append(i)
    ready: list[list[tuple[int, int]]] = [
        sorted((nd.id, i) for i, nd in enumerate(nodes) if pending[r][i] == 0)
        for r, nodes in enumerate(w.ranks)
    ]
    starts = [[math.nan] * len(nodes) for nodes in w.ranks]
    ends = [[math.nan] * len(nodes) for nodes in w.ranks]
    order: list[list[int]] = [[] for _ in range(n)]
    busy_cpu = [False] * n
    busy_comp = [False] * n
    busy_comm = [False] * n
    compute = [0.0] * n
    finish = [0.0] * n
    events: list[tuple[float, int, int, int, int]] = []  # (time, seq, kind, npu, node)
    seq = 0
    # The k-th collective of a group on an NPU is instance (group, k).
    coll_count: dict[tuple[str, int], int] = defaultdict(int)
    instances: dict[tuple[str, int], CollInstance] = {}
    started: list[CollInstance] = []
    coll_node: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    # Point-to-point: arrived messages not yet received, and posted receives.
    arrived: dict[tuple[int, int, int, int], deque[float]] = defaultdict(deque)
    posted: dict[tuple[int, int, int, int], deque[int]] = defaultdict(deque)
    in_service: dict[int, dict[int, int]] = {}  # id(instance) -> its members' nodes

    def push(t: float, kind: int, npu: int, i: int) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, npu, i))
        seq += 1

    def free(npu: int, res: str) -> bool:
        if res == "cpu":
            return not busy_cpu[npu]
        if res == "comp":
            return not busy_comp[npu]
        if res == "comm":
            return not busy_comm[npu]
        return True

    def hold(npu: int, res: str, value: bool) -> None:
        if res == "cpu":
            busy_cpu[npu] = value
        elif res == "comp":
            busy_comp[npu] = value
        elif res == "comm":
            busy_comm[npu] = value

    def issue(npu: int, i: int, now: float) -> None:
        nd = w.ranks[npu][i]
        starts[npu][i] = now
        order[npu].append(i)
        k = nd.kind
        if k in (NodeKind.COMP, NodeKind.MEM_LOAD, NodeKind.MEM_STORE):
            dt = local_ns(w, npu, nd, roofline, remote_mem)
            if k == NodeKind.COMP and not nd.is_cpu_op:
                compute[npu] += dt
            push(now + dt, _DONE, npu, i)
        elif k == NodeKind.COLL:
            assert nd.comm_type is not None and nd.comm_size is not None
            ct = CollKind(nd.comm_type)
            if ct == CollKind.BROADCAST:
                push(now + local_ns(w, npu, nd, roofline, remote_mem), _DONE, npu, i)
                return
            pg = nd.pg_name if nd.pg_name != "0" else ""
            key = (pg, coll_count[(pg, npu)])
            coll_count[(pg, npu)] += 1
            inst = instances.get(key)
            if inst is None:
                call = CollCall(ct, nd.comm_size, w.members(nd.pg_name), key[0], nd.involved_dim)
                inst = CollInstance(call, key[1], nd.name)
                instances[key] = inst
            inst.issued[npu] = now
            coll_node[key][npu] = i
            if len(inst.issued) == len(inst.call.members):
                inst.start_ns = now
                started.append(inst)
                each = None
                if service is None and member_time is not None:
                    each = member_time(inst.call, tuple(inst.issued[m] for m in inst.call.members))
                if each is not None:
                    inst.end_ns = max(each)
                    nodes = coll_node.pop(key)
                    for m, t_end in zip(inst.call.members, each, strict=True):
                        push(t_end, _DONE, m, nodes[m])
                elif service is None:
                    inst.end_ns = now + float(collective_time(inst.call))
                    for m, j in coll_node.pop(key).items():
                        push(inst.end_ns, _DONE, m, j)
                else:
                    in_service[id(inst)] = coll_node.pop(key)
                    service.start_collective(inst, now)
                del instances[key]
        elif k == NodeKind.SEND:
            assert nd.comm_dst is not None and nd.comm_size is not None
            if service is not None:
                service.start_message((npu, i), npu, nd.comm_dst, nd.comm_size, now)
                return
            t = now + float(p2p_time(npu, nd.comm_dst, nd.comm_size))
            push(t, _DONE, npu, i)
            push(t, _SEND, npu, i)
        elif k == NodeKind.RECV:
            assert nd.comm_src is not None and nd.comm_tag is not None
            mkey = (nd.comm_src, npu, nd.comm_tag, nd.comm_size or 0)
            if arrived[mkey]:
                at = arrived[mkey].popleft()
                push(max(at, now), _DONE, npu, i)
            else:
                posted[mkey].append(i)
        else:  # METADATA, INVALID
            push(now, _DONE, npu, i)

    def scan(npu: int, now: float) -> None:
        rq = ready[npu]
        if not rq:
            return
        keep: list[tuple[int, int]] = []
        for nid, i in rq:
            res = resource(w.ranks[npu][i])
            if free(npu, res):
                hold(npu, res, True)
                issue(npu, i, now)
            else:
                keep.append((nid, i))
        ready[npu] = keep

    for r in range(n):
        scan(r, 0.0)
    while True:
        t_service = service.next_ns() if service is not None else math.inf
        if service is not None and t_service <= (events[0][0] if events else math.inf):
            if math.isinf(t_service):
                break
            for x in service.advance(t_service):
                if isinstance(x, CollInstance):
                    x.end_ns = t_service
                    for m, j in in_service.pop(id(x)).items():
                        push(t_service, _DONE, m, j)
                else:
                    push(t_service, _DONE, *x)
                    push(t_service, _SEND, *x)
            continue
        if not events:
            break
        now, _, kind, npu, i = heapq.heappop(events)
        nd = w.ranks[npu][i]
        if kind == _SEND:
            assert nd.comm_dst is not None and nd.comm_tag is not None
            mkey = (npu, nd.comm_dst, nd.comm_tag, nd.comm_size or 0)
            if posted[mkey]:
                j = posted[mkey].popleft()
                push(now, _DONE, nd.comm_dst, j)
            else:
                arrived[mkey].append(now)
            continue
        ends[npu][i] = now
        finish[npu] = max(finish[npu], now)
        hold(npu, resource(nd), False)
        new = False
        for j in succ[npu][i]:
            pending[npu][j] -= 1
            if pending[npu][j] == 0:
                ready[npu].append((w.ranks[npu][j].id, j))
                new = True
        if new:
            ready[npu].sort()
        scan(npu, now)
    for r, nodes in enumerate(w.ranks):
        for i, nd in enumerate(nodes):
            if math.isnan(ends[r][i]):
                why = "waits for a message or collective that never completes"
                if math.isnan(starts[r][i]):
                    why = "never became ready"
                raise WorkloadError(f"{describe(nd)} {why}", w.where(r))
    started.sort(key=lambda x: (x.start_ns, x.call.pg_name, x.index))
    return WorkloadRun(finish, compute, starts, ends, started, order)
