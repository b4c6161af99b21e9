"""`VerifyError`: what every check of the verifier (`chakra_ir.verify`) and `SymbolicMemory`
raise, naming the check that failed and, where one is involved, the rank and operation; a
race also carries `Race`, the two unordered accesses."""

from __future__ import annotations

from dataclasses import dataclass

from topologies.errors import CollcError

RACE_KINDS = ("read-after-write", "write-after-read", "write-after-write")
"""The kinds of conflicting access pairs, named for the later access of the two."""


@dataclass(frozen=True)
class Race:
    """Two accesses to one slot, at least one a write, that no chain of dependencies and
    messages orders. ``first`` and ``second`` are ``(rank, op)`` (op: the index within the
    rank), ``first`` the earlier in the verifier's execution order; ``buffer`` and ``index``
    name the slot in ``second``'s view (a `Buffer` code and the slot index); ``kind`` is one
    of `RACE_KINDS`."""

    first: tuple[int, int]
    second: tuple[int, int]
    buffer: int
    index: int
    kind: str


class VerifyError(CollcError):
    """A program that is wrong. ``check`` is one of structure, progress, semantics, race;
    ``race`` is set when the check is "race"."""

    def __init__(
        self, check: str, message: str, rank: int = -1, op: int = -1, race: Race | None = None
    ) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check
        self.rank = rank
        self.op = op
        self.race = race
