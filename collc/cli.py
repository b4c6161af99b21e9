"""The ``collc`` command line.

Library code raises typed errors; this module alone turns them into a one-line message on
stderr and an exit status: 2 for bad input or a failed step, 1 when ``collc verify`` finds a
program wrong, 0 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from chakra_ir.collective import CollectiveKind, parse_collective_kind
from collc import registry
from collc.workload_cmd import workload
from topologies.cost_model import COMPLETIONS, DEFAULT_COMPLETION
from topologies.errors import CollcError
from topologies.units import format_size_bytes, parse_size_bytes, parse_time_ns

# Start-up: importing this module loads no numpy, networkx, lark, protobuf, ortools,
# matplotlib, optuna or ray (tests/test_cli_startup.py). Option choices come from
# `collc.registry`; each command imports what it needs when it runs, and `pipeline` is
# executed on its first use. Keep that rule for every command added.
if TYPE_CHECKING:
    from collc import pipeline
else:
    pipeline = registry.lazy_module("collc.pipeline")


def _is_verify_error(err: CollcError) -> bool:
    """Whether ``err`` is a `chakra_ir.verify.VerifyError` (loaded if one was raised)."""
    verify = sys.modules.get("chakra_ir.verify")
    return verify is not None and isinstance(err, verify.VerifyError)


def _report(err: CollcError) -> None:
    if sys.stderr.isatty():  # clear a phase or progress line first
        click.echo("\r\033[K", err=True, nl=False)
    click.echo(f"collc: error: {err}", err=True)
    caret = err.caret()
    if caret:
        click.echo(caret, err=True)


class _Group(click.Group):
    """Turns library errors into messages and exit statuses, in this one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CollcError as err:
            if _is_verify_error(err):
                _report(err)
                ctx.exit(1 if ctx.invoked_subcommand == "verify" else 2)
            _report(err)
            ctx.exit(2)
        except BrokenPipeError:
            # The reader went away (`collc simulate OUT | head`): end quietly, as a Unix tool
            # killed by SIGPIPE does, and keep Python from complaining when it flushes stdout.
            _silence_stdout()
            ctx.exit(_SIGPIPE_STATUS)
        except OSError as err:
            # A file or folder the command cannot read or write (a missing parent, no
            # permission, a full disk): the user's input, not a bug.
            where = f"{err.filename}: " if err.filename else ""
            click.echo(f"collc: error: {where}{err.strerror or err}", err=True)
            ctx.exit(2)
        except MemoryError:
            click.echo(
                "collc: error: out of memory: the input asks for more than this machine has",
                err=True,
            )
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("collc: interrupted", err=True)
            ctx.exit(130)


_SIGPIPE_STATUS = 128 + 13
"""The exit status of a Unix tool that SIGPIPE ended."""


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so nothing more is written to a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


_T = TypeVar("_T")


def _parsed(
    parse: Callable[[str], _T],
) -> Callable[[click.Context, click.Parameter, str | None], _T | None]:
    """A click callback: ``parse`` of an option's text (None when absent), its CollcError
    turned into click's usage error."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> _T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except CollcError as e:
            raise click.BadParameter(e.message) from None

    return callback


_size = _parsed(parse_size_bytes)
_time = _parsed(parse_time_ns)


def _collective(_ctx: click.Context, _param: click.Parameter, value: str) -> CollectiveKind:
    try:
        return parse_collective_kind(value)
    except CollcError as e:
        raise click.BadParameter(e.message) from None


def _emit(as_json: bool, data: dict[str, Any], human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        human()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="collc", prog_name="collc")
def cli() -> None:
    """collc: a compiler toolchain for collective-communication algorithms."""


def _summary(
    result: pipeline.Result,
    out: Path | None,
    files: list[Path],
    *,
    requested_bytes: int | None = None,
) -> dict[str, Any]:
    """The summary of a produced program; ``requested_bytes`` is the --size asked for (the
    manifest's size is it rounded up to whole chunks)."""
    p, m = result.program, result.manifest
    return {
        "requested_size_bytes": requested_bytes,
        "algorithm": m.algorithm,
        "collective": p.collective.kind.value,
        "ranks": p.num_ranks,
        "groups": [list(g) for g in p.collective.groups] or None,
        "groups_joint": m.extra.get("groups_joint"),
        "chunks_per_rank": p.collective.chunks_per_rank,
        "inplace": p.collective.inplace,
        "topology": m.topology,
        "size_bytes": m.size_bytes,
        "chunk_bytes": m.chunk_bytes,
        "seed": m.seed,
        "completion": m.completion,
        "operations": p.num_ops,
        "messages": result.report.messages,
        "flows": result.report.flows,
        "verified": list(result.report.checks),
        "estimated_ns": result.estimated_ns,
        "lower_bound_ns": result.bound[1],
        "lower_bound": result.bound[0],
        # TACOS's bound holds for its own chunking; simulate prints the one for any program
        "tacos_chunks_per_npu": result.bounds_chunks,
        "ratio": result.ratio,
        "seconds": {k: round(v, 4) for k, v in result.seconds.items()},
        "output": str(out) if out else None,
        "files": [str(f) for f in files],
    }


def _us(ns: float) -> str:
    return f"{ns / 1000:,.2f} us"


def _print_summary(s: dict[str, Any]) -> None:
    groups = s.get("groups")
    if groups:
        how = "jointly" if s.get("groups_joint") else "each alone"
        click.echo(
            f"{s['algorithm']} {s['collective']} in {len(groups)} groups of {len(groups[0])} at "
            f"once ({how}), {s['ranks']} ranks on {s['topology']}"
        )
    else:
        click.echo(f"{s['algorithm']} {s['collective']} over {s['ranks']} ranks on {s['topology']}")
    size = (
        f"{format_size_bytes(s['size_bytes'])} ({s['chunk_bytes']} B per chunk, "
        f"{s['chunks_per_rank']} chunks per rank)"
    )
    asked = s.get("requested_size_bytes")
    if asked is not None and asked != s["size_bytes"]:
        size += (
            f"; --size {format_size_bytes(asked)} rounded up to whole chunks "
            f"(+{s['size_bytes'] - asked} B)"
        )
    rows = [("size", size)]
    if s["estimated_ns"] is not None:
        how = "simulated, every group at once; " if s.get("groups") else ""
        rows.append(
            ("estimate", f"{_us(s['estimated_ns'])} ({how}sends complete {s['completion']})")
        )
    scope = (
        f"for its chunking, {s['tacos_chunks_per_npu']} chunks per NPU"
        if s.get("tacos_chunks_per_npu")
        else "for any program"
    )
    bound = f"{_us(s['lower_bound_ns'])} ({s['lower_bound']}, {scope})"
    if s["ratio"] is not None:
        bound += f", ratio {s['ratio']:.3f}"
    rows += [
        ("lower bound", bound),
        (
            "operations",
            f"{s['operations']} ({s['messages']} messages"
            + (
                f", {s['flows']} in-network flow{'s' * (s['flows'] != 1)})"
                if s.get("flows")
                else ")"
            ),
        ),
        ("verified", ", ".join(s["verified"])),
        ("seconds", ", ".join(f"{k} {v:.3f}" for k, v in s["seconds"].items())),
    ]
    if s["output"]:
        ets = [f for f in s["files"] if f.endswith(".et")]
        rows.append(("wrote", f"{s['output']}: {len(ets)} ET files and manifest.json"))
    for k, v in rows:
        click.echo(f"  {k:<12} {v}")


def _check_groups_flags(groups: str, independent: bool) -> None:
    if independent and not groups:
        raise CollcError("--groups-independent needs --groups")


def _phases(quiet: bool) -> Callable[[str | None], None]:
    """Show the current phase on one stderr line when stderr is a terminal (never in --json
    runs or pipes); ``None`` clears the line."""
    if quiet or not sys.stderr.isatty():
        return lambda _msg: None
    width = [0]

    def show(msg: str | None) -> None:
        text = "" if msg is None else f"  {msg} ..."
        click.echo("\r" + text.ljust(width[0]) + ("\r" if msg is None else ""), err=True, nl=False)
        width[0] = max(width[0], len(text))

    return show


def _progress(quiet: bool) -> pipeline.Progress | None:
    """A progress line on a terminal; nothing when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        return None

    def show(fraction: float) -> None:
        if fraction >= 1.0:  # what follows (verify, bounds, gates) has no fraction to show
            click.echo("\r  synthesized 100%; verifying the program ...", err=True, nl=False)
        else:
            click.echo(f"\r  synthesizing {100 * fraction:5.1f}%", err=True, nl=False)

    return show


_ALGORITHM_HELP = "; ".join(f"{k}: {v}" for k, v in registry.ALGORITHMS.items())

_COMPLETION_HELP = (
    "When a send completes: on-arrival (ASTRA-sim's rule: what depends on a send waits for its "
    "delivery) or on-departure (its last byte has left the sender)."
)


def _completion_option(default: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--completion",
        type=click.Choice(list(COMPLETIONS)),
        default=default,
        show_default=default is not None,
        help=_COMPLETION_HELP
        + ("" if default is not None else " Default: the folder's rule (needs --force to change)."),
    )


_GROUPS_HELP = (
    "Process groups that each run the collective at once: 8 (consecutive groups of 8), "
    "stride:8, block:2x2 (grid blocks), 0-7;8-15 (explicit), or an ASTRA-sim communicator-group "
    ".json file. Groups are disjoint and of equal size."
)


def _groups_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--groups-independent",
        is_flag=True,
        help="With --groups: TACOS synthesizes each group alone (default: all jointly).",
    )(f)
    return click.option("--groups", default="", help=_GROUPS_HELP)(f)


@cli.command()
@click.option("--topology", "-t", required=True, help="Topology spec (topologies/SPEC.md) or file.")
@click.option(
    "--collective",
    "-c",
    required=True,
    callback=_collective,
    help="allreduce, allgather, reduce_scatter, alltoall, broadcast, reduce, gather, scatter.",
)
@click.option(
    "--algorithm",
    "-a",
    type=click.Choice(list(registry.ALGORITHMS)),
    default=registry.DEFAULT_ALGORITHM,
    show_default=True,
    help=_ALGORITHM_HELP,
)
@click.option(
    "--size",
    default="1MiB",
    show_default=True,
    callback=_size,
    help="Collective size as nccl-tests counts it: the largest buffer.",
)
@click.option(
    "--chunks-per-npu",
    type=int,
    default=1,
    show_default=True,
    help="Cut each NPU's share into this many chunks (pipelining).",
)
@click.option("--inplace", is_flag=True, help="Run in place (MSCCLang aliasing).")
@click.option("--root", type=int, default=0, show_default=True, help="Root rank of rooted kinds.")
@click.option("--placement", default="", help="NPUs the ranks run on, e.g. 0,2,4-7 (default all).")
@_groups_options
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of randomized choices.")
@click.option("--seeds", type=int, default=1, show_default=True, help="Keep the best of K seeds.")
@_completion_option(DEFAULT_COMPLETION.value)
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@registry.max_transfers_option("programs")
@click.option(
    "--max-work",
    type=click.IntRange(min=1),
    default=None,
    help="Refuse a synthesis whose estimated work (chunk transfers weighted by what each "
    "costs, a unit one to three microseconds) is more than this.  [default: 4,000,000]",
)
def synthesize(
    topology: str,
    collective: CollectiveKind,
    algorithm: str,
    size: int,
    chunks_per_npu: int,
    inplace: bool,
    root: int,
    placement: str,
    groups: str,
    groups_independent: bool,
    seed: int,
    seeds: int,
    completion: str,
    out: Path,
    as_json: bool,
    quiet: bool,
    max_transfers: int,
    max_work: int | None,
) -> None:
    """Produce a verified program for a collective on a topology and write its ET files."""
    _check_groups_flags(groups, groups_independent)
    req = pipeline.Request(
        topology,
        collective,
        algorithm,
        size,
        chunks_per_npu,
        inplace,
        root,
        placement,
        seed,
        seeds,
        completion,
        groups,
        groups_independent,
        max_transfers=max_transfers,
        max_work=max_work or 0,
    )
    phase = _phases(quiet or as_json)
    phase("reading the topology")
    result = pipeline.synthesize(req, progress=_progress(quiet or as_json))
    phase(f"writing {result.program.num_ranks} ET files into {out}")
    files = pipeline.write(result, out)
    phase(None)
    s = _summary(result, out, files, requested_bytes=size)
    _emit(as_json, s, lambda: _print_summary(s))


@cli.command()
@click.option("--topology", "-t", required=True, help="Topology spec or file.")
@click.option("--collective", "-c", required=True, callback=_collective)
@click.option("--size", default="1MiB", show_default=True, callback=_size)
@click.option("--chunks-per-npu", type=int, default=1, show_default=True)
@click.option("--root", type=int, default=0, show_default=True)
@click.option("--placement", default="")
@click.option("--groups", default="", help=_GROUPS_HELP)
@click.option("--json", "as_json", is_flag=True)
def bounds(
    topology: str,
    collective: CollectiveKind,
    size: int,
    chunks_per_npu: int,
    root: int,
    placement: str,
    groups: str,
    as_json: bool,
) -> None:
    """Lower bounds on the time of a collective on a topology (of every group at once, with
    --groups)."""
    if chunks_per_npu < 1:
        raise CollcError(f"--chunks-per-npu must be at least 1, got {chunks_per_npu}")
    req = pipeline.Request(
        topology,
        collective,
        size_bytes=size,
        chunks_per_npu=chunks_per_npu,
        root=root,
        groups=groups,
    )
    # A large regular grid gets its bounds in closed form, without building its links.
    from topologies.regular import regular_grid

    grid = None if placement or groups else regular_grid(topology)
    from tacos.bounds import REGULAR_LINKS, regular_lower_bounds
    from topologies import parse_topology

    if grid is not None and grid.num_links > REGULAR_LINKS:
        spec = grid.spec
        b = regular_lower_bounds(collective, grid, size, chunks_per_npu=chunks_per_npu, root=root)
    else:
        topo = parse_topology(topology)
        spec = topo.spec
        npus = pipeline.parse_placement(placement, topo) if placement else ()
        b = pipeline.bounds_for(req, topo, len(npus) or topo.num_npus, npus)
    name, best = b.best
    data = {
        "topology": spec,
        "collective": collective.value,
        "size_bytes": size,
        "chunks_per_npu": chunks_per_npu,
        "bounds_ns": b.items,
        "descriptions": b.descriptions,
        "best": name,
        "best_ns": best,
        "exact_cut": b.exact_cut,
        "groups": groups or None,
    }

    def human() -> None:
        each = f" in each of --groups {groups}" if groups else ""
        click.echo(f"{collective.value} of {format_size_bytes(size)}{each} on {spec}")
        for k, v in sorted(b.items.items(), key=lambda kv: -kv[1]):
            mark = "*" if k == name else " "
            click.echo(f" {mark} {k:<15} {_us(v):>16}  {b.descriptions.get(k, '')}")

    _emit(as_json, data, human)


@cli.command(name="verify")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def verify_cmd(folder: Path, as_json: bool) -> None:
    """Check an output folder's program: exit 0 if correct, 1 if wrong, 2 if unreadable.

    A folder of ET files from another tool (no manifest) gets the checks that need no collc
    attributes: structure and progress.
    """
    phase = _phases(as_json)
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
        _emit(
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
    _emit(
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


@cli.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="JSON instead of the text form.")
def inspect(target: Path, as_json: bool) -> None:
    """Print an output folder as the stable text form, or one ET file's nodes."""
    from chakra_ir.text import format_program
    from collc import inspect_cmd

    if target.is_dir():
        manifest, program, _ = pipeline.load(target, check=False)
        if as_json:
            click.echo(json.dumps(inspect_cmd.program_json(manifest, program), indent=2))
        else:
            click.echo(format_program(program), nl=False)
        return
    if as_json:
        click.echo(json.dumps(inspect_cmd.et_file_json(target), indent=2))
    else:
        click.echo(inspect_cmd.et_file_text(target), nl=False)


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--model",
    type=click.Choice(list(registry.SIM_MODELS)),
    default="congestion",
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in registry.SIM_MODELS.items()),
)
@click.option(
    "--topology", "-t", default=None, help="Override (must match) or give one for foreign ETs."
)
@click.option(
    "--size", default=None, callback=_size, help="Override the folder's size (needs --force)."
)
@click.option(
    "--force", is_flag=True, help="Accept a topology or size that differs from the folder's."
)
@click.option("--packet-size", default=None, callback=_size, help="Split messages into packets.")
@click.option(
    "--cut-through",
    "cut_through",
    default=None,
    callback=_time,
    metavar="ROUTER_DELAY",
    help="Virtual cut-through switching with this router delay (e.g. 1ns), as mesh and torus "
    "routers do; default store-and-forward, the producers' rule.",
)
@_completion_option(None)
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
    as_json: bool,
) -> None:
    """Simulate an output folder's program on its topology."""
    from backends.sim import plot_gantt, plot_links, write_timeline
    from backends.sim.plots import require_matplotlib

    if model != "congestion" and (plot is not None or gantt is not None):
        raise CollcError(f"--plot and --gantt need link loads, which the {model} model has not")
    if plot is not None or gantt is not None:
        require_matplotlib(plot, gantt)  # before anything is simulated or written
    phase = _phases(as_json)
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
    )
    result, topo, estimate = pipeline.simulate_folder(req)
    written = []
    gantt_rows: tuple[int, int] | None = None
    if timeline is not None:
        phase(f"writing {timeline}")
        write_timeline(result, timeline)
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
                f"producer's estimate {_us(estimate)}: simulated / estimated = "
                f"{result.finish_ns / estimate:.4f}"
            )
        for f in written:
            click.echo(f"wrote {f}")
        if gantt_rows is not None and gantt_rows[0] < gantt_rows[1]:
            click.echo(
                f"the Gantt chart shows the {gantt_rows[0]} busiest of {gantt_rows[1]:,} links "
                "in use (--gantt-links N for more)"
            )

    _emit(as_json, data, human)


@cli.command()
@click.option("--topology", "-t", required=True, help="Topology spec or file.")
@click.option("--collective", "-c", required=True, callback=_collective)
@click.option(
    "--sizes", default="64MiB", show_default=True, help="A size or a sweep MIN:MAX:xF (nccl-tests)."
)
@click.option("--algorithms", default="", help="Comma-separated subset (default: every one).")
@click.option("--chunks-per-npu", type=int, default=1, show_default=True)
@click.option("--placement", default="")
@click.option(
    "--groups",
    default="",
    help=_GROUPS_HELP + " TACOS runs jointly and, as tacos-independent, group by group.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="TACOS keeps the best of K seeds (as synthesize).",
)
@_completion_option(DEFAULT_COMPLETION.value)
@click.option(
    "--astra-native",
    default="",
    help="Comma-separated ASTRA-sim implementations (halvingDoubling, direct, ring...): add "
    "rows with ASTRA-sim's analytical time for its own native collective (stack topologies).",
)
@click.option("--plot", type=click.Path(path_type=Path), help="Bus bandwidth against size (PNG).")
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
    )
    if say:
        click.echo("\r" + " " * 64 + "\r", err=True, nl=False)
    if plot is not None:
        from backends.sim import plot_series

        series: dict[str, list[tuple[float, float]]] = {}
        for r in report.rows:
            if r.busbw_gbps is not None:
                series.setdefault(r.algorithm, []).append((r.size_bytes, r.busbw_gbps))
        plot_series(series, plot, title=f"{report.collective} on {report.topology}")
    _emit(as_json, report.to_json(), lambda: click.echo(format_report(report), nl=False))


@cli.command(name="compile", context_settings={"ignore_unknown_options": True})
@click.argument("program", type=click.Path(path_type=Path))
@click.argument("program_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--size", default="1MiB", show_default=True, callback=_size)
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
        summaries.append(_summary(result, folder, files))

    def human() -> None:
        if printed:
            click.echo(printed, nl=not printed.endswith("\n"))
        for s in summaries:
            _print_summary(s)

    if len(summaries) == 1:
        data = dict(summaries[0], program_output=printed)
    else:
        data = {"programs": summaries, "program_output": printed}
    _emit(as_json, data, human)


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


@cli.command(name="import")
@click.argument("xml", type=click.Path(path_type=Path))
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--size", default="1MiB", show_default=True, callback=_size)
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
@click.option("--json", "as_json", is_flag=True)
def import_cmd(
    xml: Path,
    out: Path,
    size: int,
    topology: str | None,
    root: int | None,
    max_chunks: int | None,
    max_xml_bytes: int | None,
    as_json: bool,
) -> None:
    """Read MSCCL-IR XML (msccl-tools, TACCL, ForestColl) into a verified output folder."""
    from mscclang_frontend.xml import XmlLimits

    if not xml.is_file():
        raise CollcError(f"{xml}: no such file")
    base = XmlLimits()
    limits = XmlLimits(
        max_file_bytes=max_xml_bytes or base.max_file_bytes,
        max_buffer_chunks=max_chunks or base.max_buffer_chunks,
        max_total_chunks=max(base.max_total_chunks, 16 * (max_chunks or 0)),
    )
    result = pipeline.import_xml(xml, size_bytes=size, topology=topology, root=root, limits=limits)
    for warning in result.manifest.extra.get("warnings", []):
        click.echo(f"collc: warning: {xml}: {warning}", err=True)
    files = pipeline.write(result, out)
    s = _summary(result, out, files, requested_bytes=size)
    _emit(as_json, s, lambda: _print_summary(s))


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--target", required=True, type=click.Choice(list(registry.EXPORT_TARGETS)))
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--topology", "-t", default=None, help="Override (must match the folder's).")
@click.option(
    "--force",
    is_flag=True,
    help="Accept a topology that differs from the folder's; mesh/torus: write a program whose "
    "channel-dependency graph has a cycle.",
)
@click.option(
    "--fusion/--no-fusion", default=None, help="MSCCL instruction fusion (rcs, rrs, rrcs)."
)
@click.option("--protocol", type=click.Choice(["Simple", "LL", "LL128"]), default=None)
@click.option("--coll", default="", help="MSCCL runtime collective name for custom collectives.")
@click.option("--min-bytes", default=None, callback=_size, help="MSCCL algo minBytes (default 0).")
@click.option(
    "--max-bytes", default=None, callback=_size, help="MSCCL algo maxBytes (0: no limit)."
)
@click.option(
    "--vcs", type=int, default=None, help="mesh/torus: virtual channels (default: fewest needed)."
)
@click.option("--packet-size", default=None, callback=_size, help="mesh/torus: packet size (4KiB).")
@click.option(
    "--buffer-depth",
    type=int,
    default=None,
    help="mesh/torus: packets per VC buffer (default: what a credit round trip needs).",
)
@click.option(
    "--link-width", type=float, default=None, help="mesh/torus: bytes/cycle (bandwidth/clock)."
)
@click.option("--clock", type=float, default=None, help="mesh/torus: clock in GHz (1).")
@click.option(
    "--router-cycles", type=int, default=None, help="mesh/torus: router pipeline cycles (1)."
)
@click.option("--json", "as_json", is_flag=True)
def export(
    folder: Path,
    target: str,
    out: Path,
    topology: str | None,
    force: bool,
    fusion: bool | None,
    protocol: str | None,
    coll: str,
    min_bytes: int | None,
    max_bytes: int | None,
    vcs: int | None,
    packet_size: int | None,
    buffer_depth: int | None,
    link_width: float | None,
    clock: float | None,
    router_cycles: int | None,
    as_json: bool,
) -> None:
    """Write an output folder's program for another tool (never changes the program).

    mesh and torus write a hardware program (docs/hardware.md): mesh accepts meshes, torus
    accepts tori, rings and stacks of rings."""
    from collc.exporters import EXPORTERS, ExportOptions

    manifest, program, _ = pipeline.load(folder)
    topo = pipeline.topology_of(manifest, topology, force=force)
    options = ExportOptions(
        fusion,
        protocol,
        coll,
        min_bytes or 0,
        max_bytes or 0,
        vcs=vcs,
        packet_bytes=packet_size,
        buffer_depth=buffer_depth,
        link_width=link_width,
        clock_ghz=clock,
        router_cycles=router_cycles,
        force=force,
    )
    files = EXPORTERS[target](program, topo, manifest, out, options)
    data = {"target": target, "folder": str(folder), "files": [str(f) for f in files]}

    def human() -> None:
        click.echo(f"{target}: wrote {len(files)} files into {out}")
        for f in files[:10]:
            click.echo(f"  {f}")
        if len(files) > 10:
            click.echo(f"  ... and {len(files) - 10} more")

    _emit(as_json, data, human)


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--timeline", type=click.Path(path_type=Path), help="Write a Chrome/Perfetto trace.")
@click.option("--json", "as_json", is_flag=True)
def replay(folder: Path, timeline: Path | None, as_json: bool) -> None:
    """Execute a hardware program packet by packet and check it (docs/hardware.md, Replay).

    Reports cycles and time, link utilisation, the fullest VC buffers, packets and
    packet-hops, whether the collective's postcondition holds, and a deadlock with its cycle
    of waiting buffers."""
    from backends.replay import ReplayOptions
    from backends.replay import replay as run_replay

    result = run_replay(folder, ReplayOptions(timeline=timeline is not None))
    if timeline is not None:
        from backends.replay.timeline import write_timeline

        write_timeline(result, timeline)
    data = result.to_json()
    if timeline is not None:
        data["timeline"] = str(timeline)

    def human() -> None:
        r = result
        click.echo(
            f"{r.target} {r.topology}: {r.algorithm} {r.collective}, {r.messages} messages, "
            f"{r.packets} packets, {r.packet_hops} packet-hops"
        )
        p = r.parameters
        click.echo(
            f"  packets of {p['packet_bytes']} B, {p['num_vcs']} VC(s) of "
            f"{p['buffer_depth_packets']} packets, router {p['router_pipeline_cycles']} "
            f"cycle(s), clock {p['clock_ghz']} GHz, completion {r.completion}"
        )
        if r.deadlock is not None:
            click.echo(f"  DEADLOCK: {r.deadlock['description']}")
        else:
            click.echo(f"  finished at cycle {r.cycles} ({_us(r.time_ns)})")
        busiest = r.busiest_link()
        if busiest is not None and r.cycles:
            used = [lk for lk in r.links if lk.busy_cycles]
            mean = sum(lk.busy_cycles for lk in used) / len(used) / r.cycles if used else 0.0
            click.echo(
                f"  links: {len(used)} of {len(r.links)} used, mean utilisation {mean:.1%}, "
                f"busiest {busiest.src}->{busiest.dst} (port {busiest.port}) "
                f"{busiest.busy_cycles / r.cycles:.1%}"
            )
        full = r.max_buffer()
        if full is not None:
            click.echo(
                f"  fullest VC buffer: router {full.router} port {full.port} vc {full.vc} "
                f"(from {full.link_src}): {full.max_packets} of {p['buffer_depth_packets']} packets"
            )
        post = f"postcondition {r.postcondition}"
        if r.postcondition_message:
            post += f": {r.postcondition_message}"
        click.echo(f"  {post}")
        if timeline is not None:
            click.echo(f"  timeline: {timeline}")

    _emit(as_json, data, human)
    if result.deadlock is not None or result.postcondition != "holds":
        click.get_current_context().exit(1)


DEMO_TOPOLOGY = "mesh:4x4,bw=50GB/s,lat=500ns"


@cli.command()
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
    req = pipeline.Request(
        DEMO_TOPOLOGY, CollectiveKind.ALLREDUCE, pipeline.DEFAULT_ALGORITHM, 64 << 20
    )
    result = pipeline.synthesize(req)
    files = pipeline.write(result, out)
    _, again, _ = pipeline.load(out)
    if again != result.program:
        raise CollcError(f"{out}: the ET files read back differ from the program written")
    s = _summary(result, out, files)
    s["read_back"] = "identical"

    def human() -> None:
        _print_summary(s)
        click.echo("  read back   identical program, verified again")
        click.echo(f"next: collc inspect {out} | head   (the text form)")

    _emit(as_json, s, human)


cli.add_command(workload)


def main() -> None:
    try:
        cli(prog_name="collc")
    except BrokenPipeError:  # a closed pipe seen outside a command (e.g. by --help)
        _silence_stdout()
        sys.exit(_SIGPIPE_STATUS)


if __name__ == "__main__":
    main()
