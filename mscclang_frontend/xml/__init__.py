"""The MSCCL-IR XML reader: files written by msccl-tools, TACCL, ForestColl and collc.

`read_xml` parses a file (with line numbers for every error), lowers its steps into a collc
`Program` (fused steps expanded, threadblock order and ``depid``/``deps`` as dependencies,
channel as the message tag, threadblock and channel kept as hints) and infers the collective
from the header. The format facts and `XmlOptions` live here too, so the writer
(``backends.msccl_xml``) shares them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from mscclang_frontend.xml.errors import XmlError as XmlError
    from mscclang_frontend.xml.imported import ImportedProgram as ImportedProgram
    from mscclang_frontend.xml.imported import locate_xml_error as locate_xml_error
    from mscclang_frontend.xml.limits import XmlLimits as XmlLimits
    from mscclang_frontend.xml.lower import read_xml as read_xml
    from mscclang_frontend.xml.options import XmlOptions as XmlOptions

_LAZY: dict[str, str] = {
    "XmlError": "mscclang_frontend.xml.errors",
    "XmlLimits": "mscclang_frontend.xml.limits",
    "ImportedProgram": "mscclang_frontend.xml.imported",
    "locate_xml_error": "mscclang_frontend.xml.imported",
    "read_xml": "mscclang_frontend.xml.lower",
    "XmlOptions": "mscclang_frontend.xml.options",
}
"""Where each public name lives, imported on first use (the writer imports the options
without the reader)."""

__all__ = [
    "ImportedProgram",
    "XmlError",
    "XmlLimits",
    "XmlOptions",
    "locate_xml_error",
    "read_xml",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
