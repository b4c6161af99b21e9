"""Errors of the mesh/torus hardware-program writer and reader."""

from __future__ import annotations

from topologies.errors import CollcError


class FormatError(CollcError):
    """A file of one of collc's versioned JSON formats that cannot be read: not JSON, another
    format, a version from the future, or a schema violation (the message names the JSON
    path)."""


class HwProgError(FormatError):
    """A hardware program that cannot be written (a topology or program the mesh/torus
    targets do not accept) or read (corrupted, hand-edited or inconsistent; the message names
    the file, the NPU and the command)."""


class HwDeadlockError(HwProgError):
    """The channel-dependency graph over (link, VC) has a cycle the available virtual channels
    cannot break; ``cycle`` lists its channels as ``(src, port, dst, vc)``."""

    def __init__(self, message: str, cycle: list[tuple[int, int, int, int]]) -> None:
        super().__init__(message)
        self.cycle = cycle
