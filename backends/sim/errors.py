"""The error the simulator raises."""

from __future__ import annotations

from topologies.errors import CollcError


class SimError(CollcError):
    """A simulation that cannot run: a bad size, model or option, a program that does not fit
    the topology, unmatched messages, a deadlock. The message is one line."""
