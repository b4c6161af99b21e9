"""``collc tune``: the fastest algorithm per message size over every producer that serves the
collective, merged into size ranges, optionally exported one program per range (the runner
is `collc.tune`, the export `collc.tune_export`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from chakra_ir.collective import CollectiveKind
from collc import registry
from collc.options import collective_callback, completion_option, model_option, size_callback
from collc.printing import emit
from topologies.cost_model import DEFAULT_COMPLETION
from topologies.errors import CollcError


def _ints(flag: str, text: str, least: int) -> tuple[int, ...]:
    """``1,2,4`` -> (1, 2, 4), each at least ``least``; CollcError naming the flag."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise CollcError(f"{flag}: expected comma-separated whole numbers, got {text!r}") from None
    if not values or min(values) < least:
        raise CollcError(f"{flag}: expected whole numbers of at least {least}, got {text!r}")
    return tuple(dict.fromkeys(values))


@click.command()
@click.option("--topology", "-t", required=True, help="Topology spec or file.")
@click.option("--collective", "-c", required=True, callback=collective_callback)
@click.option(
    "--sizes",
    default="1KiB:1GiB:x4",
    show_default=True,
    help="The sweep MIN:MAX:xF (nccl-tests), or one size.",
)
@click.option("--placement", default="", help="NPUs of the ranks (default: every NPU).")
@click.option("--algorithms", default="", help="Comma-separated producers (default: every one).")
@click.option("--tacos-chunks", default="1,2,4", show_default=True, help="TACOS chunks per NPU.")
@click.option("--tacos-seeds", default="0,1", show_default=True, help="TACOS seeds, each a run.")
@click.option(
    "--baseline-chunks", default="1", show_default=True, help="Other producers' --chunks-per-npu."
)
@click.option(
    "--program",
    "programs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="An MSCCLang program (.py) or MSCCL-IR XML file to compete too (repeatable).",
)
@model_option
@click.option(
    "--packet-size", callback=size_callback, default=None, help="Packets (congestion model)."
)
@completion_option(DEFAULT_COMPLETION.value)
@click.option(
    "--cache",
    type=click.Path(path_type=Path),
    default=None,
    help="The results cache (default: $XDG_CACHE_HOME/collc/tune.json).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write a cache.")
@click.option(
    "--export",
    "target",
    type=click.Choice(list(registry.TUNE_EXPORT_TARGETS)),
    default=None,
    help="Write one program per chosen range (msccl-xml: minBytes/maxBytes set) into -o.",
)
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None)
@click.option("--plot", type=click.Path(path_type=Path), help="Bus bandwidth against size (PNG).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True)
@click.option("--max-transfers", type=click.IntRange(min=1), default=None, help="As bench.")
@click.option("--max-work", type=click.IntRange(min=1), default=None, help="As bench.")
def tune(
    topology: str,
    collective: CollectiveKind,
    sizes: str,
    placement: str,
    algorithms: str,
    tacos_chunks: str,
    tacos_seeds: str,
    baseline_chunks: str,
    programs: tuple[Path, ...],
    model: str,
    packet_size: int | None,
    completion: str,
    cache: Path | None,
    no_cache: bool,
    target: str | None,
    output: Path | None,
    plot: Path | None,
    as_json: bool,
    quiet: bool,
    max_transfers: int | None,
    max_work: int | None,
) -> None:
    """The fastest algorithm per message size: every producer (TACOS at several chunk counts
    and seeds, every baseline, --program files) simulated over a size sweep, the fastest kept
    per size and neighbouring sizes merged into ranges (docs/tuning.md)."""
    from backends.sim.plots import require_matplotlib
    from collc.bench import parse_sizes
    from collc.tune import TuneCache, TuneSpec, default_cache, format_report, run_tune

    if (target is None) != (output is None):
        raise CollcError("--export and --output go together: --export TARGET -o DIR")
    if packet_size is not None and model != "congestion":
        raise CollcError("--packet-size applies to the congestion model only")
    if plot is not None:
        require_matplotlib(plot)
    try:
        sweep = tuple(parse_sizes(sizes))
    except CollcError as e:
        if e.message.startswith("--sizes"):
            raise
        raise CollcError(f"--sizes {sizes!r}: {e.message}") from None
    spec = TuneSpec(
        topology,
        collective,
        sweep,
        placement=placement,
        algorithms=tuple(a.strip() for a in algorithms.split(",") if a.strip()),
        tacos_chunks=_ints("--tacos-chunks", tacos_chunks, 1),
        tacos_seeds=_ints("--tacos-seeds", tacos_seeds, 0),
        baseline_chunks=_ints("--baseline-chunks", baseline_chunks, 1),
        programs=programs,
        model=model,
        completion=completion,
        packet_bytes=packet_size,
        max_work=max_work or 0,
        max_transfers=max_transfers or 0,
    )
    say = None
    if not (quiet or as_json) and sys.stderr.isatty():
        say = lambda msg: click.echo(f"\r  {msg:<60}", err=True, nl=False)  # noqa: E731
    store = TuneCache(None if no_cache else (cache or default_cache()))
    report = run_tune(spec, store, say)
    if say:
        click.echo("\r" + " " * 64 + "\r", err=True, nl=False)
    files: list[Path] = []
    if target is not None and output is not None:
        from collc.tune_export import export_tuning

        files = export_tuning(report, spec, target, output)
    if plot is not None:
        from backends.sim import busbw_factor, plot_series

        factor = busbw_factor(collective, report.ranks)
        series: dict[str, list[tuple[float, float]]] = {}
        for c in report.cells:
            if c.time_ns:
                series.setdefault(c.label, []).append(
                    (c.size_bytes, c.size_bytes / c.time_ns * factor)
                )
        plot_series(series, plot, title=f"{report.collective} on {report.topology}")
        files.append(plot)
    data = report.to_json()
    data["files"] = [str(f) for f in files]

    def human() -> None:
        click.echo(format_report(report), nl=False)
        for f in files[:10]:
            click.echo(f"wrote {f}")
        if len(files) > 10:
            click.echo(f"... and {len(files) - 10} more")

    emit(as_json, data, human)
