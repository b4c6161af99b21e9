"""What the two halves of the tree builder (`parse_statements`, `parse_expressions`) share:
`TreeBuilder`, their base, with the checks of assignment targets and the recording of
unsupported constructs, and the positions of Lark's nodes and tokens.
"""

from __future__ import annotations

from typing import Any

from lark import Lark, Token
from lark.visitors import Transformer_NonRecursive

from mscclang_frontend import nodes as N
from mscclang_frontend.errors import Source
from mscclang_frontend.parse_errors import SyntaxProblem


def meta_pos(meta: Any) -> tuple[int, int]:
    """The line and column of a Lark node's ``meta`` (0, 0 when it has none)."""
    if getattr(meta, "empty", True):
        return 0, 0
    return int(meta.line), int(meta.column)


def tok_pos(tok: Token) -> tuple[int, int]:
    """The line and column of a token."""
    return int(tok.line or 0), int(tok.column or 0)


class Unsupported(N.Expr):
    """Placeholder for a construct that was reported as unsupported."""

    __slots__ = ()


class TokMeta:
    """A meta-like view of a token's position."""

    empty = False

    def __init__(self, tok: Token) -> None:
        self.line = tok.line
        self.column = tok.column


def tok_meta(tok: Token) -> TokMeta:
    """A token's position as a node's ``meta``, to report the token."""
    return TokMeta(tok)


class TreeBuilder(Transformer_NonRecursive[Token, Any]):
    """Lark tree -> `nodes`; records unsupported constructs instead of failing at once."""

    def __init__(self, parser: Lark, source: Source) -> None:
        super().__init__()
        self.parser = parser
        self.source = source
        self.unsupported: list[tuple[int, int, str]] = []

    # -- helpers -------------------------------------------------------------------------------
    def _reject(self, meta: Any, what: str) -> Unsupported:
        line, col = meta_pos(meta)
        self.unsupported.append((line, col, f"{what} not supported in MSCCLang programs"))
        return Unsupported(line, col)

    def _target(self, t: Any) -> N.Expr:
        """Check that ``t`` can be assigned to; returns it."""
        if isinstance(t, N.Name | N.Attribute | N.Subscript | Unsupported):
            return t
        if isinstance(t, N.TupleDisplay | N.ListDisplay):
            for x in t.items:
                self._target(x)
            return t
        what = {
            N.Call: "a function call",
            N.Const: "a literal",
            N.FString: "an f-string",
            N.Chain: "an expression",
            N.Compare: "a comparison",
            N.BoolOp: "an expression",
            N.Unary: "an expression",
            N.Not: "an expression",
            N.IfExp: "a conditional expression",
            N.DictDisplay: "a dict display",
        }.get(type(t), "this expression")
        raise SyntaxProblem(f"cannot assign to {what}", t.line, t.col)

    @staticmethod
    def _items(children: list[Any]) -> tuple[list[Any], bool]:
        """Items of a comma list kept with its commas: (items, whether a comma occurred)."""
        items = [c for c in children if not (isinstance(c, Token) and c.value == ",")]
        return items, len(items) != len(children)

    def _seq(self, meta: Any, children: list[Any]) -> N.Expr:
        items, comma = self._items(children)
        if len(items) == 1 and not comma:
            return items[0]  # type: ignore[no-any-return]
        line, col = meta_pos(meta)
        return N.TupleDisplay(line, col, items)
