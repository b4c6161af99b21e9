"""msccl-tools' instance race (issue 27, item 5): with ``instances > 1`` and references longer
than one chunk, msccl-tools finds dependencies per instance, but the interleaved replica of a
k-chunk reference covers slots of the other instances, so its XML of
``allgather_recursive_doubling.py 4 2`` (tests/msccl_xml/data) sends slots that another
threadblock is still receiving. ``collc import`` reports that race at the step; ``collc
compile`` of the same shape finds dependencies on the replicated slots and is race-free."""

from __future__ import annotations

from pathlib import Path

import pytest

import collc.exporters  # noqa: F401  (installs the writer behind XML())
from chakra_ir.verify import VerifyError, verify
from mscclang_frontend import compile_file, hooks
from mscclang_frontend.xml import locate_xml_error, read_xml

DATA = Path(__file__).parent / "data"
DOUBLING = Path(__file__).parent.parent / "mscclang" / "programs" / "doubling_instances.py"


def test_msccl_tools_xml_races_and_import_says_where() -> None:
    path = DATA / "msccl_allgather_recursive_doubling_4x2.xml"
    imported = read_xml(path)
    with pytest.raises(VerifyError) as info:
        verify(imported.program)
    assert info.value.check == "race"
    err = locate_xml_error(info.value, imported, path)
    assert err.pos is not None and err.pos.line == 30
    assert err.message.startswith("gpu 1 threadblock 2 step 0: race: ")
    # The send of output[0:2] (instance 0's two-chunk reference) and the receive into
    # output[1] (instance 1's first chunk) are not ordered.
    assert "src=output[0:2]" in err.message and "dst=output[1]" in err.message


@pytest.mark.parametrize("argv", [("4", "2"), ("8", "3"), ("4", "1")])
def test_collc_compile_of_the_same_shape_is_race_free(argv: tuple[str, ...]) -> None:
    compiled = compile_file(DOUBLING, argv)
    verify(compiled.program)
    text = hooks.emit_xml(compiled)
    assert text is not None
    verify(read_xml(text).program)
