"""``collc demo``: the built-in example end to end, an all-reduce on a 4x4 mesh synthesized,
verified, written and read back."""

from __future__ import annotations

from pathlib import Path

import click

from chakra_ir.collective import CollectiveKind
from collc.printing import emit, print_summary, summary
from topologies.errors import CollcError

DEMO_TOPOLOGY = "mesh:4x4,bw=50GB/s,lat=500ns"


@click.command()
@click.option(
    "--output",
    "-o",
    "out",
    type=click.Path(path_type=Path),
    default=Path("collc-demo"),
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True)
def demo(out: Path, as_json: bool) -> None:
    """The built-in example end to end: an all-reduce on a 4x4 mesh, verified, written, read back."""
    from collc import pipeline

    req = pipeline.Request(
        DEMO_TOPOLOGY, CollectiveKind.ALLREDUCE, pipeline.DEFAULT_ALGORITHM, 64 << 20
    )
    result = pipeline.synthesize(req)
    files = pipeline.write(result, out)
    _, again, _ = pipeline.load(out)
    if again != result.program:
        raise CollcError(f"{out}: the ET files read back differ from the program written")
    s = summary(result, out, files)
    s["read_back"] = "identical"

    def human() -> None:
        print_summary(s)
        click.echo("  read back   identical program, verified again")
        click.echo(f"next: collc inspect {out} | head   (the text form)")

    emit(as_json, s, human)
