"""The error types every collc package shares.

`topologies` is the leftmost package of the layout (DESIGN.md), so the base error lives here and
every other package may import it. Library code raises these; only the CLI turns them into a
one-line message and an exit status.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourcePos:
    """Where something is in an input: a file (or ``<spec>``), 1-based line and column.

    ``line``/``column`` are 0 when unknown; ``offset`` is a byte offset for binary inputs
    (ET files), -1 when unused. ``text`` is the source line, shown with a caret under ``column``.
    """

    file: str = ""
    line: int = 0
    column: int = 0
    offset: int = -1
    text: str = ""

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line > 0:
            where += f":{self.line}"
            if self.column > 0:
                where += f":{self.column}"
        elif self.column > 0:
            # A one-line input (a spec string, a flag value): line 1.
            where += f":1:{self.column}"
        if self.offset >= 0:
            where += f" (byte {self.offset})"
        return where


class CollcError(Exception):
    """Base of every error collc reports to a user.

    ``message`` says what is wrong; ``pos``, when known, says where. ``str(err)`` is the
    one-line form ``file:line:col: message`` that the CLI prints.
    """

    def __init__(self, message: str, pos: SourcePos | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos

    def __str__(self) -> str:
        if self.pos is None:
            return self.message
        return f"{self.pos}: {self.message}"

    def caret(self) -> str:
        """The source line with a caret under the column, or '' when there is none."""
        if self.pos is None or not self.pos.text:
            return ""
        col = max(self.pos.column, 1)
        return f"    {self.pos.text}\n    {' ' * (col - 1)}^"


class SpecError(CollcError):
    """A malformed topology spec, unit, flag value or topology file."""


class TopologyError(CollcError):
    """A topology that is well-formed but unusable (disconnected, isolated NPUs, ...)."""
