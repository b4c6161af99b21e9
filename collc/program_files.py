"""The commands' side of the compact program file (`chakra_ir.progfile`): synthesize into
one, verify, simulate and show one rank of one, in either form (docs/symmetric.md).

``collc synthesize -o NAME.collcp`` writes a program file instead of an ET folder. With
``--form auto`` (the default) it holds the symmetric form whenever TACOS can synthesize the
request in orbit form (`tacos.symmetric.symmetry_of`), else the full program; ``--form full``
and ``--form symmetric`` force one (symmetric fails when the request is not symmetric).
ET folders are written exactly as before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_ir.program import Program
from chakra_ir.symmetric import SymmetricProgram
from collc.request import Request
from topologies.errors import CollcError

if TYPE_CHECKING:
    from collc.exporters import ExportOptions


def synthesize_file(req: Request, out: Path, form: str) -> dict[str, Any]:
    """Synthesize ``req`` into the program file ``out`` in ``form``; the summary as JSON."""
    from chakra_ir.outdir import chunk_bytes_for
    from chakra_ir.progfile import write_program_file
    from chakra_ir.verify_symmetric import verify_symmetric
    from collc import pipeline
    from collc.limits import check_times
    from collc.producers import ALGORITHMS
    from tacos.bounds import lower_bounds
    from tacos.symmetric import symmetry_of, synthesize_symmetric
    from topologies import parse_topology

    t0 = time.perf_counter()
    topology = parse_topology(req.topology)
    check_times(topology, req.size_bytes)
    symmetric = None
    if form != "full" and req.algorithm == "tacos" and not req.payload and not req.groups:
        algo = ALGORITHMS[req.algorithm](req, None)
        collective = pipeline.make_collective(req, algo, topology)
        if symmetry_of(topology, collective) is not None:
            chunk = chunk_bytes_for(collective, req.size_bytes)
            cost = req.cost_model()
            tries = [
                synthesize_symmetric(collective, topology, chunk, seed=s, cost=cost)
                for s in range(req.seed, req.seed + max(1, req.seeds))
            ]
            symmetric = min(tries, key=lambda p: p.planned_ns)
            verify_symmetric(symmetric)
            write_program_file(
                out,
                symmetric,
                chunk_bytes=chunk,
                topology=topology.spec,
                completion=req.completion,
            )
            estimate = symmetric.planned_ns
            bound = lower_bounds(
                req.collective, topology, req.size_bytes, chunks_per_npu=req.chunks_per_npu
            ).best
            ops, ranks, template = symmetric.num_ops, symmetric.num_ranks, symmetric.template_len
    if symmetric is None:
        if form == "symmetric":
            raise CollcError(
                f"{req.collective.value} on {topology.spec} has no symmetric form (docs/"
                "symmetric.md: TACOS, All-Gather or All-Reduce over every NPU of a ring, torus, "
                "hypercube or fully connected network without failures)"
            )
        result = pipeline.synthesize(req)
        estimate = result.estimated_ns or 0.0
        write_program_file(
            out,
            result.program,
            chunk_bytes=result.manifest.chunk_bytes,
            topology=topology.spec,
            planned_ns=estimate,
            completion=req.completion,
        )
        bound = result.bound
        ops, ranks, template = result.program.num_ops, result.program.num_ranks, 0
    return {
        "file": str(out),
        "form": "symmetric" if symmetric is not None else "full",
        "topology": topology.spec,
        "collective": req.collective.value,
        "ranks": ranks,
        "operations": ops,
        "template_operations": template,
        "estimated_ns": estimate,
        "lower_bound": bound[0],
        "lower_bound_ns": bound[1],
        "ratio": estimate / bound[1] if bound[1] > 0 and estimate else None,
        "seconds": time.perf_counter() - t0,
        "bytes": out.stat().st_size,
    }


def verify_file(path: Path) -> dict[str, Any]:
    """Verify a program file (the symmetric proof for the symmetric form); raises VerifyError."""
    from chakra_ir.progfile import read_program_file
    from chakra_ir.verify import verify, verify_routes
    from chakra_ir.verify_symmetric import verify_symmetric
    from topologies import parse_topology

    pf = read_program_file(path)
    p = pf.program
    if isinstance(p, SymmetricProgram):
        report = verify_symmetric(p)
    else:
        report = verify(p)
        if pf.topology:
            verify_routes(p, parse_topology(pf.topology))
    return {
        "file": str(path),
        "ok": True,
        "form": "symmetric" if isinstance(p, SymmetricProgram) else "full",
        "collective": p.collective.kind.value,
        "ranks": report.ranks,
        "operations": report.operations,
        "messages": report.messages,
        "checks": list(report.checks),
    }


def simulate_file(path: Path, completion: str | None) -> dict[str, Any]:
    """Simulate a program file on its topology under the congestion model (the symmetric form
    by its template replay, exact there: docs/symmetric.md)."""
    from backends.sim import simulate
    from chakra_ir.progfile import read_program_file
    from chakra_ir.verify import verify
    from chakra_ir.verify_symmetric import verify_symmetric
    from collc.request import cost_model_for
    from tacos.symmetric_timing import replay_symmetric
    from topologies import parse_topology

    pf = read_program_file(path)
    if not pf.topology:
        raise CollcError(f"{path}: the program file names no topology to simulate on")
    topology = parse_topology(pf.topology)
    cost = cost_model_for(completion or pf.completion)
    p = pf.program
    t0 = time.perf_counter()
    if isinstance(p, SymmetricProgram):
        verify_symmetric(p)
        ns = replay_symmetric(p, topology, pf.chunk_bytes, cost=cost)
    else:
        verify(p)
        ns = simulate(p, topology, pf.chunk_bytes, cost=cost).finish_ns
    return {
        "file": str(path),
        "form": "symmetric" if isinstance(p, SymmetricProgram) else "full",
        "model": "congestion",
        "topology": topology.spec,
        "finish_ns": ns,
        "estimated_ns": pf.planned_ns or None,
        "completion": cost.completion.value,
        "wall_seconds": time.perf_counter() - t0,
    }


def rank_text(path: Path, rank: int | None) -> str:
    """A program file in the stable text form, whole or (``rank``) only that rank; a
    symmetric file translates that one rank's operations alone (memory for one rank)."""
    import numpy as np

    from chakra_ir.progfile import read_program_file
    from chakra_ir.text import format_program

    p = read_program_file(path).program
    n = p.num_ranks
    if rank is None:
        return format_program(p.expand() if isinstance(p, SymmetricProgram) else p)
    if not 0 <= rank < n:
        raise CollcError(f"--rank {rank} is outside 0..{n - 1}")
    if isinstance(p, SymmetricProgram):
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[rank + 1 :] = p.template_len
        one = Program.from_columns(
            p.collective,
            offsets,
            p.rank_columns(rank),
            p.dep_offsets,
            p.deps,
            p.buffer_sizes(),
            name=p.name,
        )
    else:
        one = p
    return format_rank(one, rank)


def format_rank(one: Program, rank: int) -> str:
    """One rank of ``one`` in the stable text form (the header lines, then that rank)."""
    from chakra_ir.ops import format_op
    from chakra_ir.text import format_collective

    if not 0 <= rank < one.num_ranks:
        raise CollcError(f"--rank {rank} is outside 0..{one.num_ranks - 1}")
    i, o, sc = (int(x) for x in one.buffer_sizes[rank])
    lines = [f"program {one.name or '-'}", format_collective(one.collective)]
    lines.append(f"rank {rank} input={i} output={o} scratch={sc}")
    lines += [f"  {local} {format_op(op)}" for local, op in enumerate(one.ops(rank))]
    return "\n".join(lines) + "\n"


EXPAND_LIMIT = 20_000_000
"""Operations up to which `export_file` expands a symmetric program for a target other than
chakra-et (about 2 GiB of columns); chakra-et streams any size."""


def export_file(
    path: Path,
    out: Path,
    target: str = "chakra-et",
    *,
    topology: str | None = None,
    force: bool = False,
    options: ExportOptions | None = None,
) -> list[Path]:
    """Export a program file as ``collc export`` does an ET folder. chakra-et writes the
    per-rank Chakra ET files, a symmetric program streamed one rank at a time
    (`chakra_ir.symmetric_export`); the other targets take the full program (a symmetric one
    expanded, refused above `EXPAND_LIMIT` operations) and a manifest made from the file's
    header."""
    from chakra_ir.et.codec import write_et_files
    from chakra_ir.outdir import Manifest
    from chakra_ir.progfile import read_program_file
    from chakra_ir.symmetric_export import write_symmetric_et_files
    from collc.exporters import EXPORTERS, ExportOptions
    from collc.folders import topology_of

    pf = read_program_file(path)
    p = pf.program
    prefix = p.collective.kind.value
    if target == "chakra-et":
        if isinstance(p, SymmetricProgram):
            return write_symmetric_et_files(p, out, prefix, pf.chunk_bytes)
        return write_et_files(p, out, prefix, pf.chunk_bytes)
    if not pf.topology and topology is None:
        raise CollcError(f"{path}: the program file names no topology; pass --topology")
    if isinstance(p, SymmetricProgram):
        if p.num_ops > EXPAND_LIMIT:
            raise CollcError(
                f"{path}: {target} needs the full program, {p.num_ops:,} operations (more than "
                f"{EXPAND_LIMIT:,}); --target chakra-et streams any size"
            )
        p = p.expand()
    manifest = Manifest(
        collective=p.collective,
        topology=pf.topology or str(topology),
        size_bytes=p.collective.size_chunks * pf.chunk_bytes,
        chunk_bytes=pf.chunk_bytes,
        et_prefix=prefix,
        algorithm=p.name,
        completion=pf.completion,
    )
    topo = topology_of(manifest, topology, force=force)
    return EXPORTERS[target](p, topo, manifest, out, options or ExportOptions())
