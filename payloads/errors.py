"""`PayloadError`, the one error of the payload package."""

from __future__ import annotations

from topologies.errors import CollcError


class PayloadError(CollcError):
    """A payload description, tensor file or format request that collc cannot use."""
