"""``collc simulate``: an output folder's program (or another tool's ET files) simulated on
its topology under a model, with a trace, a link heatmap and a Gantt chart on request."""

from __future__ import annotations

from pathlib import Path

import click

from collc.options import (
    completion_option,
    model_option,
    payload_options,
    size_callback,
    time_callback,
)
from collc.printing import emit, phases, us, warn
from topologies.errors import CollcError


def _simulate_file(
    path: Path, model: str, completion: str | None, as_json: bool, *, options_given: bool
) -> None:
    from collc.program_files import simulate_file

    if model != "congestion" or options_given:
        raise CollcError(
            f"{path}: a program file simulates on its own topology and size under the "
            "congestion model; only --completion and --json apply"
        )
    data = simulate_file(path, completion)

    def human() -> None:
        click.echo(
            f"{path}: {data['form']} program on {data['topology']}: {us(data['finish_ns'])} "
            f"(congestion, {data['completion']})"
        )
        if data["estimated_ns"]:
            click.echo(
                f"producer's estimate {us(data['estimated_ns'])}: simulated / estimated = "
                f"{data['finish_ns'] / data['estimated_ns']:.4f}"
            )

    emit(as_json, data, human)


@click.command()
@click.argument("folder", type=click.Path(path_type=Path))
@model_option
@click.option(
    "--topology", "-t", default=None, help="Override (must match) or give one for foreign ETs."
)
@click.option(
    "--size",
    default=None,
    callback=size_callback,
    help="Override the folder's size (needs --force).",
)
@click.option(
    "--force", is_flag=True, help="Accept a topology or size that differs from the folder's."
)
@click.option(
    "--packet-size", default=None, callback=size_callback, help="Split messages into packets."
)
@click.option(
    "--cut-through",
    "cut_through",
    default=None,
    callback=time_callback,
    metavar="ROUTER_DELAY",
    help="Virtual cut-through switching with this router delay (e.g. 1ns), as mesh and torus "
    "routers do; default store-and-forward, the producers' rule.",
)
@completion_option(None)
@click.option("--timeline", type=click.Path(path_type=Path), help="Write a Chrome/Perfetto trace.")
@click.option("--plot", type=click.Path(path_type=Path), help="Link-utilization heatmap (PNG).")
@click.option("--gantt", type=click.Path(path_type=Path), help="Per-link Gantt chart (PNG).")
@click.option(
    "--gantt-links",
    type=click.IntRange(1, 5000),
    default=64,
    show_default=True,
    help="Rows of the Gantt chart: the busiest links.",
)
@payload_options
@click.option(
    "--strict",
    is_flag=True,
    help="With an ASTRA-sim model: refuse an input ASTRA-sim's binary would not run, instead "
    "of noting it.",
)
@click.option("--json", "as_json", is_flag=True)
def simulate(
    folder: Path,
    model: str,
    topology: str | None,
    size: int | None,
    force: bool,
    packet_size: int | None,
    cut_through: float | None,
    completion: str | None,
    timeline: Path | None,
    plot: Path | None,
    gantt: Path | None,
    gantt_links: int,
    payload: str | None,
    converter: str | None,
    strict: bool,
    as_json: bool,
) -> None:
    """Simulate an output folder's program on its topology."""
    from chakra_ir.progfile import is_program_file

    if is_program_file(folder):
        _simulate_file(
            folder,
            model,
            completion,
            as_json,
            options_given=bool(
                topology
                or size
                or packet_size
                or cut_through
                or timeline
                or plot
                or gantt
                or payload
            ),
        )
        return
    from backends.sim import plot_gantt, plot_links, write_timeline
    from backends.sim.plots import require_matplotlib
    from collc import pipeline

    if model != "congestion" and (plot is not None or gantt is not None):
        raise CollcError(f"--plot and --gantt need link loads, which the {model} model has not")
    if plot is not None or gantt is not None:
        require_matplotlib(plot, gantt)  # before anything is simulated or written
    phase = phases(as_json)
    phase(f"reading, verifying and simulating {folder}")
    req = pipeline.SimRequest(
        folder,
        topology,
        size,
        force,
        model,
        packet_size,
        timeline is not None or gantt is not None,
        completion,
        cut_through,
        payload,
        converter,
        strict,
    )
    result, topo, estimate = pipeline.simulate_folder(req)
    written = []
    gantt_rows: tuple[int, int] | None = None
    if timeline is not None:
        phase(f"writing {timeline}")
        write_timeline(result, timeline, warn)
        written.append(str(timeline))
    if plot is not None:
        phase(f"drawing {plot}")
        plot_links(result, topo, plot)
        written.append(str(plot))
    if gantt is not None:
        phase(f"drawing {gantt}")
        gantt_rows = plot_gantt(result, gantt, max_links=gantt_links)
        written.append(str(gantt))
    phase(None)
    data = result.to_json()
    data["estimated_ns"] = estimate
    data["files"] = written
    if gantt_rows is not None:
        data["gantt_links"] = {"shown": gantt_rows[0], "in_use": gantt_rows[1]}

    def human() -> None:
        click.echo(result.summary())
        if estimate is not None and estimate > 0:
            click.echo(
                f"producer's estimate {us(estimate)}: simulated / estimated = "
                f"{result.finish_ns / estimate:.4f}"
            )
        for f in written:
            click.echo(f"wrote {f}")
        if gantt_rows is not None and gantt_rows[0] < gantt_rows[1]:
            click.echo(
                f"the Gantt chart shows the {gantt_rows[0]} busiest of {gantt_rows[1]:,} links "
                "in use (--gantt-links N for more)"
            )

    emit(as_json, data, human)
