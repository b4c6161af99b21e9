"""Errors of the FRED switch compiler and of its configuration files."""

from __future__ import annotations

from backends.hwprog.errors import FormatError
from topologies.errors import CollcError


class FredError(CollcError):
    """A program, topology or option the FRED switch compiler refuses (not an in-network
    tree, a phase over the switch's configuration memory, ...)."""


class FredUncolourable(FredError):
    """A phase with no routing at the given m: the conflict graph of the flows at ``level``
    has no m-colouring. ``flows`` are the flows of that conflict graph."""

    def __init__(self, message: str, level: int, flows: list[int]) -> None:
        super().__init__(message)
        self.level = level
        self.flows = flows


class FredFormatError(FormatError):
    """A FRED configuration folder that cannot be read: not JSON, another format, a version
    from the future, a schema violation or an inconsistency (the message names the file, and
    the switch, phase and µSwitch where there is one)."""
