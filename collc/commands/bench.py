"""``collc bench``: every applicable algorithm produced, verified and simulated on one
topology, for a size or a sweep, in one table (the runner is `collc.bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from chakra_ir.collective import CollectiveKind
from collc.options import GROUPS_HELP, collective_callback, completion_option, payload_options
from collc.printing import emit
from topologies.cost_model import DEFAULT_COMPLETION
from topologies.errors import CollcError


@click.command()
@click.option("--topology", "-t", required=True, help="Topology spec or file.")
@click.option("--collective", "-c", required=True, callback=collective_callback)
@click.option(
    "--sizes", default="64MiB", show_default=True, help="A size or a sweep MIN:MAX:xF (nccl-tests)."
)
@click.option("--algorithms", default="", help="Comma-separated subset (default: every one).")
@click.option("--chunks-per-npu", type=int, default=1, show_default=True)
@click.option("--placement", default="")
@click.option(
    "--groups",
    default="",
    help=GROUPS_HELP + " TACOS runs jointly and, as tacos-independent, group by group.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="TACOS keeps the best of K seeds (as synthesize).",
)
@completion_option(DEFAULT_COMPLETION.value)
@click.option(
    "--astra-native",
    default="",
    help="Comma-separated ASTRA-sim implementations (halvingDoubling, direct, ring...): add "
    "rows with ASTRA-sim's analytical time for its own native collective (stack topologies).",
)
@click.option("--plot", type=click.Path(path_type=Path), help="Bus bandwidth against size (PNG).")
@click.option(
    "--html",
    type=click.Path(path_type=Path),
    help="An interactive chart of time and bus bandwidth per size (a self-contained web page).",
)
@payload_options
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True)
@click.option(
    "--max-transfers",
    type=click.IntRange(min=1),
    default=None,
    help="Skip a producer whose program has more chunk transfers than this (as synthesize).",
)
@click.option(
    "--max-work",
    type=click.IntRange(min=1),
    default=None,
    help="Skip a producer whose estimated work is more than this (as synthesize; "
    "default 4,000,000).",
)
def bench(
    topology: str,
    collective: CollectiveKind,
    sizes: str,
    algorithms: str,
    chunks_per_npu: int,
    placement: str,
    groups: str,
    seed: int,
    seeds: int,
    completion: str,
    astra_native: str,
    plot: Path | None,
    html: Path | None,
    payload: str | None,
    converter: str | None,
    as_json: bool,
    quiet: bool,
    max_transfers: int | None,
    max_work: int | None,
) -> None:
    """Every applicable algorithm produced, verified and simulated on one topology."""
    from backends.sim.plots import require_matplotlib
    from collc.bench import format_report, parse_sizes, run_bench

    if plot is not None:
        require_matplotlib(plot)  # before the (long) runs, not after them
    if html is not None:
        from backends.view.page import check_writable

        check_writable(html)

    if chunks_per_npu < 1:
        raise CollcError(f"--chunks-per-npu must be at least 1, got {chunks_per_npu}")
    say = None
    if not (quiet or as_json) and sys.stderr.isatty():
        say = lambda msg: click.echo(f"\r  {msg:<60}", err=True, nl=False)  # noqa: E731
    report = run_bench(
        topology,
        collective,
        parse_sizes(sizes),
        algorithms=[a.strip() for a in algorithms.split(",") if a.strip()] or None,
        chunks_per_npu=chunks_per_npu,
        placement=placement,
        groups=groups,
        seed=seed,
        seeds=seeds,
        completion=completion,
        say=say,
        astra_native=[a.strip() for a in astra_native.split(",") if a.strip()],
        max_work=max_work or 0,
        max_transfers=max_transfers or 0,
        payload=payload,
        converter=converter or "sw",
    )
    if say:
        click.echo("\r" + " " * 64 + "\r", err=True, nl=False)
    if plot is not None:
        from backends.sim import plot_series

        series: dict[str, list[tuple[float, float]]] = {}
        for r in report.rows:
            if r.busbw_gb_per_s is not None:
                series.setdefault(r.algorithm, []).append((r.size_bytes, r.busbw_gb_per_s))
        plot_series(series, plot, title=f"{report.collective} on {report.topology}")
    if html is not None:
        from backends.view.page import render, write_page
        from collc.viewing import bench_page_data

        title = f"collc bench: {report.collective} on {report.topology}"
        write_page(html, render(bench_page_data(report), title))
    emit(as_json, report.to_json(), lambda: click.echo(format_report(report), nl=False))
