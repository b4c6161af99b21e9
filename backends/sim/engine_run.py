"""What an engine run measured (`EngineRun`, with `LinkRecords` of every link occupancy) and
the helpers both engines (`backends.sim.engine`, `backends.sim.analytical`) share: the root
tasks, compact flat arrays of a task column, and the error naming a deadlock."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from backends.sim.errors import SimError
from backends.sim.tasks import TaskGraph

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass
class LinkRecords:
    """One entry per link occupancy: ``link`` busy from ``start_ns`` for ``dur_ns`` carrying
    (a packet of) the message of send task ``task``."""

    link: I64
    start_ns: F64
    dur_ns: F64
    task: I64


@dataclass
class EngineRun:
    """What an engine measured. Times in ns; ``issue_ns``/``finish_ns`` per task."""

    issue_ns: F64
    finish_ns: F64
    link_busy_ns: F64
    messages: int
    hops: int
    events: int
    notes: list[str] = field(default_factory=list)
    records: LinkRecords | None = None


def roots(graph: TaskGraph) -> list[int]:
    """Tasks without dependencies, in task order."""
    return np.flatnonzero(np.diff(graph.dep_offsets) == 0).tolist()


def int_array(a: npt.ArrayLike) -> array[int]:
    """A flat array of int64 (compact, unlike a list of ints)."""
    return array("q", np.ascontiguousarray(a, dtype=np.int64).tobytes())


def float_array(a: npt.ArrayLike) -> array[float]:
    """A flat array of float64 (compact, unlike a list of floats)."""
    return array("d", np.ascontiguousarray(a, dtype=np.float64).tobytes())


def deadlock(
    graph: TaskGraph, finish: Sequence[float], remaining: Sequence[int], waiting: Sequence[int]
) -> SimError:
    """The error for a run that stopped with tasks unfinished, naming the first one."""
    left = [t for t, f in enumerate(finish) if f < 0]
    for t in left:
        if waiting[t]:
            return SimError(
                f"deadlock: {graph.describe(t)} waits for a message that is never sent "
                f"({len(left)} tasks never finished)"
            )
    t = left[0]
    why = "waits on tasks that never finish" if remaining[t] > 0 else "never finished"
    return SimError(f"deadlock: {graph.describe(t)} {why} ({len(left)} tasks never finished)")
