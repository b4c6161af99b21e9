"""Property tests: every congestion-model run obeys the engine's rules, checked from outside.

Random task graphs (messages between random ranks placed on small topologies, local work,
random rank-local dependencies) are simulated with link records kept, and a checker that
knows only the rules of `backends.sim.engine` replays the records:

- a task is issued when its last dependency finishes (at 0 without any); a COMP takes its
  duration; a SEND finishes by the completion rule (its message has arrived, or its first
  hop's serialization has ended); a RECV when it has been issued and its message has arrived,
  plus its duration; every hop and duration rounded to the picosecond as the cost model says;
- a message crosses the links of its route in order, each hop requested when the previous
  one has arrived (store-and-forward) and busy for its serialization;
- each link serves requests first come, first served (request times never decrease along
  its service order) and is never idle while a request waits.

The tie rule (which of two simultaneous requests goes first) is the one thing left open here:
any order passes, so these tests hold whatever the engine's tie-breaking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.sim import SimResult, TaskGraph, TaskKind, simulate_tasks
from backends.sim.engine import message_routes
from backends.sim.tasks import Detail
from topologies import Topology, parse_topology
from topologies.cost_model import PS_PER_NS, Completion, CostModel, to_ps

SPECS = ("ring:4", "mesh:2x3", "switch:4", "fc:4", "torus:3x3", "mesh:3x3,fail=0-1;4>5")
SIZES = (1, 1000, 2500, 4096)
COSTS = (
    CostModel(),
    CostModel(completion=Completion.ON_DEPARTURE),
    CostModel(switch_delay_ns=30.0, reduce_bytes_per_ns=25.0),
    CostModel(Completion.ON_DEPARTURE, switch_delay_ns=30.0, reduce_bytes_per_ns=25.0),
)


@dataclass
class Scenario:
    graph: TaskGraph
    topology: Topology
    cost: CostModel


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A task graph in which some global order of its tasks is a valid sequential run (every
    receive after its send, dependencies on earlier tasks of the same rank), so it cannot
    deadlock."""
    topology = parse_topology(draw(st.sampled_from(SPECS)) + ",bw=50GB/s,lat=500ns")
    nranks = draw(st.integers(2, min(5, topology.num_npus)))
    npus = draw(st.permutations(range(topology.num_npus)))[:nranks]
    tasks: list[list[tuple[int, int, int, float, list[int]]]] = [[] for _ in range(nranks)]

    def add(rank: int, kind: int, peer: int, nbytes: int, dur: float) -> None:
        mine = tasks[rank]
        deps = (
            draw(st.lists(st.integers(0, len(mine) - 1), max_size=2, unique=True)) if mine else []
        )
        mine.append((kind, peer, nbytes, dur, sorted(deps)))

    for _ in range(draw(st.integers(1, 24))):
        a = draw(st.integers(0, nranks - 1))
        if draw(st.booleans()):
            b = draw(st.integers(0, nranks - 1))
            size = draw(st.sampled_from(SIZES))
            add(a, TaskKind.SEND, b, size, 0.0)
            add(b, TaskKind.RECV, a, size, draw(st.sampled_from((0.0, 0.0, 15.0))))
        else:
            add(a, TaskKind.COMP, -1, 0, draw(st.sampled_from((0.0, 10.0, 37.5))))

    flat = [t for mine in tasks for t in mine]
    counts = [len(mine) for mine in tasks]
    rank_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    deps = [int(rank_offsets[r]) + d for r, mine in enumerate(tasks) for t in mine for d in t[4]]
    ndeps = [len(t[4]) for t in flat]
    detail = {TaskKind.SEND: Detail.SEND, TaskKind.RECV: Detail.RECV, TaskKind.COMP: Detail.COMP}
    n = len(flat)
    graph = TaskGraph(
        npus=tuple(npus),
        rank_offsets=rank_offsets,
        kind=np.array([t[0] for t in flat], dtype=np.int8),
        detail=np.array([detail[TaskKind(t[0])] for t in flat], dtype=np.int8),
        peer=np.array([t[1] for t in flat], dtype=np.int64),
        nbytes=np.array([t[2] for t in flat], dtype=np.int64),
        tag=np.zeros(n, dtype=np.int64),
        duration_ns=np.array([t[3] for t in flat], dtype=np.float64),
        duration_us=np.zeros(n, dtype=np.int64),
        dep_offsets=np.concatenate([[0], np.cumsum(ndeps)]).astype(np.int64),
        deps=np.array(deps, dtype=np.int64),
        route_offsets=np.zeros(n + 1, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
        origin=np.concatenate([np.arange(c) for c in counts]).astype(np.int64),
        source="et",
        semantics_checked=False,
    )
    return Scenario(graph, topology, draw(st.sampled_from(COSTS)))


def run(s: Scenario) -> SimResult:
    return simulate_tasks(s.graph, s.topology, cost=s.cost, keep_timeline=True)


def check_rules(s: Scenario, r: SimResult) -> None:
    g, topology, cost = s.graph, s.topology, s.cost
    tl = r.timeline
    assert tl is not None and tl.records is not None
    rec = tl.records
    issue, finish = tl.issue_ns, tl.finish_ns
    approx = lambda x: pytest.approx(x, rel=1e-12, abs=1e-9)  # noqa: E731
    links = topology.links

    def hop(li: int, nbytes: int) -> tuple[float, float]:
        # (serialization, arrival) in ns, rounded to the picosecond as the cost model states.
        ser, arrive = cost.hop_ps(links[li], nbytes, topology.is_switch(links[li].dst))
        return ser / PS_PER_NS, arrive / PS_PER_NS

    def work(t: int) -> float:
        return to_ps(float(g.duration_ns[t])) / PS_PER_NS

    for t in range(g.num_tasks):
        deps = g.deps[g.dep_offsets[t] : g.dep_offsets[t + 1]]
        assert issue[t] == approx(max((finish[d] for d in deps), default=0.0))
        if g.kind[t] == TaskKind.COMP:
            assert finish[t] == approx(issue[t] + work(t))

    # Per send, its records in the order it crossed them; the request time of each.
    routes = message_routes(g, topology)
    partner = g.partners()
    by_task: dict[int, list[int]] = {}
    for i, t in enumerate(rec.task.tolist()):
        by_task.setdefault(t, []).append(i)
    request = np.empty(len(rec.task))
    for t in np.flatnonzero(g.kind == TaskKind.SEND).tolist():
        mine = sorted(by_task.get(t, []), key=lambda i: rec.start_ns[i])
        assert [int(rec.link[i]) for i in mine] == list(routes[t])
        b = int(g.nbytes[t])
        at = issue[t]
        for i in mine:
            li = int(rec.link[i])
            request[i] = at
            assert rec.start_ns[i] >= at - 1e-9
            assert rec.dur_ns[i] == approx(hop(li, b)[0])
            at = rec.start_ns[i] + hop(li, b)[1]
        arrival = at  # the issue time itself when the message crosses no link
        sent = rec.start_ns[mine[0]] + rec.dur_ns[mine[0]] if mine else issue[t]
        assert finish[t] == approx(arrival if cost.on_arrival else sent)
        recv = int(partner[t])
        assert finish[recv] == approx(max(issue[recv], arrival) + work(recv))

    # Each link: first come, first served, and never idle while a request waits.
    order = np.lexsort((rec.start_ns, rec.link))
    free: dict[int, float] = {}
    last_request: dict[int, float] = {}
    for i in order.tolist():
        li = int(rec.link[i])
        assert request[i] >= last_request.get(li, 0.0) - 1e-9
        assert rec.start_ns[i] == approx(max(request[i], free.get(li, 0.0)))
        free[li] = rec.start_ns[i] + rec.dur_ns[i]
        last_request[li] = request[i]
    assert r.link_busy_ns.sum() == approx(rec.dur_ns.sum())
    assert r.finish_ns == approx(float(finish.max()))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_every_run_obeys_the_rules(s: Scenario) -> None:
    check_rules(s, run(s))


@settings(max_examples=50, deadline=None)
@given(scenarios())
def test_the_same_inputs_give_the_same_run(s: Scenario) -> None:
    a, b = run(s), run(s)
    assert a.timeline is not None and b.timeline is not None
    assert np.array_equal(a.timeline.finish_ns, b.timeline.finish_ns)
    assert np.array_equal(a.link_busy_ns, b.link_busy_ns)
