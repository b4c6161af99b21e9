"""`tacos.maxflow` against networkx: the exact cut bound of `tacos.bounds` took its minimum cuts
from `networkx.minimum_cut`, and now takes them from `tacos.maxflow.sink_side` (no networkx at
start-up). Every cut the bounds ask for on many topologies (failed links, heterogeneous and
random bandwidths, switches, relays) must be the one networkx gives, or as cheap where
networkx's floats round a tie, and every bound must be the one networkx gives."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import networkx as nx
import pytest

from chakra_ir.collective import CollectiveKind
from tacos import bounds, cut_bounds
from tacos.channels import Net
from tacos.maxflow import sink_side
from topologies import parse_topology


def _networkx_cut_side(net: Net, ranks: list[int], t: int, lam: float) -> set[int]:
    """What `bounds._min_cut_side` was: the source side of `networkx.minimum_cut`."""
    g: nx.DiGraph[object] = nx.DiGraph()
    for lk in net.links:
        cap = lam * lk.bandwidth_bytes_per_ns
        if g.has_edge(lk.src, lk.dst):
            g[lk.src][lk.dst]["capacity"] += cap
        else:
            g.add_edge(lk.src, lk.dst, capacity=cap)
    for r in ranks:
        if r != t:
            g.add_edge("s", r, capacity=1.0)
    g.add_edge(t, "t")  # infinite capacity: t stays outside S
    _value, (side, _) = nx.minimum_cut(g, "s", "t")
    return {x for x in side if isinstance(x, int)}


def _cut_value(net: Net, ranks: list[int], t: int, lam: float, side: set[int]) -> Fraction:
    """The exact capacity of the cut ``side`` of `_networkx_cut_side`'s network."""
    capacity: dict[tuple[int, int], float] = {}
    for lk in net.links:
        cap = lam * lk.bandwidth_bytes_per_ns
        key = (lk.src, lk.dst)
        capacity[key] = capacity[key] + cap if key in capacity else cap
    value = Fraction(sum(1 for r in ranks if r != t and r not in side))
    return value + sum(
        (Fraction(c) for (u, v), c in capacity.items() if u in side and v not in side),
        Fraction(0),
    )


def _random_graph(rng: random.Random) -> str:
    """A ``graph:`` spec, strongly connected, with switches, one-way links, parallel links and
    random bandwidths."""
    npus, switches = rng.randint(2, 9), rng.choice([0, 0, 1, 2])
    n = npus + switches
    order = list(range(n))
    rng.shuffle(order)
    pairs = {(order[i], order[rng.randrange(i)]) for i in range(1, n)}  # a spanning tree
    pairs |= {(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 2 * n))}
    links = []
    for a, b in sorted(p for p in pairs if p[0] != p[1]):
        bw = rng.choice(["50GB/s", "25GB/s", "100GB/s", f"{rng.uniform(1, 400):.4f}GB/s"])
        arrow = "-" if rng.random() < 0.7 else ">"
        links.append(f"{a}{arrow}{b}:{bw}")
        if arrow == ">":
            links.append(f"{b}>{a}:{rng.uniform(1, 400):.3f}GB/s")
        if rng.random() < 0.1:  # a parallel link
            links.append(f"{a}-{b}:{rng.uniform(1, 400):.2f}GB/s")
    return f"graph:{npus}+{switches},links={';'.join(links)}"


SPECS = [
    "ring:2",
    "ring:5",
    "ring:8,bw=50GiB/s,lat=500ns",
    "uniring:6",
    "fc:3",
    "fc:6",
    "fc:7,fail=0-1;2>3",
    "fc:8,fail_random=5,seed=3",
    "fc:6,linkbw=0-1:100GB/s;2>3:12.5GB/s;4-5:3.3GB/s",
    "switch:5",
    "switch:6,linkbw=0-6:200GB/s;3>6:7GB/s",
    "mesh:3x3",
    "mesh:2x2x2,bw=[100GB/s,50GB/s,25GB/s]",
    "mesh:3x4,fail=0-1;4-5",
    "torus:4x4",
    "torus:3x3,fail_random=3,seed=1",
    "torus:4x3,bw=[200GB/s,37.5GB/s],lat=[100ns,700ns]",
    "hypercube:3",
    "hypercube:4,fail=0-1;2-3;4-6",
    "stack:ring2*switch3",
    "stack:switch2*switch2",
    "stack:ring4*fc2,bw=[200GB/s,100GB/s]",
    "stack:fc2*fc2*fc2,bw=[300GB/s,75GB/s,12.5GB/s],fail=0-1",
    "fred:6,l1=3",
    "fred:8,l1=2,l2bw=800GB/s",
    "ring:12,linkbw=0-1:17GB/s;5-6:999GB/s",
]


def _cases() -> list[tuple[str, tuple[int, ...]]]:
    rng = random.Random(12)
    cases: list[tuple[str, tuple[int, ...]]] = [(spec, ()) for spec in SPECS]
    cases += [(_random_graph(rng), ()) for _ in range(30)]
    # Ranks on some NPUs only: the others relay.
    for spec in ("torus:4x4", "fc:7,fail=0-1;2>3", "switch:6", "mesh:3x4,fail=0-1;4-5"):
        npus = parse_topology(spec).num_npus
        for _ in range(2):
            cases.append((spec, tuple(rng.sample(range(npus), rng.randint(2, npus - 1)))))
    return cases


@pytest.mark.parametrize(("spec", "placement"), _cases())
def test_cut_bounds_take_networkx_cuts(
    spec: str, placement: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    topology = parse_topology(spec)
    assert topology.num_nodes <= bounds.EXACT_CUT_NODES
    ours = cut_bounds._min_cut_side
    calls = 0

    def both(net: Net, ranks: list[int], t: int, lam: float) -> set[int]:
        nonlocal calls
        calls += 1
        side = ours(net, ranks, t, lam)
        theirs = _networkx_cut_side(net, ranks, t, lam)
        if side != theirs:
            # networkx computes in floats: on a tie within rounding its cut may cost an ulp
            # more than the exact minimum, which is ours; both then give the same bound.
            low, high = _cut_value(net, ranks, t, lam, side), _cut_value(net, ranks, t, lam, theirs)
            assert low <= high <= low * (1 + Fraction(1, 10**12)), (spec, ranks, t, lam)
        return side

    kinds = (CollectiveKind.ALLGATHER, CollectiveKind.REDUCE_SCATTER)
    args: dict[str, Any] = {"placement": placement, "chunks_per_npu": 2}
    monkeypatch.setattr(cut_bounds, "_min_cut_side", both)
    got = [bounds.lower_bounds(k, topology, 3 << 20, **args) for k in kinds]
    assert calls > 0
    monkeypatch.setattr(cut_bounds, "_min_cut_side", _networkx_cut_side)
    want = [bounds.lower_bounds(k, topology, 3 << 20, **args) for k in kinds]
    assert got == want
    assert all(b.exact_cut for b in got)


def test_sink_side_is_networkx_minimum_cut_on_random_networks() -> None:
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(2, 12)
        g: nx.DiGraph[int] = nx.DiGraph()
        g.add_nodes_from(range(n))
        capacity: dict[tuple[int, int], float] = {}
        for _ in range(rng.randint(0, 3 * n)):
            u, v = rng.randrange(n), rng.randrange(n)
            if u != v:
                capacity[u, v] = rng.choice([1.0, 0.5, 2.0, 3.0, 0.25, float(rng.randint(1, 9))])
                g.add_edge(u, v, capacity=capacity[u, v])
        s, t = rng.sample(range(n), 2)
        _value, (_, sink) = nx.minimum_cut(g, s, t)
        assert sink_side(n, capacity, s, t) == sink


def test_sink_side_cases() -> None:
    # Routes of 1 and 2 join at node 3, which passes on 2 to the sink: that edge is the cut.
    caps = {(0, 1): 1.0, (0, 2): 2.0, (1, 3): 1.0, (2, 3): 2.0, (3, 4): 2.0}
    assert sink_side(5, caps, 0, 4) == {4}
    # It passes on 5: the routes are the cut, node 3 still reaches the sink.
    caps[3, 4] = 5.0
    assert sink_side(5, caps, 0, 4) == {3, 4}
    # A route with room left reaches the sink through it.
    caps[1, 3] = 1.5
    assert sink_side(5, caps, 0, 4) == {1, 3, 4}
    # Nothing links the source to the sink: every node that reaches the sink is on its side.
    assert sink_side(4, {(1, 2): 1.0, (2, 3): 1.0}, 0, 3) == {1, 2, 3}
    # Float capacities are taken exactly: the floats 0.1 and 0.2 add up to more than 0.3, so
    # the edge into the sink is the cut; 0.25 and 0.5 add up to 0.75 exactly, so either is.
    caps = {(0, 1): 0.1, (0, 2): 0.2, (1, 3): 1.0, (2, 3): 1.0, (3, 4): 0.3}
    assert sink_side(5, caps, 0, 4) == {4}
    caps = {(0, 1): 0.25, (0, 2): 0.5, (1, 3): 1.0, (2, 3): 1.0, (3, 4): 0.75}
    assert sink_side(5, caps, 0, 4) == {4}
    with pytest.raises(ValueError):
        sink_side(3, {(0, 1): -1.0}, 0, 2)
    with pytest.raises(ValueError):
        sink_side(3, {(0, 1): float("inf")}, 0, 2)
    with pytest.raises(ValueError):
        sink_side(3, {(0, 5): 1.0}, 0, 2)
    with pytest.raises(ValueError):
        sink_side(3, {}, 1, 1)
