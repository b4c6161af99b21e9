"""Figures of a simulation: link utilization laid out on the topology, and a per-link Gantt.

Both need matplotlib (the ``plot`` extra: ``pip install 'collc[plot]'``), imported only when a
figure is drawn; without it they raise SimError saying so. Figures are drawn without pyplot
(no global state) and written to a temporary name, then renamed. The format follows the
file's suffix (``.png``, ``.svg``, ``.pdf``...; png when there is none).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from backends.sim.errors import SimError
from backends.sim.results import SimResult
from topologies.atomic import write_atomically
from topologies.topology import Topology

MAX_GANTT_ROWS = 64


def _matplotlib() -> tuple[Any, Any, Any]:
    """``(Figure, FigureCanvasAgg, colormaps)`` or SimError telling how to install them."""
    try:
        from matplotlib import colormaps
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise SimError(
            "plots need matplotlib, which is not installed: pip install 'collc[plot]'"
        ) from None
    return Figure, FigureCanvasAgg, colormaps


def _save(fig: Any, canvas_cls: Any, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower() or "png"
    canvas_cls(fig)
    try:
        write_atomically(
            path, lambda name: fig.savefig(name, format=fmt, dpi=120, bbox_inches="tight")
        )
    except ValueError as e:
        raise SimError(f"cannot write {target}: {e}") from None


def _grid_coords(topology: Topology) -> tuple[tuple[int, ...], list[tuple[int, ...]]] | None:
    """Shape and per-NPU coordinates of a mesh or torus of 2 or 3 dimensions, else None."""
    lay = topology.layout
    if lay is None or len(lay.shape) not in (2, 3):
        return None
    if any(k not in ("line", "ring") for k in lay.kinds) or topology.num_switches:
        return None
    coords = [
        tuple(lay.coord(v, d) for d in range(len(lay.shape))) for v in range(topology.num_npus)
    ]
    return lay.shape, coords


def plot_links(result: SimResult, topology: Topology, path: str | os.PathLike[str]) -> None:
    """Draw each link colored by its utilization (busy time / finish time) into ``path``.

    Meshes and tori of 2 dimensions are drawn as their grid, one arrow-like segment per
    directed link beside the segment of the opposite direction; wraparound links of a torus
    are stubs leaving the grid's edge. 3-dimensional ones get one such panel per layer of
    dimension 2, a square on each NPU showing its busier dimension-2 link. Other topologies
    are drawn as a source-by-destination matrix. Raises SimError for results without links
    (the analytical model) or a topology other than the simulated one.
    """
    Figure, Canvas, colormaps = _matplotlib()
    if len(result.link_busy_ns) == 0:
        raise SimError(f"the {result.model} model has no link loads to plot")
    if len(result.link_busy_ns) != len(topology.links):
        raise SimError("the topology is not the one this result was simulated on")
    util = result.link_utilization
    vmax = float(util.max()) if float(util.max()) > 0 else 1.0
    from matplotlib.colors import Normalize

    norm = Normalize(0.0, vmax)
    cmap = colormaps["viridis"]
    grid = _grid_coords(topology)
    if grid is None:
        fig = Figure(figsize=(7, 6))
        ax = fig.add_subplot(1, 1, 1)
        n = topology.num_nodes
        mat = np.full((n, n), np.nan)
        for lk in topology.links:
            prev = mat[lk.src, lk.dst]
            mat[lk.src, lk.dst] = util[lk.index] if np.isnan(prev) else max(prev, util[lk.index])
        im = ax.imshow(mat, cmap=cmap, norm=norm, interpolation="nearest")
        ax.set_xlabel("destination node")
        ax.set_ylabel("source node")
        fig.colorbar(im, ax=ax, label="utilization")
        ax.set_title(f"link utilization, {result.model} model, {topology.name}")
        _save(fig, Canvas, path)
        return
    shape, coords = grid
    layers = shape[2] if len(shape) == 3 else 1
    cols = min(layers, 4)
    rows = -(-layers // cols)
    w, h = shape[0], shape[1]
    fig = Figure(figsize=(max(4.0, 0.9 * w) * cols + 1.5, max(3.5, 0.9 * h) * rows))
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(layers)]
    up: dict[int, float] = {}
    for lk in topology.links:
        a, b = coords[lk.src], coords[lk.dst]
        u = float(util[lk.index])
        if len(shape) == 3 and a[2] != b[2]:
            up[lk.src] = max(up.get(lk.src, 0.0), u)
            continue
        ax = axes[a[2] if len(shape) == 3 else 0]
        x0, y0 = float(a[0]), float(a[1])
        dx, dy = b[0] - a[0], b[1] - a[1]
        if abs(dx) + abs(dy) != 1:  # wraparound: a stub leaving the edge
            dx = -int(np.sign(dx)) if dx else 0
            dy = -int(np.sign(dy)) if dy else 0
            x1, y1 = x0 + 0.45 * dx, y0 + 0.45 * dy
        else:
            x1, y1 = x0 + 0.8 * dx, y0 + 0.8 * dy
            x0, y0 = x0 + 0.2 * dx, y0 + 0.2 * dy
        off = 0.1  # the two directions side by side
        ox, oy = -dy * off, dx * off
        ax.annotate(
            "",
            xy=(x1 + ox, y1 + oy),
            xytext=(x0 + ox, y0 + oy),
            arrowprops={"arrowstyle": "-|>", "color": cmap(norm(u)), "lw": 2.2},
        )
    for i, ax in enumerate(axes):
        for v, c in enumerate(coords):
            if len(shape) == 3 and c[2] != i:
                continue
            color = cmap(norm(up[v])) if v in up else "white"
            marker = "s" if v in up else "o"
            ax.scatter(
                [c[0]], [c[1]], s=120, marker=marker, c=[color], edgecolors="black", zorder=3
            )
            ax.text(c[0], c[1] - 0.3, str(v), ha="center", va="top", fontsize=7)
        ax.set_xlim(-0.7, w - 0.3)
        ax.set_ylim(-0.7, h - 0.3)
        ax.set_aspect("equal")
        ax.set_xticks(range(w))
        ax.set_yticks(range(h))
        ax.set_xlabel("dimension 0")
        ax.set_ylabel("dimension 1")
        if len(shape) == 3:
            ax.set_title(f"layer {i} of dimension 2")
    from matplotlib.cm import ScalarMappable

    sm = ScalarMappable(norm=norm, cmap=cmap)
    fig.colorbar(sm, ax=axes, label="utilization (busy / finish time)")
    fig.suptitle(
        f"link utilization, {result.model} model on {topology.name} "
        f"(finish {result.finish_ns / 1000:.2f} µs)"
    )
    _save(fig, Canvas, path)


def require_matplotlib(*paths: str | os.PathLike[str] | None) -> None:
    """SimError (saying how to install it) unless matplotlib can be imported, or naming a
    path whose format (its suffix; none is PNG) matplotlib cannot write: callers check this
    before they simulate or write anything, so a plot that cannot be made leaves no output."""
    Figure, Canvas, _ = _matplotlib()
    formats = Canvas(Figure()).get_supported_filetypes()
    for path in paths:
        if path is None:
            continue
        fmt = Path(path).suffix.lstrip(".").lower() or "png"
        if fmt not in formats:
            known = ", ".join(sorted(formats))
            raise SimError(f"cannot write {path}: format {fmt!r} is not one of {known}")


def plot_gantt(
    result: SimResult, path: str | os.PathLike[str], *, max_links: int = MAX_GANTT_ROWS
) -> tuple[int, int]:
    """Draw when each link was busy (one row per link, bars colored by sending rank).

    With more than ``max_links`` links in use, the ``max_links`` busiest are drawn and the
    title says so. Returns ``(links drawn, links in use)``. Requires a result simulated with
    ``keep_timeline=True`` under the congestion model (SimError otherwise).
    """
    if max_links < 1:
        raise SimError(f"the Gantt chart needs at least one link row, not {max_links}")
    Figure, Canvas, colormaps = _matplotlib()
    tl = result.timeline
    if tl is None:
        raise SimError("this result kept no timeline: simulate with keep_timeline=True")
    rec = tl.records
    if rec is None or len(rec.link) == 0:
        raise SimError(f"the {result.model} model records no link occupancy to draw")
    used = np.unique(rec.link)
    in_use = len(used)
    if in_use > max_links:
        busy = result.link_busy_ns[used]
        used = np.sort(used[np.argsort(-busy, kind="stable")[:max_links]])
    row_of = {int(li): i for i, li in enumerate(used.tolist())}
    fig = Figure(figsize=(11, max(2.5, 0.28 * len(used) + 1.2)))
    ax = fig.add_subplot(1, 1, 1)
    cmap = colormaps["tab20"]
    sender = tl.rank[rec.task]
    for li, row in row_of.items():
        mask = rec.link == li
        spans = list(
            zip(
                (rec.start_ns[mask] / 1000).tolist(),
                (rec.dur_ns[mask] / 1000).tolist(),
                strict=True,
            )
        )
        colors = [cmap(int(s) % 20) for s in sender[mask].tolist()]
        ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colors)
    ax.set_yticks(range(len(used)))
    ax.set_yticklabels(
        [f"{li}: {tl.link_ends[li][0]}->{tl.link_ends[li][1]}" for li in used.tolist()], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xlabel("time (µs)")
    ax.set_xlim(0, max(result.finish_ns / 1000, 1e-9))
    title = f"link occupancy, {result.model} model on {result.topology}"
    if len(used) < in_use:
        title += f"\nthe {len(used)} busiest of {in_use:,} links in use (more: --gantt-links)"
    else:
        title += f"\nall {in_use:,} links in use"
    ax.set_title(title)
    _save(fig, Canvas, path)
    return len(used), in_use


def plot_series(
    series: dict[str, list[tuple[float, float]]],
    path: str | os.PathLike[str],
    *,
    title: str,
    xlabel: str = "size (bytes)",
    ylabel: str = "bus bandwidth (GB/s)",
) -> None:
    """Lines of (x, y) points per name on a log2 x axis, e.g. bus bandwidth against size."""
    Figure, Canvas, _ = _matplotlib()
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    for name, points in series.items():
        if points:
            xs, ys = zip(*sorted(points), strict=True)
            ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(fig, Canvas, path)
