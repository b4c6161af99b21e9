"""Per-rank Chakra ET files of a `SymmetricProgram`, streamed: one rank translated, laid out
and written at a time, so memory holds one rank's operations, never the whole program.

A rank's file depends on that rank's operations alone: `chakra_ir.et.layout.comm_tags`
numbers messages per ordered pair of ranks, and the pairs of rank ``r``'s messages are
``(r, r + g)`` for its sends and ``(r - g, r)`` for its receives, whose numbering in ``r``'s
program order is the same in the whole program. The files are byte for byte those of
`chakra_ir.et.codec.write_et_files` on the expanded program (the tests compare them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from chakra_ir.et import layout
from chakra_ir.et.codec import write_rank_pieces
from chakra_ir.et.fastwrite import serialize_nodes
from chakra_ir.program import Program
from chakra_ir.symmetric import SymmetricProgram


def rank_program(sp: SymmetricProgram, rank: int) -> Program:
    """A `Program` over every rank holding only ``rank``'s operations (the others empty),
    with its single-link route hints."""
    n, t = sp.num_ranks, sp.template_len
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[rank + 1 :] = t
    cols = sp.rank_columns(rank)
    sends = cols["kind"] == 0
    route_offsets = np.concatenate([[0], np.cumsum(np.where(sends, 2, 0))])
    npu = sp.collective.npu
    peers = cols["peer"][sends].astype(np.int64)
    route_nodes = np.stack(
        [np.full(len(peers), npu(rank)), np.asarray([npu(int(q)) for q in peers])], axis=1
    ).reshape(-1)
    return Program.from_columns(
        sp.collective,
        offsets,
        cols,
        sp.dep_offsets,
        sp.deps,
        sp.buffer_sizes(),
        route_offsets,
        route_nodes,
        name=sp.name,
    )


def iter_symmetric_rank_files(
    sp: SymmetricProgram, chunk_bytes: int, *, reduce_micros: int = 0
) -> Iterator[tuple[int, list[bytes | memoryview]]]:
    """Each rank's ET file content as pieces, one rank at a time, ranks in order."""
    for r in range(sp.num_ranks):
        one = rank_program(sp, r)
        lay = layout.ProgramLayout.of(one, chunk_bytes, reduce_micros)
        pieces: list[bytes | memoryview] = [
            layout.metadata_message(one, r, chunk_bytes, reduce_micros, lay.coll_json)
        ]
        if sp.template_len:
            table, _ = layout.node_table(lay, 0, one.num_ops)
        else:
            table = layout.idle_table(lay, r)
        data, _ = serialize_nodes(table)
        pieces.append(memoryview(data.data))
        yield r, pieces


def write_symmetric_et_files(
    sp: SymmetricProgram,
    out_dir: str | os.PathLike[str],
    prefix: str,
    chunk_bytes: int,
    *,
    reduce_micros: int = 0,
) -> list[Path]:
    """Write ``<out_dir>/<prefix>.<rank>.et`` for every rank of ``sp`` (each under a
    temporary name, renamed), one rank in memory at a time; the paths by rank."""
    pieces = (
        (rank, piece)
        for rank, parts in iter_symmetric_rank_files(sp, chunk_bytes, reduce_micros=reduce_micros)
        for piece in parts
    )
    return write_rank_pieces(out_dir, prefix, sp.num_ranks, pieces)
