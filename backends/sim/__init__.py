"""backends.sim: discrete-event simulation of collective programs on a topology.

- `simulate(program, topology, chunk_bytes, model=...)` runs a Program; `simulate_tasks` runs
  any `TaskGraph`; `simulate_et` times per-rank ET traces written by other tools.
- ``MODELS``: ``congestion`` (collc's cost model, links as FIFO servers), ``analytical``
  (ASTRA-sim's congestion-unaware backend on the program as a custom collective) and
  ``astra-aware`` (its congestion-aware backend).
- `astrasim_native_time`: ASTRA-sim's analytical time for its built-in collectives.
- `write_timeline`: a Chrome-trace/Perfetto JSON; `plot_links`, `plot_gantt`: figures (need
  the ``plot`` extra, matplotlib, imported only when drawing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from backends.sim.errors import SimError as SimError
    from backends.sim.et_tasks import simulate_et as simulate_et
    from backends.sim.et_tasks import tasks_from_et as tasks_from_et
    from backends.sim.models import MODELS as MODELS
    from backends.sim.models import Model as Model
    from backends.sim.models import simulate as simulate
    from backends.sim.models import simulate_tasks as simulate_tasks
    from backends.sim.native import AstraDim as AstraDim
    from backends.sim.native import NativeEstimate as NativeEstimate
    from backends.sim.native import astrasim_native_estimate as astrasim_native_estimate
    from backends.sim.native import astrasim_native_time as astrasim_native_time
    from backends.sim.native import dims_from_topology as dims_from_topology
    from backends.sim.plots import plot_gantt as plot_gantt
    from backends.sim.plots import plot_links as plot_links
    from backends.sim.plots import plot_series as plot_series
    from backends.sim.results import LinkUse as LinkUse
    from backends.sim.results import SimResult as SimResult
    from backends.sim.results import Timeline as Timeline
    from backends.sim.results import busbw_factor as busbw_factor
    from backends.sim.tasks import TaskGraph as TaskGraph
    from backends.sim.tasks import TaskKind as TaskKind
    from backends.sim.tasks import tasks_from_program as tasks_from_program
    from backends.sim.timeline import write_timeline as write_timeline

_LAZY: dict[str, str] = {
    "SimError": "backends.sim.errors",
    "simulate_et": "backends.sim.et_tasks",
    "tasks_from_et": "backends.sim.et_tasks",
    "MODELS": "backends.sim.models",
    "Model": "backends.sim.models",
    "simulate": "backends.sim.models",
    "simulate_tasks": "backends.sim.models",
    "AstraDim": "backends.sim.native",
    "NativeEstimate": "backends.sim.native",
    "astrasim_native_estimate": "backends.sim.native",
    "astrasim_native_time": "backends.sim.native",
    "dims_from_topology": "backends.sim.native",
    "plot_gantt": "backends.sim.plots",
    "plot_links": "backends.sim.plots",
    "plot_series": "backends.sim.plots",
    "LinkUse": "backends.sim.results",
    "SimResult": "backends.sim.results",
    "Timeline": "backends.sim.results",
    "busbw_factor": "backends.sim.results",
    "TaskGraph": "backends.sim.tasks",
    "TaskKind": "backends.sim.tasks",
    "tasks_from_program": "backends.sim.tasks",
    "write_timeline": "backends.sim.timeline",
}
"""Where each public name lives; it is imported on first use, so a command that needs one part
(``collc compile`` needs only `backends.sim.gates` and the engine) does not load every model,
the ET reader and the plots (start-up time, issue 12)."""

__all__ = [
    "MODELS",
    "AstraDim",
    "LinkUse",
    "Model",
    "NativeEstimate",
    "SimError",
    "SimResult",
    "TaskGraph",
    "TaskKind",
    "Timeline",
    "astrasim_native_estimate",
    "astrasim_native_time",
    "busbw_factor",
    "dims_from_topology",
    "plot_gantt",
    "plot_links",
    "plot_series",
    "simulate",
    "simulate_et",
    "simulate_tasks",
    "tasks_from_et",
    "tasks_from_program",
    "write_timeline",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
