"""Errors of the MSCCL-IR XML writer."""

from __future__ import annotations

from topologies.errors import CollcError


class XmlExportError(CollcError):
    """A Program the writer cannot express as MSCCL-IR XML (illegal threadblock hints, an
    unnamed custom collective, messages that cannot keep their order...)."""


class XmlLimitError(XmlExportError):
    """A runtime limit (threadblocks per channel, steps per threadblock, channels, fused
    reductions) that splitting across channels cannot meet. ``limit`` names it."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class XmlDeadlockError(XmlExportError):
    """Every threadblock assignment tried deadlocks when threadblocks run their steps in
    order; the message names the cycle of waits."""
