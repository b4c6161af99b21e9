"""The error TACOS raises for requests it cannot serve."""

from __future__ import annotations

from topologies.errors import CollcError


class TacosError(CollcError):
    """A request TACOS cannot serve: a bad size or chunk count, a root outside the ranks, a
    collective kind it does not synthesize, or ranks that cannot reach each other."""
