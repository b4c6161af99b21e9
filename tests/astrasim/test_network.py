"""network.yml: names, counts, GiB-based bandwidth, per-link latency, and the mapping of each
topology kind."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from backends.astrasim import astra_bandwidth, astra_dimensions, network_yaml
from tests.astrasim.helpers import AR, bundle, load_yaml
from topologies import load_topology_file, parse_topology

GIB = 2**30
K = 2**30 / 1e9  # collc's GiB/s in bytes per ns


def exact(bytes_per_s: float | Fraction) -> float:
    return float(Fraction(bytes_per_s) / GIB)


def test_conversion_is_exact() -> None:
    # collc's 50GB/s is 50e9 B/s, which ASTRA-sim (1 GB = 2^30 B) calls 46.566... GB/s.
    assert astra_bandwidth(50.0) == 50e9 / GIB == 46.566128730773926
    # 50GiB/s (collc stores 50 x 2^30/1e9 rounded) is written 50.0, and 400GiB/s 400.0.
    assert (
        astra_bandwidth(parse_topology("ring:4,bw=50GiB/s").links[0].bandwidth_bytes_per_ns) == 50.0
    )
    assert astra_bandwidth(400 * K) == 400.0
    for bpn in (0.001, 0.3, 1.0, 25.0, 100.0, 3000.0, 53.6870912, 12.345678901234, 7 * K):
        got = astra_bandwidth(bpn)
        nearest = exact(Fraction(bpn) * 10**9)
        # Within a few ulps of the exact quotient, and read back by collc as the same value
        # whenever such a double exists (it does for all of these but 0.3).
        assert abs(got - nearest) <= 4 * math.ulp(nearest)
        assert got * K == bpn or got == nearest


@pytest.mark.parametrize("spec", ["ring:4,bw=50GB/s", "ring:4,bw=50GiB/s", "ring:4,bw=1.5TB/s"])
def test_collc_reads_the_same_bandwidth_back(tmp_path: Path, spec: str) -> None:
    t = parse_topology(spec)
    (tmp_path / "n.yml").write_text(network_yaml(t))
    back = load_topology_file(tmp_path / "n.yml")
    assert back.links[0].bandwidth_bytes_per_ns == t.links[0].bandwidth_bytes_per_ns


def test_ring8(tmp_path: Path) -> None:
    out, _, _, _ = bundle(tmp_path, "ring:8")
    net = load_yaml(out / "network.yml")
    assert set(net) == {"topology", "npus_count", "bandwidth", "latency"}
    assert net == {
        "topology": ["Ring"],
        "npus_count": [8],
        "bandwidth": [50e9 / GIB],
        "latency": [500.0],
    }
    assert round(net["bandwidth"][0], 3) == 46.566


def test_torus(tmp_path: Path) -> None:
    out, _, _, _ = bundle(tmp_path, "torus:4x4,bw=[100GB/s,50GB/s],lat=[100ns,1us]")
    net = load_yaml(out / "network.yml")
    assert net == {
        "topology": ["Ring", "Ring"],
        "npus_count": [4, 4],
        "bandwidth": [100e9 / GIB, 50e9 / GIB],
        "latency": [100.0, 1000.0],
    }


@pytest.mark.parametrize(
    ("bw", "expected"),
    [
        ("50GB/s", [50e9 / GIB] * 3),
        ("[200GB/s,100GB/s,50GB/s]", [200e9 / GIB, 100e9 / GIB, 50e9 / GIB]),
        ("[400GiB/s,25GiB/s,12.5GB/s]", [400.0, 25.0, 12.5e9 / GIB]),
        ("[1TB/s,300MB/s,7GB/s]", [1e12 / GIB, 300e6 / GIB, 7e9 / GIB]),
    ],
)
def test_stack(tmp_path: Path, bw: str, expected: list[float]) -> None:
    spec = f"stack:ring4*fc2*switch2,bw={bw},lat=[50ns,0.5us,2us]"
    out, _, _, _ = bundle(tmp_path, spec)
    net = load_yaml(out / "network.yml")
    assert net["topology"] == ["Ring", "FullyConnected", "Switch"]
    assert net["npus_count"] == [4, 2, 2]
    assert net["bandwidth"] == expected
    assert net["latency"] == [50.0, 500.0, 2000.0]


def test_reads_back_as_the_same_network(tmp_path: Path) -> None:
    """collc's own reader of ASTRA-sim YAML gets back the same links, to the bit."""
    spec = "stack:ring4*fc2*switch2,bw=[100GB/s,50GiB/s,25GB/s],lat=[100ns,200ns,300ns]"
    out, _, t, _ = bundle(tmp_path, spec)
    back = load_topology_file(out / "network.yml")
    assert back == t
    assert back.num_npus == t.num_npus and back.num_nodes == t.num_nodes
    assert len(back.links) == len(t.links)
    for a, b in zip(t.links, back.links, strict=True):
        assert (a.src, a.dst, a.dim, a.latency_ns) == (b.src, b.dst, b.dim, b.latency_ns)
        assert a.bandwidth_bytes_per_ns == b.bandwidth_bytes_per_ns


def test_switch_latency_is_per_link() -> None:
    """collc's switch message crosses two links of latency L; ASTRA-sim's Switch charges two
    hops of the dimension's latency: the dimension's latency is L."""
    t = parse_topology("switch:16,bw=400GB/s,lat=936.25ns")
    (d,) = astra_dimensions(t)
    assert (d.topology, d.npus_count, d.latency) == ("Switch", 16, 936.25)
    assert d.bandwidth == 400e9 / GIB
    assert sum(t.links[i].latency_ns for i in t.route_links(0, 5)) == 2 * d.latency


def test_fc() -> None:
    (d,) = astra_dimensions(parse_topology("fc:8,bw=25GB/s,lat=700ns"))
    assert (d.topology, d.npus_count, d.bandwidth, d.latency) == (
        "FullyConnected",
        8,
        25e9 / GIB,
        700.0,
    )


@pytest.mark.parametrize(
    ("spec", "names", "counts"),
    [
        ("hypercube:3", ["Ring"] * 3, [2, 2, 2]),
        ("mesh:2x2", ["Ring", "Ring"], [2, 2]),
        ("ring:2", ["Ring"], [2]),
        ("torus:2x4", ["Ring", "Ring"], [2, 4]),
        ("stack:switch8*ring2", ["Switch", "Ring"], [8, 2]),
    ],
)
def test_lines_of_two_are_rings(spec: str, names: list[str], counts: list[int]) -> None:
    dims = astra_dimensions(parse_topology(spec))
    assert [d.topology for d in dims] == names
    assert [d.npus_count for d in dims] == counts


def test_astra_file_round_trip(tmp_path: Path) -> None:
    """An ASTRA-sim YAML read by collc is exported back with the same values."""
    src = tmp_path / "in.yml"
    src.write_text(
        "topology: [Ring, FullyConnected, Switch]\nnpus_count: [2, 8, 4]\n"
        "bandwidth: [200.0, 100.0, 50.0]\nlatency: [50.0, 500.0, 2000.0]\n"
    )
    t = load_topology_file(src)
    (tmp_path / "out.yml").write_text(network_yaml(t))
    assert load_yaml(tmp_path / "out.yml") == {
        "topology": ["Ring", "FullyConnected", "Switch"],
        "npus_count": [2, 8, 4],
        "bandwidth": [200.0, 100.0, 50.0],
        "latency": [50.0, 500.0, 2000.0],
    }


def test_linkbw_that_changes_nothing_is_fine() -> None:
    t = parse_topology("ring:4,bw=50GB/s,linkbw=0-1:50GB/s")
    (d,) = astra_dimensions(t)
    assert d.bandwidth == 50e9 / GIB


def test_collective_kind_does_not_change_the_network(tmp_path: Path) -> None:
    out, _, _, _ = bundle(tmp_path, "ring:4", AR)
    assert (out / "network.yml").read_text() == network_yaml(parse_topology("ring:4"))
