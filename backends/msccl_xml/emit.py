"""Printing the document: 2-space indent, no XML declaration, attributes in the order
msccl-tools writes them, one element per line, a final newline."""

from __future__ import annotations

from backends.msccl_xml.model import XAlgo
from chakra_ir.collective import Buffer


def _attr(value: str) -> str:
    """A double-quoted attribute value (the runtime's parser expects double quotes), escaped as
    `xml.sax.saxutils.escape` with ``"`` does (that module imports urllib: start-up time)."""
    text = value.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    return '"' + text.replace('"', "&quot;") + '"'


def _buf(code: int) -> str:
    return Buffer(code).short


def emit(algo: XAlgo) -> str:
    """The XML text of ``algo``."""
    head = [
        f"name={_attr(algo.name)}",
        f'proto="{algo.proto}"',
        f'nchannels="{algo.nchannels}"',
        f'nchunksperloop="{algo.nchunksperloop}"',
        f'ngpus="{algo.ngpus}"',
        f"coll={_attr(algo.coll)}",
        f'inplace="{int(algo.inplace)}"',
    ]
    if algo.header_extras:
        head += [
            f'outofplace="{int(not algo.inplace)}"',
            f'minBytes="{algo.min_bytes}"',
            f'maxBytes="{algo.max_bytes}"',
        ]
    lines = [f"<algo {' '.join(head)}>"]
    for gpu in algo.gpus:
        lines.append(
            f'  <gpu id="{gpu.id}" i_chunks="{gpu.i_chunks}" o_chunks="{gpu.o_chunks}" '
            f's_chunks="{gpu.s_chunks}">'
        )
        for tb in gpu.tbs:
            lines.append(
                f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">'
            )
            for s, st in enumerate(tb.steps):
                lines.append(
                    f'      <step s="{s}" type="{st.type}" srcbuf="{_buf(st.srcbuf)}" '
                    f'srcoff="{st.srcoff}" dstbuf="{_buf(st.dstbuf)}" dstoff="{st.dstoff}" '
                    f'cnt="{st.cnt}" depid="{st.depid}" deps="{st.deps}" '
                    f'hasdep="{int(st.hasdep)}"/>'
                )
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"
