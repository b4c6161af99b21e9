"""Helpers for the baseline tests: the correctness check and message statistics."""

from __future__ import annotations

from chakra_ir import Buffer, Copy, FlowOut, Program, Recv, Reduce, Send
from chakra_ir.verify import verify


def check(program: Program) -> None:
    """Raise ``VerifyError`` unless ``program`` is correct (structure, progress, semantics,
    races)."""
    verify(program)


def send_stats(program: Program, rank: int) -> list[tuple[int, int]]:
    """(peer, slots) of every send of ``rank``, in program order."""
    return [(op.peer, op.src.count) for op in program.ops(rank) if isinstance(op, Send)]


def writes_input(program: Program) -> bool:
    """Whether any operation writes a slot of an input buffer."""
    for _, _, op in program:
        dst = op.dst if isinstance(op, Recv | Copy | Reduce | FlowOut) else None
        if dst is not None and dst.buffer is Buffer.INPUT:
            return True
    return False
