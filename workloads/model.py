"""The workload: per-NPU Chakra workload ETs as collc holds them, and the rules ASTRA-sim runs
them by.

A `Workload` is one `WNode` list per NPU (file order) plus the communicator groups its
collectives name. Nodes are what ASTRA-sim's workload layer reads (see docs/workloads.md):

- ``COMP_NODE``: ``duration_micros``; with the roofline, ``num_ops`` and ``tensor_size``;
- ``COMM_COLL_NODE``: ``comm_type`` (a `CollKind` value), ``comm_size`` (bytes, ASTRA-sim's
  convention: an all-gather's is the per-rank input), ``pg_name`` ("" or "0": every NPU),
  ``involved_dim``;
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: ``comm_dst`` / ``comm_src``, ``comm_size``,
  ``comm_tag``;
- ``MEM_LOAD_NODE`` / ``MEM_STORE_NODE`` (``tensor_size``), ``METADATA_NODE``, ``INVALID_NODE``.

`check_workload` refuses, naming the file and the node, everything ASTRA-sim would fail on or
hang at: a missing required attribute, an unsupported collective, a communicator group that is
not defined, collectives whose members disagree, sends without their receive, cycles.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from topologies.errors import CollcError, SourcePos


class WorkloadError(CollcError):
    """A workload that cannot be read, generated or simulated; the position names the file
    and the node."""


class NodeKind(IntEnum):
    """Chakra `NodeType` values a workload uses."""

    INVALID = 0
    METADATA = 1
    MEM_LOAD = 2
    MEM_STORE = 3
    COMP = 4
    SEND = 5
    RECV = 6
    COLL = 7


class CollKind(IntEnum):
    """Chakra `CollectiveCommType` values (the ``comm_type`` attribute)."""

    ALL_REDUCE = 0
    REDUCE = 1
    ALL_GATHER = 2
    GATHER = 3
    SCATTER = 4
    BROADCAST = 5
    ALL_TO_ALL = 6
    REDUCE_SCATTER = 7
    REDUCE_SCATTER_BLOCK = 8
    BARRIER = 9


SIMULATED_COLLECTIVES = (
    CollKind.ALL_REDUCE,
    CollKind.ALL_GATHER,
    CollKind.REDUCE_SCATTER,
    CollKind.ALL_TO_ALL,
)
"""Collectives ASTRA-sim simulates; BROADCAST is a delay of ``duration_micros``; the rest are
refused ("Unsupported collective comm type")."""

COLL_NAMES = {
    CollKind.ALL_REDUCE: "allreduce",
    CollKind.ALL_GATHER: "allgather",
    CollKind.REDUCE_SCATTER: "reduce_scatter",
    CollKind.ALL_TO_ALL: "alltoall",
    CollKind.BROADCAST: "broadcast",
}
"""collc's collective names (`chakra_ir.collective.CollectiveKind` values) per comm type."""


@dataclass(frozen=True, slots=True)
class WNode:
    """One node of a workload ET. Dependencies are node ids of the same file; ``data_deps``
    and ``ctrl_deps`` both gate issue (ASTRA-sim's feeder_v3). Attributes that a node does not
    carry are None (``pg_name`` ""; ``involved_dim`` None means ASTRA-sim's default, every
    dimension)."""

    id: int
    name: str
    kind: int
    data_deps: tuple[int, ...] = ()
    ctrl_deps: tuple[int, ...] = ()
    duration_micros: int = 0
    is_cpu_op: bool = False
    num_ops: int | None = None
    tensor_size: int | None = None
    comm_type: int | None = None
    comm_size: int | None = None
    pg_name: str = ""
    involved_dim: tuple[bool, ...] | None = None
    comm_src: int | None = None
    comm_dst: int | None = None
    comm_tag: int | None = None
    comm_priority: int = 0

    @property
    def deps(self) -> tuple[int, ...]:
        """Every node this one waits for (data and control)."""
        return self.data_deps + self.ctrl_deps if self.ctrl_deps else self.data_deps


@dataclass
class Workload:
    """Per-NPU node lists (``ranks[npu]``, file order) and the communicator groups
    (``groups[pg_name]`` = NPUs, ascending as ASTRA-sim sorts them). ``files[npu]`` names
    each NPU's source for messages; ``metadata`` is free-form (the generator's model and
    parallelism, memory footprint); ``warnings`` are what the reader skipped (an unreadable
    optional description), for the user to see."""

    ranks: list[list[WNode]]
    groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    metadata: dict[str, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def num_npus(self) -> int:
        return len(self.ranks)

    @property
    def num_nodes(self) -> int:
        return sum(len(r) for r in self.ranks)

    def file(self, npu: int) -> str:
        """The name of NPU ``npu``'s file, for messages."""
        return self.files[npu] if npu < len(self.files) else f"<npu {npu}>"

    def where(self, npu: int) -> SourcePos:
        """A position naming NPU ``npu``'s file (messages name the node in their text)."""
        return SourcePos(file=self.file(npu))

    def members(self, pg_name: str) -> tuple[int, ...]:
        """The NPUs of communicator group ``pg_name`` ("" and "0": every NPU)."""
        if pg_name in ("", "0"):
            return tuple(range(self.num_npus))
        return self.groups[pg_name]


def describe(n: WNode) -> str:
    """``node 17 (attn_fwd_ar, COMM_COLL_NODE)`` for messages."""
    try:
        kind = NodeKind(n.kind).name
    except ValueError:
        kind = f"type {n.kind}"
    label = f" {n.name!r}" if n.name else ""
    return f"node {n.id}{label} ({kind})"


def _fail(w: Workload, npu: int, n: WNode | None, what: str) -> WorkloadError:
    at = f"{describe(n)}: " if n is not None else ""
    return WorkloadError(f"{at}{what}", w.where(npu))


def issue_order(nodes: Sequence[WNode]) -> list[int]:
    """Positions of ``nodes`` in the order ASTRA-sim would issue them if every node took no
    time: ready nodes (all dependencies done) smallest id first. Raises ValueError naming a
    node id on a cycle (no node left without pending dependencies)."""
    if all(d < n.id for n in nodes for d in n.deps):
        # Every node waits only for smaller ids: ascending ids is that order.
        return sorted(range(len(nodes)), key=lambda i: nodes[i].id)
    pos = {n.id: i for i, n in enumerate(nodes)}
    pending = [0] * len(nodes)
    succ: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for d in set(n.deps):
            pending[i] += 1
            succ[pos[d]].append(i)
    heap = [(n.id, i) for i, n in enumerate(nodes) if pending[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(i)
        for j in succ[i]:
            pending[j] -= 1
            if pending[j] == 0:
                heapq.heappush(heap, (nodes[j].id, j))
    if len(out) != len(nodes):
        stuck = min(nodes[i].id for i in range(len(nodes)) if pending[i] > 0)
        raise ValueError(str(stuck))
    return out


def check_workload(w: Workload, *, roofline: bool = False) -> list[int]:
    """Raise WorkloadError (file and node named) unless ASTRA-sim can run ``w`` to the end;
    see the module docstring. ``roofline``: COMP nodes on the GPU are timed from ``num_ops``
    and ``tensor_size``, which must then be present. Returns the NPU classes it checked by
    (`npu_classes`)."""
    n_npus = w.num_npus
    if n_npus == 0:
        raise WorkloadError("the workload has no NPUs (no ET files)")
    for name, members in w.groups.items():
        if not members:
            raise WorkloadError(f"communicator group {name!r} is empty")
        bad = [x for x in members if not 0 <= x < n_npus]
        if bad:
            raise WorkloadError(
                f"communicator group {name!r} names NPU {bad[0]}, but the workload has "
                f"{n_npus} NPUs (0..{n_npus - 1})"
            )
    # Collectives per (group, NPU) in issue order (kind and size; the nodes for messages),
    # and point-to-point messages.
    colls: dict[str, dict[int, list[tuple[int, int]]]] = defaultdict(dict)
    coll_nodes: dict[str, dict[int, list[WNode]]] = defaultdict(dict)
    sends: Counter[tuple[int, int, int, int]] = Counter()
    recvs: Counter[tuple[int, int, int, int]] = Counter()
    first: dict[tuple[str, int, int, int, int], tuple[int, WNode]] = {}
    groups_of: list[set[str]] = [set() for _ in range(n_npus)]
    for name, members in w.groups.items():
        for x in members:
            groups_of[x].add(name)
    # NPUs of one class have equal nodes but for groups and peers: the structure is checked
    # once per class, groups and peers on every NPU.
    classes = npu_classes(w)
    comm_of_class: dict[int, list[int]] = {}
    simulated = frozenset(int(k) for k in SIMULATED_COLLECTIVES)
    for npu, nodes in enumerate(w.ranks):
        comm = comm_of_class.get(classes[npu])
        if comm is None:
            order = _check_structure(w, npu, nodes, roofline)
            comm = [i for i in order if nodes[i].kind in _COMM]
            comm_of_class[classes[npu]] = comm
        mine = groups_of[npu]
        for i in comm:
            n = nodes[i]
            if n.kind == _COLL_K:
                pg = n.pg_name
                if pg == "0":
                    pg = ""
                elif pg and pg not in mine:
                    _check_where(w, npu, n)  # raises, naming what is wrong
                if n.comm_type in simulated:
                    assert n.comm_size is not None and n.comm_type is not None
                    row = colls[pg].get(npu)
                    if row is None:
                        row = colls[pg][npu] = []
                        coll_nodes[pg][npu] = []
                    row.append((n.comm_type, n.comm_size))
                    coll_nodes[pg][npu].append(n)
                continue
            _check_where(w, npu, n)
            if n.kind == _SEND_K:
                assert n.comm_dst is not None and n.comm_tag is not None
                key = (npu, n.comm_dst, n.comm_tag, n.comm_size or 0)
                sends[key] += 1
                first.setdefault(("send", *key), (npu, n))
            else:
                assert n.comm_src is not None and n.comm_tag is not None
                key = (n.comm_src, npu, n.comm_tag, n.comm_size or 0)
                recvs[key] += 1
                first.setdefault(("recv", *key), (npu, n))
    for key in sorted((sends - recvs) + (recvs - sends)):
        side = "send" if sends[key] > recvs[key] else "recv"
        npu, n = first[(side, *key)]
        src, dst, tag, size = key
        other = f"a receive on NPU {dst}" if side == "send" else f"a send on NPU {src}"
        raise _fail(
            w,
            npu,
            n,
            f"no matching {other} (src {src}, dst {dst}, tag {tag}, {size} B): "
            "ASTRA-sim would wait for ever",
        )
    for pg, per_npu in colls.items():
        members = w.members(pg)
        lead = members[0]
        want = per_npu.get(lead, [])
        for npu in members:
            have = per_npu.get(npu, [])
            if have == want:
                continue
            k = next(
                (j for j, (a, b) in enumerate(zip(want, have, strict=False)) if a != b),
                min(len(want), len(have)),
            )
            if k < len(have):
                at_npu, node = npu, coll_nodes[pg][npu][k]
            else:
                at_npu, node = lead, coll_nodes[pg][lead][k]
            group = f"group {pg!r}" if pg else "the default group"
            a = _coll(want[k]) if k < len(want) else "none"
            b = _coll(have[k]) if k < len(have) else "none"
            raise _fail(
                w,
                at_npu,
                node,
                f"collective {k} of {group} differs between NPU {lead} and NPU {npu} "
                f"({a} vs {b}): ASTRA-sim would hang",
            )
    return classes


def npu_classes(w: Workload) -> list[int]:
    """Per NPU, its class (0, 1, ... in order of first NPU): NPUs whose nodes are equal except
    for group names and peers (the pipeline stages of a generated workload)."""
    seen: dict[tuple[int, ...], int] = {}
    codes: dict[tuple[object, ...], int] = {}  # a node without group and peer -> a small int
    by_object: dict[int, int] = {}  # id(node) -> its code (NPUs often share node objects)
    out = []
    for nodes in w.ranks:
        sig = []
        for n in nodes:
            code = by_object.get(id(n))
            if code is None:
                key = (
                    n.id,
                    n.kind,
                    n.data_deps,
                    n.ctrl_deps,
                    n.duration_micros,
                    n.is_cpu_op,
                    n.num_ops,
                    n.tensor_size,
                    n.comm_type,
                    n.comm_size,
                    n.involved_dim,
                    n.comm_tag,
                    n.comm_priority,
                    n.comm_src is None,
                    n.comm_dst is None,
                )
                code = codes.setdefault(key, len(codes))
                by_object[id(n)] = code
            sig.append(code)
        out.append(seen.setdefault(tuple(sig), len(seen)))
    return out


def _check_structure(w: Workload, npu: int, nodes: list[WNode], roofline: bool) -> list[int]:
    """Check one NPU's nodes by themselves; return their issue order (`issue_order`)."""
    if not nodes:
        raise _fail(w, npu, None, "the file has no nodes (ASTRA-sim needs a root node)")
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        dup = Counter(ids).most_common(1)[0][0]
        raise _fail(w, npu, None, f"node id {dup} appears twice")
    known = set(ids)
    for n in nodes:
        for d in n.deps:
            if d not in known:
                raise _fail(w, npu, n, f"depends on node {d}, which is not in the file")
    try:
        order = issue_order(nodes)
    except ValueError as e:
        raise _fail(
            w, npu, None, f"node {e} is on a dependency cycle (ASTRA-sim would deadlock)"
        ) from None
    for i in order:
        _check_node(w, npu, nodes[i], roofline)
    return order


def _check_where(w: Workload, npu: int, n: WNode) -> None:
    """The checks of a communication node that depend on its NPU: its group, its peer."""
    if n.kind == _COLL_K:
        if n.comm_type == CollKind.BROADCAST or n.pg_name in ("", "0"):
            return
        members = w.groups.get(n.pg_name)
        if members is None:
            known = ", ".join(sorted(w.groups, key=_natural)) or "none"
            raise _fail(
                w,
                npu,
                n,
                f"pg_name {n.pg_name!r} is not a communicator group (groups: {known}; "
                "give them with --comm-groups)",
            )
        if npu not in members:
            raise _fail(
                w,
                npu,
                n,
                f"NPU {npu} issues a collective on group {n.pg_name!r}, which it is not in",
            )
        return
    if n.kind == _SEND_K:
        if n.comm_src is not None and n.comm_src != npu:
            raise _fail(w, npu, n, f"comm_src {n.comm_src} is not this file's NPU {npu}")
        peer = n.comm_dst
    else:
        if n.comm_dst is not None and n.comm_dst != npu:
            raise _fail(w, npu, n, f"comm_dst {n.comm_dst} is not this file's NPU {npu}")
        peer = n.comm_src
    assert peer is not None
    if not 0 <= peer < w.num_npus or peer == npu:
        raise _fail(w, npu, n, f"peer NPU {peer} is not another NPU of the workload")


def _coll(x: tuple[int, int]) -> str:
    return f"{CollKind(x[0]).name} of {x[1]} B"


_KINDS = frozenset(int(k) for k in NodeKind)
_COLL_K, _SEND_K, _RECV_K = int(NodeKind.COLL), int(NodeKind.SEND), int(NodeKind.RECV)
_COMM = frozenset((_COLL_K, _SEND_K, _RECV_K))
_COMP, _MEM = int(NodeKind.COMP), frozenset((int(NodeKind.MEM_LOAD), int(NodeKind.MEM_STORE)))


def _check_node(w: Workload, npu: int, n: WNode, roofline: bool) -> None:
    k = n.kind
    if k == _COMP:
        if roofline and not n.is_cpu_op and (n.num_ops is None or n.tensor_size is None):
            missing = "num_ops" if n.num_ops is None else "tensor_size"
            raise _fail(w, npu, n, f"attribute {missing} is missing (the roofline needs it)")
        return

    def need(value: object, attr: str) -> None:
        if value is None:
            raise _fail(w, npu, n, f"attribute {attr} is missing (ASTRA-sim requires it)")

    if k not in _KINDS:
        raise _fail(w, npu, n, f"unknown node type {k} (ASTRA-sim exits: Unknown node type)")
    if k in _MEM:
        need(n.tensor_size, "tensor_size")
        return
    if k not in (NodeKind.COLL, NodeKind.SEND, NodeKind.RECV):
        return
    if n.is_cpu_op:
        raise _fail(w, npu, n, "a communication node with is_cpu_op true (ASTRA-sim exits)")
    need(n.comm_size, "comm_size")
    assert n.comm_size is not None
    if n.comm_size <= 0:
        raise _fail(w, npu, n, f"comm_size {n.comm_size} must be positive")
    if k == NodeKind.COLL:
        need(n.comm_type, "comm_type")
        assert n.comm_type is not None
        try:
            ct = CollKind(n.comm_type)
        except ValueError:
            raise _fail(w, npu, n, f"unknown comm_type {n.comm_type}") from None
        if ct not in SIMULATED_COLLECTIVES and ct != CollKind.BROADCAST:
            raise _fail(
                w,
                npu,
                n,
                f"{ct.name} is not simulated by ASTRA-sim (Unsupported collective "
                "comm type); use all-reduce, all-gather, reduce-scatter or all-to-all",
            )
        return
    need(n.comm_tag, "comm_tag")
    assert n.comm_tag is not None
    if n.comm_tag < 0:
        raise _fail(w, npu, n, f"comm_tag {n.comm_tag} must not be negative")
    need(
        n.comm_dst if k == NodeKind.SEND else n.comm_src,
        "comm_dst" if k == NodeKind.SEND else "comm_src",
    )


def _natural(s: str) -> tuple[int, str]:
    return (int(s), "") if s.isdigit() else (1 << 62, s)
