"""The reader models what the MSCCL runtime executes, bounds what a file may allocate, and
names the step of the file behind a verification failure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backends.msccl_xml import XmlOptions, program_to_xml
from chakra_ir.verify import VerifyError, verify
from mscclang_frontend.xml import XmlError, XmlLimits, locate_xml_error, read_xml
from tests.msccl_xml.programs import ring_allreduce

DATA = Path(__file__).parent / "data"


def _fused_ring() -> str:
    return program_to_xml(ring_allreduce(4, inplace=True), XmlOptions(fusion=True))


def test_rrcs_changed_to_rrs_no_longer_verifies() -> None:
    text = _fused_ring()
    assert 'type="rrcs"' in text
    verify(read_xml(text).program)
    # rrs forwards recv (+) src and leaves src as it was: the reduced chunk the ring later
    # forwards from that slot is missing, which verify must see.
    mutant = text.replace('type="rrcs"', 'type="rrs"', 1)
    imported = read_xml(mutant)
    assert any("temporary scratch slot" in n for n in imported.notes)
    with pytest.raises(VerifyError, match="semantics"):
        verify(imported.program)


def test_rrs_whose_sum_is_overwritten_stays_compact() -> None:
    imported = read_xml(DATA / "msccl_allreduce_ring_fused.xml")
    assert any("rrs" in n and "exact" in n for n in imported.notes)
    assert not any("temporary" in n for n in imported.notes)
    verify(imported.program)


RACE = """<algo name="race" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="1">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="o" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def test_race_is_located_at_the_step() -> None:
    # gpu 1 copies o[0] in threadblock 1 without waiting for threadblock 0's receive into it.
    imported = read_xml(RACE, "race.xml")
    with pytest.raises(VerifyError) as info:
        verify(imported.program)
    err = locate_xml_error(info.value, imported, "race.xml")
    assert err.pos is not None and err.pos.file == "race.xml"
    step_lines = [i + 1 for i, line in enumerate(RACE.splitlines()) if "<step" in line]
    assert err.pos.line in (step_lines[4], step_lines[6]), err
    assert re.match(r"gpu 1 threadblock [01] step 1: race: ", err.message)
    assert "[gpu 1 threadblock 0 step 1]" in err.message
    assert "[gpu 1 threadblock 1 step 1]" in err.message


def test_wrong_result_names_the_gpu() -> None:
    text = _fused_ring().replace('type="rrcs"', 'type="rrs"', 1)
    imported = read_xml(text, "ring.xml")
    with pytest.raises(VerifyError) as info:
        verify(imported.program)
    err = locate_xml_error(info.value, imported, "ring.xml")
    assert err.pos is not None and err.pos.file == "ring.xml"
    assert re.match(r"gpu \d+( threadblock \d+ step \d+)?: semantics: ", err.message)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('ngpus="3"', 'ngpus="100000000000000000000"', 'no <gpu id="3">'),
        ('s_chunks="0"', 's_chunks="1000000000"', "s_chunks=1,000,000,000, more than the limit"),
        ('o_chunks="3"', 'o_chunks="99999999999999999999"', "o_chunks=99,999,999,999,999,"),
        ('nchunksperloop="3"', 'nchunksperloop="10000000000"', "nchunksperloop=10,000,000,000"),
    ],
)
def test_sizes_are_bounded_before_allocation(old: str, new: str, message: str) -> None:
    text = (DATA / "msccl_allgather_ring.xml").read_text()
    assert old in text
    with pytest.raises(XmlError, match=re.escape(message)):
        read_xml(text.replace(old, new, 1))


def test_limits_can_be_raised() -> None:
    text = (DATA / "msccl_allgather_ring.xml").read_text().replace('s_chunks="0"', 's_chunks="9"')
    with pytest.raises(XmlError, match="--max-chunks"):
        read_xml(text, limits=XmlLimits(max_buffer_chunks=8))
    assert read_xml(text, limits=XmlLimits(max_buffer_chunks=9)).program.num_ranks == 3
    with pytest.raises(XmlError, match=r"more than the limit of 100 .*--max-xml-bytes"):
        read_xml(DATA / "msccl_allgather_ring.xml", limits=XmlLimits(max_file_bytes=100))


def test_runtime_limits_are_warned() -> None:
    text = (DATA / "msccl_allgather_ring.xml").read_text()
    assert read_xml(text).warnings == ()
    wide = re.sub(r'nchannels="\d+"', 'nchannels="48"', text, count=1)
    assert read_xml(wide).warnings == (
        "the XML uses 48 channels; the MSCCL runtime accepts at most 32",
    )
