"""Exporting a tuning (`collc.tune.TuneReport`): one program per chosen range, through the
export targets of `collc.exporters`.

- ``msccl-xml``: one MSCCL-IR XML file per range, ``NN-<label>.xml`` (the algorithm's name is
  the same), whose ``minBytes``/``maxBytes`` are the range's runtime bounds. The MSCCL runtime
  (msccl-executor-nccl, ``src/misc/msccl/msccl_lifecycle.cc``) selects an algorithm when
  ``nBytes >= minBytes && (maxBytes == 0 || nBytes <= maxBytes)``, with ``nBytes`` the call's
  count times the element size times the number of ranks for allgather, reducescatter and
  alltoall: the largest buffer, which is what collc's sizes measure. The ranges never overlap,
  so the files may be loaded in any order.
- ``astra-sim``: one ASTRA-sim bundle per range, in the folder ``NN-<label>/``.

A range's program is made at the sweep size in the middle of its sizes (TACOS plans for a
size; every other producer makes the same program at any size). ``tuning.json`` beside them
lists the ranges and their files. The folder is written all at once (`chakra_ir.outdir.
atomic_folder`): it replaces only an earlier tune export, marked by its ``tuning.json``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_ir.outdir import atomic_folder
from collc.tune import Candidate, TuneReport, TuneSpec
from topologies.errors import CollcError

if TYPE_CHECKING:
    from collc.results import Result

TUNE_TARGETS = ("msccl-xml", "astra-sim")
TUNING = "tuning.json"
"""The listing of an export's ranges and files; it marks the folder as a tune export."""


def _result(cand: Candidate, spec: TuneSpec, size: int) -> Result:
    """The verified, sized program of ``cand`` with its manifest."""
    from collc.adopt import compile_msccl_all, import_xml
    from collc.pipeline import synthesize

    if cand.path:
        path = Path(cand.path)
        if path.suffix.lower() == ".xml":
            return import_xml(path, size_bytes=size, topology=spec.topology)
        named, _ = compile_msccl_all(path, [], size_bytes=size, topology=spec.topology)
        return next(r for name, r in named if not cand.program or name == cand.program)
    return synthesize(spec.request(cand, size))


def export_tuning(report: TuneReport, spec: TuneSpec, target: str, out: Path) -> list[Path]:
    """Write one program per range of ``report`` for ``target`` into ``out``; return the
    files written (``tuning.json`` last). Raises CollcError for an unknown target, and with
    every range that could not be exported, after writing the others."""
    from backends.msccl_xml import program_to_xml, xml_file_name
    from collc.exporters import EXPORTERS, ExportOptions, msccl_xml_options

    if target not in TUNE_TARGETS:
        raise CollcError(
            f"--export: unknown target {target!r} (expected {', '.join(TUNE_TARGETS)})"
        )
    files: list[Path] = []
    listing: list[dict[str, Any]] = []
    failures: list[str] = []
    with atomic_folder(out, TUNING, "a collc tune export") as tmp:
        for i, r in enumerate(report.ranges):
            inside = [
                s for s in report.sizes if r.first <= s <= r.last and report.best.get(s) == r.label
            ]
            size = inside[len(inside) // 2]
            safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in r.label)
            name = f"{i:02d}-{safe}"
            try:
                result = _result(report.candidate(r.label), spec, size)
                program = dataclasses.replace(result.program, name=name)
                options = ExportOptions(min_bytes=r.min_bytes, max_bytes=r.max_bytes)
                if target == "msccl-xml":  # the runtime reads one folder of XML files
                    xml = msccl_xml_options(program, result.manifest, options)
                    written = [tmp / xml_file_name(program, xml)]
                    written[0].write_text(program_to_xml(program, xml), encoding="utf-8")
                else:
                    where = tmp / name
                    written = EXPORTERS[target](
                        program, result.topology, result.manifest, where, options
                    )
            except CollcError as e:
                failures.append(f"{r.label}: {e.message}")
                continue
            files += [out / f.relative_to(tmp) for f in written]
            listing.append(
                {
                    "algorithm": r.label,
                    "min_bytes": r.min_bytes,
                    "max_bytes": r.max_bytes,
                    "made_at_bytes": size,
                    "files": [str(f.relative_to(tmp)) for f in written],
                }
            )
        data = {
            "target": target,
            "topology": report.topology,
            "collective": report.collective,
            "model": report.model,
            "ranges": listing,
        }
        (tmp / TUNING).write_text(json.dumps(data, indent=2) + "\n")
        files.append(out / TUNING)
    if failures:
        raise CollcError(f"--export {target}: not exported: {'; '.join(failures)}")
    return files
