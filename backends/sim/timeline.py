"""The Chrome-trace / Perfetto timeline of a simulation.

The file is one JSON object ``{"traceEvents": [...], "displayTimeUnit": "ns", ...}`` in the
Trace Event Format: open it in https://ui.perfetto.dev or ``chrome://tracing``.

- Process 1, "links": one thread per link that carried anything (``tid`` = link index,
  named ``link 12: 3->4``); a complete event (``ph: "X"``) per occupancy, i.e. each time a
  message (or packet) kept the link busy for its serialization time.
- Process ``100 + r``, "rank r (NPU n)": the rank's tasks as complete events from issue to
  finish (a receive includes its wait). Tasks that overlap in time go to separate threads
  ("lanes") of the rank, so events on one thread never overlap.
- Metadata events (``ph: "M"``) name every process and thread and fix their order.

``ts`` and ``dur`` are in µs (the format's unit), as floats keeping ns precision. The file is
written to a temporary name beside ``path`` and renamed, so a failed write leaves nothing.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from backends.sim.errors import SimError
from backends.sim.results import SimResult, Timeline
from backends.sim.tasks import DETAIL_NAMES, TaskKind
from topologies.atomic import write_text_atomically

LINKS_PID = 1
RANK_PID_BASE = 100


def meta_event(name: str, pid: int, tid: int | None, value: Any) -> dict[str, Any]:
    """A Trace Event Format metadata event (``ph: "M"``): ``process_name``,
    ``thread_sort_index``... of process ``pid`` (and thread ``tid``), with ``value`` as args."""
    e: dict[str, Any] = {"ph": "M", "name": name, "pid": pid, "args": value}
    if tid is not None:
        e["tid"] = tid
    return e


def trace_events(result: SimResult) -> list[dict[str, Any]]:
    """The ``traceEvents`` list of ``result`` (which must have kept its timeline)."""
    tl = result.timeline
    if tl is None:
        raise SimError(
            "this result kept no timeline: simulate with keep_timeline=True to write one"
        )
    events: list[dict[str, Any]] = []
    events.extend(link_events(tl))
    events.extend(_rank_events(tl))
    return events


def link_events(tl: Timeline) -> list[dict[str, Any]]:
    """The links process of a timeline: one thread per link that carried anything, one
    complete event per occupancy (empty for models without link records)."""
    rec = tl.records
    if rec is None or len(rec.link) == 0:
        return []
    out: list[dict[str, Any]] = [
        meta_event("process_name", LINKS_PID, None, {"name": "links"}),
        meta_event("process_sort_index", LINKS_PID, None, {"sort_index": 0}),
    ]
    for li in np.unique(rec.link).tolist():
        s, d = tl.link_ends[li]
        out.append(meta_event("thread_name", LINKS_PID, li, {"name": f"link {li}: {s}->{d}"}))
        out.append(meta_event("thread_sort_index", LINKS_PID, li, {"sort_index": li}))
    rank = tl.rank
    for li, st, du, t in zip(
        rec.link.tolist(),
        rec.start_ns.tolist(),
        rec.dur_ns.tolist(),
        rec.task.tolist(),
        strict=True,
    ):
        src, dst = int(rank[t]), int(tl.peer[t])
        out.append(
            {
                "ph": "X",
                "cat": "link",
                "name": f"r{src}->r{dst}",
                "pid": LINKS_PID,
                "tid": li,
                "ts": st / 1000.0,
                "dur": du / 1000.0,
                "args": {"task": t, "op": int(tl.origin[t]), "message_bytes": int(tl.nbytes[t])},
            }
        )
    return out


def _rank_events(tl: Timeline) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    what = "op" if tl.source == "program" else "node"
    R = len(tl.npus)
    bounds = np.searchsorted(tl.rank, np.arange(R + 1))
    issue = tl.issue_ns
    finish = tl.finish_ns
    for r in range(R):
        pid = RANK_PID_BASE + r
        out.append(meta_event("process_name", pid, None, {"name": f"rank {r} (NPU {tl.npus[r]})"}))
        out.append(meta_event("process_sort_index", pid, None, {"sort_index": 1 + r}))
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        order = sorted(range(lo, hi), key=lambda t: (issue[t], t))
        lanes: list[tuple[float, int]] = []  # (free from, lane) heap
        used = 0
        for t in order:
            st, en = float(issue[t]), float(finish[t])
            if lanes and lanes[0][0] <= st:
                _, lane = heapq.heappop(lanes)
            else:
                lane = used
                used += 1
                out.append(meta_event("thread_name", pid, lane, {"name": f"lane {lane}"}))
                out.append(meta_event("thread_sort_index", pid, lane, {"sort_index": lane}))
            heapq.heappush(lanes, (en, lane))
            k = int(tl.kind[t])
            name = DETAIL_NAMES[int(tl.detail[t])]
            args: dict[str, Any] = {what: int(tl.origin[t])}
            if k == TaskKind.SEND:
                name = f"{name} to {int(tl.peer[t])}"
                args["bytes"] = int(tl.nbytes[t])
            elif k == TaskKind.RECV:
                name = f"{name} from {int(tl.peer[t])}"
                args["bytes"] = int(tl.nbytes[t])
            out.append(
                {
                    "ph": "X",
                    "cat": "rank",
                    "name": name,
                    "pid": pid,
                    "tid": lane,
                    "ts": st / 1000.0,
                    "dur": (en - st) / 1000.0,
                    "args": args,
                }
            )
    return out


LARGE_TRACE_EVENTS = 2_000_000
"""Above this many events (about 250 MB of JSON) `write_trace` warns before writing."""

EVENT_BYTES = 125
"""About how many bytes of JSON one event takes (measured on simulate's traces)."""

Warn = Callable[[str], None]
"""Where a library writer sends a warning for the user (the CLI prints it on stderr)."""


def write_trace(
    path: str | os.PathLike[str],
    events: list[dict[str, Any]],
    other: dict[str, Any],
    warn: Warn | None = None,
) -> None:
    """Write a Chrome-trace/Perfetto document (``events``, times in ns, ``other`` as its
    ``otherData``) to ``path`` atomically. Above `LARGE_TRACE_EVENTS` events ``warn`` is told
    the size first. OSError passes through: callers name it in their own error type."""
    if warn is not None and len(events) > LARGE_TRACE_EVENTS:
        warn(
            f"{path}: the timeline holds {len(events):,} events, about "
            f"{len(events) * EVENT_BYTES / 1e6:,.0f} MB of JSON; writing it takes a while and "
            "about as much memory again"
        )
    doc = {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}
    write_text_atomically(path, json.dumps(doc, separators=(",", ":")))


def write_timeline(
    result: SimResult, path: str | os.PathLike[str], warn: Warn | None = None
) -> None:
    """Write ``result``'s timeline as Chrome-trace JSON to ``path``, atomically (``warn``:
    see `write_trace`).

    Requires a result simulated with ``keep_timeline=True`` (SimError otherwise).
    """
    other = {
        "model": result.model,
        "topology": result.topology,
        "collective": result.collective,
        "finish_ns": result.finish_ns,
    }
    try:
        write_trace(path, trace_events(result), other, warn)
    except OSError as e:
        raise SimError(f"cannot write the timeline {path}: {e.strerror or e}") from None
