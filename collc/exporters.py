"""The export targets ``collc export`` offers, by name: each adapts the CLI's options to one
backend's ``export(program, topology, out_dir, options)``. The CLI builds ``--target``'s
choices from `EXPORTERS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from backends.msccl_xml import XmlOptions, program_to_xml
from backends.msccl_xml import export as export_xml
from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import Manifest
from chakra_ir.program import Program
from mscclang_frontend import hooks
from mscclang_frontend.lowering import CompiledProgram
from mscclang_frontend.xml.format import COLL_NAMES, RUNTIME_COLL
from topologies import Topology


@dataclass(frozen=True)
class ExportOptions:
    """What the CLI passes to every target; each uses the fields that concern it.

    ``fusion``/``protocol`` default to what the program was compiled or imported with.
    """

    fusion: bool | None = None
    protocol: str | None = None
    coll: str = ""
    min_bytes: int = 0
    max_bytes: int = 0
    # mesh/torus hardware programs (backends.hwprog.HwOptions; None: its default)
    vcs: int | None = None
    packet_bytes: int | None = None
    buffer_depth: int | None = None
    link_width: float | None = None
    clock_ghz: float | None = None
    router_cycles: int | None = None
    force: bool = False
    # FRED switch configurations (backends.fred.FredOptions; None: its default)
    fred_m: int | None = None
    fred_fix: str | None = None
    config_memory: int | None = None
    priority: str | None = None


Exporter = Callable[[Program, Topology, Manifest, Path, ExportOptions], list[Path]]


def msccl_xml_options(program: Program, manifest: Manifest, o: ExportOptions) -> XmlOptions:
    """The XML writer's options for ``program``: the flags ``o``, else what its manifest
    recorded (the MSCCLang program's protocol and fusion)."""
    msccl = manifest.extra.get("msccl") or {}
    fusion = o.fusion if o.fusion is not None else bool(msccl.get("instr_fusion", True))
    return XmlOptions(
        name=program.name or manifest.algorithm or program.collective.kind.value,
        proto=o.protocol or str(msccl.get("protocol", "Simple")),
        coll=o.coll,
        fusion=fusion,
        min_bytes=o.min_bytes,
        max_bytes=o.max_bytes,
        inplace=_custom_inplace(program, msccl),
    )


def _msccl_xml(
    program: Program, topology: Topology, manifest: Manifest, out: Path, o: ExportOptions
) -> list[Path]:
    return export_xml(program, topology, out, msccl_xml_options(program, manifest, o))


def _custom_inplace(program: Program, msccl: dict[str, object]) -> bool | None:
    """The header's in-place flag of a custom collective that was compiled or imported in
    place (collc runs it out of place, as msccl-tools does; the flag picks the runtime call);
    None for every other program (its collective says)."""
    if program.collective.kind is not CollectiveKind.CUSTOM or "inplace" not in msccl:
        return None
    return bool(msccl["inplace"])


def _astra_sim(
    program: Program, topology: Topology, manifest: Manifest, out: Path, o: ExportOptions
) -> list[Path]:
    # Imported here: `collc compile` loads this module for `XML()` and needs no ASTRA-sim.
    from backends.astrasim import AstraOptions
    from backends.astrasim import export as export_astra

    return export_astra(program, topology, out, AstraOptions.from_manifest(manifest))


def _hwprog(target: str) -> Exporter:
    def run(
        program: Program, topology: Topology, manifest: Manifest, out: Path, o: ExportOptions
    ) -> list[Path]:
        # Imported here: only this target needs it (and jsonschema behind it).
        from backends.hwprog import HwOptions
        from backends.hwprog import export as export_hw

        d = HwOptions()
        options = HwOptions(
            vcs=o.vcs,
            packet_bytes=d.packet_bytes if o.packet_bytes is None else o.packet_bytes,
            buffer_depth=o.buffer_depth,
            link_width=o.link_width,
            clock_ghz=d.clock_ghz if o.clock_ghz is None else o.clock_ghz,
            router_cycles=d.router_cycles if o.router_cycles is None else o.router_cycles,
            force=o.force,
        )
        return export_hw(program, topology, manifest, out, target, options)

    return run


def _fred(
    program: Program, topology: Topology, manifest: Manifest, out: Path, o: ExportOptions
) -> list[Path]:
    # Imported here: only this target needs it (and ortools behind it).
    from backends.fred.compile import FredOptions
    from backends.fred.export import export as export_fred

    d = FredOptions()
    options = FredOptions(
        m=d.m if o.fred_m is None else o.fred_m,
        fix=d.fix if o.fred_fix is None else o.fred_fix,
        memory_bytes=d.memory_bytes if o.config_memory is None else o.config_memory,
        priority=d.priority if o.priority is None else o.priority,
    )
    return export_fred(program, topology, manifest, out, options)


def _chakra_et(
    program: Program, topology: Topology, manifest: Manifest, out: Path, o: ExportOptions
) -> list[Path]:
    from chakra_ir.et.codec import write_et_files

    rm = manifest.extra.get("reduce_micros")
    reduce_micros = rm if isinstance(rm, int) else 0
    return write_et_files(
        program, out, manifest.et_prefix, manifest.chunk_bytes, reduce_micros=reduce_micros
    )


EXPORTERS: dict[str, Exporter] = {
    "msccl-xml": _msccl_xml,
    "astra-sim": _astra_sim,
    "mesh": _hwprog("mesh"),
    "torus": _hwprog("torus"),
    "fred": _fred,
    "chakra-et": _chakra_et,
}


def _emit_compiled_xml(c: CompiledProgram) -> str:
    """What MSCCLang's ``XML()`` prints: the program as MSCCL-IR XML, with the header
    msccl-tools writes (``coll`` names the program's MSCCLang collective, also when it was
    compiled ``--as-custom``; ``custom`` for custom collectives)."""
    coll = ""
    if c.program.collective.kind is CollectiveKind.CUSTOM:
        coll = "custom"
        kind = COLL_NAMES.get(str(c.options.get("collective", "")))
        if c.options.get("as_custom") and kind is not None and kind in RUNTIME_COLL:
            coll = RUNTIME_COLL[kind]
    options = XmlOptions(
        name=c.name,
        proto=str(c.options.get("protocol", "Simple")),
        fusion=bool(c.options.get("instr_fusion", True)),
        coll=coll,
        inplace=_custom_inplace(c.program, c.options),
    )
    return program_to_xml(c.program, options)


hooks.set_xml_emitter(_emit_compiled_xml)
