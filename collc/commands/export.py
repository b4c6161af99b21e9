"""``collc export``: an output folder's program written for another tool (MSCCL XML,
ASTRA-sim, a mesh or torus hardware program, FRED switch configurations); the program
itself never changes."""

from __future__ import annotations

from pathlib import Path

import click

from collc import registry
from collc.options import size_callback
from collc.printing import emit


@click.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--target", required=True, type=click.Choice(list(registry.EXPORT_TARGETS)))
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--topology", "-t", default=None, help="Override (must match the folder's).")
@click.option(
    "--force",
    is_flag=True,
    help="Accept a topology that differs from the folder's; mesh/torus: write a program whose "
    "channel-dependency graph has a cycle.",
)
@click.option(
    "--fusion/--no-fusion", default=None, help="MSCCL instruction fusion (rcs, rrs, rrcs)."
)
@click.option("--protocol", type=click.Choice(["Simple", "LL", "LL128"]), default=None)
@click.option("--coll", default="", help="MSCCL runtime collective name for custom collectives.")
@click.option(
    "--min-bytes", default=None, callback=size_callback, help="MSCCL algo minBytes (default 0)."
)
@click.option(
    "--max-bytes", default=None, callback=size_callback, help="MSCCL algo maxBytes (0: no limit)."
)
@click.option(
    "--vcs", type=int, default=None, help="mesh/torus: virtual channels (default: fewest needed)."
)
@click.option(
    "--packet-size", default=None, callback=size_callback, help="mesh/torus: packet size (4KiB)."
)
@click.option(
    "--buffer-depth",
    type=int,
    default=None,
    help="mesh/torus: packets per VC buffer (default: what a credit round trip needs).",
)
@click.option(
    "--link-width", type=float, default=None, help="mesh/torus: bytes/cycle (bandwidth/clock)."
)
@click.option("--clock", type=float, default=None, help="mesh/torus: clock in GHz (1).")
@click.option(
    "--router-cycles", type=int, default=None, help="mesh/torus: router pipeline cycles (1)."
)
@click.option("--fred-m", type=int, default=None, help="fred: middle sub-switches m of FRED_m (3).")
@click.option(
    "--fred-fix",
    type=click.Choice(list(registry.FRED_FIXES)),
    default=None,
    help="fred: when a phase has no m-colouring, refuse (none) or raise m (raise-m).",
)
@click.option(
    "--config-memory",
    default=None,
    callback=size_callback,
    help="fred: configuration memory per switch (1536 B).",
)
@click.option(
    "--priority",
    type=click.Choice(list(registry.FRED_PRIORITIES)),
    default=None,
    help="fred: the phases' priority class, MP > PP > DP (dp).",
)
@click.option("--json", "as_json", is_flag=True)
def export(
    folder: Path,
    target: str,
    out: Path,
    topology: str | None,
    force: bool,
    fusion: bool | None,
    protocol: str | None,
    coll: str,
    min_bytes: int | None,
    max_bytes: int | None,
    vcs: int | None,
    packet_size: int | None,
    buffer_depth: int | None,
    link_width: float | None,
    clock: float | None,
    router_cycles: int | None,
    fred_m: int | None,
    fred_fix: str | None,
    config_memory: int | None,
    priority: str | None,
    as_json: bool,
) -> None:
    """Write an output folder's program for another tool (never changes the program).

    mesh and torus write a hardware program (docs/hardware.md): mesh accepts meshes, torus
    accepts tori, rings and stacks of rings. fred writes the µSwitch configurations of every
    switch of fred:N per phase (docs/fred.md). chakra-et writes the per-rank Chakra ET files.
    FOLDER may be a program file (NAME.collcp): chakra-et streams a symmetric one a rank at a
    time; the other targets export the full program (a symmetric one expanded)."""
    from chakra_ir.progfile import is_program_file
    from collc import pipeline
    from collc.exporters import EXPORTERS, ExportOptions

    options = ExportOptions(
        fusion,
        protocol,
        coll,
        min_bytes or 0,
        max_bytes or 0,
        vcs=vcs,
        packet_bytes=packet_size,
        buffer_depth=buffer_depth,
        link_width=link_width,
        clock_ghz=clock,
        router_cycles=router_cycles,
        force=force,
        fred_m=fred_m,
        fred_fix=fred_fix,
        config_memory=config_memory,
        priority=priority,
    )
    if is_program_file(folder):
        from collc.program_files import export_file

        files = export_file(folder, out, target, topology=topology, force=force, options=options)
    else:
        manifest, program, _ = pipeline.load(folder)
        topo = pipeline.topology_of(manifest, topology, force=force)
        files = EXPORTERS[target](program, topo, manifest, out, options)
    data = {"target": target, "folder": str(folder), "files": [str(f) for f in files]}

    def human() -> None:
        click.echo(f"{target}: wrote {len(files)} files into {out}")
        for f in files[:10]:
            click.echo(f"  {f}")
        if len(files) > 10:
            click.echo(f"  ... and {len(files) - 10} more")

    emit(as_json, data, human)
