"""Parsing MSCCLang programs: Lark (LALR) with collc's indentation post-lexer, into `nodes`.

`parse_program` is the entry point. Lark's own errors, the indentation and bracket errors of
the post-lexer and the constructs the language leaves out (lambda, comprehensions, try, yield,
decorators, global, ...) all become `CompileError` here, in `_translate`, with the file, line
and column of the offending token.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import lark
from lark import Lark, Token
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lark import PostLex
from lark.lexer import PatternStr
from lark.visitors import Transformer_NonRecursive, v_args

from mscclang_frontend import nodes as N
from mscclang_frontend.errors import CompileError, Source

GRAMMAR_PATH = Path(__file__).with_name("mscclang.lark")
MAX_BRACKET_DEPTH = 100
"""Brackets nested deeper than this are rejected (Python itself stops at 200)."""

TAB_WIDTH = 8


class _SyntaxProblem(Exception):
    """Raised inside the post-lexer and the tree builder; `_translate` makes it a CompileError."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


# ------------------------------------------------------------------------------ post-lexer
class _Indenter(PostLex):
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
                raise _SyntaxProblem(
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
                    raise _SyntaxProblem(
                        f"brackets nested more than {MAX_BRACKET_DEPTH} deep",
                        tok.line or 0,
                        tok.column or 0,
                    )
            elif tok.type != "STRING" and value in self._CLOSE:
                if not opens:
                    raise _SyntaxProblem(f"unmatched '{value}'", tok.line or 0, tok.column or 0)
                opener = opens.pop()
                if opener.value != self._CLOSE[value]:
                    raise _SyntaxProblem(
                        f"closing '{value}' does not match opening '{opener.value}' on line "
                        f"{opener.line}",
                        tok.line or 0,
                        tok.column or 0,
                    )
            last = tok
            yield tok
        if opens:
            o = opens[-1]
            raise _SyntaxProblem(f"'{o.value}' was never closed", o.line or 0, o.column or 0)
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
                raise _SyntaxProblem(
                    "unindent does not match any outer indentation level",
                    tok.line or 0,
                    tok.column or 0,
                )


_PARSER: Lark | None = None
_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "basic",
    "start": ["file_input", "fstring_expr"],
    "propagate_positions": True,
    "maybe_placeholders": True,
}


def _parser() -> Lark:
    """The parser. Building its LALR tables takes seconds, so the first process saves the
    parser in `_cache_file` (Lark's `save`) and later ones load it from there."""
    global _PARSER
    if _PARSER is None:
        grammar = GRAMMAR_PATH.read_text()
        cached = _cache_file(grammar)
        _PARSER = _load_cached(*cached) if cached is not None else None
        if _PARSER is None:
            _PARSER = Lark(grammar, postlex=_Indenter(), **_OPTIONS)
            if cached is not None:
                _save_cached(_PARSER, *cached)
    return _PARSER


def _cache_file(grammar: str) -> tuple[Path, bytes] | None:
    """Where the parser is kept, and the key its file starts with: a hash of the grammar, the
    options and the versions of Lark and Python, which also names the file. The folder is
    ``$XDG_CACHE_HOME/collc`` (default ``~/.cache/collc``), else ``collc-<uid>`` in the
    temporary directory: the first that is this user's and that no one else may write. None
    when there is no such folder: then nothing is cached."""
    text = "\0".join([grammar, repr(_OPTIONS), lark.__version__, repr(sys.version_info[:2])])
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path(os.path.expanduser("~"), ".cache")
    folders = [base / "collc"] if base.is_absolute() else []
    if hasattr(os, "getuid"):
        folders.append(Path(tempfile.gettempdir(), f"collc-{os.getuid()}"))
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(folder)
            mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
            private = stat.S_ISDIR(st.st_mode) and mine and not st.st_mode & 0o022
            if private and os.access(folder, os.W_OK):
                return folder / f"mscclang-{key}.lark", key.encode()
    return None


def _load_cached(path: Path, key: bytes) -> Lark | None:
    """The parser saved in ``path`` under ``key``; None when there is none, or another or a
    damaged one (then it is built and saved anew)."""
    try:
        with open(path, "rb") as f:
            if f.readline() != key + b"\n":
                return None
            parser = Lark.load(f)
    except Exception:  # no file, or not one this collc wrote: build the parser
        return None
    return parser if isinstance(parser.options.postlex, _Indenter) else None


def _save_cached(parser: Lark, path: Path, key: bytes) -> None:
    """Save ``parser`` (not used yet) in ``path`` atomically: it is written to a file of this
    process's own, which then takes the name at once, so that other processes find no file or
    a whole one. A failure leaves nothing behind and is no error."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(key + b"\n")
            parser.save(f)
        os.replace(tmp, path)
    except Exception:
        with contextlib.suppress(OSError):
            tmp.unlink()


# ------------------------------------------------------------------------------ strings
_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\n": "",
}
_HEX = {"x": 2, "u": 4, "U": 8}


def decode_escapes(body: str) -> str:
    """Python's backslash escapes in a (non-raw) string literal body; ValueError if invalid."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            out.append("\\")
            break
        e = body[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i + 1 : j], 8)))
            i = j
        elif e in _HEX:
            digits = body[i + 2 : i + 2 + _HEX[e]]
            if len(digits) != _HEX[e] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"truncated \\{e} escape")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise ValueError(f"illegal Unicode character in \\{e} escape")
            out.append(chr(code))
            i += 2 + _HEX[e]
        elif e == "N":
            end = body.find("}", i)
            if body[i + 2 : i + 3] != "{" or end < 0:
                raise ValueError("malformed \\N character escape")
            try:
                out.append(unicodedata.lookup(body[i + 3 : end]))
            except KeyError:
                raise ValueError(f"unknown Unicode character name {body[i + 3 : end]!r}") from None
            i = end + 1
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


def _split_literal(text: str) -> tuple[str, str, int]:
    """``(prefix, body, offset of body in text)`` of a string token."""
    i = 0
    while text[i] not in "'\"":
        i += 1
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    start = i + len(quote)
    return text[:i].lower(), text[start : len(text) - len(quote)], start


# ------------------------------------------------------------------------------ tree builder
_COMPARE_OPS = {"<", ">", "==", ">=", "<=", "!=", "in", "is"}


def _pos(meta: Any) -> tuple[int, int]:
    if getattr(meta, "empty", True):
        return 0, 0
    return int(meta.line), int(meta.column)


def _tok_pos(tok: Token) -> tuple[int, int]:
    return int(tok.line or 0), int(tok.column or 0)


class _Unsupported(N.Expr):
    """Placeholder for a construct that was reported as unsupported."""

    __slots__ = ()


@v_args(meta=True)
class _Builder(Transformer_NonRecursive[Token, Any]):
    """Lark tree -> `nodes`; records unsupported constructs instead of failing at once."""

    def __init__(self, parser: Lark, source: Source) -> None:
        super().__init__()
        self.parser = parser
        self.source = source
        self.unsupported: list[tuple[int, int, str]] = []

    # -- helpers -------------------------------------------------------------------------------
    def _reject(self, meta: Any, what: str) -> _Unsupported:
        line, col = _pos(meta)
        self.unsupported.append((line, col, f"{what} not supported in MSCCLang programs"))
        return _Unsupported(line, col)

    def _target(self, t: Any) -> N.Expr:
        """Check that ``t`` can be assigned to; returns it."""
        if isinstance(t, N.Name | N.Attribute | N.Subscript | _Unsupported):
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
        raise _SyntaxProblem(f"cannot assign to {what}", t.line, t.col)

    @staticmethod
    def _items(children: list[Any]) -> tuple[list[Any], bool]:
        """Items of a comma list kept with its commas: (items, whether a comma occurred)."""
        items = [c for c in children if not (isinstance(c, Token) and c.value == ",")]
        return items, len(items) != len(children)

    def _seq(self, meta: Any, children: list[Any]) -> N.Expr:
        items, comma = self._items(children)
        if len(items) == 1 and not comma:
            return items[0]  # type: ignore[no-any-return]
        line, col = _pos(meta)
        return N.TupleDisplay(line, col, items)

    # -- module and statements ------------------------------------------------------------------
    def file_input(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return self._flatten(children)

    def fstring_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return children[0]  # type: ignore[no-any-return]

    @staticmethod
    def _flatten(children: list[Any]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for c in children:
            if isinstance(c, list):
                out.extend(c)
            elif isinstance(c, N.Stmt):
                out.append(c)
        return out

    def simple_stmt(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return [c for c in children if isinstance(c, N.Stmt)]

    def suite(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return self._flatten(children)

    def expr_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.ExprStmt(line, col, children[0])

    def assign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        targets = [self._target(t) for t in children[:-1]]
        return N.Assign(line, col, targets, children[-1])

    def augassign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        target, op, value = children
        if not isinstance(target, N.Name | N.Attribute | N.Subscript | _Unsupported):
            raise _SyntaxProblem(
                "augmented assignment needs a single name, attribute or item",
                target.line,
                target.col,
            )
        if op.value == "@=":
            return self._stmt_reject(meta, "the @= operator is")
        line, col = _pos(meta)
        return N.AugAssign(line, col, target, op.value[:-1], value)

    def _stmt_reject(self, meta: Any, what: str) -> N.Stmt:
        self._reject(meta, what)
        line, col = _pos(meta)
        return N.Pass(line, col)

    def annassign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "type annotations are")

    def testlist_star(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._seq(meta, children)

    testlist = testlist_star
    exprlist = testlist_star

    def pass_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Pass(*_pos(meta))

    def break_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Break(*_pos(meta))

    def continue_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Continue(*_pos(meta))

    def return_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.Return(line, col, children[0] if children else None)

    def raise_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.Raise(line, col, children[0] if children else None)

    def global_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "global statements are")

    def nonlocal_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "nonlocal statements are")

    def del_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "del statements are")

    def assert_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.Assert(line, col, children[0], children[1] if len(children) > 1 else None)

    # -- imports -------------------------------------------------------------------------------
    def dotted_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        line, col = _pos(meta)
        return N.ImportName("".join(str(c) for c in children), None, line, col)

    def dotted_as_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        name: N.ImportName = children[0]
        if len(children) > 1:
            name.asname = str(children[1])
        return name

    def import_as_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        line, col = _pos(meta)
        return N.ImportName(
            str(children[0]), str(children[1]) if len(children) > 1 else None, line, col
        )

    def import_as_names(self, meta: Any, children: list[Any]) -> list[N.ImportName]:
        return [c for c in children if isinstance(c, N.ImportName)]

    def import_star(self, meta: Any, children: list[Any]) -> str:
        return "*"

    def relative_dots(self, meta: Any, children: list[Any]) -> _Unsupported:
        return self._reject(meta, "relative imports are")

    def import_name(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.Import(line, col, list(children))

    def import_from(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        if any(isinstance(c, _Unsupported) for c in children):
            return N.Pass(line, col)
        module: N.ImportName = children[0]
        names = children[-1]
        return N.ImportFrom(module.line, module.col, module.name, None if names == "*" else names)

    # -- compound statements ---------------------------------------------------------------------
    def if_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        test, body, *rest = children
        orelse: list[N.Stmt] = []
        if rest and isinstance(rest[-1], tuple) and rest[-1][0] == "else":
            orelse = rest.pop()[1]
        for clause in reversed(rest):
            _, (eline, ecol, etest, ebody) = clause
            orelse = [N.If(eline, ecol, etest, ebody, orelse)]
        return N.If(line, col, test, body, orelse)

    def elif_clause(self, meta: Any, children: list[Any]) -> tuple[str, Any]:
        line, col = _pos(meta)
        return ("elif", (line, col, children[0], children[1]))

    def else_clause(self, meta: Any, children: list[Any]) -> tuple[str, Any]:
        return ("else", children[0])

    def while_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        orelse = children[2][1] if len(children) > 2 else []
        return N.While(line, col, children[0], children[1], orelse)

    def for_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        orelse = children[3][1] if len(children) > 3 else []
        return N.For(line, col, self._target(children[0]), children[1], children[2], orelse)

    def try_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "try statements are")

    def except_clause(self, meta: Any, children: list[Any]) -> None:
        return None

    def finally_clause(self, meta: Any, children: list[Any]) -> None:
        return None

    def with_item(self, meta: Any, children: list[Any]) -> N.WithItem:
        target = self._target(children[1]) if len(children) > 1 else None
        return N.WithItem(children[0], target)

    def with_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        return N.With(line, col, list(children[:-1]), children[-1])

    def param(self, meta: Any, children: list[Any]) -> N.Param | _Unsupported:
        line, col = _pos(meta)
        default = None
        for c in children[1:]:
            if isinstance(c, _Unsupported):
                return c
            default = c
        return N.Param(str(children[0]), default, line, col)

    def annotation(self, meta: Any, children: list[Any]) -> _Unsupported:
        return self._reject(meta, "type annotations are")

    return_annotation = annotation

    def star_param(self, meta: Any, children: list[Any]) -> _Unsupported:
        if children and children[0] is not None and isinstance(children[0], Token):
            return self._reject(meta, "*args parameters are")
        return self._reject(meta, "keyword-only parameters are")

    def starstar_param(self, meta: Any, children: list[Any]) -> _Unsupported:
        return self._reject(meta, "**kwargs parameters are")

    def slash_param(self, meta: Any, children: list[Any]) -> _Unsupported:
        return self._reject(meta, "positional-only parameters are")

    def parameters(self, meta: Any, children: list[Any]) -> list[Any]:
        params = [c for c in children if isinstance(c, N.Param | _Unsupported)]
        seen_default = False
        names: set[str] = set()
        for p in params:
            if isinstance(p, N.Param):
                if p.name in names:
                    raise _SyntaxProblem(f"duplicate parameter '{p.name}'", p.line, p.col)
                names.add(p.name)
                if p.default is not None:
                    seen_default = True
                elif seen_default:
                    raise _SyntaxProblem(
                        "a parameter without a default follows one with a default",
                        p.line,
                        p.col,
                    )
        return params

    def funcdef(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        name = str(children[0])
        params: list[N.Param] = []
        body: list[N.Stmt] = children[-1]
        for c in children[1:-1]:
            if isinstance(c, list):
                params = [p for p in c if isinstance(p, N.Param)]
        local = N.assigned_names(body) | {p.name for p in params}
        return N.FunctionDef(line, col, name, params, body, frozenset(local))

    def classdef(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = _pos(meta)
        bases: list[N.Expr] = []
        if len(children) > 2 and children[1] is not None:
            args, kwargs = children[1]
            if kwargs:
                self.unsupported.append(
                    (
                        kwargs[0].line,
                        kwargs[0].col,
                        "class keyword arguments are not supported in MSCCLang programs",
                    )
                )
            bases = args
        return N.ClassDef(line, col, str(children[0]), bases, children[-1])

    def decorated(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "decorators are")

    def decorator(self, meta: Any, children: list[Any]) -> None:
        return None

    def async_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "async statements are")

    # -- expressions ---------------------------------------------------------------------------
    def ifexp(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        body, test, orelse = children
        return N.IfExp(line, col, test, body, orelse)

    def lambdef(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "lambda expressions are")

    def lambda_params(self, meta: Any, children: list[Any]) -> None:
        return None

    def lambda_param(self, meta: Any, children: list[Any]) -> None:
        return None

    def walrus(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "assignment expressions (:=) are")

    def yield_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "yield expressions are")

    def await_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "await expressions are")

    def or_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.BoolOp(line, col, "or", list(children))

    def and_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.BoolOp(line, col, "and", list(children))

    def not_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.Not(line, col, children[0])

    def comparison(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        first = children[0]
        ops: list[str] = []
        operands: list[N.Expr] = []
        i = 1
        while i < len(children):
            tok = children[i]
            op = tok.value
            if op == "not":  # "not in"
                op, i = "not in", i + 2
            elif op == "is" and isinstance(children[i + 1], Token):  # "is not"
                op, i = "is not", i + 2
            else:
                i += 1
            ops.append(op)
            operands.append(children[i])
            i += 1
        return N.Compare(line, col, first, ops, operands)

    def _chain(self, meta: Any, children: list[Any], op: str | None = None) -> N.Expr:
        line, col = _pos(meta)
        first = children[0]
        ops: list[str] = []
        operands: list[N.Expr] = []
        if op is None:
            for i in range(1, len(children), 2):
                tok = children[i]
                if tok.value == "@":
                    return self._reject(tok_meta(tok), "the @ operator is")
                ops.append(str(tok.value))
                operands.append(children[i + 1])
        else:
            ops = [op] * (len(children) - 1)
            operands = list(children[1:])
        return N.Chain(line, col, first, ops, operands)

    def expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "|")

    def xor_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "^")

    def and_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "&")

    def shift_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children)

    arith_expr = shift_expr
    term = shift_expr

    def power(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "**")

    def unary(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        op, operand = children
        return N.Unary(line, col, str(op.value), operand)

    def call(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        func = children[0]
        args, kwargs = children[1] if len(children) > 1 and children[1] is not None else ([], [])
        return N.Call(line, col, func, args, kwargs)

    def arguments(self, meta: Any, children: list[Any]) -> tuple[list[N.Expr], list[N.Keyword]]:
        args: list[N.Expr] = []
        kwargs: list[N.Keyword] = []
        names: set[str] = set()
        for c in children:
            if isinstance(c, N.Keyword):
                if c.name in names:
                    raise _SyntaxProblem(f"keyword argument repeated: {c.name}", c.line, c.col)
                names.add(c.name)
                kwargs.append(c)
            elif isinstance(c, N.Expr):
                if kwargs and not isinstance(c, _Unsupported):
                    raise _SyntaxProblem(
                        "positional argument follows keyword argument", c.line, c.col
                    )
                args.append(c)
        return args, kwargs

    def genexp_argument(
        self, meta: Any, children: list[Any]
    ) -> tuple[list[N.Expr], list[N.Keyword]]:
        return [self._comprehension(meta, "gen", None, children[0], children[1])], []

    def kwarg(self, meta: Any, children: list[Any]) -> N.Keyword:
        line, col = _pos(meta)
        return N.Keyword(str(children[0]), children[1], line, col)

    def star_arg(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "*args in calls are")

    def starstar_arg(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "**kwargs in calls are")

    def subscript_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.Subscript(line, col, children[0], children[1])

    def subscripts(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._seq(meta, children)

    def slice_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        lower, upper = children[0], children[1]
        step = children[2] if len(children) > 2 else None
        return N.SliceExpr(line, col, lower, upper, step)

    def sliceop(self, meta: Any, children: list[Any]) -> Any:
        return children[0]

    def attribute(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.Attribute(line, col, children[0], str(children[1]))

    def name(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.Name(line, col, str(children[0]))

    def const_none(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*_pos(meta), None)

    def const_true(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*_pos(meta), True)

    def const_false(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*_pos(meta), False)

    def number(self, meta: Any, children: list[Any]) -> N.Expr:
        tok: Token = children[0]
        line, col = _tok_pos(tok)
        text = str(tok.value)
        if tok.type == "IMAG_NUMBER":
            return self._reject(meta, "complex numbers are")
        if tok.type == "FLOAT_NUMBER":
            return N.Const(line, col, float(text.replace("_", "")))
        return N.Const(line, col, int(text, 0))

    def string(self, meta: Any, children: list[Any]) -> Any:
        return children[0]

    def strings(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        parts: list[str | N.FField] = []
        is_f = False
        for tok in children:
            if tok.type == "BYTES":
                return self._reject(tok_meta(tok), "bytes literals are")
            if tok.type in ("FSTRING", "LONG_FSTRING"):
                is_f = True
                parts.extend(self._fstring(tok))
            else:
                prefix, body, _ = _split_literal(tok.value)
                try:
                    parts.append(body if "r" in prefix else decode_escapes(body))
                except ValueError as e:
                    raise _SyntaxProblem(f"invalid string literal: {e}", *_tok_pos(tok)) from None
        if not is_f:
            return N.Const(line, col, "".join(p for p in parts if isinstance(p, str)))
        merged: list[str | N.FField] = []
        for p in parts:
            if isinstance(p, str) and merged and isinstance(merged[-1], str):
                merged[-1] += p
            elif p != "":
                merged.append(p)
        return N.FString(line, col, merged)

    def _fstring(self, tok: Token) -> list[str | N.FField]:
        prefix, body, offset = _split_literal(tok.value)
        raw = "r" in prefix
        tline, tcol = _tok_pos(tok)

        def where(k: int) -> tuple[int, int]:
            before = tok.value[: offset + k]
            nl = before.count("\n")
            if nl:
                return tline + nl, len(before) - before.rfind("\n")
            return tline, tcol + offset + k

        def literal(text: str, k: int) -> str:
            if raw:
                return text
            try:
                return decode_escapes(text)
            except ValueError as e:
                raise _SyntaxProblem(f"invalid string literal: {e}", *where(k)) from None

        out: list[str | N.FField] = []
        buf: list[str] = []
        i, n = 0, len(body)
        lit_start = 0
        while i < n:
            c = body[i]
            if c == "}":
                if body[i + 1 : i + 2] == "}":
                    buf.append("}")
                    i += 2
                    continue
                raise _SyntaxProblem("f-string: single '}' is not allowed", *where(i))
            if c != "{":
                buf.append(c)
                i += 1
                continue
            if body[i + 1 : i + 2] == "{":
                buf.append("{")
                i += 2
                continue
            if buf:
                out.append(literal("".join(buf), lit_start))
                buf = []
            start = i + 1
            j = start
            depth = 0
            quote = ""
            while j < n:
                ch = body[j]
                if quote:
                    if ch == quote:
                        quote = ""
                elif ch in "'\"":
                    quote = ch
                elif ch in "([{":
                    depth += 1
                elif ch in ")]}" and depth > 0:
                    depth -= 1
                elif depth == 0 and (
                    ch == "}" or ch == ":" or (ch == "!" and body[j + 1 : j + 2] != "=")
                ):
                    break
                j += 1
            if j >= n:
                raise _SyntaxProblem("f-string: expecting '}'", *where(i))
            expr_text = body[start:j]
            debug = ""
            stripped = expr_text.rstrip()
            if stripped.endswith("=") and not stripped.endswith(("==", "!=", "<=", ">=")):
                debug = expr_text
                expr_text = stripped[:-1]
            if not expr_text.strip():
                raise _SyntaxProblem("f-string: empty expression not allowed", *where(i))
            conversion = ""
            if body[j] == "!":
                conversion = body[j + 1 : j + 2]
                if conversion not in ("r", "s", "a") or body[j + 2 : j + 3] not in (":", "}"):
                    raise _SyntaxProblem(
                        "f-string: invalid conversion character (expected 's', 'r' or 'a')",
                        *where(j),
                    )
                j += 2
            spec = ""
            if body[j] == ":":
                end = body.find("}", j)
                if end < 0:
                    raise _SyntaxProblem("f-string: expecting '}'", *where(i))
                spec = body[j + 1 : end]
                if "{" in spec:
                    raise _SyntaxProblem(
                        "f-string: nested replacement fields in format specs are not supported",
                        *where(j),
                    )
                j = end
            if debug and not conversion and not spec:
                conversion = "r"
            eline, ecol = where(start)
            expr = self._parse_inner(expr_text, eline, ecol)
            out.append(N.FField(expr, conversion, spec, debug))
            i = j + 1
            lit_start = i
        if buf:
            out.append(literal("".join(buf), lit_start))
        return out

    def _parse_inner(self, text: str, line: int, col: int) -> N.Expr:
        padded = "\n" * (line - 1) + " " * (col - 1) + text
        try:
            tree = self.parser.parse(padded, start="fstring_expr")
        except LarkError as exc:
            err = _translate(exc, self.source, self.parser)
            message = err.message.replace("end of line", "'}'").replace("end of file", "'}'")
            pos = err.pos
            raise _SyntaxProblem(
                f"f-string: {message}", pos.line if pos else line, pos.column if pos else col
            ) from None
        sub = _Builder(self.parser, self.source)
        expr = sub.transform(tree)
        self.unsupported.extend(sub.unsupported)
        return expr  # type: ignore[no-any-return]

    # -- displays --------------------------------------------------------------------------------
    def tuple_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.TupleDisplay(line, col, [c for c in children if isinstance(c, N.Expr)])

    def list_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        return N.ListDisplay(line, col, [c for c in children if isinstance(c, N.Expr)])

    def dict_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = _pos(meta)
        keys: list[N.Expr] = []
        values: list[N.Expr] = []
        for c in children:
            if isinstance(c, tuple):
                keys.append(c[0])
                values.append(c[1])
        return N.DictDisplay(line, col, keys, values)

    def dict_item(self, meta: Any, children: list[Any]) -> tuple[N.Expr, N.Expr]:
        return children[0], children[1]

    def dict_unpack(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "dict unpacking (**) is")

    def set_display(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "set displays are")

    def _comprehension(
        self, meta: Any, kind: str, key: N.Expr | None, elt: N.Expr, clauses: Any
    ) -> N.Expr:
        line, col = _pos(meta)
        if isinstance(clauses, _Unsupported):
            return clauses
        return N.Comprehension(line, col, kind, elt, key, list(clauses))

    def genexp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "gen", None, children[0], children[1])

    def listcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "list", None, children[0], children[1])

    def dictcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "dict", children[0], children[1], children[2])

    def setcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "set comprehensions are")

    def comp_for(self, meta: Any, children: list[Any]) -> list[N.CompFor | N.Expr] | N.Expr:
        if children and isinstance(children[0], Token):
            return self._reject(meta, "async comprehensions are")
        rest = children[2] if len(children) > 2 else []
        if isinstance(rest, _Unsupported):
            return rest
        return [N.CompFor(self._target(children[0]), children[1]), *rest]

    def comp_if(self, meta: Any, children: list[Any]) -> list[N.CompFor | N.Expr] | N.Expr:
        rest = children[1] if len(children) > 1 else []
        if isinstance(rest, _Unsupported):
            return rest
        return [children[0], *rest]

    def star_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "starred expressions (*x) are")

    def star_target(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "starred assignment targets (*x) are")


class _TokMeta:
    """A meta-like view of a token's position."""

    empty = False

    def __init__(self, tok: Token) -> None:
        self.line = tok.line
        self.column = tok.column


def tok_meta(tok: Token) -> _TokMeta:
    return _TokMeta(tok)


# ------------------------------------------------------------------------------ errors
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


def _translate(exc: Exception, source: Source, parser: Lark) -> CompileError:
    """The one place where Lark's and the post-lexer's errors become CompileError."""
    if isinstance(exc, VisitError):
        return _translate(exc.orig_exc, source, parser)
    if isinstance(exc, _SyntaxProblem):
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
    except _SyntaxProblem as problem:
        if problem.message.endswith("was never closed") and (problem.line, problem.column) < (
            line,
            column,
        ):
            return source.error(problem.message, problem.line, problem.column)
    except LarkError:
        return None
    return None


def _check_first_line(source: Source) -> None:
    for i, line in enumerate(source.lines, start=1):
        stripped = line.lstrip(" \t\f")
        if not stripped or stripped.startswith("#") or stripped == "\r":
            continue
        if len(stripped) != len(line):
            raise source.error("unexpected indent", i, len(line) - len(stripped) + 1)
        return


MAX_NESTING = 200
"""Syntax trees deeper than this are rejected, so the interpreter never exhausts its stack."""


def _check_structure(body: list[N.Stmt], source: Source) -> None:
    """``break``/``continue`` inside loops, ``return`` inside functions, bounded nesting."""
    # (node, depth, in_loop, in_function)
    stack: list[tuple[object, int, bool, bool]] = [(s, 1, False, False) for s in body]
    while stack:
        node, depth, loop, func = stack.pop()
        if depth > MAX_NESTING and isinstance(node, N.Node):
            raise source.error(
                f"the program nests more than {MAX_NESTING} levels deep", node.line, node.col
            )
        if isinstance(node, N.Break | N.Continue) and not loop:
            word = "break" if isinstance(node, N.Break) else "continue"
            raise source.error(f"'{word}' outside a loop", node.line, node.col)
        if isinstance(node, N.Return) and not func:
            raise source.error("'return' outside a function", node.line, node.col)
        if isinstance(node, N.FunctionDef):
            for p in node.params:
                if p.default is not None:
                    stack.append((p.default, depth + 1, loop, func))
            stack.extend((x, depth + 1, False, True) for x in node.body)
            continue
        if isinstance(node, N.ClassDef):
            stack.extend((x, depth + 1, loop, func) for x in node.bases)
            stack.extend((x, depth + 1, False, False) for x in node.body)
            continue
        if isinstance(node, N.For | N.While):
            stack.append(
                (node.iter if isinstance(node, N.For) else node.test, depth + 1, loop, func)
            )
            stack.extend((x, depth + 1, True, func) for x in node.body)
            stack.extend((x, depth + 1, loop, func) for x in node.orelse)
            continue
        for value in _fields(node):
            if isinstance(value, list):
                stack.extend((x, depth + 1, loop, func) for x in value)
            elif value is not None and not isinstance(value, str | int | float | bool | frozenset):
                stack.append((value, depth + 1, loop, func))


def _fields(node: object) -> list[object]:
    if isinstance(node, N.FString):
        return [p.expr for p in node.parts if isinstance(p, N.FField)]
    if isinstance(node, N.Keyword | N.WithItem):
        return [node.value] if isinstance(node, N.Keyword) else [node.context, node.target]
    if isinstance(node, N.Const | N.Name | N.Pass | N.Break | N.Continue | N.Import | N.ImportFrom):
        return []
    if isinstance(node, N.Node):
        return [getattr(node, f.name) for f in dataclasses.fields(node)[2:]]
    return []


def parse_program(text: str, filename: str = "<program>", *, max_tokens: int = 1 << 62) -> N.Module:
    """Parse MSCCLang source into a `nodes.Module`; raise `CompileError` with a position.

    Carriage returns before line feeds are dropped; a missing final newline is fine. A
    program of more than ``max_tokens`` tokens is refused at the first token past the limit,
    before its tree is built.
    """
    text = text.replace("\r\n", "\n")
    source = Source(text, filename)
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise source.error("source contains a NUL character", line, 1)
    _check_first_line(source)
    parser = _parser()
    builder = _Builder(parser, source)
    postlex = parser.options.postlex
    assert isinstance(postlex, _Indenter)
    try:
        postlex.max_tokens = max_tokens
        tree = parser.parse(text, start="file_input")
        postlex.max_tokens = _Indenter.max_tokens
        body = builder.transform(tree)
    except (LarkError, _SyntaxProblem, RecursionError) as exc:
        raise _translate(exc, source, parser) from None
    finally:
        postlex.max_tokens = _Indenter.max_tokens
    if builder.unsupported:
        line, col, message = min(builder.unsupported)
        raise source.error(message, line, col)
    _check_structure(body, source)
    return N.Module(body, filename)
