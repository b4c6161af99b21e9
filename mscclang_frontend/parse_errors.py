"""How parse errors are reported: `SyntaxProblem`, which the post-lexer and the tree builder
raise, and `translate`, the one place where it and Lark's own errors become a `CompileError`
at the offending token, worded as Python words them.
"""

from __future__ import annotations

from lark import Lark, Token
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lexer import PatternStr

from mscclang_frontend.errors import CompileError, Source


class SyntaxProblem(Exception):
    """Raised inside the post-lexer and the tree builder; `translate` makes it a CompileError."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


_TOKEN_WORDS = {
    "_NEWLINE": "end of line",
    "_INDENT": "indent",
    "_DEDENT": "unindent",
    "$END": "end of file",
    "NAME": "a name",
    "STRING": "a string",
    "LONG_STRING": "a string",
    "FSTRING": "a string",
    "LONG_FSTRING": "a string",
    "BYTES": "a string",
    "DEC_NUMBER": "a number",
    "HEX_NUMBER": "a number",
    "OCT_NUMBER": "a number",
    "BIN_NUMBER": "a number",
    "FLOAT_NUMBER": "a number",
    "IMAG_NUMBER": "a number",
}


def _describe_token(tok: Token) -> str:
    t = tok.type
    if t in ("_NEWLINE", "$END"):
        return _TOKEN_WORDS[t]
    if t == "NAME":
        return f"name '{tok.value}'"
    if t in _TOKEN_WORDS:
        kind = _TOKEN_WORDS[t]
        return f"{kind[2:] if kind.startswith('a ') else kind} {tok.value}"
    value = str(tok.value)
    if value.isidentifier():
        return f"keyword '{value}'"
    return f"'{value}'"


def _describe_expected(parser: Lark, expected: set[str]) -> str:
    terminals = {t.name: t for t in parser.terminals}
    words: set[str] = set()
    for name in expected:
        if name in _TOKEN_WORDS:
            words.add(_TOKEN_WORDS[name])
        elif name in terminals and isinstance(terminals[name].pattern, PatternStr):
            words.add(f"'{terminals[name].pattern.value}'")
        else:
            words.add(name.lower())
    if "a name" in words and len(words) > 4:
        return "an expression"
    if len(words) > 4:
        return ""
    ordered = sorted(words)
    return ordered[0] if len(ordered) == 1 else ", ".join(ordered[:-1]) + " or " + ordered[-1]


def translate(exc: Exception, source: Source, parser: Lark) -> CompileError:
    """The one place where Lark's and the post-lexer's errors become CompileError."""
    if isinstance(exc, VisitError):
        return translate(exc.orig_exc, source, parser)
    if isinstance(exc, SyntaxProblem):
        return source.error(exc.message, exc.line, exc.column)
    if isinstance(exc, UnexpectedInput):
        unclosed = _unclosed_bracket(source, parser, int(exc.line or 0), int(exc.column or 0))
        if unclosed is not None:
            return unclosed
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        line, col = int(exc.line or 0), int(exc.column or 0)
        if line <= 0 and tok.type == "$END":
            line = len(source.lines)
            col = len(source.lines[-1]) + 1
        if tok.type == "_INDENT":
            return source.error("unexpected indent", line, col)
        if "_INDENT" in exc.expected:
            return source.error("expected an indented block", line, col)
        message = f"invalid syntax: unexpected {_describe_token(tok)}"
        hint = _describe_expected(parser, set(exc.expected))
        if hint:
            message += f", expected {hint}"
        return source.error(message, line, col)
    if isinstance(exc, UnexpectedCharacters):
        ch = exc.char
        line, col = int(exc.line), int(exc.column)
        if ch in "'\"":
            text = source.lines[line - 1] if 0 < line <= len(source.lines) else ""
            if col >= 3 and text[col - 3 : col] == ch * 3:
                return source.error("unterminated triple-quoted string literal", line, col - 2)
            return source.error("unterminated string literal", line, col)
        if ch == "\\":
            return source.error("unexpected character after line continuation character", line, col)
        if ch == "$" or ch == "?" or ch == "`" or ch == "!":
            return source.error(f"invalid syntax: unexpected character '{ch}'", line, col)
        return source.error(f"invalid character {ch!r}", line, col)
    if isinstance(exc, UnexpectedEOF):
        return source.error("unexpected end of file", len(source.lines), 1)
    if isinstance(exc, UnexpectedInput):
        return source.error(f"invalid syntax: {exc}", int(exc.line), int(exc.column))
    if isinstance(exc, RecursionError):
        return source.error("program is nested too deeply", 1, 1)
    return source.error(f"invalid syntax: {exc}", 1, 1)


def _unclosed_bracket(source: Source, parser: Lark, line: int, column: int) -> CompileError | None:
    """A bracket opened before (line, column) that is never closed, as Python reports it."""
    try:
        for _ in parser.lex(source.text):
            pass
    except SyntaxProblem as problem:
        if problem.message.endswith("was never closed") and (problem.line, problem.column) < (
            line,
            column,
        ):
            return source.error(problem.message, problem.line, problem.column)
    except LarkError:
        return None
    return None
