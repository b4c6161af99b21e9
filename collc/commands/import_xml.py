"""``collc import``: MSCCL-IR XML (msccl-tools, TACCL, ForestColl) read into a verified
output folder, with what the MSCCL runtime would refuse printed as warnings."""

from __future__ import annotations

from pathlib import Path

import click

from collc.options import size_callback
from collc.printing import emit, print_summary, summary
from topologies.errors import CollcError


@click.command(name="import")
@click.argument("xml", type=click.Path(path_type=Path))
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--size", default="1MiB", show_default=True, callback=size_callback)
@click.option("--topology", "-t", default=None, help="Where it runs (default: fc:<ranks>).")
@click.option("--root", type=int, default=None, help="Root of a rooted collective (XML has none).")
@click.option(
    "--max-chunks",
    type=click.IntRange(min=1),
    default=None,
    help="Chunks one buffer of one GPU may have (default 1,048,576; all buffers together 16x).",
)
@click.option(
    "--max-xml-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Size of the XML file (default 64 MiB).",
)
@click.option(
    "--as-custom",
    is_flag=True,
    help="Read a file whose coll names a standard collective as the custom collective it "
    "computes from that collective's input (docs/mscclang.md).",
)
@click.option("--json", "as_json", is_flag=True)
def import_cmd(
    xml: Path,
    out: Path,
    size: int,
    topology: str | None,
    root: int | None,
    max_chunks: int | None,
    max_xml_bytes: int | None,
    as_custom: bool,
    as_json: bool,
) -> None:
    """Read MSCCL-IR XML (msccl-tools, TACCL, ForestColl) into a verified output folder."""
    from collc import pipeline
    from mscclang_frontend.xml import XmlLimits

    if not xml.is_file():
        raise CollcError(f"{xml}: no such file")
    base = XmlLimits()
    limits = XmlLimits(
        max_file_bytes=max_xml_bytes or base.max_file_bytes,
        max_buffer_chunks=max_chunks or base.max_buffer_chunks,
        max_total_chunks=max(base.max_total_chunks, 16 * (max_chunks or 0)),
    )
    result = pipeline.import_xml(
        xml, size_bytes=size, topology=topology, root=root, limits=limits, as_custom=as_custom
    )
    for warning in result.manifest.extra.get("warnings", []):
        click.echo(f"collc: warning: {xml}: {warning}", err=True)
    files = pipeline.write(result, out)
    s = summary(result, out, files, requested_bytes=size)
    emit(as_json, s, lambda: print_summary(s))
