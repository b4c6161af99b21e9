"""The self-contained HTML page: the renderer's script and style inlined, the data embedded.

The page needs no server and no network: `render` puts ``view.css``, the data (JSON in a
``script`` element of type ``application/json``, every ``</`` escaped so the data cannot end
the element) and ``view.js`` (collc's own renderer, plain SVG and canvas, no library) into one
HTML document. The data is either ``{"panels": [...]}`` (`backends.view.panel`: one program,
or two side by side with one clock) or ``{"bench": {...}}`` (`bench_data`: a chart of time and
bus bandwidth per size). `write_page` writes it atomically.
"""

from __future__ import annotations

import html
import json
import os
from importlib import resources
from typing import Any

from backends.sim.tasks import DETAIL_NAMES
from backends.view.errors import ViewError
from topologies.atomic import write_text_atomically

MAX_PAGE_BYTES = 25 * 1024 * 1024
"""The largest page `render` makes (the panels aggregate long before it)."""


def _asset(name: str) -> str:
    return resources.files("backends.view").joinpath(name).read_text(encoding="utf-8")


def render(data: dict[str, Any], title: str) -> str:
    """The page for ``data`` (see the module docstring), titled ``title``. Raises ViewError
    when it would exceed `MAX_PAGE_BYTES`."""
    doc = dict(data)
    doc["detail_names"] = list(DETAIL_NAMES)
    payload = json.dumps(doc, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    controls = (
        ""
        if "bench" in data
        else (
            '<div id="controls"><button id="play" type="button">play</button>'
            '<input id="slider" type="range" min="0" max="1000" value="0" aria-label="time">'
            '<span id="clock"></span><label>speed <select id="speed">'
            '<option value="0.25">0.25x</option><option value="1" selected>1x</option>'
            '<option value="4">4x</option></select></label>'
            '<label><input id="whole" type="checkbox"> load over the whole run</label>'
            '<label><input id="critical" type="checkbox"> critical path</label></div>'
        )
    )
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_asset('view.css')}</style></head>"
        f"<body><header><h1>{html.escape(title)}</h1>{controls}</header>"
        '<main id="panels"></main>'
        f'<script type="application/json" id="collc-data">{payload}</script>'
        f"<script>{_asset('view.js')}</script></body></html>\n"
    )
    size = len(page.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise ViewError(
            f"the page would be {size / 2**20:.1f} MiB, over the limit of "
            f"{MAX_PAGE_BYTES / 2**20:.0f} MiB (lower --max-messages)"
        )
    return page


def write_page(path: str | os.PathLike[str], page: str) -> None:
    """Write ``page`` to ``path`` atomically; ViewError naming the path when it cannot be."""
    try:
        write_text_atomically(path, page)
    except OSError as e:
        raise ViewError(f"cannot write {os.fspath(path)}: {e.strerror or e}") from None


def check_writable(path: str | os.PathLike[str]) -> None:
    """ViewError unless a file can be created at ``path`` (its folder exists and is writable,
    and ``path`` is not a folder): checked before the work that fills it."""
    p = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(p))
    if os.path.isdir(p):
        raise ViewError(f"cannot write {p}: it is a folder")
    if not os.path.isdir(folder):
        raise ViewError(f"cannot write {p}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (
        os.path.exists(p) and not os.access(p, os.W_OK)
    ):
        raise ViewError(f"cannot write {p}: permission denied")


def bench_data(
    topology: str,
    collective: str,
    ranks: int,
    sizes: list[int],
    bounds_ns: dict[int, float],
    series: dict[str, list[tuple[int, float, float | None]]],
    busbw_factor: float,
) -> dict[str, Any]:
    """The data of a bench page: per algorithm its ``(size, time ns, busbw GB/s)`` points,
    the lower bound per size (drawn dashed; as bus bandwidth ``size / bound x factor``)."""
    return {
        "bench": {
            "topology": topology,
            "collective": collective,
            "ranks": ranks,
            "sizes": sizes,
            "bounds": {str(k): v for k, v in bounds_ns.items()},
            "series": {k: [list(p) for p in v] for k, v in series.items()},
            "busbw_factor": busbw_factor,
        }
    }
