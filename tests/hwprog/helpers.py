"""Programs for the hardware-program tests, synthesized once per session."""

from __future__ import annotations

from functools import cache

from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import Manifest
from chakra_ir.program import Program
from collc import pipeline
from topologies import Topology, parse_topology


@cache
def result(topology: str, collective: str, algorithm: str, size: int = 1 << 20) -> pipeline.Result:
    req = pipeline.Request(topology, CollectiveKind(collective), algorithm, size)
    return pipeline.synthesize(req)


def made(
    topology: str, collective: str, algorithm: str, size: int = 1 << 20
) -> tuple[Program, Topology, Manifest]:
    res = result(topology, collective, algorithm, size)
    return res.program, parse_topology(topology), res.manifest


def target_of(topology: str) -> str:
    return "mesh" if topology.startswith("mesh") else "torus"
