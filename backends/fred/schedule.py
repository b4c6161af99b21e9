"""Time on FRED switches: what a phase costs, and which phases the switches serve when.

**A phase's time** (`phase_plan`, flow level, ns). A phase holds the switches it crosses
while its slowest flow streams, ``bytes / rate`` at the rate of the slowest port it crosses;
its last byte arrives a tail later: the latency of the longest input-to-output path plus the
fill of the piece pipeline, ``(links - 1) x piece / rate`` for pieces of
`CostModel.flow_pieces`, as `collc simulate` models a flow. A message on the default unicast
configuration (`message_plan`) is a phase of one flow from one NPU to another.

**Serving** (`SwitchScheduler`). A job is one phase's use of its switches, in one
configuration. A switch is in one configuration at a time; the jobs of that configuration
that need it may stream together (their flows were given distinct ports when the
configuration was built). Whenever a job becomes pending or stops streaming, the pending
jobs are granted afresh: in the order highest class first (MP > PP > DP), then earliest
pending, then the order they were added, each job whose switches are all free or in its own
configuration gets them. So a job of a higher class that becomes pending takes the switches
from a lower one, which stops streaming and resumes later where it stopped (a
*preemption*, counted when it had streamed for some time). With ``preempt=False`` the jobs streaming keep their switches and the rest
are granted after them, by class and then pending time: priorities order the queue but
never interrupt.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from backends.fred.fabric import Fabric, flow_rate_and_latency
from backends.fred.phases import PRIORITIES
from topologies.cost_model import CostModel

FlowSpec = tuple[Sequence[int], Sequence[int], int]
"""One flow as timing sees it: input NPUs, output NPUs, bytes."""

DEFAULT_CONFIG = 0
"""The switches' default configuration: unicast, routed online (endpoint messages)."""

_EPS = 1e-9


@dataclass(frozen=True)
class PhasePlan:
    """A phase's time: ``stream_ns`` (it holds its switches this long), ``tail_ns`` (its last
    byte arrives this much later), ``switches`` (the nodes it holds) and ``links`` ((src,
    dst, busy ns) for each link a flow of it crosses)."""

    stream_ns: float
    tail_ns: float
    switches: frozenset[int]
    links: tuple[tuple[int, int, float], ...]


def phase_plan(fabric: Fabric, flows: Sequence[FlowSpec], cost: CostModel) -> PhasePlan:
    """The time of a phase carrying ``flows`` on ``fabric`` (module docstring)."""
    dur = 0.0
    tail = 0.0
    switches: set[int] = set()
    used: list[tuple[int, int, float]] = []
    for inputs, outputs, nbytes in flows:
        tree = fabric.trees.tree(list(inputs), list(outputs))
        rate, lat, nlinks = flow_rate_and_latency(fabric, tree)
        fill = (nlinks - 1) * cost.flow_pieces(nbytes)[0] / rate
        dur = max(dur, nbytes / rate)
        tail = max(tail, lat + fill)
        for a, b in (*tree.up, *tree.down):
            used.append((a, b, nbytes / fabric.port_rate[(a, b)]))
            switches.update(x for x in (a, b) if x in fabric.switches)
    return PhasePlan(dur, tail, frozenset(switches), tuple(used))


def message_plan(fabric: Fabric, src: int, dst: int, nbytes: int) -> PhasePlan:
    """An endpoint message on the default configuration: ``bytes / rate`` streaming at the
    slowest port of its path, then the path's latency."""
    tree = fabric.trees.tree([src], [dst])
    rate, lat, _ = flow_rate_and_latency(fabric, tree)
    switches = frozenset(x for e in (*tree.up, *tree.down) for x in e if x in fabric.switches)
    links = tuple((a, b, nbytes / fabric.port_rate[(a, b)]) for a, b in (*tree.up, *tree.down))
    return PhasePlan(nbytes / rate, lat, switches, links)


@dataclass
class Job:
    """One phase's use of the switches: ``owner`` (the caller's token), ``config`` (its
    configuration index; `DEFAULT_CONFIG` for messages), ``priority`` (``mp``, ``pp`` or
    ``dp``) and ``plan``. The scheduler fills ``left_ns`` (streaming still to do),
    ``pending_ns`` (when it was added), ``streamed_ns`` and ``done_ns``."""

    owner: Hashable
    config: int
    priority: str
    plan: PhasePlan
    left_ns: float = math.nan
    pending_ns: float = math.nan
    streamed_ns: float = math.nan
    done_ns: float = math.nan
    seq: int = -1


@dataclass
class SwitchScheduler:
    """Serves jobs on the switches by the rules of the module docstring. Use: `add` jobs at
    the current time, ask `next_ns` for the next moment something happens, and `advance` to
    it, which returns the jobs that stopped streaming and the jobs whose last byte arrived
    then. Times never go backwards."""

    preempt: bool = True
    now: float = 0.0
    preemptions: int = 0
    pending: dict[int, Job] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    _tails: list[tuple[float, int, Job]] = field(default_factory=list)
    _seq: int = 0
    _granted: dict[int, float] = field(default_factory=dict)

    def add(self, job: Job, now: float) -> None:
        """Make ``job`` pending at ``now`` (not before the scheduler's time)."""
        if job.priority not in PRIORITIES:
            raise ValueError(f"priority {job.priority!r}: one of {', '.join(PRIORITIES)}")
        self._progress(now)
        job.left_ns = job.plan.stream_ns
        job.pending_ns = now
        job.seq = self._seq
        self._seq += 1
        self.pending[job.seq] = job
        self._grant()

    def busy(self) -> bool:
        return bool(self.pending or self._tails)

    def next_ns(self) -> float:
        """When the next job stops streaming or delivers its last byte (inf when idle)."""
        t = min((self.now + self.pending[s].left_ns for s in self.running), default=math.inf)
        if self._tails:
            t = min(t, self._tails[0][0])
        return t

    def advance(self, t: float) -> tuple[list[Job], list[Job]]:
        """Move to time ``t``: (jobs that stopped streaming by then, jobs done by then)."""
        self._progress(t)
        eps = _EPS * max(1.0, t)
        streamed = [self.pending[s] for s in sorted(self.running) if self.pending[s].left_ns <= eps]
        for j in streamed:
            del self.pending[j.seq]
            self.running.discard(j.seq)
            j.streamed_ns = t
            heapq.heappush(self._tails, (t + j.plan.tail_ns, j.seq, j))
        done: list[Job] = []
        while self._tails and self._tails[0][0] <= t + eps:
            j = heapq.heappop(self._tails)[2]
            j.done_ns = max(t, j.streamed_ns + j.plan.tail_ns)
            done.append(j)
        if streamed:
            self._grant()
        return streamed, done

    def _progress(self, t: float) -> None:
        if t < self.now - _EPS:
            raise ValueError(f"time goes backwards: {t} < {self.now}")
        dt = max(0.0, t - self.now)
        for s in self.running:
            self.pending[s].left_ns -= dt
        self.now = max(self.now, t)

    def _grant(self) -> None:
        rank = {p: k for k, p in enumerate(PRIORITIES)}

        def order(j: Job) -> tuple[int, int, float, int]:
            first = 0 if self.preempt or j.seq in self.running else 1
            return (first, rank[j.priority], j.pending_ns, j.seq)

        config_at: dict[int, int] = {}
        grant: set[int] = set()
        for j in sorted(self.pending.values(), key=order):
            if all(config_at.get(s, j.config) == j.config for s in j.plan.switches):
                grant.add(j.seq)
                for s in j.plan.switches:
                    config_at[s] = j.config
        # A job that loses its switches the moment it got them has not been interrupted.
        self.preemptions += sum(1 for x in self.running - grant if self._granted[x] < self.now)
        for x in grant - self.running:
            self._granted[x] = self.now
        self.running = grant
