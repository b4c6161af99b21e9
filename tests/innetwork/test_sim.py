"""In-network flows in the topology, the simulator and the bounds."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.sim import SimError, simulate
from backends.sim.concurrent import Instance, simulate_instances
from backends.sim.tasks import Detail, TaskKind, tasks_from_program
from baselines import ALGORITHMS
from baselines.innetwork import innetwork_program
from chakra_ir import Buffer, ProgramBuilder, Slice
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.grouping import merge_groups
from tacos.bounds import lower_bounds
from topologies import from_networkx, parse_topology
from topologies.cost_model import DEFAULT_COST_MODEL, Completion, CostModel
from topologies.errors import SpecError, TopologyError
from topologies.innetwork import FlowTrees

K = CollectiveKind
FRED20 = parse_topology("fred:20")
MIB = 1 << 20


def test_innet_option_presets_and_round_trips() -> None:
    assert FRED20.in_network
    off = parse_topology("fred:20,innet=no")
    assert not off.in_network and off.spec.endswith(",innet=no") and off != FRED20
    assert parse_topology(off.spec) == off
    assert parse_topology("switch:8,innet=yes").in_network
    assert not parse_topology("switch:8").in_network
    a = parse_topology("fred:20,cfg=A")
    assert a == parse_topology("fred:20,l2bw=1500GB/s,innet=no")
    assert parse_topology("fred:20,cfg=B") == parse_topology("fred:20,l2bw=1500GB/s")
    assert parse_topology("fred:20,cfg=C") == off
    assert parse_topology("fred:20,cfg=D") == FRED20
    for t in (FRED20, off, a):
        assert from_networkx(t.to_networkx()) == t
        assert from_networkx(t.to_networkx()).in_network == t.in_network
    for bad, col in (
        ("fred:8,innet=maybe", 14),
        ("fred:8,cfg=E", 12),
        ("fred:8,cfg=A,innet=no", 20),
    ):
        with pytest.raises(SpecError) as e:
            parse_topology(bad)
        assert e.value.pos is not None and e.value.pos.column == col


def test_flow_trees() -> None:
    trees = FlowTrees(FRED20)
    whole = trees.tree(range(20), range(20))
    assert whole.root == 25 and len(whole.up) == 25 and len(whole.down) == 25
    inside = trees.tree([0, 1, 2], [3])
    assert inside.root == 20
    assert set(inside.up) == {(0, 20), (1, 20), (2, 20)} and inside.down == ((20, 3),)
    cast = trees.tree([0], [5, 9])
    assert cast.up == ((0, 20), (20, 25))
    assert set(cast.down) == {(25, 21), (25, 22), (21, 5), (22, 9)}
    with pytest.raises(TopologyError, match="no switches that reduce"):
        FlowTrees(parse_topology("fred:20,innet=no"))
    g = nx.MultiDiGraph(num_npus=3, in_network=True)
    g.add_nodes_from(range(4))
    for u, v in ((0, 1), (1, 2), (0, 3), (1, 3), (2, 3)):
        g.add_edge(u, v)
        g.add_edge(v, u)
    with pytest.raises(TopologyError, match="hang off one switch"):
        FlowTrees(from_networkx(g))


def busy_bytes_per_npu(topology_links: object, result: object, npus: range) -> list[float]:
    out = []
    for v in npus:
        out.append(
            sum(
                result.link_busy_ns[lk.index] * lk.bandwidth_bytes_per_ns  # type: ignore[attr-defined]
                for lk in topology_links  # type: ignore[attr-defined]
                if lk.src == v
            )
        )
    return out


@pytest.mark.parametrize("size", [64 * MIB, 1024 * MIB])
def test_allreduce_near_the_innetwork_bound_with_half_the_traffic(size: int) -> None:
    c = Collective(K.ALLREDUCE, 20, 1)
    p = innetwork_program(c, FRED20)
    res = simulate(p, FRED20, size)
    bound = lower_bounds(K.ALLREDUCE, FRED20, size, any_chunking=True)
    assert "total" not in bound.items
    name, ns = bound.best
    assert name == "in-network"
    assert ns <= res.finish_ns <= 1.02 * ns
    sent = busy_bytes_per_npu(FRED20.links, res, range(20))
    # The buffer once per NPU (busy times are whole picoseconds per piece).
    assert sent == pytest.approx([size] * 20, rel=1e-5)
    ring = ALGORITHMS["ring"].generate(Collective(K.ALLREDUCE, 20, 20), FRED20)
    ring_sent = busy_bytes_per_npu(FRED20.links, simulate(ring, FRED20, size // 20), range(20))
    assert ring_sent[0] / sent[0] == pytest.approx(2 * 19 / 20, rel=1e-5)


def test_one_flow_timing_by_hand() -> None:
    """A multicast from NPU 0 to NPU 1 under one L1: 16 pieces over two hops, pipelined."""
    b = ProgramBuilder(Collective(K.BROADCAST, 2, 1, root=0))
    b.flow_in(0, 0, Slice(Buffer.INPUT, 0, 1))
    b.copy(0, Slice(Buffer.INPUT, 0, 1), Slice(Buffer.OUTPUT, 0, 1))
    b.flow_out(1, 0, Slice(Buffer.OUTPUT, 0, 1))
    p = b.build()
    t = parse_topology("fred:4,bw=1GB/s,lat=100ns")
    size = 16 * 1000  # 16 pieces of 1000 B: 1000 ns each per hop
    res = simulate(p, t, size)
    # The last piece leaves NPU 0 at 16,000 ns and arrives at L1 100 ns later, then one hop.
    assert res.finish_ns == pytest.approx(16_000 + 100 + 1_000 + 100)
    assert DEFAULT_COST_MODEL.flow_pieces(size) == [1000] * 16
    assert len(DEFAULT_COST_MODEL.flow_pieces(1 << 30)) == 256
    assert DEFAULT_COST_MODEL.flow_pieces(5) == [1] * 5
    assert DEFAULT_COST_MODEL.flow_pieces(33) == [3] + [2] * 15


def test_switch_ranks_in_the_task_graph() -> None:
    p = innetwork_program(Collective(K.ALLREDUCE, 8, 1), parse_topology("fred:8"))
    g = tasks_from_program(p, 1 << 20, topology=parse_topology("fred:8"))
    assert g.num_ranks == 8 + 3 and g.switch_ranks == (8, 9, 10)
    assert sorted(g.npus[8:]) == [8, 9, 10]
    assert set(g.detail[g.rank_offsets[8] :].tolist()) == {Detail.SWITCH}
    assert (g.kind[g.detail == Detail.FLOW_IN] != TaskKind.RECV).all()
    with pytest.raises(SimError, match="needs its topology"):
        tasks_from_program(p, 1 << 20)


def test_contention_between_flows_and_completion_rules() -> None:
    """Two disjoint all-reduce groups under one L1 share nothing but the switch; two groups
    across L1s share the up-links of a thin FRED-B tree."""
    topo = parse_topology("fred:8,l2bw=100GB/s,bw=100GB/s")
    c = Collective(K.ALLREDUCE, 8, 1, groups=((0, 4), (1, 5), (2, 6), (3, 7)))
    parts = [innetwork_program(c.group_collective(g), topo) for g in range(4)]
    merged = merge_groups(c, parts)
    alone = simulate(parts[0], topo, 100 * MIB).finish_ns
    together = simulate(merged, topo, 100 * MIB).finish_ns
    assert together == pytest.approx(4 * alone, rel=0.05)  # four flows through one up-link
    late = simulate(parts[0], topo, 100 * MIB, cost=CostModel(completion=Completion.ON_DEPARTURE))
    assert late.finish_ns == pytest.approx(alone)
    runs = simulate_instances(
        [Instance("a", parts[0], 100 * MIB), Instance("b", parts[1], 100 * MIB, after=("a",))],
        topo,
    )
    assert runs.finish_ns == pytest.approx(2 * alone, rel=1e-6)


def test_models_that_cannot_run_flows() -> None:
    p = innetwork_program(Collective(K.ALLREDUCE, 4, 1), parse_topology("fred:4"))
    for model in ("analytical", "astra-aware"):
        with pytest.raises(SimError, match="cannot run in-network flows"):
            simulate(p, parse_topology("fred:4"), MIB, model=model)
    with pytest.raises(SimError, match="no switches that reduce"):
        simulate(p, parse_topology("fred:4,innet=no"), MIB)


@pytest.mark.parametrize("kind", [K.REDUCE_SCATTER, K.ALLGATHER, K.REDUCE, K.BROADCAST])
def test_other_kinds_respect_their_bounds(kind: CollectiveKind) -> None:
    c = Collective(kind, 20, 1, root=0 if kind.rooted else -1)
    size = 256 * MIB
    res = simulate(innetwork_program(c, FRED20), FRED20, size // c.size_chunks)
    bound = lower_bounds(kind, FRED20, size, any_chunking=True).best[1]
    assert bound <= res.finish_ns <= 1.1 * bound


@st.composite
def random_flows(draw: st.DrawFn) -> tuple[str, list[tuple[list[int], list[int]]], int]:
    """A topology with reducing switches and flows with random inputs and outputs."""
    spec = draw(st.sampled_from(["fred:8", "fred:10,l1=3", "switch:6,innet=yes"]))
    n = parse_topology(spec).num_npus
    flows = []
    for _ in range(draw(st.integers(1, 4))):
        ins = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))
        outs = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))
        if len(set(ins) | set(outs)) < 2:
            outs = sorted({*outs, (ins[0] + 1) % n})
        flows.append((ins, outs))
    return spec, flows, draw(st.sampled_from([1, 1000, 1 << 20]))


@settings(max_examples=40, deadline=None)
@given(random_flows())
def test_every_tree_link_carries_each_flow_once(
    case: tuple[str, list[tuple[list[int], list[int]]], int],
) -> None:
    """Flows on disjoint scratch slots of a custom layout: whatever their inputs and outputs,
    the simulation finishes, and every link is busy for exactly the bytes of the flows whose
    tree crosses it (each tree link carries a flow's bytes once)."""
    spec, flows, nbytes = case
    topo = parse_topology(spec)
    n = topo.num_npus
    b = ProgramBuilder(Collective(K.ALLREDUCE, n, 1))
    for r in range(n):  # the collective itself, so the program is complete
        b.flow_in(r, len(flows), Slice(Buffer.INPUT, 0, 1))
        b.flow_out(r, len(flows), Slice(Buffer.OUTPUT, 0, 1))
    for f, (ins, outs) in enumerate(flows):
        for r in ins:
            b.flow_in(r, f, Slice(Buffer.INPUT, 0, 1))
        for r in outs:
            b.flow_out(r, f, Slice(Buffer.SCRATCH, f, 1))
    p = b.build()
    res = simulate(p, topo, nbytes)
    trees = FlowTrees(topo)
    expect = {lk.index: 0.0 for lk in topo.links}
    for ins, outs in [*flows, (list(range(n)), list(range(n)))]:
        t = trees.tree(ins, outs)
        for u, v in (*t.up, *t.down):
            lk = topo.links_between(u, v)[0]
            expect[lk.index] += nbytes / lk.bandwidth_bytes_per_ns
    for lk in topo.links:
        assert res.link_busy_ns[lk.index] == pytest.approx(expect[lk.index], abs=1e-3 * 256)
