"""The MSCCL-IR XML reader: files in the shapes msccl-tools, TACCL and ForestColl write, round
trips, collective inference, and errors with line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.msccl_xml import XmlOptions, program_to_xml
from chakra_ir import CollectiveKind, OpKind, Recv, Send
from chakra_ir.verify import verify
from mscclang_frontend.xml import XmlError, read_xml
from tests.msccl_xml.programs import (
    alltoall,
    manual_ring_allgather,
    ring_allgather,
    ring_allreduce,
    trap_reduce,
    tree_broadcast,
)

DATA = Path(__file__).parent / "data"
BASE = DATA / "msccl_allgather_ring.xml"

# file -> (kind, ranks, chunks per rank, in place)
FILES = {
    "msccl_allgather_ring.xml": (CollectiveKind.ALLGATHER, 3, 1, False),
    "msccl_allreduce_ring_fused.xml": (CollectiveKind.ALLREDUCE, 3, 3, True),
    "msccl_alltoall_allpairs.xml": (CollectiveKind.ALLTOALL, 3, 1, False),
    "msccl_allgather_ring_2ch.xml": (CollectiveKind.ALLGATHER, 3, 2, True),
    "msccl_allreduce_allpairs_nops.xml": (CollectiveKind.ALLREDUCE, 3, 3, True),
    "forestcoll_allreduce_inplace.xml": (CollectiveKind.ALLREDUCE, 3, 3, True),
    "taccl_allgather_relay.xml": (CollectiveKind.ALLGATHER, 3, 1, True),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_tool_shaped_files_read_verify_and_round_trip(name: str) -> None:
    kind, ranks, cf, inplace = FILES[name]
    imported = read_xml(DATA / name)
    p = imported.program
    c = p.collective
    assert (c.kind, c.num_ranks, c.chunks_per_rank, c.inplace) == (kind, ranks, cf, inplace)
    verify(p)
    # XML -> Program -> XML -> Program gives equal Programs.
    again = read_xml(program_to_xml(p, imported.options))
    assert again.program == p
    assert again.options == imported.options
    # Every operation keeps its threadblock and channel; tags are channels.
    for _, _, op in p:
        assert op.hints.threadblock >= 0 and op.hints.channel >= 0
        if isinstance(op, (Send, Recv)):
            assert op.tag == op.hints.channel


def test_files_we_write_back_unchanged() -> None:
    for name in (
        "msccl_allreduce_ring_fused.xml",
        "msccl_alltoall_allpairs.xml",
        "msccl_allgather_ring_2ch.xml",
        "msccl_allreduce_allpairs_nops.xml",
    ):
        path = DATA / name
        imported = read_xml(path)
        assert program_to_xml(imported.program, imported.options) == path.read_text(), name


def test_header_becomes_options() -> None:
    forest = read_xml(DATA / "forestcoll_allreduce_inplace.xml").options
    assert forest == XmlOptions(
        name="pipeline schedule (k1,inst1)",
        coll="allreduce",
        header_extras=True,
        max_bytes=1099511627776,
        inplace=True,
    )
    two = read_xml(DATA / "msccl_allgather_ring_2ch.xml").options
    assert (two.proto, two.max_bytes) == ("LL128", 1048576)
    assert read_xml(DATA / "taccl_allgather_relay.xml").options.header_extras is False


def test_fused_steps_expand() -> None:
    p = read_xml(DATA / "msccl_allreduce_ring_fused.xml").program
    ops = p.ops(0)
    kinds = [
        ("send" if isinstance(o, Send) else "recv-reduce" if o.reduce else "recv")
        for o in ops
        if isinstance(o, (Send, Recv))
    ]
    # s, rrs, rrcs, rcs, r
    assert kinds == ["send", "recv-reduce", "send", "recv-reduce", "send", "recv", "send", "recv"]
    # Each operation of a threadblock waits for the one before it.
    assert all(op.deps == (i - 1,) for i, op in enumerate(ops) if i)


def test_nops_and_cross_threadblock_waits() -> None:
    p = read_xml(DATA / "msccl_allreduce_allpairs_nops.xml").program
    reduces = [
        (i, o) for i, o in enumerate(p.ops(0)) if int(p.kind[p.global_index(0, i)]) == OpKind.REDUCE
    ]
    first, second = reduces
    # The nop's wait (tb 0 step 1) and the step's own (tb 1 step 1) both reach the reduce.
    waited = {p.op(0, d).hints.threadblock for d in first[1].deps}
    assert waited == {0, 1}
    assert second[1].deps == (first[0],)


def test_rrs_note_and_inplace_canonical_buffers() -> None:
    imported = read_xml(DATA / "forestcoll_allreduce_inplace.xml")
    assert any("rrs" in n for n in imported.notes)
    # ForestColl writes the output buffer in place; collc names the physical (input) slot.
    assert all(
        (o.src.buffer if isinstance(o, Send) else o.dst.buffer).short == "i"  # type: ignore[union-attr]
        for _, _, o in imported.program
    )


def test_taccl_copies_and_extra_attributes() -> None:
    imported = read_xml(DATA / "taccl_allgather_relay.xml")
    assert imported.program.num_ops == 12  # in place, the <copy> elements are no-ops


def test_out_of_place_copy_elements_run_first() -> None:
    text = (DATA / "taccl_allgather_relay.xml").read_text().replace('inplace="1"', 'inplace="0"')
    imported = read_xml(text)
    verify(imported.program)
    first = imported.program.ops(0)[0]
    assert first.hints.threadblock == -1
    assert any("<copy>" in n for n in imported.notes)


def test_writer_output_round_trips() -> None:
    for p in (ring_allgather(4), ring_allreduce(4), alltoall(4), manual_ring_allgather(3)):
        for fusion in (True, False):
            q = read_xml(program_to_xml(p, XmlOptions(fusion=fusion))).program
            verify(q)
            assert q.collective == p.collective and q.name == p.name
            assert read_xml(program_to_xml(q, XmlOptions(fusion=fusion))).program == q


def test_program_to_xml_to_program_keeps_operations() -> None:
    """Per rank, the same operations as a multiset (physical slots), hints where given."""
    p = manual_ring_allgather(3)
    q = read_xml(program_to_xml(p)).program

    def bag(prog: object, rank: int) -> list[tuple[object, ...]]:
        out = []
        for o in prog.ops(rank):  # type: ignore[attr-defined]
            key = (
                type(o).__name__,
                getattr(o, "peer", -1),
                getattr(o, "src", None),
                getattr(o, "dst", None),
                getattr(o, "reduce", False),
                o.hints.channel,
                o.hints.threadblock,
            )
            out.append(key)
        return sorted(out, key=repr)

    for r in range(3):
        assert bag(p, r) == bag(q, r)


def test_srcbuf_trap_reading() -> None:
    text = """<algo name="trap" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="2" coll="reduce" inplace="0">
  <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="6">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="5" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="s" srcoff="5" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="-1" recv="0" chan="0">
      <step s="0" type="rrc" srcbuf="s" srcoff="5" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""
    with pytest.raises(XmlError, match="srcbuf trap") as info:
        read_xml(text, "trap.xml")
    assert info.value.pos is not None and info.value.pos.line == 10
    imported = read_xml(text, "trap.xml", srcbuf_trap=True)
    p = imported.program
    assert p.collective.root == 1
    verify(p)
    # Written back, the reduce names the receiver's own slot.
    assert 'type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0"' in program_to_xml(p)


def test_three_operand_reduce_is_a_copy_then_a_reduce() -> None:
    text = program_to_xml(trap_reduce()).replace(
        'type="rrc" srcbuf="s" srcoff="3"', 'type="rrc" srcbuf="i" srcoff="0"'
    )
    imported = read_xml(text)
    verify(imported.program)
    assert any("runtime's reading" in n for n in imported.notes)
    kinds = [int(k) for k in imported.program.kind[imported.program.rank_offsets[1] :]]
    assert kinds.count(OpKind.COPY) == 3


def test_rooted_collectives_find_their_root() -> None:
    import random

    p = tree_broadcast(5, 2, random.Random(3))
    q = read_xml(program_to_xml(p)).program
    assert q.collective.root == p.collective.root
    verify(q)


def test_root_that_cannot_be_told() -> None:
    text = (
        '<algo name="b" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="2" coll="broadcast" inplace="0">\n'
        '  <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0"/>\n'
        '  <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0"/>\n'
        "</algo>\n"
    )
    with pytest.raises(XmlError, match="cannot tell the root of the broadcast"):
        read_xml(text)
    assert read_xml(text, root=1).program.collective.root == 1


def test_reduce_scatter_spellings() -> None:
    for coll in ("reduce_scatter", "reducescatter"):
        text = f"""<algo name="rs" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="{coll}" inplace="1">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""
        imported = read_xml(text)
        assert imported.program.collective.kind is CollectiveKind.REDUCE_SCATTER
        assert imported.program.collective.chunks_per_rank == 1
        verify(imported.program)
        assert f'coll="{coll}"' in program_to_xml(imported.program, imported.options)


ALLTONEXT = """<algo name="alltonext" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="3" coll="{coll}" inplace="{inplace}">
  <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="2" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def test_custom_collective_is_derived() -> None:
    imported = read_xml(ALLTONEXT.format(coll="custom", inplace="0"))
    c = imported.program.collective
    assert c.kind is CollectiveKind.CUSTOM
    assert c.custom_output == ((None,), (((0, 1),),), (((0, 2),),))
    verify(imported.program)
    assert any("postcondition is what the program computes" in n for n in imported.notes)
    assert 'coll="custom"' in program_to_xml(imported.program, imported.options)


def test_named_collective_that_does_not_fit() -> None:
    # An all-gather over 3 GPUs needs 3 output chunks per GPU; this one has 1.
    imported = read_xml(ALLTONEXT.format(coll="allgather", inplace="0"))
    assert imported.program.collective.kind is CollectiveKind.CUSTOM
    assert any("does not fit" in n for n in imported.notes)
    # In place, a custom collective keeps its input and output apart (msccl-tools' model).
    inplace = read_xml(ALLTONEXT.format(coll="sendrecv", inplace="1"))
    c = inplace.program.collective
    assert (c.kind, c.inplace) == (CollectiveKind.CUSTOM, False)
    assert any("input and output stay apart" in n for n in inplace.notes)
    out_of_place = read_xml(ALLTONEXT.format(coll="sendrecv", inplace="0"))
    assert out_of_place.program == inplace.program


# -- errors ---------------------------------------------------------------------------------------


def _mutate(old: str, new: str) -> tuple[str, int]:
    text = BASE.read_text()
    at = text.index(old)
    return text.replace(old, new, 1), text[:at].count("\n") + 1


RECV_STEP = '<step s="2" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1"'


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (RECV_STEP, RECV_STEP.replace('"r"', '"rx"'), "unknown step type 'rx'"),
        (
            RECV_STEP,
            RECV_STEP.replace('dstoff="1"', 'dstoff="one"'),
            "dstoff='one' of <step> is not an integer",
        ),
        (
            RECV_STEP,
            RECV_STEP.replace('dstoff="1"', 'dstoff="7"'),
            r"destination o\[7:8\] is outside the output buffer of gpu 0",
        ),
        (
            RECV_STEP,
            RECV_STEP.replace('dstbuf="o"', 'dstbuf="x"'),
            "dstbuf='x' of <step> is not a buffer",
        ),
        (RECV_STEP, RECV_STEP.replace('s="2"', 's="3"'), "step s=3 is step 2"),
        (
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1"',
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="1" deps="4"',
            "depends on step 4 of threadblock 1 of gpu 0, which has only 1 steps",
        ),
        (
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1"',
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="5" deps="0"',
            "depends on threadblock 5, which gpu 0 does not have",
        ),
        (
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1"',
            '<step s="1" type="rcs" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="1" deps="0"',
            'which does not set hasdep="1"',
        ),
        (
            RECV_STEP + ' cnt="1"',
            RECV_STEP + ' cnt="2"',
            r"receives 2 chunks from gpu 2 on channel 0, but the matching send \(gpu 2 threadblock 0 step 1, line 25\) sends 1",
        ),
        (
            '<tb id="1" send="-1" recv="-1" chan="0">',
            '<tb id="1" send="1" recv="-1" chan="0">',
            "threadblocks 0 and 1 of gpu 0 both send to gpu 1",
        ),
        (
            '<tb id="1" send="-1" recv="-1" chan="0">',
            '<tb id="2" send="-1" recv="-1" chan="0">',
            "threadblock ids on gpu 0 must be 0..1: 1 is missing",
        ),
        (
            '<tb id="1" send="-1" recv="-1" chan="0">',
            '<tb id="1" send="0" recv="-1" chan="0">',
            "names itself as its send peer",
        ),
        (
            '<tb id="1" send="-1" recv="-1" chan="0">',
            '<tb id="1" send="-1" recv="-1" chan="3">',
            "channel 3 but nchannels=1",
        ),
        ('<gpu id="2"', '<gpu id="1"', "gpu 1 appears twice"),
        ('<gpu id="2"', '<gpu id="3"', "gpu id 3 is not below ngpus=3"),
        (
            '<gpu id="0" i_chunks="1"',
            '<gpu id="0" i_chunks="-1"',
            "i_chunks=-1 of <gpu> is below 0",
        ),
        (
            '<step s="0" type="cpy"',
            '<stepp s="0" type="cpy"',
            "unexpected element <stepp> inside <tb>",
        ),
    ],
)
def test_errors_name_the_line(old: str, new: str, message: str) -> None:
    text, line = _mutate(old, new)
    with pytest.raises(XmlError, match=message) as info:
        read_xml(text, "ring.xml")
    err = info.value
    assert err.pos is not None and err.pos.file == "ring.xml" and err.pos.line == line
    assert "\n" not in str(err) and str(err).startswith(f"ring.xml:{line}:")
    assert err.caret()


def test_send_without_receive() -> None:
    text = BASE.read_text()
    recv = '      <step s="2" type="r" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n'
    assert recv in text
    text = text.replace(recv, "")
    with pytest.raises(
        XmlError, match="send to gpu 1 on channel 0 has no matching receive"
    ) as info:
        read_xml(text, "x.xml")
    assert info.value.pos is not None
    assert text.splitlines()[info.value.pos.line - 1].strip().startswith('<step s="1" type="rcs"')


def test_dependency_cycle() -> None:
    text, _ = _mutate(
        '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
        '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="0" hasdep="1"/>',
    )
    text = text.replace(
        '<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
        '<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" deps="0" hasdep="1"/>',
        1,
    )
    with pytest.raises(
        XmlError,
        match="dependency cycle on gpu 0: threadblock 1 step 0 waits for threadblock 0 step 0 "
        "waits for threadblock 1 step 0",
    ):
        read_xml(text, "x.xml")


def test_malformed_documents() -> None:
    broken = BASE.read_text().replace("</tb>", "</tbb>", 1)
    with pytest.raises(XmlError, match="malformed XML: mismatched tag") as info:
        read_xml(broken, "x.xml")
    assert info.value.pos is not None
    assert info.value.pos.line == broken[: broken.index("</tbb>")].count("\n") + 1
    with pytest.raises(XmlError, match="the root element is <algorithm>"):
        read_xml('<algorithm ngpus="1"/>')
    with pytest.raises(XmlError, match="lacks the attribute 'ngpus'"):
        read_xml('<algo coll="allreduce"/>')
    with pytest.raises(XmlError, match='ngpus=2 but there is no <gpu id="1">'):
        read_xml(
            '<algo coll="allreduce" ngpus="2"><gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0"/></algo>'
        )
    with pytest.raises(XmlError, match="cannot read"):
        read_xml(Path("/nonexistent/file.xml"))
    with pytest.raises(XmlError, match="unexpected text"):
        read_xml('<algo coll="allreduce" ngpus="1">hello</algo>')


def test_inplace_copies_onto_themselves_are_dropped() -> None:
    text = BASE.read_text().replace('inplace="0"', 'inplace="1"')
    p = read_xml(text).program
    assert p.num_ops == 15 - 3  # the three own-chunk copies are the same physical slot
    verify(p)
    assert read_xml(program_to_xml(p)).program == p
