"""What ``collc view`` and ``collc bench --html`` put on a page: a folder read, verified and
simulated into a panel (`backends.view.panel`), and a bench report as chart data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from collc.folders import load, topology_of
from collc.request import cost_model_for
from collc.results import program_bounds
from topologies.errors import CollcError

if TYPE_CHECKING:
    from collc.bench import BenchReport
    from topologies import Topology


def folder_panel(folder: Path, max_records: int) -> tuple[dict[str, Any], Topology]:
    """The panel of an output folder: its program, verified, simulated on the folder's
    topology under its send-completion rule (congestion model), with the tightest lower bound
    that holds for any program and the producer's estimate. Raises CollcError (OutputError
    for a folder that is not collc's, VerifyError for a wrong program)."""
    from backends.view.panel import PanelInfo, build_panel

    manifest, program, _ = load(folder)
    topology = topology_of(manifest, None)
    size = manifest.chunk_bytes * program.collective.size_chunks
    bounds = program_bounds(program, topology, size)
    name, bound = bounds.best if bounds.items else ("", 0.0)
    estimate = manifest.extra.get("estimated_ns")
    info = PanelInfo(
        title=str(folder),
        algorithm=manifest.algorithm,
        bound_name=name,
        bound_ns=bound,
        estimate_ns=float(estimate) if estimate is not None else None,
    )
    panel, _ = build_panel(
        program,
        topology,
        manifest.chunk_bytes,
        cost_model_for(manifest.completion),
        info,
        max_records=max_records,
    )
    return panel, topology


def compare_panels(folder: Path, other: Path, max_records: int) -> list[dict[str, Any]]:
    """Panels of two folders of one topology, side by side; CollcError when their topologies
    differ (the page compares programs on one network)."""
    first, topo = folder_panel(folder, max_records)
    second, topo2 = folder_panel(other, max_records)
    if topo != topo2:
        raise CollcError(
            f"--compare {other}: its topology {topo2.spec} is not {folder}'s ({topo.spec})"
        )
    return [first, second]


def bench_page_data(report: BenchReport) -> dict[str, Any]:
    """A bench report as the data of a chart page (`backends.view.page.bench_data`): the
    rows that ran, per algorithm, and the lower bound per size."""
    from backends.sim.results import busbw_factor
    from backends.view.page import bench_data

    series: dict[str, list[tuple[int, float, float | None]]] = {}
    for r in report.rows:
        if r.time_ns is not None:
            series.setdefault(r.algorithm, []).append((r.size_bytes, r.time_ns, r.busbw_gb_per_s))
    return bench_data(
        report.topology,
        report.collective,
        report.ranks,
        report.sizes,
        {size: ns for size, (_, ns) in report.bounds_ns.items()},
        series,
        busbw_factor(report.collective, report.ranks),
    )
