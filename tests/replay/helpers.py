"""Hand-built programs for the replay tests: one message over h hops, two messages through
one port, exported as hardware programs with chosen parameters."""

from __future__ import annotations

from pathlib import Path

from backends.hwprog import HwOptions, export
from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.outdir import Manifest
from chakra_ir.program import Program, ProgramBuilder, Slice
from chakra_ir.verify import verify
from topologies import parse_topology


def _manifest(c: Collective, spec: str, chunk_bytes: int, completion: str) -> Manifest:
    return Manifest(
        collective=c,
        topology=spec,
        size_bytes=chunk_bytes * c.size_chunks,
        chunk_bytes=chunk_bytes,
        et_prefix=c.kind.value,
        algorithm="hand",
        completion=completion,
    )


def one_message(hops: int) -> tuple[Program, Collective]:
    """Broadcast from NPU 0 to NPU ``hops`` of a line: one message over ``hops`` links."""
    c = Collective(CollectiveKind.BROADCAST, 2, root=0, placement=(0, hops))
    b = ProgramBuilder(c)
    b.copy(0, Slice(Buffer.INPUT, 0), Slice(Buffer.OUTPUT, 0))
    b.send(0, 1, Slice(Buffer.INPUT, 0))
    b.recv(1, 0, Slice(Buffer.OUTPUT, 0))
    return b.build(), c


def two_into_one_port() -> tuple[Program, Collective]:
    """Gather to NPU 2 of a line of 3: 0>1>2 and 1>2 share router 1's port towards 2."""
    c = Collective(CollectiveKind.GATHER, 3, root=2)
    b = ProgramBuilder(c)
    b.copy(2, Slice(Buffer.INPUT, 0), Slice(Buffer.OUTPUT, 2))
    b.send(0, 2, Slice(Buffer.INPUT, 0))
    b.send(1, 2, Slice(Buffer.INPUT, 0))
    b.recv(2, 0, Slice(Buffer.OUTPUT, 0))
    b.recv(2, 1, Slice(Buffer.OUTPUT, 1))
    return b.build(), c


def write(
    program: Program,
    spec: str,
    out: Path,
    chunk_bytes: int,
    options: HwOptions | None = None,
    *,
    completion: str = "on-arrival",
    target: str = "mesh",
) -> Path:
    verify(program)
    topology = parse_topology(spec)
    manifest = _manifest(program.collective, spec, chunk_bytes, completion)
    export(program, topology, manifest, out, target, options)
    return out
