"""Spec strings: canonical forms, round trips, and every error with its position."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies import CollcError, SpecError, TopologyError, parse_topology

ROUND_TRIP = [
    "ring:8",
    "uniring:3",
    "fc:5",
    "switch:16",
    "mesh:4x4",
    "mesh:4x4x4,bw=[200GB/s,100GB/s,50GB/s],lat=[1ns,2ns,3.5ns]",
    "torus:4x4x4",
    "torus:3x5,bw=7.3GiB/s,lat=0.25us",
    "hypercube:6",
    "stack:ring4*fc4*switch8,bw=[200GB/s,100GB/s,50GB/s],lat=[100ns,200ns,500ns]",
    "fred:20",
    "fred:10,bw=1TB/s,l1=3,l2bw=2TB/s,lat=10ns",
    "graph:4+1,links=0-4;1-4;2-4:10GB/s;3>4:1GB/s:1us;4>3:2GB/s:2us:0",
    "torus:4x4,fail=0-1;5>6,fail_random=3,seed=11",
    "mesh:4x4,linkbw=0-1:10GB/s;2>3:5GB/s,linklat=5-6:1us",
    "uniring:4,linkbw=0-1:1GB/s",
]


@pytest.mark.parametrize("spec", ROUND_TRIP)
def test_round_trip(spec: str) -> None:
    t = parse_topology(spec)
    again = parse_topology(t.spec)
    assert again == t
    assert again.spec == t.spec
    assert again.failed == t.failed
    assert hash(again) == hash(t)


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("ring:8", "ring:8,bw=50GB/s,lat=500ns"),
        (" Ring : 8 , lat = 1us ", "ring:8,bw=50GB/s,lat=1000ns"),
        ("mesh:4x4,bw=[100GB/s,100GB/s]", "mesh:4x4,bw=100GB/s,lat=500ns"),
        ("mesh:4x4,bw=[100GB/s,50GB/s]", "mesh:4x4,bw=[100GB/s,50GB/s],lat=500ns"),
        ("fred:20", "fred:20,bw=3000GB/s,lat=500ns,l1=4,l2bw=auto"),
        ("fred:20,l2bw=12TB/s", "fred:20,bw=3000GB/s,lat=500ns,l1=4,l2bw=12000GB/s"),
        ("ring:4,bw=50GiB/s", "ring:4,bw=50GiB/s,lat=500ns"),
        ("stack:Ring4*FullyConnected2", "stack:ring4*fc2,bw=50GB/s,lat=500ns"),
        ("torus:4x4,fail=1>0;0>1;5>4", "torus:4x4,bw=50GB/s,lat=500ns,fail=0-1;5>4"),
        ("torus:4x4,fail_random=2", "torus:4x4,bw=50GB/s,lat=500ns,fail_random=2,seed=0"),
        ("ring:8,fail_random=0,seed=4", "ring:8,bw=50GB/s,lat=500ns"),
        (
            "mesh:4x4,seed=4,fail=3-7,fail_random=1,linkbw=1>0:1GB/s;0>1:1GB/s",
            "mesh:4x4,bw=50GB/s,lat=500ns,linkbw=0-1:1GB/s,fail=3-7,fail_random=1,seed=4",
        ),
        (
            "ring:4,linkbw=0-1:1GB/s;0>1:2GB/s",
            "ring:4,bw=50GB/s,lat=500ns,linkbw=0>1:2GB/s;1>0:1GB/s",
        ),
        ("graph:2,links=1-0", "graph:2,bw=50GB/s,lat=500ns,links=0-1:50GB/s:500ns"),
    ],
)
def test_canonical(spec: str, canonical: str) -> None:
    assert parse_topology(spec).spec == canonical


def test_spec_lists_every_option_so_defaults_are_pinned() -> None:
    t = parse_topology("torus:4x4")
    assert "bw=" in t.spec and "lat=" in t.spec


@st.composite
def specs(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["ring", "uniring", "fc", "switch", "mesh", "torus", "stack"]))
    if kind in ("mesh", "torus"):
        dims = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))
        shape = "x".join(map(str, dims))
        ndims = len(dims)
    elif kind == "stack":
        parts = draw(
            st.lists(
                st.tuples(st.sampled_from(["ring", "fc", "switch"]), st.integers(2, 4)),
                min_size=1,
                max_size=3,
            )
        )
        shape = "*".join(f"{k}{n}" for k, n in parts)
        ndims = len(parts)
    else:
        shape = str(draw(st.integers(2, 9)))
        ndims = 1
    spec = f"{kind}:{shape}"
    units = st.sampled_from(["GB/s", "GiB/s", "MB/s", "TB/s"])
    values = st.floats(0.5, 500, allow_nan=False).map(lambda x: round(x, 3))
    if draw(st.booleans()):
        bws = draw(st.lists(st.tuples(values, units), min_size=ndims, max_size=ndims))
        items = [f"{v}{u}" for v, u in bws]
        bw = items[0] if ndims == 1 else "[" + ",".join(items) + "]"
        spec += f",bw={bw}"
    if draw(st.booleans()):
        spec += f",lat={draw(st.integers(0, 5000))}ns"
    return spec


@settings(max_examples=60, deadline=None)
@given(specs())
def test_round_trip_property(spec: str) -> None:
    t = parse_topology(spec)
    assert parse_topology(t.spec) == t


# (spec, error type, column, fragment of the message)
ERRORS = [
    ("", SpecError, 1, "empty topology spec"),
    ("mesk:4x4", SpecError, 1, "unknown topology kind 'mesk' (expected one of ring, uniring"),
    ("ring", SpecError, 5, "expected ':'"),
    ("ring:", SpecError, 6, "missing shape"),
    ("mesh:4xy", SpecError, 8, "mesh dimension 'y' is not a positive integer"),
    ("mesh:x", SpecError, 6, "missing mesh dimension"),
    ("mesh:4x-4", SpecError, 8, "mesh dimension '-4' is not a positive integer"),
    ("mesh:4x4x", SpecError, 10, "missing mesh dimension"),
    ("mesh:4x1", SpecError, 8, "at least 2"),
    ("ring:1", SpecError, 6, "at least 2"),
    ("ring:-3", SpecError, 6, "not a positive integer"),
    ("fc:abc", SpecError, 4, "not a positive integer"),
    ("hypercube:0", SpecError, 11, "at least 1"),
    ("hypercube:21", SpecError, 11, "too large"),
    ("stack:ring4*bus4", SpecError, 13, "'bus4' is not ring<N>, fc<N> or switch<N>"),
    ("stack:ring4*fc", SpecError, 15, "missing stack dimension"),
    ("stack:ring4*fc1", SpecError, 15, "at least 2"),
    ("fc:5000", SpecError, 4, "too many links"),
    ("ring:8,", SpecError, 8, "empty option"),
    ("ring:8,bw", SpecError, 8, "not key=value"),
    ("ring:8,=5", SpecError, 8, "no key"),
    ("ring:8,bw=", SpecError, 11, "has no value"),
    ("ring:8,bw=1GB/s,bw=2GB/s", SpecError, 17, "given twice"),
    ("ring:8,color=red", SpecError, 8, "unknown option 'color' for ring"),
    ("ring:8,l1=4", SpecError, 8, "unknown option 'l1' for ring"),
    ("ring:8,bw=50", SpecError, 11, "needs a unit"),
    ("ring:8,bw=fast", SpecError, 11, "cannot read bandwidth"),
    ("ring:8,lat=5", SpecError, 12, "needs a unit"),
    ("ring:8,bw=[1GB/s,2GB/s]", SpecError, 11, "takes one value for ring"),
    ("mesh:4x4,bw=[1GB/s,2GB/s,3GB/s]", SpecError, 13, "3 values but mesh:4x4 has 2"),
    ("mesh:4x4,bw=[1GB/s,2GB/s", SpecError, 13, "unclosed '['"),
    ("mesh:4x4,bw=1GB/s]", SpecError, 18, "unmatched ']'"),
    ("mesh:4x4,bw=[1GB/s,,2GB/s]", SpecError, 20, "empty list item"),
    ("mesh:4x4,bw=[1GB/s,2GB/x]", SpecError, 20, "needs a unit"),
    ("ring:8,fail=0-9", SpecError, 13, "fail: no link between 0 and 9"),
    ("ring:8,fail=0-1;0>2", SpecError, 17, "fail: no link from 0 to 2"),
    ("ring:8,fail=0~1", SpecError, 13, "is not A-B (both directions) or A>B"),
    ("ring:8,fail=1-1", SpecError, 13, "to itself"),
    ("ring:8,fail=0-1;", SpecError, 17, "empty fail entry"),
    ("ring:8,fail_random=x", SpecError, 20, "not a non-negative integer"),
    ("ring:8,fail_random=9", SpecError, 20, "only 8 NPU-NPU link pairs"),
    ("switch:8,fail_random=1", SpecError, 22, "only 0 NPU-NPU link pairs"),
    ("ring:8,seed=1", SpecError, 8, "only used with fail_random"),
    ("ring:8,linkbw=0-1", SpecError, 15, "not A-B:BANDWIDTH"),
    ("ring:8,linkbw=0-2:1GB/s", SpecError, 15, "linkbw: no link between 0 and 2"),
    ("ring:8,linklat=0>1:1", SpecError, 20, "needs a unit"),
    ("ring:8,linkbw=0-1:", SpecError, 19, "empty field"),
    ("fred:20,l1=0", SpecError, 12, "at least 1"),
    ("fred:20,l2bw=huge", SpecError, 14, "cannot read bandwidth"),
    ("graph:3,links=0-3", SpecError, 15, "node 3 does not exist"),
    ("graph:3,links=0-1:1GB/s:1ns:0:9", SpecError, 31, "too many fields"),
    ("graph:3+x", SpecError, 9, "graph switch count 'x'"),
    ("file:net.txt", SpecError, 6, "must end in .yaml"),
    ("file:/nonexistent/net.yaml", SpecError, 6, "cannot read topology file"),
    ("/nonexistent/net.yaml", SpecError, 1, "cannot read topology file"),
    ("ring:8,fail=0-1;4-5", TopologyError, 0, "cannot reach"),
    ("graph:3,links=0-1", TopologyError, 0, "NPU 2 has no links"),
    ("uniring:4,fail=0>1", TopologyError, 0, "NPU 0 cannot reach NPU 1"),
]


@pytest.mark.parametrize(("spec", "kind", "column", "fragment"), ERRORS)
def test_errors(spec: str, kind: type[CollcError], column: int, fragment: str) -> None:
    with pytest.raises(kind) as info:
        parse_topology(spec)
    err = info.value
    assert type(err) is kind
    assert fragment in err.message
    if kind is SpecError:
        assert err.pos is not None
        assert err.pos.file == "<spec>"
        assert err.pos.text == spec
        assert err.pos.column == column, (err.pos.column, str(err))
        assert str(err).startswith(f"<spec>:1:{column}: ")
        assert not spec or err.caret().endswith("^")


def test_errors_are_collc_errors() -> None:
    with pytest.raises(CollcError):
        parse_topology("nope:3")
