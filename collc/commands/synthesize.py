"""``collc synthesize``: a verified program for a collective on a topology, from TACOS or a
baseline, written as ET files with its manifest, and its summary printed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from chakra_ir.collective import CollectiveKind
from collc import registry
from collc.options import (
    GROUPS_HELP,
    collective_callback,
    completion_option,
    max_transfers_option,
    payload_options,
    size_callback,
)
from collc.printing import emit, phases, print_summary, summary
from topologies.cost_model import DEFAULT_COMPLETION
from topologies.errors import CollcError

if TYPE_CHECKING:
    from collc.producers import Progress


def _print_file_summary(data: dict[str, Any]) -> None:
    ratio = f", {data['ratio']:.3f}x the {data['lower_bound']} bound" if data["ratio"] else ""
    click.echo(
        f"wrote {data['file']} ({data['form']} form, {data['bytes']:,} bytes): "
        f"{data['collective']} over {data['ranks']} ranks, {data['operations']:,} operations"
        + (f" ({data['template_operations']:,} per rank)" if data["template_operations"] else "")
    )
    click.echo(f"estimated {data['estimated_ns'] / 1000:.3f} us{ratio}")


def _check_groups_flags(groups: str, independent: bool) -> None:
    if independent and not groups:
        raise CollcError("--groups-independent needs --groups")


def _progress(quiet: bool) -> Progress | None:
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


def _groups_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--groups-independent",
        is_flag=True,
        help="With --groups: TACOS synthesizes each group alone (default: all jointly).",
    )(f)
    return click.option("--groups", default="", help=GROUPS_HELP)(f)


@click.command()
@click.option("--topology", "-t", required=True, help="Topology spec (topologies/SPEC.md) or file.")
@click.option(
    "--collective",
    "-c",
    required=True,
    callback=collective_callback,
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
    callback=size_callback,
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
@completion_option(DEFAULT_COMPLETION.value)
@click.option(
    "--output",
    "-o",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="An ET folder, or a program file NAME.collcp (docs/symmetric.md).",
)
@click.option(
    "--form",
    type=click.Choice(registry.PROGRAM_FORMS),
    default="auto",
    show_default=True,
    help="A program file's form: symmetric where TACOS can synthesize in orbit form (auto), "
    "or always full / symmetric.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@max_transfers_option("programs")
@click.option(
    "--max-work",
    type=click.IntRange(min=1),
    default=None,
    help="Refuse a synthesis whose estimated work (chunk transfers weighted by what each "
    "costs, a unit one to three microseconds) is more than this.  [default: 4,000,000]",
)
@payload_options
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
    form: str,
    as_json: bool,
    quiet: bool,
    max_transfers: int,
    max_work: int | None,
    payload: str | None,
    converter: str | None,
) -> None:
    """Produce a verified program for a collective on a topology and write its ET files.

    With --payload, TACOS plans with the sizes its messages will have under that payload
    (docs/payloads.md) and the folder records the payload for `collc simulate`."""
    from collc import pipeline

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
        payload=payload or "",
        converter=converter or "sw",
    )
    phase = phases(quiet or as_json)
    if out.suffix == ".collcp":
        from collc.program_files import synthesize_file

        phase(f"synthesizing into {out}")
        data = synthesize_file(req, out, form)
        phase(None)
        emit(as_json, data, lambda: _print_file_summary(data))
        return
    if form != "auto":
        raise CollcError(f"--form {form} applies to a program file (-o NAME.collcp)")
    phase("reading the topology")
    result = pipeline.synthesize(req, progress=_progress(quiet or as_json))
    phase(f"writing {result.program.num_ranks} ET files into {out}")
    files = pipeline.write(result, out)
    phase(None)
    if payload and pipeline.payload_of(payload).tensors is not None:
        size = result.manifest.size_bytes  # the tensors set the size, not --size
    s = summary(result, out, files, requested_bytes=size)
    emit(as_json, s, lambda: print_summary(s))
