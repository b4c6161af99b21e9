"""The critical path of a simulated program: the chain of tasks that made it end when it did.

Walking back from the task that finished last: a receive that was issued before its message
arrived waited for that message, so the path continues at the message's send; any other task
(a send, a computation, a receive whose message was already in) waited for its latest
dependency, and the path continues there. The walk ends at a task that waited for nothing.
Time a send spent queued for a busy link lies on the path too: it is the gap between the
send's issue and its finish that a free network would not have.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from backends.sim.tasks import TaskGraph, TaskKind

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

EPS_NS = 1e-6


def critical_path(graph: TaskGraph, finish_ns: F64, limit: int = 100_000) -> I64:
    """The task ids of the critical path, first to last (see the module docstring); at most
    ``limit`` tasks, the latest ones, when the chain is longer."""
    if graph.num_tasks == 0:
        return np.zeros(0, dtype=np.int64)
    partners = graph.partners()
    offsets, deps = graph.dep_offsets, graph.deps
    t = int(np.argmax(finish_ns))
    path = [t]
    while len(path) < limit:
        d = deps[offsets[t] : offsets[t + 1]]
        latest = int(d[np.argmax(finish_ns[d])]) if len(d) else -1
        nxt = latest
        if int(graph.kind[t]) == TaskKind.RECV and partners[t] >= 0:
            ready = float(finish_ns[latest]) if latest >= 0 else 0.0
            if ready < _arrival(graph, t, finish_ns):
                nxt = int(partners[t])
        if nxt < 0:
            break
        path.append(nxt)
        t = nxt
    path.reverse()
    return np.asarray(path, dtype=np.int64)


def _arrival(graph: TaskGraph, t: int, finish_ns: F64) -> float:
    """When receive ``t``'s message was in: its finish less the reduction it carries."""
    return float(finish_ns[t]) - float(graph.duration_ns[t]) - EPS_NS
