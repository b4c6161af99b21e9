"""Fusion as msccl-tools fuses (issue 27, item 4): a plain receive fuses with a send of what it
received even when other operations also read the slot (msccl-tools' rcs takes any successor),
a reducing receive only with its single dependant; the fused XML stays race-free when read
back."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

import collc.exporters  # noqa: F401  (installs the writer behind XML())
from backends.msccl_xml import XmlOptions, program_to_xml
from chakra_ir import ProgramBuilder, Slice
from chakra_ir.collective import custom_collective
from chakra_ir.verify import verify
from mscclang_frontend import compile_file, hooks
from mscclang_frontend.xml import read_xml
from tests.msccl_xml.programs import I, O

TREE = Path(__file__).parent.parent / "mscclang" / "programs" / "broadcast_tree.py"


def _types(text: str) -> Counter[str]:
    return Counter(str(s.get("type")) for s in ET.fromstring(text).iter("step"))


@pytest.mark.parametrize(("argv", "rcs"), [(("7", "3", "1"), 6), (("15", "1", "1"), 6)])
def test_tree_broadcast_fuses_like_msccl_tools(argv: tuple[str, ...], rcs: int) -> None:
    # Every inner rank receives each chunk and forwards it to two children: one of the two
    # sends fuses with the receive (msccl-tools' counts: 6 for both shapes).
    text = hooks.emit_xml(compile_file(TREE, argv))
    assert text is not None
    assert _types(text)["rcs"] == rcs
    verify(read_xml(text).program)


def _fan_out(reduce: bool) -> str:
    """Rank 0 sends a chunk to 1, which forwards it to 2 and 3 (after reducing its own in)."""
    n = 4
    pre = [[((0, 1 << r),)] for r in range(n)]
    got = ((0, 3),) if reduce else ((0, 1),)
    post = [[None], [got], [got], [got]]
    c = custom_collective(n, pre, [[x[0]] if x[0] else [None] for x in post], name="fan")
    b = ProgramBuilder(c, auto_deps=True)
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(I, 0), reduce=reduce)
    b.copy(1, Slice(I, 0), Slice(O, 0))
    for d in (2, 3):
        b.send(1, d, Slice(I, 0))
        b.recv(d, 1, Slice(O, 0))
    p = b.build()
    verify(p)
    return program_to_xml(p, XmlOptions(coll="custom"))


def test_receive_with_several_readers_fuses_into_rcs() -> None:
    text = _fan_out(reduce=False)
    assert _types(text)["rcs"] == 1
    verify(read_xml(text).program)


def test_reducing_receive_with_several_readers_stays_unfused() -> None:
    text = _fan_out(reduce=True)
    types = _types(text)
    assert types["rrcs"] == types["rrs"] == 0 and types["rrc"] == 1
    verify(read_xml(text).program)


@pytest.mark.parametrize(
    ("n", "cf", "seed", "inplace"),
    [(6, 2, 833820, False), (4, 2, 209763, False), (4, 2, 437206, True), (5, 3, 819166, False)],
)
def test_written_back_fuses_the_same_steps(n: int, cf: int, seed: int, inplace: bool) -> None:
    # Random trees whose receives forward to several children: the program read back from
    # the XML is a fixed point of writing and reading (the fused send chosen does not depend
    # on how operations are numbered).
    import random

    from tests.msccl_xml.programs import tree_allreduce

    p = tree_allreduce(n, cf, random.Random(seed), inplace=inplace)
    q = read_xml(program_to_xml(p)).program
    verify(q)
    assert read_xml(program_to_xml(q)).program == q
