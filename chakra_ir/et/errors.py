"""The errors of the Chakra ET codec."""

from __future__ import annotations

from topologies.errors import CollcError, SourcePos


class EtDecodeError(CollcError):
    """An ET file that cannot be read, or that cannot be decoded into a Program.

    ``pos`` names the file and, where known, the byte offset (``SourcePos.offset``) of the
    message at fault; ``str(err)`` reads ``file (byte N): what is wrong``.
    """

    def __init__(self, message: str, file: str, offset: int = -1) -> None:
        super().__init__(message, SourcePos(file=file, offset=offset))
        self.file = file
        self.offset = offset


class EtEncodeError(CollcError):
    """A Program that cannot be written as a Chakra ET (e.g. a message of zero bytes)."""
