"""The post-lexer: `Indenter` turns line breaks into the grammar's NEWLINE, INDENT and DEDENT
tokens, and finds unbalanced brackets, inconsistent dedents and programs of too many tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from lark import Token
from lark.lark import PostLex

from mscclang_frontend.parse_errors import SyntaxProblem

MAX_BRACKET_DEPTH = 100
"""Brackets nested deeper than this are rejected (Python itself stops at 200)."""

TAB_WIDTH = 8


class Indenter(PostLex):
    """Turns line breaks into _NEWLINE/_INDENT/_DEDENT, ignoring those inside brackets.

    Blank and comment-only lines produce nothing; the end of the input closes the last line
    and every open block, so a missing final newline is fine. Unbalanced brackets and a
    dedent to a column that no enclosing block uses are errors.
    """

    always_accept = ("_NEWLINE",)
    max_tokens = 1 << 62
    """Set by `parse_program` for one parse: more tokens than this is an error."""
    _OPEN: ClassVar[dict[str, str]] = {"(": ")", "[": "]", "{": "}"}
    _CLOSE: ClassVar[dict[str, str]] = {")": "(", "]": "[", "}": "{"}

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        indents = [0]
        opens: list[Token] = []
        pending: Token | None = None
        last: Token | None = None
        count = 0
        limit = self.max_tokens
        for tok in stream:
            count += 1
            if count > limit:
                raise SyntaxProblem(
                    f"the program has more than {limit:,} tokens (raise the limit with "
                    "--max-tokens)",
                    tok.line or 0,
                    tok.column or 0,
                )
            if tok.type == "_NEWLINE":
                if not opens:
                    pending = tok
                continue
            if pending is not None and last is not None:
                yield from self._line_break(pending, tok, indents, last)
            pending = None
            value = tok.value
            if tok.type != "STRING" and value in self._OPEN:
                opens.append(tok)
                if len(opens) > MAX_BRACKET_DEPTH:
                    raise SyntaxProblem(
                        f"brackets nested more than {MAX_BRACKET_DEPTH} deep",
                        tok.line or 0,
                        tok.column or 0,
                    )
            elif tok.type != "STRING" and value in self._CLOSE:
                if not opens:
                    raise SyntaxProblem(f"unmatched '{value}'", tok.line or 0, tok.column or 0)
                opener = opens.pop()
                if opener.value != self._CLOSE[value]:
                    raise SyntaxProblem(
                        f"closing '{value}' does not match opening '{opener.value}' on line "
                        f"{opener.line}",
                        tok.line or 0,
                        tok.column or 0,
                    )
            last = tok
            yield tok
        if opens:
            o = opens[-1]
            raise SyntaxProblem(f"'{o.value}' was never closed", o.line or 0, o.column or 0)
        if last is not None:
            end = Token("_NEWLINE", "\n")
            end.line, end.column = last.end_line, last.end_column
            yield end
            for _ in indents[1:]:
                yield Token.new_borrow_pos("_DEDENT", "", end)

    @staticmethod
    def _line_break(nl: Token, tok: Token, indents: list[int], last: Token) -> Iterator[Token]:
        yield nl
        text = nl.value.rsplit("\n", 1)[-1]
        width = 0
        for ch in text:
            width = (width // TAB_WIDTH + 1) * TAB_WIDTH if ch == "\t" else width + 1
        if width > indents[-1]:
            indents.append(width)
            yield Token.new_borrow_pos("_INDENT", text, tok)
        elif width < indents[-1]:
            while width < indents[-1]:
                indents.pop()
                yield Token.new_borrow_pos("_DEDENT", "", tok)
            if width != indents[-1]:
                raise SyntaxProblem(
                    "unindent does not match any outer indentation level",
                    tok.line or 0,
                    tok.column or 0,
                )
