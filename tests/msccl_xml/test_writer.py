"""The MSCCL-IR XML writer: golden files, operands, threadblocks, limits, deadlocks."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from backends.msccl_xml import (
    XmlDeadlockError,
    XmlExportError,
    XmlLimitError,
    XmlOptions,
    export,
    program_to_xml,
)
from chakra_ir import Collective, CollectiveKind, Hints, Program, ProgramBuilder, Slice
from chakra_ir.collective import custom_collective
from chakra_ir.program import COLUMNS
from chakra_ir.verify import verify
from mscclang_frontend.xml import read_xml
from tests.msccl_xml.programs import (
    I,
    O,
    S,
    alltoall,
    manual_ring_allgather,
    needs_two_buffered,
    ring_allgather,
    ring_allreduce,
    trap_reduce,
)

GOLDEN = Path(__file__).parent / "golden"

CASES: dict[str, tuple[Callable[[], Program], XmlOptions]] = {
    "ring_allgather_4.xml": (lambda: ring_allgather(4), XmlOptions()),
    "ring_allreduce_4_fused.xml": (lambda: ring_allreduce(4), XmlOptions()),
    "ring_allreduce_4_unfused.xml": (lambda: ring_allreduce(4), XmlOptions(fusion=False)),
    "alltoall_4.xml": (lambda: alltoall(4), XmlOptions()),
    "allreduce_4_inplace.xml": (lambda: ring_allreduce(4, inplace=True), XmlOptions()),
    "manual_allgather_3.xml": (lambda: manual_ring_allgather(3), XmlOptions()),
    "trap_reduce.xml": (trap_reduce, XmlOptions()),
}


def steps(xml: str) -> list[dict[str, str]]:
    return [
        dict(re.findall(r'(\w+)="([^"]*)"', line)) for line in xml.splitlines() if "<step" in line
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    build, options = CASES[name]
    program = build()
    verify(program)
    text = program_to_xml(program, options)
    path = GOLDEN / name
    if os.environ.get("COLLC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    # The golden file reads back into a verified Program that writes itself back unchanged.
    again = read_xml(path)
    verify(again.program)
    assert read_xml(program_to_xml(again.program, options)).program == again.program


def test_output_shape() -> None:
    text = program_to_xml(ring_allreduce(4))
    lines = text.splitlines()
    assert text.endswith("</algo>\n") and not text.startswith("<?xml")
    assert lines[0] == (
        '<algo name="ring_ar" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" '
        'coll="allreduce" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
    )
    assert lines[1].startswith('  <gpu id="0" i_chunks="4" o_chunks="4" s_chunks="0"')
    assert lines[2].startswith('    <tb id="0" send="1" recv="3" chan="0"')
    assert re.fullmatch(
        r'      <step s="0" type="\w+" srcbuf="[ios]" srcoff="\d+" dstbuf="[ios]" dstoff="\d+" '
        r'cnt="\d+" depid="-?\d+" deps="-?\d+" hasdep="[01]"/>',
        lines[3],
    )


def test_header_options() -> None:
    opts = XmlOptions(name="mine", proto="LL128", min_bytes=1024, max_bytes=1 << 20)
    head = program_to_xml(ring_allreduce(3), opts).splitlines()[0]
    assert 'name="mine" proto="LL128"' in head
    assert 'minBytes="1024" maxBytes="1048576"' in head
    bare = program_to_xml(ring_allreduce(3), XmlOptions(header_extras=False)).splitlines()[0]
    assert "outofplace" not in bare and "minBytes" not in bare
    named = program_to_xml(ring_allreduce(3, name='a "quoted" <name>')).splitlines()[0]
    assert 'name="a &quot;quoted&quot; &lt;name&gt;"' in named


def test_runtime_collective_names() -> None:
    c = Collective(CollectiveKind.REDUCE_SCATTER, 2, 1)
    b = ProgramBuilder(c, auto_deps=True)
    for r in range(2):
        b.copy(r, Slice(I, r), Slice(O, 0))
        b.send(r, 1 - r, Slice(I, 1 - r))
        b.recv(r, 1 - r, Slice(O, 0), reduce=True)
    head = program_to_xml(b.build()).splitlines()[0]
    assert 'coll="reducescatter"' in head
    assert 'coll="reduce_scatter"' in program_to_xml(b.build(), XmlOptions(coll="reduce_scatter"))


def test_custom_collective_needs_a_name() -> None:
    c = custom_collective(2, [[((0, 1),)], [((0, 2),)]], [[None], [((0, 1),)]], name="shift")
    b = ProgramBuilder(c, auto_deps=True)
    b.send(0, 1, Slice(I, 0))
    b.recv(1, 0, Slice(O, 0))
    p = b.build()
    verify(p)
    with pytest.raises(XmlExportError, match=r"the custom collective 'shift'; .*\(--coll\)"):
        program_to_xml(p)
    assert 'coll="sendrecv"' in program_to_xml(p, XmlOptions(coll="sendrecv"))


def test_inplace_names_the_physical_buffer() -> None:
    c = Collective(CollectiveKind.ALLREDUCE, 2, 1, inplace=True)
    b = ProgramBuilder(c, auto_deps=True)
    for r in range(2):  # output slots alias the input in place
        b.send(r, 1 - r, Slice(O, 0))
        b.recv(r, 1 - r, Slice(O, 0), reduce=True)
    p = b.build()
    verify(p)
    text = program_to_xml(p)
    assert 'i_chunks="1" o_chunks="0"' in text
    assert all(s["srcbuf"] == "i" and s["dstbuf"] == "i" for s in steps(text))


def test_srcbuf_trap_names_the_receivers_slot() -> None:
    text = program_to_xml(trap_reduce())
    rrc = [s for s in steps(text) if s["type"] == "rrc"]
    # The sender sends input[0] and input[1]; the receiver reduces into scratch[3] and [4].
    assert [(s["srcbuf"], s["srcoff"], s["dstbuf"], s["dstoff"]) for s in rrc] == [
        ("s", "3", "s", "3"),
        ("s", "4", "s", "4"),
    ]
    sends = [s for s in steps(text) if s["type"] == "s"]
    assert [(s["srcbuf"], s["srcoff"], s["dstbuf"], s["dstoff"]) for s in sends] == [
        ("i", "0", "s", "3"),
        ("i", "1", "s", "4"),
    ]


def test_fused_reducing_steps_use_the_local_slot() -> None:
    text = program_to_xml(ring_allreduce(4, inplace=True))
    kinds = [s["type"] for s in steps(text)]
    assert {"rrs", "rrcs", "rcs"} <= set(kinds)
    for s in steps(text):
        if s["type"] in ("rrc", "rrs", "rrcs"):
            assert (s["srcbuf"], s["srcoff"]) == (s["dstbuf"], s["dstoff"])


def test_fusion_off_emits_only_plain_steps() -> None:
    kinds = {s["type"] for s in steps(program_to_xml(ring_allreduce(4), XmlOptions(fusion=False)))}
    assert kinds == {"s", "rrc", "r", "cpy"}


def test_writer_does_not_mutate_the_program() -> None:
    p = manual_ring_allgather(3)
    before = Program.from_columns(
        p.collective,
        p.rank_offsets.copy(),
        {k: getattr(p, k).copy() for k in COLUMNS},
        p.dep_offsets.copy(),
        p.deps.copy(),
        p.buffer_sizes.copy(),
        p.route_offsets.copy(),
        p.route_nodes.copy(),
        name=p.name,
    )
    program_to_xml(p)
    assert p == before


def test_manual_threadblocks_follow_hints() -> None:
    text = program_to_xml(manual_ring_allgather(3))
    tbs = re.findall(r'<tb id="(\d+)" send="(-?\d+)" recv="(-?\d+)" chan="(\d+)"', text)
    assert tbs[:2] == [("0", "1", "-1", "0"), ("1", "-1", "2", "0")]
    # Cross-threadblock waits: the sends wait for the copy and the receive that fill their slot.
    first_tb = text.split("</tb>")[0]
    assert 'depid="1" deps="0"' in first_tb and 'depid="1" deps="1"' in first_tb


def test_illegal_threadblock_assignment() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 3, 1)
    b = ProgramBuilder(c, auto_deps=True)
    tb0 = Hints((), 0, 0)
    for r in range(3):
        b.copy(r, Slice(I, 0), Slice(O, r))
    for r in range(3):
        for k in (1, 2):  # both sends of a rank in threadblock 0: two send peers
            b.send(r, (r + k) % 3, Slice(O, r), hints=tb0)
            b.recv((r + k) % 3, r, Slice(O, r))
    p = b.build()
    verify(p)
    with pytest.raises(
        XmlExportError, match="Illegal threadblock assignment: rank 0 threadblock 0"
    ):
        program_to_xml(p)


def test_conflicting_channel_hints() -> None:
    c = Collective(CollectiveKind.BROADCAST, 2, 1, root=0)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(0, Slice(I, 0), Slice(O, 0))
    b.send(0, 1, Slice(O, 0), hints=Hints((), 1, -1))
    b.recv(1, 0, Slice(O, 0), hints=Hints((), 2, -1))
    with pytest.raises(XmlExportError, match=r"on channel 1 but its receive .* on channel 2"):
        program_to_xml(b.build())


def test_large_counts_are_cut_into_pieces() -> None:
    c = Collective(CollectiveKind.BROADCAST, 2, 150, root=0)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(0, Slice(I, 0, 150), Slice(O, 0, 150))
    b.send(0, 1, Slice(O, 0, 150))
    b.recv(1, 0, Slice(O, 0, 150))
    p = b.build()
    text = program_to_xml(p)
    counts = [(s["type"], int(s["cnt"]), int(s["srcoff"])) for s in steps(text)]
    assert all(cnt <= 71 for _, cnt, _ in counts)
    assert [x for x in counts if x[0] == "s"] == [("s", 50, 0), ("s", 50, 50), ("s", 50, 100)]
    q = read_xml(text).program
    verify(q)


def test_steps_limit_splits_across_channels() -> None:
    p = ring_allgather(4, 30)  # 30 chunks per rank: ~120 steps per threadblock on one channel
    text = program_to_xml(p)
    head = text.splitlines()[0]
    nchannels = int(re.search(r'nchannels="(\d+)"', head).group(1))  # type: ignore[union-attr]
    assert nchannels > 1
    per_tb = [block.count("<step") for block in text.split("<tb ")[1:]]
    assert max(per_tb) <= 64
    q = read_xml(text).program
    verify(q)


def test_threadblock_limit_splits_peers_across_channels() -> None:
    text = program_to_xml(alltoall(36))
    for gpu in text.split("<gpu ")[1:]:
        chans = re.findall(r'<tb id="\d+" send="-?\d+" recv="-?\d+" chan="(\d+)"', gpu)
        assert max(chans.count(c) for c in set(chans)) <= 32
    verify(read_xml(text).program)


def test_limits_that_cannot_be_met() -> None:
    # 60 messages a pair pass the count (64 per channel) but not the threadblock's steps.
    with pytest.raises(XmlLimitError, match=r"has 8\d steps; the runtime allows 64") as info:
        program_to_xml(ring_allgather(4, 20), XmlOptions(max_channels=1))
    assert info.value.limit == "steps"
    # One channel cannot hold 90 messages from one rank to the next: refused by the count.
    with pytest.raises(
        XmlLimitError, match=r"rank 0 sends 90 messages to rank 1, .* at most 64 \(1 channel, "
    ):
        program_to_xml(ring_allgather(4, 30), XmlOptions(max_channels=1))
    hinted = manual_ring_allgather(3)
    with pytest.raises(XmlLimitError, match="hints fix its layout") as info2:
        program_to_xml(hinted, XmlOptions(max_steps_per_tb=2))
    assert info2.value.limit == "steps"


def test_consecutive_reductions_are_limited() -> None:
    n = 20
    c = Collective(CollectiveKind.REDUCE, n, 1, root=0)
    b = ProgramBuilder(c, auto_deps=True)
    b.copy(0, Slice(I, 0), Slice(O, 0))
    for r in range(1, n):
        b.send(r, 0, Slice(I, 0))
        b.recv(0, r, Slice(S, r))
    for r in range(1, n):
        b.reduce(0, Slice(S, r), Slice(O, 0))
    p = b.build()
    verify(p)
    text = program_to_xml(p)
    verify(read_xml(text).program)
    for tb in text.split("<tb ")[1:]:
        run = 0
        for s in steps(tb):
            run = run + 1 if s["type"] == "re" and s["depid"] == "-1" else 0
            assert run <= 16
    # With hints the writer cannot move them: the limit is reported. (The copy waits for
    # every receive, so the reductions after it carry no dependency of their own.)
    hinted = ProgramBuilder(c, auto_deps=True)
    h = Hints((), 0, 0)
    recvs = []
    for r in range(1, n):
        hinted.send(r, 0, Slice(I, 0), hints=Hints((), 0, 0))
        recvs.append(hinted.recv(0, r, Slice(S, r), hints=Hints((), 0, r)))
    hinted.copy(0, Slice(I, 0), Slice(O, 0), deps=recvs, hints=h)
    for r in range(1, n):
        hinted.reduce(0, Slice(S, r), Slice(O, 0), hints=h)
    verify(hinted.build())
    with pytest.raises(XmlLimitError, match="consecutive reductions into o\\[0\\]"):
        program_to_xml(hinted.build(), XmlOptions(max_reduce_fusion=4))


def test_messages_that_must_overtake_get_their_own_channel() -> None:
    p = needs_two_buffered(hinted=False)
    verify(p)
    text = program_to_xml(p)
    assert 'nchannels="1"' not in text
    q = read_xml(text).program
    verify(q)


def test_deadlock_after_serialization_is_reported() -> None:
    p = needs_two_buffered(hinted=True)
    verify(p)
    with pytest.raises(XmlDeadlockError) as info:
        program_to_xml(p)
    msg = str(info.value)
    assert "deadlock" in msg and "buffer full" in msg
    assert "rank 0 threadblock" in msg and "rank 1 threadblock" in msg
    # Two buffered messages per connection are enough.
    verify(read_xml(program_to_xml(p, XmlOptions(buffer_slots=2))).program)
    # And the check can be switched off.
    assert program_to_xml(p, XmlOptions(check_deadlock=False)).startswith("<algo")


def test_order_that_hints_forbid() -> None:
    c = Collective(CollectiveKind.ALLGATHER, 2, 3)
    b = ProgramBuilder(c, auto_deps=True)
    h = Hints((), 0, -1)
    b.copy(0, Slice(I, 0, 3), Slice(O, 0, 3), hints=h)
    b.copy(1, Slice(I, 0, 3), Slice(O, 3, 3), hints=h)
    first = b.send(0, 1, Slice(I, 0), hints=h)
    b.send(0, 1, Slice(I, 1), tag=1, deps=[first], hints=h)
    b.send(0, 1, Slice(I, 2), hints=h)
    r = b.recv(1, 0, Slice(O, 1), tag=1, hints=h)
    b.recv(1, 0, Slice(O, 0), deps=[r], hints=h)
    b.recv(1, 0, Slice(O, 2), hints=h)
    for i in range(3):
        b.send(1, 0, Slice(I, i), hints=h)
        b.recv(0, 1, Slice(O, 3 + i), hints=h)
    q = b.build()
    verify(q)
    with pytest.raises(XmlExportError, match="must be received before older messages"):
        program_to_xml(q)


def test_unmatched_program_is_refused() -> None:
    c = Collective(CollectiveKind.BROADCAST, 2, 1, root=0)
    b = ProgramBuilder(c)
    b.send(0, 1, Slice(I, 0))
    with pytest.raises(XmlExportError, match="no receive matches it"):
        program_to_xml(b.build())


def test_export_writes_atomically(tmp_path: Path) -> None:
    out = tmp_path / "xml"
    files = export(ring_allreduce(3), None, out, XmlOptions(name="ring/3"))
    assert files == [out / "ring_3.xml", out / "collc_msccl.json"]
    assert files[0].read_text() == program_to_xml(ring_allreduce(3), XmlOptions(name="ring/3"))
    assert sorted(p.name for p in out.iterdir()) == ["collc_msccl.json", "ring_3.xml"]
    bad = needs_two_buffered(hinted=True)
    with pytest.raises(XmlDeadlockError):
        export(bad, None, out)
    assert sorted(p.name for p in out.iterdir()) == ["collc_msccl.json", "ring_3.xml"]
