"""What `collc workload simulate` reports: the summary (JSON-ready) and the Perfetto timeline.

Summary: the iteration time (the last NPU's finish), per NPU compute and exposed
communication (finish minus compute, as ASTRA-sim prints it), the collectives grouped by
(communicator group, kind, size) and by group, and, when the run simulated links, their
utilisation. Timeline (Chrome trace / Perfetto): one process per NPU with threads for compute,
communication, receives and CPU ops, each node a complete event; in the contention mode also
one thread per link (`backends.sim.timeline.link_events`).
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from backends.sim.results import SimResult
from backends.sim.timeline import Warn, link_events, meta_event, write_trace
from workloads.engine import WorkloadRun, resource
from workloads.model import NodeKind, Workload

NPU_PID_BASE = 1000
_THREADS = {"comp": 0, "comm": 1, "none": 2, "cpu": 3}
_THREAD_NAMES = {0: "compute", 1: "communication", 2: "receives", 3: "cpu"}


def summary(
    w: Workload, run: WorkloadRun, *, sim: SimResult | None = None, top_links: int = 10
) -> dict[str, Any]:
    """The run as a JSON-ready dict (times in ns)."""
    finish = run.finish_ns
    compute = run.compute_ns
    exposed = run.exposed_ns
    slowest = int(np.argmax(finish)) if finish else 0
    by_kind: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    by_group: dict[str, list[float]] = defaultdict(list)
    for c in run.collectives:
        dur = c.end_ns - c.start_ns
        by_kind[(c.call.pg_name or "all", c.call.kind.name, c.call.comm_size)].append(dur)
        by_group[c.call.pg_name or "all"].append(dur)
    counts: Counter[int] = Counter()
    for r in w.ranks:
        counts.update(n.kind for n in r)
    nodes = {_kind_name(k): v for k, v in sorted(counts.items())}
    out: dict[str, Any] = {
        "npus": w.num_npus,
        "nodes": w.num_nodes,
        "node_types": {k: v for k, v in nodes.items() if v},
        "collectives": len(run.collectives),
        "iteration_ns": run.time_ns,
        "slowest_npu": slowest,
        "compute_ns": compute[slowest] if compute else 0.0,
        "exposed_communication_ns": exposed[slowest] if exposed else 0.0,
        "max_compute_ns": max(compute, default=0.0),
        "max_exposed_communication_ns": max(exposed, default=0.0),
        "per_collective": [
            {
                "group": g,
                "group_size": _group_size(w, g),
                "kind": k,
                "comm_size": size,
                "count": len(ds),
                "total_ns": sum(ds),
                "mean_ns": sum(ds) / len(ds),
            }
            for (g, k, size), ds in sorted(by_kind.items(), key=lambda x: -sum(x[1]))
        ],
        "per_group": [
            {"group": g, "npus": _group_size(w, g), "count": len(ds), "total_ns": sum(ds)}
            for g, ds in sorted(by_group.items(), key=lambda x: -sum(x[1]))
        ],
    }
    if sim is not None:
        out["messages"] = sim.messages
        util = sim.link_utilization
        used = np.flatnonzero(sim.link_busy_ns > 0)
        if len(used):
            order = used[np.argsort(-util[used], kind="stable")][:top_links]
            out["links"] = {
                "count": len(used),
                "mean_utilization": float(util[used].mean()),
                "busiest": [
                    {
                        "link": int(i),
                        "src": sim.link_ends[int(i)][0],
                        "dst": sim.link_ends[int(i)][1],
                        "busy_ns": float(sim.link_busy_ns[int(i)]),
                        "utilization": float(util[int(i)]),
                    }
                    for i in order
                ],
            }
    return out


def _kind_name(k: int) -> str:
    try:
        return NodeKind(k).name
    except ValueError:
        return f"type {k}"


def _group_size(w: Workload, g: str) -> int:
    return w.num_npus if g == "all" else len(w.groups.get(g, ()))


def trace_events(
    w: Workload, run: WorkloadRun, sim: SimResult | None = None
) -> list[dict[str, Any]]:
    """The Chrome-trace events of a run (see the module docstring)."""
    events: list[dict[str, Any]] = []
    if sim is not None and sim.timeline is not None:
        events.extend(link_events(sim.timeline))
    for npu, nodes in enumerate(w.ranks):
        pid = NPU_PID_BASE + npu
        events.append(meta_event("process_name", pid, None, {"name": f"NPU {npu}"}))
        events.append(meta_event("process_sort_index", pid, None, {"sort_index": 1 + npu}))
        for tid, name in _THREAD_NAMES.items():
            events.append(meta_event("thread_name", pid, tid, {"name": name}))
        for i, nd in enumerate(nodes):
            st, en = run.starts[npu][i], run.ends[npu][i]
            if math.isnan(st) or math.isnan(en):
                continue
            try:
                kind = NodeKind(nd.kind).name
            except ValueError:
                kind = str(nd.kind)
            args: dict[str, Any] = {"node": nd.id, "type": kind}
            if nd.comm_size is not None:
                args["bytes"] = nd.comm_size
            if nd.pg_name:
                args["group"] = nd.pg_name
            events.append(
                {
                    "ph": "X",
                    "cat": kind.lower(),
                    "name": nd.name or kind,
                    "pid": pid,
                    "tid": _THREADS[resource(nd)],
                    "ts": st / 1000.0,
                    "dur": (en - st) / 1000.0,
                    "args": args,
                }
            )
    return events


def write_timeline(
    path: str | os.PathLike[str],
    w: Workload,
    run: WorkloadRun,
    sim: SimResult | None = None,
    warn: Warn | None = None,
) -> None:
    """Write the run's Perfetto timeline to ``path`` (a temporary file, then renamed;
    ``warn``: see `backends.sim.timeline.write_trace`)."""
    write_trace(
        path, trace_events(w, run, sim), {"iteration_ns": run.time_ns, "npus": w.num_npus}, warn
    )
