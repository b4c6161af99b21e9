"""The MSCCL-IR XML exporter: a Program as an algorithm the MSCCL runtime runs.

`program_to_xml` compiles a Program (threadblocks and channels, step order, fusion,
cross-threadblock dependencies, the runtime's limits, a deadlock check) into the XML text that
msccl-executor-nccl and RCCL load; `export` writes it to ``<name>.xml``. See
`backends.msccl_xml.compile` for the passes and `XmlOptions` for the knobs.

What a round trip through `mscclang_frontend.xml.read_xml` preserves, for a Program ``p`` that
verifies: ``q = read_xml(program_to_xml(p)).program`` verifies and computes the same
collective, with the same buffer sizes and name (the collective's kind when ``p`` has none),
and per rank the same operations as a multiset of (kind, peer, slots, count), where

- slots are physical: in place, a slot is named by the buffer that holds it (an all-reduce's
  output slots read as input slots), and copies onto their own slot are dropped;
- operations moving more than ``max_count`` (71) chunks are cut into pieces;
- channel and threadblock hints are kept where ``p`` had them (threadblock ids renumbered
  densely in their order) and added where it did not (the assignment the writer chose);
- tags become the channel; route hints are dropped (XML has no routes);
- dependencies are normalized: each operation depends on the previous operation of its
  threadblock and on the minimal set of operations of other threadblocks that the XML waits
  for, which implies every dependency of ``p``.

``q`` itself is a fixed point: ``read_xml(program_to_xml(q)).program == q``.
"""

from __future__ import annotations

import json
from pathlib import Path

from backends.msccl_xml.compile import compile_program
from backends.msccl_xml.emit import emit
from backends.msccl_xml.errors import XmlDeadlockError, XmlExportError, XmlLimitError
from chakra_ir.outdir import atomic_folder, collc_version
from chakra_ir.program import Program
from mscclang_frontend.xml.options import XmlOptions
from topologies.topology import Topology

__all__ = [
    "XmlDeadlockError",
    "XmlExportError",
    "XmlLimitError",
    "XmlOptions",
    "export",
    "program_to_xml",
]


def program_to_xml(program: Program, options: XmlOptions | None = None) -> str:
    """The MSCCL-IR XML text of ``program`` (which should have passed `verify`).

    Never mutates ``program``. Raises `XmlExportError` when the program cannot be expressed
    (a custom collective without ``options.coll``, conflicting threadblock hints, unpaired
    messages), `XmlLimitError` when a runtime limit cannot be met, `XmlDeadlockError` when
    every threadblock assignment deadlocks.
    """
    algo, _ = compile_program(program, options or XmlOptions())
    return emit(algo)


MARKER = "collc_msccl.json"
"""The file that marks a folder `export` wrote (its format, collc version and XML file)."""


def export(
    program: Program, topology: Topology | None, out_dir: Path, options: XmlOptions | None = None
) -> list[Path]:
    """Write ``<name>.xml`` and `MARKER` into the folder ``out_dir``; return the files
    written.

    ``name`` is the algorithm's name (`XmlOptions.name`, else the program's, else the
    collective's kind), made safe for a file name. The folder is written by the one
    output-folder writer (`chakra_ir.outdir.atomic_folder`), all or nothing: ``out_dir`` may
    be missing, empty or an earlier MSCCL XML export, and anything else (a collc output
    folder, an ASTRA-sim bundle, the working folder, a user's folder) is refused.
    ``topology`` is not needed by this backend (accepted for the common exporter interface).
    """
    del topology
    opts = options or XmlOptions()
    text = program_to_xml(program, opts)
    out = Path(out_dir)
    name = xml_file_name(program, opts)
    marker = {"format": "collc-msccl-xml", "collc_version": collc_version(), "files": [name]}
    with atomic_folder(out, MARKER, "an MSCCL XML export of collc", XmlExportError) as tmp:
        (tmp / name).write_text(text, encoding="utf-8")
        (tmp / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return [out / name, out / MARKER]


def xml_file_name(program: Program, options: XmlOptions) -> str:
    """``<name>.xml``: the algorithm's name (`XmlOptions.name`, else the program's, else the
    collective's), made safe for a file name."""
    c = program.collective
    stem = options.name or program.name or c.name or c.kind.value
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem).strip(".") or "algo"
    return f"{safe}.xml"
