"""``Check()``: whether every output slot of the active program holds what its collective
requires (a custom collective's own ``check``); each wrong slot is printed, as msccl-tools does,
and the first one is the error, placed at the call that last wrote that slot.

`wrong_outputs` is the same comparison as data, in the program's own (logical) indices; the
lowering uses it to say what a program computes wrongly when its compiled form fails the
verifier's postcondition.
"""

from __future__ import annotations

from dataclasses import dataclass

from chakra_ir.collective import Contents, contributions, describe
from mscclang_frontend.msccl_program import COPY, ProgramState, RecordedOp
from mscclang_frontend.msccl_types import BufferName, slot_contents
from mscclang_frontend.values import ApiError, UserInstance


@dataclass(frozen=True)
class WrongSlot:
    """Output slot ``index`` (logical) of ``rank`` holds ``have`` where ``want`` belongs;
    ``writer`` is the recorded copy or reduce that last wrote it (None: nothing did)."""

    rank: int
    index: int
    have: Contents | None
    want: Contents | None
    writer: RecordedOp | None

    def describe(self) -> str:
        """``rank 0 output chunk 2 holds X instead of Y (chunk(1,2) is missing); the reduce
        at line 24 wrote it last``."""
        held = "nothing" if self.have is None else describe(self.have)
        text = (
            f"rank {self.rank} output chunk {self.index} holds {held} instead of "
            f"{describe(self.want)}{_difference(self.have, self.want)}"
        )
        w = self.writer
        if w is None:
            return text + "; no copy or reduce wrote it"
        what = "copy" if w.kind == COPY else "reduce"
        peer = f" from rank {w.src_rank}" if w.src_rank != w.dst_rank else ""
        return f"{text}; the {what}{peer} at line {w.line} wrote it last"


def _difference(have: Contents | None, want: Contents | None) -> str:
    if have is None or want is None:
        return ""
    h = set(contributions(have))
    w = set(contributions(want))
    if len(h) == 1 and len(w) == 1:
        return ""
    parts = []
    missing = sorted(w - h)
    extra = sorted(h - w)
    if missing:
        parts.append(_chunks(missing) + (" is" if len(missing) == 1 else " are") + " missing")
    if extra:
        parts.append(_chunks(extra) + (" does" if len(extra) == 1 else " do") + " not belong")
    return f" ({'; '.join(parts)})" if parts else ""


def more_wrong(n: int) -> str:
    """`` (3 more output chunks are wrong)``, or "" for none."""
    if n <= 0:
        return ""
    return f" ({n} more output chunk{'s are' if n > 1 else ' is'} wrong)"


def _chunks(items: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"chunk({r},{i})" for r, i in items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def last_writer(prog: ProgramState, rank: int, key: object, index: int) -> RecordedOp | None:
    """The last recorded operation that wrote physical slot ``index`` of ``rank``'s ``key``."""
    for op in reversed(prog.ops):
        if (
            op.dst_rank == rank
            and op.dst_buf == key
            and op.dst_index <= index < op.dst_index + op.size
        ):
            return op
    return None


def wrong_outputs(prog: ProgramState) -> list[WrongSlot]:
    """Every output slot of a program over a standard collective (or one with an explicit
    expectation, SendRecv) that does not hold what the collective requires, rank by rank."""
    wrong: list[WrongSlot] = []
    for r in range(prog.num_ranks):
        if prog.expected is not None:
            wants = [slot_contents(v) for v in prog.expected[r]]
        elif prog.base is not None:
            wants = list(prog.base.expected_output(r))
        else:
            return []
        outputs = prog.logical_slots(r, BufferName.output)
        for j, want in enumerate(wants):
            have = slot_contents(outputs[j])
            if want is not None and have != want:
                key, pi = prog.physical(r, BufferName.output, j)
                wrong.append(WrongSlot(r, j, have, want, last_writer(prog, r, key, pi)))
    return wrong


def check(prog: ProgramState) -> bool:
    """Run ``Check()`` on ``prog``: True, or an `ApiError` naming the first wrong output slot
    (every wrong one is printed first), placed at the call that last wrote it."""
    rt = prog.api.runtime
    prog.check_called = True
    if prog.base is None and prog.expected is None:
        assert isinstance(prog.collective, UserInstance)
        result = rt.call(rt.get_attr(prog.collective, "check"), [prog], {})
        if not result:
            raise ApiError("Check() failed: the custom collective's check() returned False")
        prog.check_snapshot = [
            list(prog.logical_slots(r, BufferName.output)) for r in range(prog.num_ranks)
        ]
        return True
    wrong = wrong_outputs(prog)
    if not wrong:
        return True
    for w in wrong:
        rt.write(
            f"Rank {w.rank} chunk {w.index} is incorrect: expected {describe(w.want)}, "
            f"found {describe(w.have)}\n"
        )
    line, _ = rt.call_position()
    first = wrong[0]
    more = more_wrong(len(wrong) - 1)
    at = (first.writer.line, first.writer.col) if first.writer is not None else None
    raise ApiError(f"Check() at line {line} failed: {first.describe()}{more}", at=at)
