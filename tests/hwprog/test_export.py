"""The mesh/torus hardware program: schema, every message once, no mutation, refusals."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest

from backends.hwprog import (
    HwOptions,
    HwProgError,
    build_hwprog,
    export,
    read_hwprog,
)
from backends.hwprog.export import FORMAT
from chakra_ir.program import OpKind
from tests.hwprog.helpers import made, target_of
from topologies import parse_topology

CASES = [
    ("mesh:4x4", "allreduce", "tacos"),
    ("torus:4x4", "allreduce", "tacos"),
    ("torus:4x4", "allgather", "ring"),
    ("mesh:4x4", "alltoall", "direct"),
    ("torus:4x4", "allreduce", "rhd"),
    ("mesh:4x4", "allreduce", "rhd"),
]


@pytest.mark.parametrize(("topo", "coll", "algo"), CASES)
def test_exported_programs_validate_and_hold_every_message_once(
    tmp_path: Path, topo: str, coll: str, algo: str
) -> None:
    program, topology, manifest = made(topo, coll, algo)
    files = export(program, topology, manifest, tmp_path / "hw", target_of(topo))
    assert files[0].name == "hwprog.json"
    hw = read_hwprog(tmp_path / "hw", schema=True)  # jsonschema on every file
    assert hw == build_hwprog(program, topology, manifest, target_of(topo))
    for doc in hw.npus:
        FORMAT.check(doc, "npu", "npu_file")
    sends = [c for d in hw.npus for c in d["commands"] if c["op"] == "send"]
    recvs = [c for d in hw.npus for c in d["commands"] if c["op"] == "recv"]
    n_sends = int(np.count_nonzero(program.kind == OpKind.SEND))
    assert sorted(c["flow"] for c in sends) == list(range(n_sends))
    assert sorted(c["flow"] for c in recvs) == list(range(n_sends))
    assert hw.header["counts"]["messages"] == n_sends
    assert sum(len(d["commands"]) for d in hw.npus) == program.num_ops
    # Each send carries its program bytes and a route to its receiver.
    for c in sends:
        assert c["bytes"] == c["src"][2] * manifest.chunk_bytes
        assert len(c["ports"]) == len(c["vcs"]) >= 1
    assert hw.header["deadlock"]["acyclic"]


def test_commands_wait_only_for_earlier_commands() -> None:
    program, topology, manifest = made("torus:4x4", "allreduce", "tacos")
    hw = build_hwprog(program, topology, manifest, "torus")
    for doc in hw.npus:
        seen: set[int] = set()
        for c in doc["commands"]:
            assert set(c["waits"]) <= seen
            seen.add(c["id"])


def test_the_exporter_never_mutates_the_program(tmp_path: Path) -> None:
    program, topology, manifest = made("torus:4x4", "alltoall", "direct")
    before = copy.deepcopy(program)
    export(program, topology, manifest, tmp_path / "hw", "torus")
    assert program == before


def test_files_follow_the_umask_and_replace_only_hardware_programs(tmp_path: Path) -> None:
    program, topology, manifest = made("mesh:4x4", "allreduce", "rhd")
    old = os.umask(0o027)
    try:
        export(program, topology, manifest, tmp_path / "hw", "mesh")
    finally:
        os.umask(old)
    assert (tmp_path / "hw" / "hwprog.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "hw").stat().st_mode & 0o777 == 0o750
    export(program, topology, manifest, tmp_path / "hw", "mesh")  # replaces its own kind
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(HwProgError, match="not a hardware program"):
        export(program, topology, manifest, other, "mesh")
    assert (other / "keep.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    ("spec", "target"),
    [
        ("switch:8", "torus"),
        ("fc:8", "mesh"),
        ("hypercube:3", "mesh"),
        ("fred:8", "torus"),
        ("uniring:8", "torus"),
        ("stack:ring4*fc2", "torus"),
        ("mesh:4x4", "torus"),
        ("torus:4x4", "mesh"),
    ],
)
def test_other_topologies_are_refused_in_one_line(spec: str, target: str) -> None:
    program, _, manifest = made("mesh:4x4", "allreduce", "rhd")
    topology = parse_topology(spec)
    with pytest.raises(HwProgError) as e:
        build_hwprog(program, topology, manifest, target)
    msg = str(e.value)
    assert "\n" not in msg and f"--target {target}" in msg and repr(topology.spec) in msg


def test_ring_and_stacks_of_rings_are_tori() -> None:
    for spec, coll in (("ring:8", "allreduce"), ("stack:ring2*ring4", "allreduce")):
        program, topology, manifest = made(spec, coll, "rhd")
        hw = build_hwprog(program, topology, manifest, "torus")
        assert hw.header["dims"] == ["ring"] * len(hw.header["shape"])


def test_options_reach_the_header() -> None:
    program, topology, manifest = made("mesh:4x4", "allreduce", "rhd")
    o = HwOptions(
        vcs=3, packet_bytes=1024, buffer_depth=2, link_width=16, clock_ghz=2.0, router_cycles=3
    )
    h = build_hwprog(program, topology, manifest, "mesh", o).header
    assert (h["num_vcs"], h["packet_bytes"], h["buffer_depth_packets"]) == (3, 1024, 2)
    assert (h["link_width_bytes_per_cycle"], h["clock_ghz"], h["router_pipeline_cycles"]) == (
        16,
        2.0,
        3,
    )
    assert {lk["width_bytes_per_cycle"] for lk in h["links"]} == {16}
    assert {lk["latency_cycles"] for lk in h["links"]} == {1000}  # 500 ns at 2 GHz
    d = build_hwprog(program, topology, manifest, "mesh").header
    assert (d["num_vcs"], d["packet_bytes"], d["clock_ghz"]) == (1, 4096, 1.0)
    assert d["link_width_bytes_per_cycle"] == 50.0  # 50 GB/s at 1 GHz
    with pytest.raises(HwProgError, match="--vcs 0"):
        build_hwprog(program, topology, manifest, "mesh", HwOptions(vcs=0))


def test_default_buffer_depth_covers_the_credit_round_trip() -> None:
    # 50 GB/s at 1 GHz is 50 B/cycle: a 4 KiB packet takes ceil(4096 / 50) = 82 cycles; a
    # credit comes back after 2 x 500 + 1 = 1001 cycles, so 1 + ceil(1001 / 82) = 14 packets.
    from backends.hwprog.export import credit_depth

    assert credit_depth(500, 50.0, 4096, 1) == 14
    assert credit_depth(0, 50.0, 4096, 0) == 1
    program, topology, manifest = made("torus:4x4,bw=50GB/s,lat=500ns", "allreduce", "ring")
    hw = build_hwprog(program, topology, manifest, "torus", HwOptions())
    assert hw.header["buffer_depth_packets"] == 14
    given = build_hwprog(program, topology, manifest, "torus", HwOptions(buffer_depth=3))
    assert given.header["buffer_depth_packets"] == 3
