"""Corrupted ET files never surface as anything but EtDecodeError (or a decoded result)."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chakra_ir import Buffer, Collective, CollectiveKind, Hints, ProgramBuilder, Slice
from chakra_ir.et import EtDecodeError, decode_program, encode_program, parse_et
from topologies.errors import CollcError


def _files() -> list[bytes]:
    c = Collective(CollectiveKind.ALLREDUCE, 2, 2)
    b = ProgramBuilder(c, auto_deps=True, name="tiny")
    for r in range(2):
        b.send(r, 1 - r, Slice(Buffer.INPUT, r), hints=Hints((r, 9, 1 - r), 1, 2))
        b.recv(r, 1 - r, Slice(Buffer.INPUT, 1 - r), reduce=True)
        b.copy(r, Slice(Buffer.INPUT, 0, 2), Slice(Buffer.OUTPUT, 0, 2))
    return encode_program(b.build(), 64, reduce_micros=1)


FILES = _files()


@st.composite
def corrupted(draw: st.DrawFn) -> bytes:
    data = bytearray(FILES[0])
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if how == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "set":
            data[i] = draw(st.integers(0, 255))
        elif how == "cut":
            del data[i:]
        elif how == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[i : i + draw(st.integers(1, 4))]
    return bytes(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_corruption_gives_decode_errors_only(blob: bytes) -> None:
    try:
        fast = parse_et(blob, "c.et")
    except EtDecodeError as e:
        assert e.file == "c.et" and e.offset >= 0
        try:
            parse_et(blob, "c.et", fast=False)
        except EtDecodeError:
            pass
        else:  # pragma: no cover - the generic reader accepted what the fast one refused
            raise AssertionError("fast and generic readers disagree") from e
        return
    generic = parse_et(blob, "c.et", fast=False)
    assert list(fast.nodes()) == list(generic.nodes())
    with contextlib.suppress(CollcError):
        decode_program([blob, FILES[1]])


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes(blob: bytes) -> None:
    try:
        parse_et(blob, "r.et")
    except EtDecodeError as e:
        assert e.offset >= 0
