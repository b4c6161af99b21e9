"""``collc bounds``: the lower bounds on a collective's time on a topology (in closed form
for a large regular grid), with the tightest marked."""

from __future__ import annotations

import click

from chakra_ir.collective import CollectiveKind
from collc.options import GROUPS_HELP, collective_callback, size_callback
from collc.printing import emit, us
from topologies.errors import CollcError
from topologies.units import format_size_bytes


@click.command()
@click.option("--topology", "-t", required=True, help="Topology spec or file.")
@click.option("--collective", "-c", required=True, callback=collective_callback)
@click.option("--size", default="1MiB", show_default=True, callback=size_callback)
@click.option("--chunks-per-npu", type=int, default=1, show_default=True)
@click.option("--root", type=int, default=0, show_default=True)
@click.option("--placement", default="")
@click.option("--groups", default="", help=GROUPS_HELP)
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
    from collc import pipeline

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
            click.echo(f" {mark} {k:<15} {us(v):>16}  {b.descriptions.get(k, '')}")

    emit(as_json, data, human)
