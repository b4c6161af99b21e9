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

from backends.sim.errors import SimError
from backends.sim.et_tasks import simulate_et, tasks_from_et
from backends.sim.models import MODELS, Model, simulate, simulate_tasks
from backends.sim.native import (
    AstraDim,
    NativeEstimate,
    astrasim_native_estimate,
    astrasim_native_time,
    dims_from_topology,
)
from backends.sim.plots import plot_gantt, plot_links, plot_series
from backends.sim.results import LinkUse, SimResult, Timeline, busbw_factor
from backends.sim.tasks import TaskGraph, TaskKind, tasks_from_program
from backends.sim.timeline import write_timeline

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
