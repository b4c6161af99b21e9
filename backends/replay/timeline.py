"""The Chrome-trace / Perfetto timeline of a replay, in the layout of `backends.sim.timeline`.

- Process 1, "links": one thread per link that carried anything (``link 12: 3->4 port 1``);
  one complete event per run of back-to-back packets of one flow.
- Process ``100 + n``, "NPU n": its commands from issue to completion, spread over lanes
  (threads) so that events on one thread never overlap.

``ts`` and ``dur`` are in µs (the format's unit), from cycles through the clock. Written with
`backends.sim.timeline.write_trace`.
"""

from __future__ import annotations

import heapq
import os
from typing import Any

from backends.replay.errors import ReplayError
from backends.replay.types import ReplayResult
from backends.sim.timeline import Warn, meta_event, write_trace

LINKS_PID = 1
NPU_PID_BASE = 100
_OP_NAMES = ("send", "recv", "copy", "reduce", "flow-in", "flow-out")


def trace_events(result: ReplayResult) -> list[dict[str, Any]]:
    """The ``traceEvents`` of ``result`` (replayed with ``ReplayOptions(timeline=True)``)."""
    tl = result.timeline
    if tl is None:
        raise ReplayError("this replay kept no timeline: replay with timeline=True to write one")
    us = 1e-3 / result.clock_ghz  # µs per cycle
    ev: list[dict[str, Any]] = [
        meta_event("process_name", LINKS_PID, None, {"name": "links"}),
        meta_event("process_sort_index", LINKS_PID, None, {"sort_index": 0}),
    ]
    for i, spans in enumerate(tl["links"]):
        if not spans:
            continue
        lk = result.links[i]
        ev.append(
            meta_event(
                "thread_name",
                LINKS_PID,
                i,
                {"name": f"link {i}: {lk.src}->{lk.dst} port {lk.port}"},
            )
        )
        for a, b, f in spans:
            ev.append(
                {
                    "ph": "X",
                    "pid": LINKS_PID,
                    "tid": i,
                    "ts": a * us,
                    "dur": (b - a) * us,
                    "name": f"flow {f}",
                    "args": {"flow": f, "cycles": [a, b]},
                }
            )
    start, finish, op, npu, cid, flow = (
        tl["start"],
        tl["finish"],
        tl["op"],
        tl["npu"],
        tl["id"],
        tl["flow"],
    )
    lanes: dict[int, list[tuple[int, int]]] = {}  # per NPU: heap of (lane's end, lane)
    for g in sorted(range(len(start)), key=lambda x: (npu[x], start[x], x)):
        if start[g] < 0 or finish[g] < 0:
            continue
        n = npu[g]
        pid = NPU_PID_BASE + n
        if n not in lanes:
            lanes[n] = []
            ev.append(meta_event("process_name", pid, None, {"name": f"NPU {n}"}))
            ev.append(meta_event("process_sort_index", pid, None, {"sort_index": pid}))
        free = lanes[n]
        lane = heapq.heappop(free)[1] if free and free[0][0] <= start[g] else len(free)
        heapq.heappush(free, (finish[g], lane))
        name = _OP_NAMES[op[g]]
        args: dict[str, Any] = {"id": cid[g], "cycles": [start[g], finish[g]]}
        if flow[g] >= 0:
            args["flow"] = flow[g]
        ev.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": lane,
                "ts": start[g] * us,
                "dur": (finish[g] - start[g]) * us,
                "name": f"{name} {cid[g]}",
                "args": args,
            }
        )
    return ev


def write_timeline(
    result: ReplayResult, path: str | os.PathLike[str], warn: Warn | None = None
) -> None:
    """Write ``result``'s timeline as Chrome-trace JSON to ``path``, atomically (``warn``:
    see `backends.sim.timeline.write_trace`)."""
    other = {
        "replay": result.target,
        "topology": result.topology,
        "collective": result.collective,
        "cycles": result.cycles,
        "time_ns": result.time_ns,
    }
    try:
        write_trace(path, trace_events(result), other, warn)
    except OSError as e:
        raise ReplayError(f"cannot write the timeline {path}: {e.strerror or e}") from None
