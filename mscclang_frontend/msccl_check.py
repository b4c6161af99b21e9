"""``Check()``: whether every output slot of the active program holds what its collective
requires (a custom collective's own ``check``); each wrong slot is printed, as msccl-tools does,
and the first one is the error.
"""

from __future__ import annotations

from chakra_ir.collective import describe
from mscclang_frontend.msccl_program import ProgramState
from mscclang_frontend.msccl_types import BufferName, Slot, describe_slot, slot_contents
from mscclang_frontend.values import ApiError, UserInstance


def check(prog: ProgramState) -> bool:
    """Run ``Check()`` on ``prog``: True, or an `ApiError` naming the first wrong output slot
    (every wrong one is printed first)."""
    rt = prog.api.runtime
    prog.check_called = True
    if prog.expected is not None:
        return _check_expected(prog, prog.expected)
    if prog.base is None:
        assert isinstance(prog.collective, UserInstance)
        result = rt.call(rt.get_attr(prog.collective, "check"), [prog], {})
        if not result:
            raise ApiError("Check() failed: the custom collective's check() returned False")
        prog.check_snapshot = [
            list(prog.logical_slots(r, BufferName.output)) for r in range(prog.num_ranks)
        ]
        return True
    wrong: list[str] = []
    for r in range(prog.num_ranks):
        expected = prog.base.expected_output(r)
        outputs = prog.logical_slots(r, BufferName.output)
        for j, want in enumerate(expected):
            if want is None:
                continue
            have = slot_contents(outputs[j])
            if have != want:
                line = (
                    f"Rank {r} chunk {j} is incorrect: expected {describe(want)}, "
                    f"found {describe(have)}"
                )
                rt.write(line + "\n")
                wrong.append(line)
    if wrong:
        raise ApiError(
            f"Check() failed: {len(wrong)} output chunk{'s' if len(wrong) > 1 else ''} "
            f"wrong; first: {wrong[0][0].lower()}{wrong[0][1:]}"
        )
    return True


def _check_expected(prog: ProgramState, expected: list[list[Slot]]) -> bool:
    rt = prog.api.runtime
    wrong: list[str] = []
    for r in range(prog.num_ranks):
        outputs = prog.logical_slots(r, BufferName.output)
        for j, want in enumerate(expected[r]):
            have = slot_contents(outputs[j])
            if want is not None and have != want.contents:
                line = (
                    f"Rank {r} chunk {j} is incorrect: expected {describe_slot(want)}, "
                    f"found {describe(have)}"
                )
                rt.write(line + "\n")
                wrong.append(line)
    if wrong:
        raise ApiError(
            f"Check() failed: {len(wrong)} output chunk{'s' if len(wrong) > 1 else ''} "
            f"wrong; first: {wrong[0][0].lower()}{wrong[0][1:]}"
        )
    return True
