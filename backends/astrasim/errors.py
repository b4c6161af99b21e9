"""The error of the ASTRA-sim exporter."""

from __future__ import annotations

from topologies.errors import CollcError


class AstraExportError(CollcError):
    """A Program, topology or option that the ASTRA-sim bundle cannot express: a collective
    without an ASTRA-sim custom-collective key, a network that is not a stack of Ring,
    FullyConnected and Switch dimensions (or has failed links, or links of one dimension that
    differ), a placement ASTRA-sim cannot run, or an output folder that would be overwritten.
    The message is one line naming the reason; the CLI exits with status 2."""
