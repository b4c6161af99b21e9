"""The one error type of ``collc replay``."""

from __future__ import annotations

from topologies.errors import CollcError


class ReplayError(CollcError):
    """A hardware program that cannot be replayed: an unreadable or inconsistent folder (the
    reader's message, naming the file, the NPU and the command), an unknown target or a
    format version from the future. A program that runs wrong (a deadlock, a broken
    postcondition) is not an error: the `ReplayResult` reports it."""
