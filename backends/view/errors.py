"""`ViewError`, the error of the page writer."""

from __future__ import annotations

from topologies.errors import CollcError


class ViewError(CollcError):
    """A page that cannot be built or written (an unwritable path, a page over its size limit)."""
