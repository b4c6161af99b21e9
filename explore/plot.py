"""A bar chart of allocations (``collc libra --plot``): per dimension, the bandwidth each
allocation gives it. Needs matplotlib (the ``plot`` extra), drawn without pyplot and written
to a temporary name, then renamed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from explore.network import ExploreError, Network
from topologies.atomic import write_atomically


def plot_allocations(
    path: str | os.PathLike[str], net: Network, rows: Sequence[dict[str, Any]]
) -> None:
    """Grouped bars: one group per dimension, one bar per allocation (``rows``: ``name``,
    ``bw``, ``time_ns``)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ExploreError(
            "plots need matplotlib, which is not installed: pip install 'collc[plot]'"
        ) from None
    fig = Figure(figsize=(2 + 1.5 * net.ndims, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(rows))
    for k, r in enumerate(rows):
        xs = [d + (k - (len(rows) - 1) / 2) * width for d in range(net.ndims)]
        ax.bar(xs, r["bw"], width, label=f"{r['name']}: {r['time_ns'] / 1e6:.3f} ms")
    ax.set_xticks(range(net.ndims))
    ax.set_xticklabels([f"dim {d}\n{x.kind}{x.size}" for d, x in enumerate(net.dims)])
    ax.set_ylabel("GB/s per NPU")
    ax.legend(fontsize="small")
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    write_atomically(path, lambda name: fig.savefig(name, format=fmt, dpi=120, bbox_inches="tight"))
