"""`VerifyError`: what every check of the verifier (`chakra_ir.verify`) and `SymbolicMemory`
raise, naming the check that failed and, where one is involved, the rank and operation."""

from __future__ import annotations

from topologies.errors import CollcError


class VerifyError(CollcError):
    """A program that is wrong. ``check`` is one of structure, progress, semantics, race."""

    def __init__(self, check: str, message: str, rank: int = -1, op: int = -1) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check
        self.rank = rank
        self.op = op
