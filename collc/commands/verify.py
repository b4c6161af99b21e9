"""``collc verify``: check an output folder's program (exit 1 when it is wrong), or the
structure and progress of another tool's folder of ET files."""

from __future__ import annotations

from pathlib import Path

import click

from collc import registry
from collc.printing import emit, phases


@click.command(name="verify")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def verify_cmd(folder: Path, as_json: bool) -> None:
    """Check an output folder's program: exit 0 if correct, 1 if wrong, 2 if unreadable.

    A folder of ET files from another tool (no manifest) gets the checks that need no collc
    attributes: structure and progress.
    """
    from chakra_ir.progfile import is_program_file
    from collc import pipeline

    if is_program_file(folder):
        from collc.program_files import verify_file

        fd = verify_file(folder)
        emit(
            as_json,
            fd,
            lambda: click.echo(
                f"{folder}: ok: {fd['form']} {fd['collective']} over {fd['ranks']} ranks, "
                f"{fd['operations']} operations, {fd['messages']} messages "
                f"({', '.join(fd['checks'])})"
            ),
        )
        return
    phase = phases(as_json)
    phase(f"reading and verifying {folder}")
    if folder.is_dir() and not (folder / registry.MANIFEST).exists() and any(folder.glob("*.et")):
        checked = pipeline.verify_foreign(folder)
        phase(None)
        if isinstance(checked, pipeline.ForeignReport):
            note = "semantics not checkable: the files carry no collc attributes"
            nodes = f"{checked.tasks} nodes"
        else:
            note, nodes = "no manifest", f"{checked.operations} operations"
        fdata = {
            "folder": str(folder),
            "ok": True,
            "ranks": checked.ranks,
            "messages": checked.messages,
            "checks": list(checked.checks),
            "note": note,
        }
        emit(
            as_json,
            fdata,
            lambda: click.echo(
                f"{folder}: ok: {checked.ranks} ranks, {nodes}, {checked.messages} messages "
                f"({', '.join(checked.checks)}; {note})"
            ),
        )
        return
    manifest, program, report = pipeline.load(folder)
    phase(None)
    assert report is not None
    data = {
        "folder": str(folder),
        "ok": True,
        "collective": program.collective.kind.value,
        "ranks": report.ranks,
        "operations": report.operations,
        "messages": report.messages,
        "flows": report.flows,
        "checks": list(report.checks),
        "algorithm": manifest.algorithm,
    }
    emit(
        as_json,
        data,
        lambda: click.echo(
            f"{folder}: ok: {program.collective.describe()}, {report.operations} operations, "
            f"{report.messages} messages"
            + (
                f", {report.flows} in-network flow{'s' * (report.flows != 1)}"
                if report.flows
                else ""
            )
            + f" ({', '.join(report.checks)})"
        ),
    )
