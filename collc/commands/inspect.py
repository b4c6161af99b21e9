"""``collc inspect``: an output folder as the stable text form (or JSON), or one ET file's
nodes; the only command that reads a folder without verifying it."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="JSON instead of the text form.")
def inspect(target: Path, as_json: bool) -> None:
    """Print an output folder as the stable text form, or one ET file's nodes."""
    from chakra_ir.text import format_program
    from collc import inspect_format

    if target.is_dir():
        from collc import pipeline

        manifest, program, _ = pipeline.load(target, check=False)
        if as_json:
            click.echo(json.dumps(inspect_format.program_json(manifest, program), indent=2))
        else:
            click.echo(format_program(program), nl=False)
        return
    if as_json:
        click.echo(json.dumps(inspect_format.et_file_json(target), indent=2))
    else:
        click.echo(inspect_format.et_file_text(target), nl=False)
