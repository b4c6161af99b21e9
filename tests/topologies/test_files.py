"""Topology files: collc's link list (YAML, JSON) and ASTRA-sim's network YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topologies import SpecError, TopologyError, load_topology_file, parse_topology

COLLC_YAML = """\
npus: 4
switches: 1
defaults: {bandwidth: "40GB/s", latency: "200ns"}
links:
  - {src: 0, dst: 4, bidirectional: true}
  - {src: 1, dst: 4, bidirectional: true}
  - {src: 2, dst: 4, bidirectional: true, bandwidth: 25GB/s, latency: 1us}
  - {src: 3, dst: 4, bidirectional: true}
  - {src: 0, dst: 1, dim: 3}
  - {src: 1, dst: 0}
fail: ["0-1"]
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_collc_yaml(tmp_path: Path) -> None:
    path = _write(tmp_path, "net.yaml", COLLC_YAML)
    t = load_topology_file(path)
    assert t.name == "file"
    assert (t.num_npus, t.num_nodes) == (4, 5)
    assert len(t.links) == 8
    assert t.failed == ((0, 1), (1, 0))
    up = t.links_between(2, 4)[0]
    assert (up.bandwidth_bytes_per_ns, up.latency_ns) == (25.0, 1000.0)
    down = t.links_between(4, 0)[0]
    assert (down.bandwidth_bytes_per_ns, down.latency_ns) == (40.0, 200.0)
    assert t.route(0, 1) == (0, 4, 1)
    assert t.spec == f"file:{Path(path).resolve()}"
    assert parse_topology(t.spec) == t
    assert parse_topology(path) == t  # a bare path works too


def test_collc_json_equals_yaml(tmp_path: Path) -> None:
    data = {
        "npus": 4,
        "switches": 1,
        "defaults": {"bandwidth": "40GB/s", "latency": "200ns"},
        "links": [
            {"src": 0, "dst": 4, "bidirectional": True},
            {"src": 1, "dst": 4, "bidirectional": True},
            {
                "src": 2,
                "dst": 4,
                "bidirectional": True,
                "bandwidth": "25GB/s",
                "latency": "1us",
            },
            {"src": 3, "dst": 4, "bidirectional": True},
            {"src": 0, "dst": 1, "dim": 3},
            {"src": 1, "dst": 0},
        ],
        "fail": "0-1",
    }
    j = load_topology_file(_write(tmp_path, "net.json", json.dumps(data, indent=1)))
    y = load_topology_file(_write(tmp_path, "net.yaml", COLLC_YAML))
    assert j == y


def test_file_spec_takes_options(tmp_path: Path) -> None:
    path = _write(tmp_path, "net.yaml", COLLC_YAML)
    t = parse_topology(f"file:{path},linkbw=3-4:1GB/s")
    assert t.links_between(3, 4)[0].bandwidth_bytes_per_ns == 1.0
    assert t.spec == f"file:{Path(path).resolve()},linkbw=3-4:1GB/s"
    assert parse_topology(t.spec) == t
    assert parse_topology(f"{path},linkbw=3-4:1GB/s") == t
    with pytest.raises(SpecError, match="unknown option 'bw' for file"):
        parse_topology(f"file:{path},bw=1GB/s")


ASTRA_YAML = """\
topology: [ Ring, FullyConnected, Switch ]
npus_count: [ 4, 2, 3 ]
bandwidth: [ 200.0, 100.0, 50.0 ]
latency: [ 100.0, 200.0, 500.0 ]
"""


def test_astrasim_yaml_becomes_a_stack_with_gib(tmp_path: Path) -> None:
    t = load_topology_file(_write(tmp_path, "Ring_FullyConnected_Switch.yml", ASTRA_YAML))
    assert t.name == "stack"
    assert t.shape == (4, 2, 3) and t.dim_kinds == ("ring", "fc", "switch")
    by_dim = {lk.dim: (lk.bandwidth_bytes_per_ns, lk.latency_ns) for lk in t.links}
    assert by_dim[0][0] == pytest.approx(200 * 2**30 / 1e9) and by_dim[0][1] == 100.0
    assert by_dim[1][0] == pytest.approx(100 * 2**30 / 1e9) and by_dim[1][1] == 200.0
    assert by_dim[2][0] == pytest.approx(53.6870912)  # 50 "GB/s" = 50 * 2^30 B/s
    assert t.spec == (
        "stack:ring4*fc2*switch3,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[100ns,200ns,500ns]"
    )
    expected = parse_topology(
        "stack:ring4*fc2*switch3,bw=[200GiB/s,100GiB/s,50GiB/s],lat=[100ns,200ns,500ns]"
    )
    assert t == expected


def test_astrasim_single_dimension_and_scalars(tmp_path: Path) -> None:
    text = "topology: Switch\nnpus_count: 8\nbandwidth: 50\nlatency: 0\n"
    t = load_topology_file(_write(tmp_path, "sw.yaml", text))
    assert t.num_npus == 8 and t.num_switches == 1


def _error(tmp_path: Path, name: str, text: str) -> SpecError:
    path = _write(tmp_path, name, text)
    with pytest.raises(SpecError) as info:
        load_topology_file(path)
    err = info.value
    assert err.pos is not None and err.pos.file == path
    return err


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1, bandwidth: 25}\n", 3, "needs a unit"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 9}\n", 3, "links[0].dst: 9 is out of range"),
        ("npus: 4\nlinks:\n  - {src: 0}\n", 3, "missing 'dst'"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 0}\n", 3, "to itself"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1, colour: red}\n", 3, "unknown key 'colour'"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1, bidirectional: 2}\n", 3, "true or false"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1}\nfail: [0-2]\n", 4, "fail[0]: no link between"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1}\nfail: [0~2]\n", 4, "is not A-B"),
        ("npus: 1\nlinks: []\n", 1, "npus: 1 is out of range"),
        ("npus: four\n", 1, "expected an integer"),
        ("links: []\n", 1, "missing 'npus'"),
        ("npus: 4\nextra: 1\n", 2, "unknown key 'extra'"),
        ("npus: 4\nlinks: {a: 1}\n", 2, "expected a list"),
        ("npus: 4\ndefaults: {bandwidth: 1}\n", 2, "needs a unit"),
        ("npus: 4\nlinks:\n  - {src: 0, dst: 1\n", 4, "invalid YAML"),
        ("hello: 1\n", 1, "unrecognised topology file"),
        ("- 1\n- 2\n", 1, "a topology file is a mapping"),
        ("topology: [Ring]\nnpus_count: [4, 2]\nbandwidth: [1]\nlatency: [1]\n", 1, "one entry"),
        ("topology: [Bus]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n", 1, "unknown dim"),
        ("topology: [Ring]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [1]\n", 2, "integer > 1"),
        (
            "topology: [Ring]\nnpus_count: [4]\nbandwidth: [0]\nlatency: [1]\n",
            3,
            "1 KB/s to 1 EB/s",
        ),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1.0e+308]\nlatency: [1]\n", 3, "1 EB/s"),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [-1]\n", 4, "0 to 1e+12 ns"),
        (
            "topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1.0e+308]\n",
            4,
            "0 to 1e+12",
        ),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [x]\nlatency: [1]\n", 3, "a number"),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\n", 1, "missing 'latency'"),
    ],
)
def test_yaml_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    err = _error(tmp_path, "bad.yaml", text)
    assert fragment in err.message
    assert err.pos is not None and err.pos.line == line, str(err)
    assert str(err).startswith(f"{err.pos.file}:{line}:")


def test_json_errors_have_lines(tmp_path: Path) -> None:
    err = _error(tmp_path, "bad.json", '{"npus": 3,\n "links": [\n  {"src": 0, "dst": 7}]}\n')
    assert "links[0].dst" in err.message and err.pos is not None and err.pos.line == 3
    err = _error(tmp_path, "bad.json", '{"npus": 3,\n "links": [}\n')
    assert "invalid JSON" in err.message and err.pos is not None and err.pos.line == 2


def test_missing_and_wrong_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read topology file"):
        load_topology_file(str(tmp_path / "none.yaml"))
    with pytest.raises(SpecError, match="must end in"):
        load_topology_file(_write(tmp_path, "net.txt", COLLC_YAML))


def test_disconnected_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "d.yaml", "npus: 3\nlinks:\n  - {src: 0, dst: 1, bidirectional: true}\n"
    )
    with pytest.raises(TopologyError, match="NPU 2 has no links"):
        load_topology_file(path)
    path = _write(
        tmp_path, "d2.yaml", "npus: 3\nlinks:\n  - {src: 0, dst: 1}\n  - {src: 1, dst: 2}\n"
    )
    with pytest.raises(TopologyError, match="NPU 1 cannot reach NPU 0"):
        load_topology_file(path)
