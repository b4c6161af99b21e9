"""Hardware programs for meshes and tori (``collc export --target mesh|torus``).

A Program on a mesh or torus becomes a folder of versioned JSON documents
(docs/hardware.md): a header with the hardware parameters, one command stream per NPU (DMA
sends with their route and a virtual channel per hop, receives, copies, reductions, each with
the commands it waits for) and the routers' tables for source-routed flows. Virtual channels
are assigned so the channel-dependency graph is acyclic (`backends.hwprog.vcs`), and checked;
`read_hwprog` loads and checks a folder for a replayer.
"""

from __future__ import annotations

from backends.hwprog.errors import FormatError, HwDeadlockError, HwProgError
from backends.hwprog.export import (
    FORMAT,
    HwOptions,
    HwProgram,
    build_hwprog,
    export,
    npu_documents,
    plan,
)
from backends.hwprog.format import Format
from backends.hwprog.grid import TARGETS, grid_of
from backends.hwprog.read import read_hwprog

__all__ = [
    "FORMAT",
    "TARGETS",
    "Format",
    "FormatError",
    "HwDeadlockError",
    "HwOptions",
    "HwProgError",
    "HwProgram",
    "build_hwprog",
    "export",
    "grid_of",
    "npu_documents",
    "plan",
    "read_hwprog",
]
