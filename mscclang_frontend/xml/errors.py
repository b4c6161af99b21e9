"""The error of the MSCCL-IR XML reader."""

from __future__ import annotations

from topologies.errors import CollcError


class XmlError(CollcError):
    """Malformed or inconsistent MSCCL-IR XML; ``pos`` names the file, line and column."""
