"""The symmetry shortcut of the analytical mode: run one NPU per class of identical NPUs.

In a data x tensor x pipeline parallel workload every NPU of a pipeline stage runs the same
nodes; only the names of its groups and its peers differ. Without contention (the analytical
mode), such NPUs issue every node at the same time, so one representative per class gives
everyone's times. `run_by_classes` does that when it is exact and returns None otherwise (the
caller then runs every NPU).

It is exact, and identical to `workloads.engine.run_workload` on the whole workload, when:

1. NPUs of a class have equal node lists except ``pg_name``, ``comm_src`` and ``comm_dst``
   (that is how classes are found);
2. every communicator group used by a collective lies inside one class (its members then
   issue together), and the collective times of the groups a class uses at one node are equal;
3. at each send and receive node, the peers of a class's NPUs all lie in one class, and the
   message times are equal; no two of a representative's messages with the same peer class,
   tag and size have different times.

Each condition is checked on the whole workload before the shortcut is taken.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict

from workloads.engine import (
    CollCall,
    CollectiveTimer,
    CollInstance,
    P2pTimer,
    Roofline,
    WorkloadRun,
    run_workload,
)
from workloads.model import CollKind, NodeKind, WNode, Workload, npu_classes

_COLL, _SEND, _RECV = int(NodeKind.COLL), int(NodeKind.SEND), int(NodeKind.RECV)


def run_by_classes(
    w: Workload,
    collective_time: CollectiveTimer,
    p2p_time: P2pTimer,
    *,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    classes: list[int] | None = None,
) -> WorkloadRun | None:
    """``run_workload(w, ...)`` computed on one NPU per class, or None when the conditions of
    the module docstring do not hold. ``classes``: `npu_classes` of ``w`` if known."""
    cls = npu_classes(w) if classes is None else classes
    k = max(cls) + 1
    if k == w.num_npus:
        return None
    reps: list[int] = []
    for npu, c in enumerate(cls):
        if c == len(reps):
            reps.append(npu)
    members_of: dict[str, tuple[int, ...]] = {}

    def members(pg: str) -> tuple[int, ...]:
        m = members_of.get(pg)
        if m is None:
            m = w.members(pg)
            members_of[pg] = m
        return m

    group_class: dict[str, int] = {}
    # Per class and node position: the group (pg of the representative) and the timings.
    coll_time: dict[tuple[int, int], float] = {}
    times: dict[tuple[str, int | None, int | None, tuple[bool, ...] | None], float] = {}
    pg_map: dict[str, str] = {}  # a group -> the representative's group at the same node
    p2p_time_q: dict[tuple[int, int, int], float] = {}  # (class, peer class, size)
    peer_class: dict[tuple[int, int], int] = {}
    msg_time: dict[tuple[int, int], float] = {}
    comm_at = [
        [i for i, n in enumerate(w.ranks[r]) if n.kind in (_COLL, _SEND, _RECV)] for r in reps
    ]
    broadcast = int(CollKind.BROADCAST)
    for npu, nodes in enumerate(w.ranks):
        c = cls[npu]
        rep = w.ranks[reps[c]]
        for i in comm_at[c]:
            n = nodes[i]
            kind = n.kind
            if kind == _COLL:
                if n.comm_type == broadcast:
                    continue
                pg = n.pg_name if n.pg_name != "0" else ""
                gc = group_class.get(pg)
                if gc is None:
                    got = {cls[x] for x in members(pg)}
                    if len(got) != 1:
                        return None
                    gc = got.pop()
                    group_class[pg] = gc
                if gc != c:
                    return None
                rpg = rep[i].pg_name
                if rpg == "0":
                    rpg = ""
                if pg_map.setdefault(pg, rpg) != rpg:
                    return None
                key = (pg, n.comm_type, n.comm_size, n.involved_dim)
                t = times.get(key)
                if t is None:
                    assert n.comm_type is not None and n.comm_size is not None
                    call = CollCall(
                        CollKind(n.comm_type), n.comm_size, members(pg), pg, n.involved_dim
                    )
                    t = times[key] = collective_time(call)
                if coll_time.setdefault((c, i), t) != t:
                    return None
            elif kind in (_SEND, _RECV):
                peer = n.comm_dst if kind == _SEND else n.comm_src
                assert peer is not None and n.comm_size is not None
                pc = cls[peer]
                if peer_class.setdefault((c, i), pc) != pc:
                    return None
                if kind == _SEND:
                    t = float(p2p_time(npu, peer, n.comm_size))
                    if msg_time.setdefault((c, i), t) != t:
                        return None
                    if p2p_time_q.setdefault((c, pc, n.comm_size), t) != t:
                        return None
    # The quotient workload: one NPU per class, peers and groups mapped to classes.
    q_groups: dict[str, tuple[int, ...]] = {}
    q_ranks: list[list[WNode]] = []
    for c, r in enumerate(reps):
        out = []
        for n in w.ranks[r]:
            if n.kind == _COLL and n.comm_type != CollKind.BROADCAST:
                pg = n.pg_name if n.pg_name != "0" else ""
                name = pg or "*"
                q_groups[name] = (c,)
                n = dataclasses.replace(n, pg_name=name)
            elif n.kind == _SEND:
                assert n.comm_dst is not None
                n = dataclasses.replace(n, comm_dst=cls[n.comm_dst], comm_src=None)
            elif n.kind == _RECV:
                assert n.comm_src is not None
                n = dataclasses.replace(n, comm_src=cls[n.comm_src], comm_dst=None)
            out.append(n)
        q_ranks.append(out)
    q = Workload(q_ranks, q_groups, [w.file(r) for r in reps])

    def q_coll(call: CollCall) -> float:
        pg = "" if call.pg_name == "*" else call.pg_name
        return collective_time(
            CollCall(call.kind, call.comm_size, members(pg), pg, call.involved_dim)
        )

    def q_p2p(src: int, dst: int, nbytes: int) -> float:
        return p2p_time_q[(src, dst, nbytes)]

    qrun = run_workload(q, q_coll, q_p2p, roofline=roofline, remote_mem=remote_mem)
    return _expand(w, cls, reps, qrun, pg_map)


def _expand(
    w: Workload,
    cls: list[int],
    reps: list[int],
    qrun: WorkloadRun,
    pg_map: dict[str, str],
) -> WorkloadRun:
    finish = [qrun.finish_ns[c] for c in cls]
    compute = [qrun.compute_ns[c] for c in cls]
    starts = [qrun.starts[c] for c in cls]
    ends = [qrun.ends[c] for c in cls]
    order = [qrun.issue_order[c] for c in cls]
    by_rep: dict[str, list[CollInstance]] = defaultdict(list)
    for inst in qrun.collectives:
        by_rep["" if inst.call.pg_name == "*" else inst.call.pg_name].append(inst)
    colls: list[CollInstance] = []
    for pg, rpg in pg_map.items():
        for inst in by_rep.get(rpg, []):
            call = CollCall(
                inst.call.kind, inst.call.comm_size, w.members(pg), pg, inst.call.involved_dim
            )
            colls.append(CollInstance(call, inst.index, inst.name, inst.start_ns, inst.end_ns))
    colls.sort(key=lambda x: (x.start_ns, x.call.pg_name, x.index))
    assert not any(math.isnan(f) for f in finish)
    return WorkloadRun(finish, compute, starts, ends, colls, order)
