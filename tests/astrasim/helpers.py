"""Programs, bundles and readers shared by the ASTRA-sim exporter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from backends.astrasim import AstraOptions, export
from baselines import ALGORITHMS
from chakra_ir import Collective, CollectiveKind, Program
from chakra_ir.et import et_def_pb2 as pb
from tests.et.helpers import pb_messages
from topologies import Topology, parse_topology

AR, AG, RS, A2A = (
    CollectiveKind.ALLREDUCE,
    CollectiveKind.ALLGATHER,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALLTOALL,
)
CHUNK = 4096


def baseline(
    kind: CollectiveKind,
    topology: Topology,
    *,
    algorithm: str = "ring",
    placement: tuple[int, ...] = (),
) -> Program:
    """A baseline program for ``kind`` over the placed NPUs (all of them by default)."""
    entry = ALGORITHMS[algorithm]
    n = len(placement) if placement else topology.num_npus
    cf = entry.chunks_per_rank(kind, n)
    return entry.generate(Collective(kind, n, cf, placement=placement), topology)


def bundle(
    tmp_path: Path,
    spec: str,
    kind: CollectiveKind = AR,
    *,
    algorithm: str = "ring",
    placement: tuple[int, ...] = (),
    **options: Any,
) -> tuple[Path, Program, Topology, list[Path]]:
    """Export a baseline into ``tmp_path/bundle``; returns the folder, program, topology and
    the files export reported."""
    t = parse_topology(spec)
    p = baseline(kind, t, algorithm=algorithm, placement=placement)
    out = tmp_path / "bundle"
    files = export(
        p, t, out, AstraOptions(chunk_bytes=options.pop("chunk_bytes", CHUNK), **options)
    )
    return out, p, t, files


def load_yaml(path: Path) -> Any:
    with open(path) as f:
        return yaml.safe_load(f)


def load_json(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)


def workload_node(path: Path) -> tuple[pb.GlobalMetadata, pb.Node]:
    """The GlobalMetadata and the single node of a workload ET, read with the bindings."""
    meta, nodes = pb_messages(path.read_bytes())
    assert len(nodes) == 1
    return meta, nodes[0]


def attrs(node: pb.Node) -> dict[str, tuple[str, Any]]:
    """name -> (oneof member, value) of a node's attributes."""
    out: dict[str, tuple[str, Any]] = {}
    for a in node.attr:
        member = a.WhichOneof("value")
        assert member is not None
        value = getattr(a, member)
        if member.endswith("_list"):
            value = list(value.values)
        out[a.name] = (member, value)
    return out
