"""The error types every collc package shares.

`topologies` is the leftmost package of the layout (docs/architecture.md, section 6), so the base
error lives here and
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
        text, col = _window(self.pos.text, max(self.pos.column, 1))
        return f"    {text}\n    {' ' * (col - 1)}^"


CARET_WIDTH = 100
"""At most this many characters of a source line are shown above a caret."""


def _window(text: str, col: int) -> tuple[str, int]:
    """A printable piece of ``text`` around 1-based column ``col``, and the column in it.

    Long lines are cut to `CARET_WIDTH` characters around the column (marked ``...``);
    control characters (a NUL byte, a tab) are shown as ``?`` so the caret stays aligned.
    """
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    if len(text) <= CARET_WIDTH:
        return text, col
    start = max(0, min(col - 1 - CARET_WIDTH // 2, len(text) - CARET_WIDTH))
    piece = text[start : start + CARET_WIDTH]
    col -= start
    if start > 0:
        piece, col = "..." + piece, col + 3
    if start + CARET_WIDTH < len(text):
        piece += "..."
    return piece, col


class SpecError(CollcError):
    """A malformed topology spec, unit, flag value or topology file."""


class TopologyError(CollcError):
    """A topology that is well-formed but unusable (disconnected, isolated NPUs, ...)."""
