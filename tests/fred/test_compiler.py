"""The FRED switch compiler: FRED_m(P), colouring, routing, phases, the memory budget."""

from __future__ import annotations

import random

import pytest

from backends.fred.clos import LocalFlow, element_ports, levels, route, state_bits
from backends.fred.colour import colour, cp_sat, dsatur
from backends.fred.compile import FredOptions, compile_fred
from backends.fred.errors import FredError, FredUncolourable
from backends.fred.execute import ElementError, run_network
from backends.fred.fabric import Fabric
from backends.fred.phases import build_phases
from baselines.innetwork import innetwork_program
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.grouping import merge_groups
from topologies import parse_topology

K = CollectiveKind


def _add(
    element: str, a: tuple[int, frozenset[int]], b: tuple[int, frozenset[int]]
) -> tuple[int, frozenset[int]]:
    if a[0] != b[0]:
        raise ElementError(element, f"flows {a[0]} and {b[0]} meet")
    assert not a[1] & b[1], "a contribution counted twice"
    return a[0], a[1] | b[1]


def _check_sums(flows: list[LocalFlow], ports: int, m: int) -> None:
    r = route(flows, ports, m)
    inputs = {p: (f.id, frozenset([p])) for f in flows for p in f.inputs}
    out = run_network(r.states, ports, m, inputs, _add)
    want = {o: (f.id, frozenset(f.inputs)) for f in flows for o in f.outputs}
    assert out == want
    assert all(len(r.colours[f.id]) == levels(ports) for f in flows)


def random_flows(rng: random.Random, ports: int, count: int, lo: int, hi: int) -> list[LocalFlow]:
    ins, outs = list(range(ports)), list(range(ports))
    rng.shuffle(ins)
    rng.shuffle(outs)
    flows = []
    for k in range(count):
        a, b = rng.randint(lo, hi), rng.randint(lo, hi)
        if len(ins) < a or len(outs) < b:
            break
        flows.append(LocalFlow(k, tuple(sorted(ins[:a])), tuple(sorted(outs[:b]))))
        del ins[:a], outs[:b]
    return flows


def test_structure_sizes() -> None:
    assert [levels(p) for p in (2, 3, 4, 5, 8, 20, 64)] == [0, 1, 1, 2, 2, 4, 5]
    assert state_bits(2, 3) == 3
    # FRED_3(4): two input and two output µSwitches of 2 x (2 + 1) + 1 bits, three 2x2.
    assert state_bits(4, 3) == 4 * 5 + 3 * 3
    assert element_ports("m2.i1", 8, 3) == (2, 3)
    assert element_ports("if", 5, 3) == (1, 3)
    assert element_ports("m0.x", 4, 3) == (2, 2)
    for bad in ("m3.i0", "if", "i4", "x", "m0.m0.m0.x"):
        with pytest.raises(KeyError):
            element_ports(bad, 8, 3)


@pytest.mark.parametrize("ports", [2, 3, 4, 5, 7, 8, 20, 33])
def test_allreduce_of_every_port_routes_and_sums(ports: int) -> None:
    _check_sums([LocalFlow(0, tuple(range(ports)), tuple(range(ports)))], ports, 3)


def test_random_flow_sets_sum_exactly_whenever_they_route() -> None:
    rng = random.Random(7)
    routed = 0
    for _ in range(60):
        ports = rng.choice([6, 9, 16, 21])
        flows = random_flows(rng, ports, rng.randint(1, 6), 1, 3)
        try:
            _check_sums(flows, ports, 3)
            routed += 1
        except FredUncolourable as e:
            assert e.flows
    assert routed > 30


def test_colouring_heuristic_then_exact() -> None:
    odd_cycle = [[4, 1], [0, 2], [1, 3], [2, 4], [3, 0]]
    assert dsatur(odd_cycle, 2) is None
    c = colour(odd_cycle, 2)
    assert (c.ok, c.method) == (False, "infeasible")
    assert colour(odd_cycle, 3).method == "greedy"
    # A graph DSatur's first choices can get wrong: CP-SAT must still find a 3-colouring.
    got, proved = cp_sat(odd_cycle, 3, 5.0)
    assert proved and got is not None
    assert all(got[u] != got[v] for v in range(5) for u in odd_cycle[v])


def test_uncolourable_names_the_level_and_flows() -> None:
    # A unicast permutation routes at m=2 (its conflict graph is two matchings).
    _check_sums([LocalFlow(k, (k,), ((k + 1) % 6,)) for k in range(6)], 6, 2)
    tri = [LocalFlow(0, (0,), (2,)), LocalFlow(1, (1,), (4,)), LocalFlow(2, (2,), (3, 5))]
    with pytest.raises(FredUncolourable, match=r"level 0 .*flows 0, 1, 2 has no 2-colouring"):
        route(tri, 6, 2)
    _check_sums(tri, 6, 3)


def test_hand_edited_state_is_caught_by_execution() -> None:
    flows = [LocalFlow(0, (0, 1), (2,)), LocalFlow(1, (2,), (0, 1))]
    r = route(flows, 4, 3)
    states = {k: [list(x) for x in v] for k, v in r.states.items()}
    # Send flow 1 into a middle its output µSwitch does not listen to.
    c1 = r.colours[1][0]
    states["i1"] = [[] for _ in range(3)]
    states["i1"][(c1 + 1) % 3] = [0]
    inputs = {0: (0, frozenset([0])), 1: (0, frozenset([1])), 2: (1, frozenset([2]))}
    with pytest.raises(ElementError, match="carries nothing") as e:
        run_network(states, 4, 3, inputs, _add)
    assert e.value.element in ("o0", f"m{c1}.x")
    # Two flows summed into one middle: the sum refuses to mix them.
    flows = [LocalFlow(0, (0,), (2,)), LocalFlow(1, (1,), (3,))]
    r = route(flows, 4, 3)
    states = {k: [list(x) for x in v] for k, v in r.states.items()}
    states["i0"] = [[0, 1], [], []]
    states["o1"] = [[0], [0]]
    with pytest.raises(ElementError, match="flows 0 and 1 meet"):
        run_network(states, 4, 3, {0: (0, frozenset([0])), 1: (1, frozenset([1]))}, _add)


def _program(spec: str, kind: K, groups: str = "") -> tuple[object, object]:
    topo = parse_topology(spec)
    n = topo.num_npus
    if groups == "stride4":
        gs = tuple(tuple(range(j, n, 4)) for j in range(4))
    elif groups == "pairs":
        gs = tuple((2 * j, 2 * j + 1) for j in range(n // 2))
    else:
        gs = ()
    c = Collective(kind, n, 1, groups=gs) if gs else Collective(kind, n, 1)
    if gs:
        p = merge_groups(
            c, [innetwork_program(c.group_collective(g), topo) for g in range(len(gs))]
        )
    else:
        p = innetwork_program(c, topo)
    return p, topo


def test_fabric_ports() -> None:
    fd = Fabric.of(parse_topology("fred:20"))
    assert sorted((s.name, s.ports) for s in fd.switches.values()) == [
        *[(f"L1-{j}", 8) for j in range(5)],
        ("L2", 20),
    ]
    fb = Fabric.of(parse_topology("fred:20,cfg=B"))
    assert sorted({s.ports for s in fb.switches.values()}) == [5]
    with pytest.raises(FredError, match="no switches that reduce"):
        Fabric.of(parse_topology("fred:20,cfg=C"))


def test_phases_of_the_paper_cases() -> None:
    for spec, kind, groups, want in [
        ("fred:20", K.ALLREDUCE, "", [1]),
        ("fred:20", K.ALLREDUCE, "pairs", [10]),
        ("fred:20", K.ALLREDUCE, "stride4", [4]),
        ("fred:20,cfg=B", K.ALLREDUCE, "stride4", [1, 1, 1, 1]),
        ("fred:8", K.REDUCE_SCATTER, "", [1] * 8),
    ]:
        p, topo = _program(spec, kind, groups)
        phases, _, _ = build_phases(p, Fabric.of(topo))  # type: ignore[arg-type]
        assert [len(ph.flows) for ph in phases] == want, (spec, groups)
        cfg = compile_fred(p, topo, FredOptions(memory_bytes=1 << 20))  # type: ignore[arg-type]
        assert cfg.m == 3 and cfg.fix == ""


def test_memory_budget() -> None:
    p, topo = _program("fred:20", K.REDUCE_SCATTER)
    with pytest.raises(FredError, match=r"switch L2 \(FRED_3\(20\)\) needs 20 configurations"):
        compile_fred(p, topo)  # type: ignore[arg-type]
    cfg = compile_fred(p, topo, FredOptions(memory_bytes=4096))  # type: ignore[arg-type]
    assert cfg.bits[25] == 20 * state_bits(20, 3)
