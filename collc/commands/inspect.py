"""``collc inspect``: an output folder as the stable text form (or JSON), or one ET file's
nodes; the only command that reads a folder without verifying it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from topologies.errors import CollcError


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="JSON instead of the text form.")
@click.option("--rank", type=int, default=None, help="Only this rank (folders, program files).")
def inspect(target: Path, as_json: bool, rank: int | None) -> None:
    """Print an output folder or a program file (NAME.collcp) as the stable text form, or one
    ET file's nodes."""
    from chakra_ir.progfile import is_program_file
    from chakra_ir.text import format_program
    from collc import inspect_format

    if is_program_file(target):
        from collc.program_files import rank_text

        if as_json:
            raise CollcError("--json applies to output folders and ET files, not program files")
        click.echo(rank_text(target, rank), nl=False)
        return

    if target.is_dir():
        from collc import pipeline

        manifest, program, _ = pipeline.load(target, check=False)
        if rank is not None:
            from collc.program_files import format_rank

            click.echo(format_rank(program, rank), nl=False)
            return
        if as_json:
            click.echo(json.dumps(inspect_format.program_json(manifest, program), indent=2))
        else:
            click.echo(format_program(program), nl=False)
        return
    if rank is not None:
        raise CollcError("--rank applies to output folders and program files")
    if as_json:
        click.echo(json.dumps(inspect_format.et_file_json(target), indent=2))
    else:
        click.echo(inspect_format.et_file_text(target), nl=False)
