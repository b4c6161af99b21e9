"""The MSCCL-IR XML reader: files written by msccl-tools, TACCL, ForestColl and collc.

`read_xml` parses a file (with line numbers for every error), lowers its steps into a collc
`Program` (fused steps expanded, threadblock order and ``depid``/``deps`` as dependencies,
channel as the message tag, threadblock and channel kept as hints) and infers the collective
from the header. The format facts and `XmlOptions` live here too, so the writer
(``backends.msccl_xml``) shares them.
"""

from mscclang_frontend.xml.errors import XmlError
from mscclang_frontend.xml.limits import XmlLimits
from mscclang_frontend.xml.lower import ImportedProgram, locate_xml_error, read_xml
from mscclang_frontend.xml.options import XmlOptions

__all__ = ["ImportedProgram", "XmlError", "XmlLimits", "XmlOptions", "locate_xml_error", "read_xml"]
