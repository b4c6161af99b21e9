"""One program simulated and turned into the data a page draws: a panel.

`build_panel` simulates a verified program on its topology with collc's congestion model
(the model of ``collc simulate``, which keeps every link occupancy) and gathers, as plain JSON
values:

- the summary: collective, ranks, size, simulated time, the lower bound and the ratio, bus
  bandwidth;
- the topology as drawn (`backends.view.layout`): node positions, link shapes, each link's
  bandwidth, latency and busy time;
- the link load per time bin (a heatmap, ``heat``: per mille of the bin spent serializing);
- the critical path (`backends.view.critical`) as steps, with the links and nodes it crosses;
- either every task and link occupancy (*exact*: the page lists each link's messages and
  animates them), or, when the program has more link occupancies than ``max_records``,
  aggregates per link and per time bin and per rank and time bin (*aggregated*: the page
  says so, lists a link's messages as counts per time bin, and draws ranks' activity as
  heat rows instead of bars).

Times are in ns. Tasks are the simulator's (`backends.sim.tasks`): a message is the SEND task
of its sender, numbered by ``op`` (the sender's operation id in the program); the pieces of an
in-network flow are SEND tasks of the program's ranks and of the switches (``rank`` from
``num_ranks`` on), whose ``tag`` is the flow id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from backends.sim.models import simulate_tasks
from backends.sim.results import SimResult
from backends.sim.tasks import TaskGraph, TaskKind, tasks_from_program
from backends.view.binning import bin_busy, bin_counts
from backends.view.critical import critical_path
from backends.view.layout import layout
from chakra_ir.program import OpKind, Program
from topologies.cost_model import CostModel
from topologies.topology import Topology

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

MAX_RECORDS = 100_000
"""Default most link occupancies a panel keeps one by one; above it the panel aggregates."""
BINS = 100
"""Time bins of the heatmaps and of the aggregates."""


@dataclass(frozen=True)
class PanelInfo:
    """What the page says about a program beyond its simulation: its ``title`` (the folder),
    ``algorithm``, the lower bound (``bound_name``, ``bound_ns``; 0 when none applies) and the
    producer's ``estimate_ns`` (None when it made none)."""

    title: str
    algorithm: str = ""
    bound_name: str = ""
    bound_ns: float = 0.0
    estimate_ns: float | None = None


def build_panel(
    program: Program,
    topology: Topology,
    chunk_bytes: int,
    cost: CostModel,
    info: PanelInfo,
    *,
    max_records: int = MAX_RECORDS,
    bins: int = BINS,
) -> tuple[dict[str, Any], SimResult]:
    """Simulate ``program`` (verified, routes checked against ``topology``) and return its
    panel (see the module docstring) and the simulation's result. Raises SimError as
    `backends.sim.simulate` does."""
    graph = tasks_from_program(program, chunk_bytes, cost, fold_reductions=True, topology=topology)
    c = program.collective
    result = simulate_tasks(
        graph,
        topology,
        cost=cost,
        keep_timeline=True,
        collective=c,
        size_bytes=c.size_chunks * chunk_bytes,
        chunk_bytes=chunk_bytes,
    )
    tl = result.timeline
    assert tl is not None and tl.records is not None
    rec = tl.records
    span = max(result.finish_ns, 1e-9)
    nl = len(topology.links)
    lay = layout(topology)
    w = span / bins
    busy = bin_busy(rec.link, rec.start_ns, rec.dur_ns, nl, bins, span)
    exact = len(rec.link) <= max_records
    ratio = result.finish_ns / info.bound_ns if info.bound_ns > 0 else None
    panel: dict[str, Any] = {
        "title": info.title,
        "algorithm": info.algorithm or program.name,
        "collective": c.kind.value,
        "ranks": c.num_ranks,
        "size_bytes": c.size_chunks * chunk_bytes,
        "chunk_bytes": chunk_bytes,
        "topology": topology.spec,
        "topology_kind": topology.name,
        "completion": result.completion,
        "finish_ns": result.finish_ns,
        "bound_ns": info.bound_ns or None,
        "bound_name": info.bound_name,
        "ratio": ratio,
        "estimate_ns": info.estimate_ns,
        "busbw_gb_per_s": result.busbw_gb_per_s,
        "messages": result.messages,
        "hops": result.hops,
        "notes": list(result.notes),
        "style": lay.style,
        "nodes": {
            "x": [round(x, 4) for x, _ in lay.xy],
            "y": [round(y, 4) for _, y in lay.xy],
            "npus": topology.num_npus,
        },
        "links": {
            "src": [lk.src for lk in topology.links],
            "dst": [lk.dst for lk in topology.links],
            "shape": [s.kind for s in lay.links],
            "a": [round(s.a, 4) for s in lay.links],
            "b": [round(s.b, 4) for s in lay.links],
            "bw": [lk.bandwidth_bytes_per_ns for lk in topology.links],
            "lat": [lk.latency_ns for lk in topology.links],
            "busy": _times(result.link_busy_ns),
            "count": np.bincount(rec.link, minlength=nl).tolist(),
        },
        "rank_npu": [int(x) for x in tl.npus],
        "bins": bins,
        "bin_ns": w,
        "heat": np.minimum(1000, np.rint(busy * 1000 / w)).astype(np.int64).ravel().tolist(),
        "exact": exact,
        "records_total": len(rec.link),
        "max_records": max_records,
    }
    panel["critical"] = _critical(graph, tl.issue_ns, tl.finish_ns, rec.task, rec.link, tl.npus)
    if exact:
        panel |= _exact(graph, program, tl.issue_ns, tl.finish_ns, rec)
    else:
        panel |= _aggregated(graph, tl.issue_ns, tl.finish_ns, rec, nl, bins, span)
    return panel, result


def _times(a: npt.ArrayLike) -> list[float]:
    """Times in ns rounded to the picosecond, as JSON numbers."""
    out: list[float] = np.round(np.asarray(a, dtype=np.float64), 3).tolist()
    return out


def _exact(graph: TaskGraph, program: Program, issue: F64, finish: F64, rec: Any) -> dict[str, Any]:
    """Every task and link occupancy, the occupancies sorted by start."""
    order = np.argsort(rec.start_ns, kind="stable")
    R = program.num_ranks
    rank = graph.task_rank()
    origin = graph.origin
    buf = np.full(graph.num_tasks, -1, dtype=np.int64)
    idx = np.full(graph.num_tasks, -1, dtype=np.int64)
    cnt = np.zeros(graph.num_tasks, dtype=np.int64)
    mine = (rank < R) & (origin >= 0)
    g = program.rank_offsets[rank[mine]] + origin[mine]
    kind = program.kind[g].astype(np.int64)
    reads = (kind == OpKind.SEND) | (kind == OpKind.FLOW_IN)
    b = np.where(reads, program.src_buf[g], program.dst_buf[g]).astype(np.int64)
    i = np.where(reads, program.src_index[g], program.dst_index[g]).astype(np.int64)
    buf[mine], idx[mine], cnt[mine] = b, i, program.count[g]
    return {
        "tasks": {
            "rank": rank.tolist(),
            "detail": graph.detail.astype(np.int64).tolist(),
            "peer": graph.peer.tolist(),
            "op": origin.tolist(),
            "tag": graph.tag.tolist(),
            "bytes": graph.nbytes.tolist(),
            "issue": _times(issue),
            "from": _times(_busy_from(graph, issue)),
            "finish": _times(finish),
            "buf": buf.tolist(),
            "idx": idx.tolist(),
            "cnt": cnt.tolist(),
        },
        "records": {
            "link": rec.link[order].tolist(),
            "start": _times(rec.start_ns[order]),
            "dur": _times(rec.dur_ns[order]),
            "task": rec.task[order].tolist(),
        },
    }


def _busy_from(graph: TaskGraph, issue: F64) -> F64:
    """When each task started to be busy: its issue, and for a receive posted before its
    message was sent, the send's issue (the Gantt's bars and the ranks' activity)."""
    out = issue.copy()
    partner = graph.partners()
    recv = np.flatnonzero((graph.kind == TaskKind.RECV) & (partner >= 0))
    out[recv] = np.maximum(issue[recv], issue[partner[recv]])
    return out


def _aggregated(
    graph: TaskGraph, issue: F64, finish: F64, rec: Any, nl: int, bins: int, span: float
) -> dict[str, Any]:
    """Counts per link and bin, activity per rank and bin, and each rank's totals."""
    counts = bin_counts(rec.link, rec.start_ns, nl, bins, span)
    R = graph.num_ranks
    rank = graph.task_rank()
    w = span / bins
    kinds = graph.kind
    busy_from = _busy_from(graph, issue)
    activity = []
    for k in (TaskKind.SEND, TaskKind.RECV):
        sel = kinds == k
        act = bin_busy(rank[sel], busy_from[sel], finish[sel] - busy_from[sel], R, bins, span)
        activity.append(np.rint(act * 100 / w).astype(np.int64).ravel().tolist())
    sends = np.bincount(rank[kinds == TaskKind.SEND], minlength=R)
    recvs = np.bincount(rank[kinds == TaskKind.RECV], minlength=R)
    comps = np.bincount(rank[kinds == TaskKind.COMP], minlength=R)
    sent = np.bincount(
        rank[kinds == TaskKind.SEND], weights=graph.nbytes[kinds == TaskKind.SEND], minlength=R
    )
    first = np.full(R, np.inf)
    last = np.zeros(R)
    np.minimum.at(first, rank, issue)
    np.maximum.at(last, rank, finish)
    first[~np.isfinite(first)] = 0.0
    return {
        "link_bin_counts": counts.ravel().tolist(),
        "rank_send_activity": activity[0],
        "rank_recv_activity": activity[1],
        "rank_totals": {
            "sends": sends.tolist(),
            "recvs": recvs.tolist(),
            "comps": comps.tolist(),
            "sent_bytes": sent.astype(np.int64).tolist(),
            "first": _times(first),
            "last": _times(last),
        },
    }


def _critical(
    graph: TaskGraph,
    issue: F64,
    finish: F64,
    rec_task: I64,
    rec_link: I64,
    npus: tuple[int, ...],
) -> dict[str, Any]:
    """The critical path as steps ``[rank, detail, peer, op, issue, finish]`` with the links its
    messages crossed and the nodes of its ranks."""
    path = critical_path(graph, finish)
    rank = graph.task_rank()
    sends = path[graph.kind[path] == TaskKind.SEND]
    links = np.unique(rec_link[np.isin(rec_task, sends)])
    steps = [
        [
            int(rank[t]),
            int(graph.detail[t]),
            int(graph.peer[t]),
            int(graph.origin[t]),
            round(float(issue[t]), 3),
            round(float(finish[t]), 3),
        ]
        for t in path
    ]
    nodes = sorted({npus[int(rank[t])] for t in path})
    return {"steps": steps, "links": links.tolist(), "nodes": nodes}
