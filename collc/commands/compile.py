"""``collc compile``: an MSCCLang program (with its own arguments) compiled, verified and
written; each program of a file that builds several into a folder of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from collc.options import size_callback
from collc.printing import emit, print_summary, summary
from topologies.errors import CollcError


@click.command(name="compile", context_settings={"ignore_unknown_options": True})
@click.argument("program", type=click.Path(path_type=Path))
@click.argument("program_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--size", default="1MiB", show_default=True, callback=size_callback)
@click.option("--topology", "-t", default=None, help="Where it runs (default: fc:<ranks>).")
@click.option(
    "--program",
    "which",
    default=None,
    help="Compile only this MSCCLProgram of the file (its name or 1-based number); by "
    "default a file with several writes each into OUT/<name>/.",
)
@click.option(
    "--as-custom",
    is_flag=True,
    help="Compile a program whose result is not its collective's (its Check() would fail) "
    "as a custom collective whose postcondition is what it computes.",
)
@click.option(
    "--max-ops",
    type=click.IntRange(min=1),
    default=None,
    help="Operations the program may record (default 200,000).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluation steps the program may take (default 2,000,000).",
)
@click.option(
    "--max-source-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Size of the program text (default 1 MiB).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Tokens of the program text (default 200,000).",
)
@click.option("--json", "as_json", is_flag=True)
def compile_cmd(
    program: Path,
    program_args: tuple[str, ...],
    out: Path,
    size: int,
    topology: str | None,
    which: str | None,
    as_custom: bool,
    max_ops: int | None,
    max_steps: int | None,
    max_source_bytes: int | None,
    max_tokens: int | None,
    as_json: bool,
) -> None:
    """Compile an MSCCLang program (its own arguments after --) into an output folder."""
    from collc import pipeline
    from mscclang_frontend import Limits
    from mscclang_frontend.msccl_api import ApiLimits

    if not program.is_file():
        raise CollcError(f"{program}: no such file")
    base = Limits()
    limits = Limits(
        max_steps=max_steps or base.max_steps,
        max_source_bytes=max_source_bytes or base.max_source_bytes,
        max_tokens=max_tokens or base.max_tokens,
        api=ApiLimits(max_ops=max_ops or base.api.max_ops),
    )
    results, printed = pipeline.compile_msccl_all(
        program,
        program_args,
        size_bytes=size,
        topology=topology,
        program=which,
        as_custom=as_custom,
        limits=limits,
    )
    summaries: list[dict[str, Any]] = []
    folders = _program_folders(out, [name for name, _ in results])
    for (_, result), folder in zip(results, folders, strict=True):
        files = pipeline.write(result, folder)
        summaries.append(summary(result, folder, files))

    def human() -> None:
        if printed:
            click.echo(printed, nl=not printed.endswith("\n"))
        for s in summaries:
            print_summary(s)

    if len(summaries) == 1:
        data = dict(summaries[0], program_output=printed)
    else:
        data = {"programs": summaries, "program_output": printed}
    emit(as_json, data, human)


def _program_folders(out: Path, names: list[str]) -> list[Path]:
    """``out`` for one program; ``out/<name>`` for each of several (``-2``, ``-3``... when
    names repeat)."""
    if len(names) == 1:
        return [out]
    folders: list[Path] = []
    seen: dict[str, int] = {}
    for name in names:
        safe = (
            "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "program"
        )
        seen[safe] = seen.get(safe, 0) + 1
        folders.append(out / (safe if seen[safe] == 1 else f"{safe}-{seen[safe]}"))
    return folders
