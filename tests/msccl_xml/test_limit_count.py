"""A program no channel spreading can fit is refused by a count before the spreading search
(issue 27, item 6): one rank cannot send another more than ``max_channels *
max_steps_per_tb`` messages, since each channel has one threadblock sending to that peer."""

from __future__ import annotations

import pytest

import backends.msccl_xml.compile as compile_mod
from backends.msccl_xml import XmlLimitError, XmlOptions, program_to_xml
from chakra_ir import Collective, CollectiveKind, Program, ProgramBuilder, Slice
from tests.msccl_xml.programs import I, O

SMALL = XmlOptions(max_channels=2, max_steps_per_tb=4)


def one_pair(n: int) -> Program:
    """Two ranks; each sends its n chunks to the other one at a time (n messages a pair)."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLGATHER, 2, n), auto_deps=True)
    for r in range(2):
        for j in range(n):
            b.copy(r, Slice(I, j), Slice(O, r * n + j))
            b.send(r, 1 - r, Slice(I, j))
            b.recv(1 - r, r, Slice(O, r * n + j))
    return b.build()


def test_too_many_messages_for_one_peer_are_refused_without_a_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[int] = []
    real = compile_mod._build

    def counting(*args: object, **kwargs: object) -> object:
        builds.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compile_mod, "_build", counting)
    with pytest.raises(XmlLimitError) as info:
        program_to_xml(one_pair(9), SMALL)
    assert info.value.limit == "steps"
    assert info.value.message.startswith(
        "rank 0 sends 9 messages to rank 1, and the runtime can hold at most 8 (2 channels, "
        "each with one threadblock sending to rank 1, of at most 4 steps each)"
    )
    assert builds == []


def test_a_program_within_the_count_still_gets_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[int] = []
    real = compile_mod._build

    def counting(*args: object, **kwargs: object) -> object:
        builds.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compile_mod, "_build", counting)
    # 2 messages per direction (and 2 local copies) fit after spreading over two channels.
    text = program_to_xml(one_pair(2), XmlOptions(max_channels=2, max_steps_per_tb=4))
    assert 'nchannels="2"' in text
    assert len(builds) >= 2
