"""The one error type of the MSCCLang front end, and source positions for it.

Every problem with a program (a syntax error, an unsupported construct, a runtime error such
as an unknown name or a chunk index out of range, a failing ``Check()``, a compiled program
that does not verify) is a `CompileError` carrying a `SourcePos` with the file, the 1-based
line and column and the text of that line, so the CLI prints ``file:line:column: message``
and the line with a caret under the column (`CollcError.caret`).
"""

from __future__ import annotations

from topologies.errors import CollcError, SourcePos


class CompileError(CollcError):
    """A MSCCLang program that cannot be compiled.

    ``pos`` says where (file, line, column, the source line); ``stdout`` holds what the
    program printed before the error (``print``, ``Check()`` lines), so a failing ``Check()``
    can still show which chunks were wrong.
    """

    def __init__(self, message: str, pos: SourcePos | None = None, stdout: str = "") -> None:
        super().__init__(message, pos)
        self.stdout = stdout


class Source:
    """A program's text split into lines, to build positions with the line's text."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.lines = text.split("\n")

    def pos(self, line: int, column: int) -> SourcePos:
        """The position of 1-based ``line`` and ``column`` (0 when unknown)."""
        text = self.lines[line - 1].rstrip("\r") if 1 <= line <= len(self.lines) else ""
        return SourcePos(self.filename, line, column, text=text)

    def error(self, message: str, line: int, column: int) -> CompileError:
        return CompileError(message, self.pos(line, column))
