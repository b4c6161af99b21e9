"""``collc view``: an output folder's schedule drawn on its topology as one self-contained
HTML page (or two folders side by side with one clock)."""

from __future__ import annotations

from pathlib import Path

import click

from collc.printing import emit


@click.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--output", "-o", required=True, type=click.Path(path_type=Path), help="The HTML page."
)
@click.option(
    "--compare",
    type=click.Path(path_type=Path),
    default=None,
    help="A second folder of the same topology, shown beside the first with one clock.",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=0),
    default=100_000,
    show_default=True,
    help="Most link occupancies kept one by one; above, links and ranks are aggregated per "
    "time bin (the page says so).",
)
@click.option("--json", "as_json", is_flag=True)
def view(
    folder: Path, output: Path, compare: Path | None, max_messages: int, as_json: bool
) -> None:
    """Draw an output folder's schedule on its topology as a web page."""
    from backends.view.page import check_writable, render, write_page
    from collc.viewing import compare_panels, folder_panel

    check_writable(output)  # before the simulation, not after it
    if compare is None:
        panels = [folder_panel(folder, max_messages)[0]]
        title = f"collc view: {folder}"
    else:
        panels = compare_panels(folder, compare, max_messages)
        title = f"collc view: {folder} vs {compare}"
    page = render({"panels": panels}, title)
    write_page(output, page)
    size = len(page.encode("utf-8"))
    data = {
        "file": str(output),
        "bytes": size,
        "panels": [
            {"folder": p["title"], "finish_ns": p["finish_ns"], "exact": p["exact"]} for p in panels
        ],
    }

    def human() -> None:
        for p in panels:
            how = "every message" if p["exact"] else "aggregated per time bin"
            click.echo(f"{p['title']}: {p['finish_ns'] / 1000:.3f} us, {how}")
        click.echo(f"wrote {output} ({size / 2**20:.1f} MiB)")

    emit(as_json, data, human)
