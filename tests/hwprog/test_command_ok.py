"""The fast command check accepts exactly what the detailed one accepts."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.hwprog.errors import HwProgError
from backends.hwprog.read import check_command, command_ok

VALID: list[dict[str, Any]] = [
    {
        "id": 3,
        "op": "send",
        "waits": [1, 2],
        "bytes": 4096,
        "src": ["input", 0, 2],
        "to": 5,
        "flow": 7,
        "routing": "dor",
        "ports": [1, 2],
        "vcs": [0, 1],
        "after": 1,
    },
    {
        "id": 0,
        "op": "recv",
        "waits": [],
        "bytes": 1,
        "dst": ["output", 3, 1],
        "from": 2,
        "flow": 0,
        "reduce": True,
    },
    {"id": 1, "op": "copy", "waits": [0], "src": ["input", 0, 1], "dst": ["scratch", 0, 1]},
    {"id": 2, "op": "reduce", "waits": [], "src": ["scratch", 1, 4], "dst": ["output", 0, 4]},
]
ODD = st.sampled_from(
    [-1, 0, 1, 2, True, False, None, 1.5, "1", "dor", "source", "input", [], [0], [-1], [True],
     [1, 2], ["input", 0, 1], ["input", -1, 1], ["input", 0, 0], ["disk", 0, 1], {}, "send"]
)  # fmt: skip


def detailed(c: object) -> bool:
    try:
        check_command(c, "x")
    except HwProgError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(range(len(VALID))),
    st.lists(
        st.tuples(st.sampled_from(["set", "drop", "add"]), st.sampled_from(list(VALID[0]) + list(VALID[1]) + ["dst", "extra"]), ODD),
        max_size=3,
    ),
)  # fmt: skip
def test_fast_check_agrees(base: int, edits: list[tuple[str, str, object]]) -> None:
    c = copy.deepcopy(VALID[base])
    for how, key, value in edits:
        if how == "drop":
            c.pop(key, None)
        else:
            c[key] = value
    assert command_ok(c) == detailed(c)


def test_valid_commands_pass_both() -> None:
    for c in VALID:
        assert command_ok(c) and detailed(c)
    assert not command_ok([]) and not detailed([])
