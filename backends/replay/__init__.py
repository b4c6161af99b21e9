"""``collc replay``: execute a hardware program and check it (docs/hardware.md, "Replay").

`replay(folder, options)` dispatches on the header's target through `REPLAYERS`; meshes and
tori run `backends.replay.grid`, a packet-level simulation of virtual cut-through with credit
flow control, independent of `backends.sim`. Chunk contents are tracked with
`chakra_ir.verify.SymbolicMemory`, and the collective's postcondition is checked at the end.
"""

from __future__ import annotations

from backends.replay.errors import ReplayError
from backends.replay.framework import (
    REPLAYERS,
    BufferUse,
    LinkReport,
    ReplayOptions,
    ReplayResult,
    read_target,
    replay,
)

__all__ = [
    "REPLAYERS",
    "BufferUse",
    "LinkReport",
    "ReplayError",
    "ReplayOptions",
    "ReplayResult",
    "read_target",
    "replay",
]
