"""A shift pattern as a collc program: BookSim's ``neighbor`` and ``tornado`` traffic."""

from __future__ import annotations

from chakra_ir.collective import Buffer, Contents, custom_collective
from chakra_ir.program import Program, ProgramBuilder, Slice


def shift_program(n: int, shift: int, packets: int) -> Program:
    """Every rank sends one message of ``packets`` chunks to rank ``r + shift`` (mod n)."""
    ins: list[list[Contents | None]] = [[((i, 1 << r),) for i in range(packets)] for r in range(n)]
    outs: list[list[Contents | None]] = [
        [((i, 1 << ((r - shift) % n)),) for i in range(packets)] for r in range(n)
    ]
    b = ProgramBuilder(custom_collective(n, ins, outs, name=f"shift{shift}"))
    for r in range(n):
        b.send(r, (r + shift) % n, Slice(Buffer.INPUT, 0, packets))
        b.recv((r + shift) % n, r, Slice(Buffer.OUTPUT, 0, packets))
    return b.build()
