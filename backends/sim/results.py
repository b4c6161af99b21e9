"""`SimResult`: what a simulation reports, with nccl-tests bandwidth conventions.

Bandwidths follow nccl-tests (``doc/PERFORMANCE.md``): the size is the largest buffer of the
collective (``collective.size_chunks x chunk_bytes``), ``algbw = size / time`` and ``busbw =
algbw x factor``, the factor being 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
reduce-scatter, all-to-all, gather and scatter, and 1 for broadcast, reduce and custom
collectives. Bandwidths are in GB/s with 1 GB = 10^9 bytes (= bytes per ns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from backends.sim.engine_run import LinkRecords
from chakra_ir.collective import CollectiveKind

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]


def busbw_factor(kind: CollectiveKind | str | None, num_ranks: int) -> float:
    """nccl-tests' bus bandwidth factor for ``kind`` over ``num_ranks`` ranks (1 if unknown)."""
    n = num_ranks
    if kind is None or n < 1:
        return 1.0
    k = CollectiveKind(kind)
    if k is CollectiveKind.ALLREDUCE:
        return 2.0 * (n - 1) / n
    if k in (
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLTOALL,
        CollectiveKind.GATHER,
        CollectiveKind.SCATTER,
    ):
        return (n - 1) / n
    return 1.0


@dataclass(eq=False)
class Timeline:
    """The events a timeline or Gantt chart needs, kept on request.

    Per task: ``rank``, ``kind``/``detail`` (see `backends.sim.tasks`), ``peer``, ``nbytes``,
    ``origin``, ``issue_ns``, ``finish_ns``. Per link occupancy: ``records`` (congestion model
    only). ``npus[r]`` is rank r's NPU; ``link_ends[i]`` the (src, dst) of link i.
    """

    npus: tuple[int, ...]
    rank: I64
    kind: I8
    detail: I8
    peer: I64
    nbytes: I64
    origin: I64
    issue_ns: F64
    finish_ns: F64
    records: LinkRecords | None
    link_ends: tuple[tuple[int, int], ...]
    source: str = "program"


@dataclass(frozen=True)
class InstanceTiming:
    """One program instance of a concurrent run: its ``name``, the NPUs of its ranks,
    ``start_ns`` (its gate opened, for the first of its ranks) and ``finish_ns`` (its last
    task finished)."""

    name: str
    npus: tuple[int, ...]
    start_ns: float
    finish_ns: float

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "npus": list(self.npus),
            "start_ns": self.start_ns,
            "finish_ns": self.finish_ns,
            "duration_ns": self.finish_ns - self.start_ns,
        }


@dataclass(frozen=True)
class LinkUse:
    """One link's load: ``busy_ns`` of serialization, ``utilization`` = busy / finish time."""

    index: int
    src: int
    dst: int
    busy_ns: float
    utilization: float

    def to_json(self) -> dict[str, Any]:
        return {
            "link": self.index,
            "src": self.src,
            "dst": self.dst,
            "busy_ns": self.busy_ns,
            "utilization": self.utilization,
        }


@dataclass(eq=False)
class SimResult:
    """The outcome of one simulation. Times in ns; bandwidths in GB/s (10^9 B/s).

    ``size_bytes`` is the nccl-tests size (None when unknown, e.g. a foreign ET), so the
    bandwidths are None too. ``link_busy_ns[i]`` is the serialization time link ``i`` spent
    busy (empty for models without links). ``rank_finish_ns[r]`` is when rank ``r``'s last task
    finished; ranks from ``num_ranks`` on are the switches that ran in-network flows.
    ``messages`` counts messages, ``hops`` link crossings (packets count one each),
    ``events`` the engine's heap events. ``notes`` say what was assumed;
    ``semantics_checked`` is False for ET traces without collc's attributes.
    """

    model: str
    topology: str
    finish_ns: float
    num_ranks: int
    rank_finish_ns: F64
    link_busy_ns: F64
    link_ends: tuple[tuple[int, int], ...]
    messages: int
    hops: int
    events: int
    collective: str | None = None
    size_bytes: int | None = None
    chunk_bytes: int | None = None
    packet_bytes: int | None = None
    semantics_checked: bool = True
    notes: list[str] = field(default_factory=list)
    completion: str = ""
    """The send-completion rule the run used (`topologies.cost_model.Completion`)."""
    wall_seconds: float = 0.0
    timeline: Timeline | None = field(default=None, repr=False)
    lower_bound_ns: float | None = None
    """A lower bound on the collective's time, when the caller attached one (e.g. the
    tightest of ``tacos.bounds.lower_bounds``); ``lower_bound_name`` says which."""
    lower_bound_name: str = ""
    group_size: int | None = None
    """Ranks per process group when every group ran the collective among its own ranks (the
    bus-bandwidth factor is the group's)."""
    instances: tuple[InstanceTiming, ...] = ()
    """Per program instance run together (`backends.sim.concurrent`), or per process group of
    a grouped program: when it started and finished."""

    # -- bandwidths ----------------------------------------------------------------------------
    @property
    def busbw_factor(self) -> float:
        return busbw_factor(self.collective, self.group_size or self.num_ranks)

    @property
    def algbw_gb_per_s(self) -> float | None:
        """``size / time`` in GB/s; None without a size or a positive time."""
        if self.size_bytes is None or self.finish_ns <= 0:
            return None
        return self.size_bytes / self.finish_ns

    @property
    def busbw_gb_per_s(self) -> float | None:
        a = self.algbw_gb_per_s
        return None if a is None else a * self.busbw_factor

    @property
    def bound_ratio(self) -> float | None:
        """Finish time over the attached lower bound (>= 1 when the bound holds)."""
        if self.lower_bound_ns is None or self.lower_bound_ns <= 0:
            return None
        return self.finish_ns / self.lower_bound_ns

    # -- links ---------------------------------------------------------------------------------
    @property
    def link_utilization(self) -> F64:
        """Per link, busy time over the finish time (0 when nothing took time)."""
        if self.finish_ns <= 0:
            return np.zeros_like(self.link_busy_ns)
        out: F64 = self.link_busy_ns / self.finish_ns
        return out

    def link_use(self, index: int) -> LinkUse:
        src, dst = self.link_ends[index]
        busy = float(self.link_busy_ns[index])
        util = busy / self.finish_ns if self.finish_ns > 0 else 0.0
        return LinkUse(index, src, dst, busy, util)

    @property
    def busiest_link(self) -> LinkUse | None:
        """The link with the most busy time (lowest index on ties); None without links."""
        if len(self.link_busy_ns) == 0:
            return None
        return self.link_use(int(np.argmax(self.link_busy_ns)))

    @property
    def mean_link_utilization(self) -> float:
        u = self.link_utilization
        return float(u.mean()) if len(u) else 0.0

    # -- output --------------------------------------------------------------------------------
    def summary(self) -> str:
        """A few lines for a terminal."""
        rule = f" (sends complete {self.completion})" if self.completion else ""
        lines = [f"model {self.model}{rule} on {self.topology}: {self.finish_ns / 1000:.3f} us"]
        if self.algbw_gb_per_s is not None:
            lines.append(
                f"algbw {self.algbw_gb_per_s:.3f} GB/s, busbw {self.busbw_gb_per_s:.3f} GB/s "
                f"({self.collective}, {self.size_bytes} B over {self.num_ranks} ranks"
                + (
                    f" in groups of {self.group_size})"
                    if self.group_size and self.group_size != self.num_ranks
                    else ")"
                )
            )
        lines.append(f"{self.messages} messages, {self.hops} hops, {self.events} events")
        if self.instances:
            spans = [x.finish_ns - x.start_ns for x in self.instances]
            slow = self.instances[int(np.argmax(spans))]
            lines.append(
                f"{len(self.instances)} instances: finish {min(x.finish_ns for x in self.instances) / 1000:.3f}"
                f"..{max(x.finish_ns for x in self.instances) / 1000:.3f} us; longest "
                f"{slow.name} ({(slow.finish_ns - slow.start_ns) / 1000:.3f} us)"
            )
        if self.bound_ratio is not None:
            assert self.lower_bound_ns is not None
            lines.append(
                f"lower bound {self.lower_bound_ns / 1000:.3f} us ({self.lower_bound_name}, for "
                "any program): "
                f"{self.bound_ratio:.3f}x"
            )
        b = self.busiest_link
        if b is not None:
            lines.append(
                f"busiest link {b.index} ({b.src}->{b.dst}): busy {b.busy_ns / 1000:.3f} us, "
                f"{100 * b.utilization:.1f}%; mean utilization "
                f"{100 * self.mean_link_utilization:.1f}%"
            )
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON types (links listed by index)."""
        busiest = self.busiest_link
        util = self.link_utilization
        return {
            "model": self.model,
            "completion": self.completion,
            "topology": self.topology,
            "collective": self.collective,
            "num_ranks": self.num_ranks,
            "size_bytes": self.size_bytes,
            "chunk_bytes": self.chunk_bytes,
            "packet_bytes": self.packet_bytes,
            "finish_ns": self.finish_ns,
            "algbw_gb_per_s": self.algbw_gb_per_s,
            "busbw_gb_per_s": self.busbw_gb_per_s,
            "busbw_factor": self.busbw_factor,
            "messages": self.messages,
            "hops": self.hops,
            "events": self.events,
            "semantics_checked": self.semantics_checked,
            "lower_bound_ns": self.lower_bound_ns,
            "lower_bound_name": self.lower_bound_name,
            "bound_ratio": self.bound_ratio,
            "rank_finish_ns": [float(x) for x in self.rank_finish_ns],
            "group_size": self.group_size,
            "instances": [x.to_json() for x in self.instances],
            "busiest_link": None if busiest is None else busiest.to_json(),
            "mean_link_utilization": self.mean_link_utilization,
            "links": [
                {
                    "link": i,
                    "src": s,
                    "dst": d,
                    "busy_ns": float(self.link_busy_ns[i]),
                    "utilization": float(util[i]),
                }
                for i, (s, d) in enumerate(self.link_ends)
                if i < len(self.link_busy_ns)
            ],
            "notes": list(self.notes),
            "wall_seconds": self.wall_seconds,
        }
