"""`ImportedProgram`, what the MSCCL-IR XML reader returns, and `locate_xml_error`, which
places a verification failure of an imported program at the step of the file behind it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from chakra_ir.program import Program
from mscclang_frontend.xml.errors import XmlError
from mscclang_frontend.xml.options import XmlOptions
from topologies.errors import CollcError, SourcePos


@dataclass(frozen=True)
class ImportedProgram:
    """A Program read from MSCCL-IR XML, the writer options that reproduce its header, and
    notes about liberties taken (``rrs`` stores its sum, trailing ``nop`` steps dropped, a
    custom collective derived...)."""

    program: Program
    options: XmlOptions
    notes: tuple[str, ...] = ()
    sites: tuple[tuple[tuple[int, int, SourcePos], ...], ...] = field(default=(), compare=False)
    warnings: tuple[str, ...] = ()

    def locate(self, rank: int, op: int) -> tuple[str, SourcePos] | None:
        """Where operation ``op`` of ``rank`` comes from: ``"gpu g threadblock t step s"``
        and the step's position in the file (None when unknown or a TACCL ``<copy>``)."""
        if not 0 <= rank < len(self.sites) or not 0 <= op < len(self.sites[rank]):
            return None
        tb, step, pos = self.sites[rank][op]
        if tb < 0:
            return f"gpu {rank} <copy>", pos
        return f"gpu {rank} threadblock {tb} step {step}", pos


_OP_REF = re.compile(r"rank (\d+) op (\d+)")


def locate_xml_error(
    err: CollcError, imported: ImportedProgram, path: str | os.PathLike[str]
) -> XmlError:
    """``err`` (a `VerifyError` about ``imported.program``) as an `XmlError` at the step of
    the file the failing operation came from: ``file:line:col: gpu g threadblock t step s:
    ...``, or ``file: gpu g: ...`` when the failure is a rank's final buffer."""
    rank = getattr(err, "rank", -1)
    op = getattr(err, "op", -1)
    found = imported.locate(rank, op) if rank >= 0 and op >= 0 else None
    if found is not None:
        where, pos = found

        def step_of(m: re.Match[str]) -> str:
            other = imported.locate(int(m.group(1)), int(m.group(2)))
            return m.group(0) if other is None else f"{m.group(0)} [{other[0]}]"

        return XmlError(f"{where}: {_OP_REF.sub(step_of, err.message)}", pos)
    prefix = f"gpu {rank}: " if rank >= 0 else ""
    return XmlError(f"{prefix}{err.message}", SourcePos(str(path)))
