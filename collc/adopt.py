"""Programs from outside collc: MSCCLang files compiled and MSCCL-IR XML imported, each
verified on its topology and bound to a size like a produced one."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_ir.verify import VerifyError, verify, verify_routes
from collc.results import Result, bind_size
from topologies import parse_topology

if TYPE_CHECKING:
    from chakra_ir.program import Program


def _adopt(
    program: Program,
    topology: str | None,
    size_bytes: int,
    algorithm: str,
    seconds: dict[str, float],
    extra: dict[str, Any],
) -> Result:
    """Verify a program that came from outside (MSCCLang, XML) on its topology and bind its
    size. The topology is ``topology``, or a fully connected network of its ranks (what
    MSCCLang programs assume)."""
    topo = parse_topology(topology if topology else f"fc:{max(program.num_ranks, 2)}")
    t = time.perf_counter()
    report = verify(program)
    verify_routes(program, topo)
    seconds["verify"] = time.perf_counter() - t
    return bind_size(program, topo, size_bytes, algorithm, report, seconds, extra=extra)


def compile_msccl(
    path: Path,
    argv: Sequence[str],
    *,
    size_bytes: int,
    topology: str | None = None,
    program: str | None = None,
    as_custom: bool = False,
    limits: Any = None,
) -> tuple[Result, str]:
    """Compile an MSCCLang program; returns the result and what the program printed.

    A file that builds several MSCCLPrograms needs ``program`` (a name or 1-based number);
    ``as_custom`` and ``limits`` (a `mscclang_frontend.Limits`) as in `compile_all`.
    """
    results, printed = compile_msccl_all(
        path,
        argv,
        size_bytes=size_bytes,
        topology=topology,
        program=program,
        as_custom=as_custom,
        limits=limits,
    )
    if len(results) > 1:
        from mscclang_frontend import CompileError

        names = ", ".join(name for name, _ in results)
        raise CompileError(f"{path}: the file builds {len(results)} MSCCLPrograms ({names})")
    return results[0][1], printed


def compile_msccl_all(
    path: Path,
    argv: Sequence[str],
    *,
    size_bytes: int,
    topology: str | None = None,
    program: str | None = None,
    as_custom: bool = False,
    limits: Any = None,
) -> tuple[list[tuple[str, Result]], str]:
    """Compile every MSCCLProgram an MSCCLang file builds (or the one ``program`` names);
    returns (name, result) per program and what the file printed."""
    import collc.exporters  # noqa: F401  (registers the emitter of the programs' XML())
    from mscclang_frontend import compile_file_all, select_program

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    compiled = compile_file_all(path, argv, limits=limits, as_custom=as_custom)
    if program is not None:
        compiled = [select_program(compiled, program, str(path))]
    seconds["compile"] = time.perf_counter() - t
    results: list[tuple[str, Result]] = []
    for c in compiled:
        msccl = {k: v for k, v in c.options.items() if isinstance(v, (str, int, bool))}
        if as_custom:
            msccl["as_custom"] = True
        extra = {"source": str(path), "argv": list(argv), "msccl": msccl}
        result = _adopt(c.program, topology, size_bytes, "mscclang", dict(seconds), extra)
        results.append((c.name, result))
    return results, compiled[-1].stdout


def import_xml(
    path: Path,
    *,
    size_bytes: int,
    topology: str | None = None,
    root: int | None = None,
    limits: Any = None,
    as_custom: bool = False,
) -> Result:
    """Read MSCCL-IR XML (msccl-tools, TACCL, ForestColl) into a verified result; ``limits``
    (a `mscclang_frontend.xml.XmlLimits`) bound the file; ``as_custom`` as in `read_xml`. What the MSCCL runtime would refuse
    is listed in ``manifest.extra["warnings"]``; verification failures name the step."""
    from mscclang_frontend.xml import locate_xml_error, read_xml

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    imported = read_xml(path, root=root, limits=limits, as_custom=as_custom)
    seconds["import"] = time.perf_counter() - t
    o = imported.options
    msccl = {"protocol": o.proto, "instr_fusion": o.fusion, "name": o.name, "inplace": o.inplace}
    if as_custom:
        msccl["as_custom"] = True
        msccl["collective"] = o.coll
    extra = {"source": str(path), "msccl": msccl, "notes": list(imported.notes)}
    if imported.warnings:
        extra["warnings"] = list(imported.warnings)
    try:
        return _adopt(imported.program, topology, size_bytes, "msccl-xml", seconds, extra)
    except VerifyError as e:
        err = locate_xml_error(e, imported, path)
        kind = imported.program.collective.kind.value
        if e.check == "semantics" and kind != "custom":
            err.message += (
                f" (if the file is meant to compute something other than {kind}, "
                "--as-custom reads it as the custom collective it computes)"
            )
        raise err from None
