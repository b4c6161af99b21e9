"""Parsing MSCCLang programs: Lark (LALR) with collc's indentation post-lexer, into `nodes`.

`parse_program` is the entry point. Lark's own errors, the indentation and bracket errors of
the post-lexer (`parse_indent`) and the constructs the language leaves out (lambda,
comprehensions, try, yield, decorators, global, ...) all become `CompileError` in
`parse_errors.translate`, with the file, line and column of the offending token. This module
holds the parser (built once and cached on disk), the tree builder made of the statement and
expression rules (`parse_statements`, `parse_expressions`) and the checks of the whole tree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.exceptions import LarkError

from mscclang_frontend import nodes as N
from mscclang_frontend.errors import Source
from mscclang_frontend.parse_errors import SyntaxProblem, translate
from mscclang_frontend.parse_expressions import ExpressionRules
from mscclang_frontend.parse_indent import Indenter as _Indenter  # cached parsers name it so
from mscclang_frontend.parse_statements import StatementRules

GRAMMAR_PATH = Path(__file__).with_name("mscclang.lark")


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


class Builder(StatementRules, ExpressionRules):
    """Lark tree -> `nodes`: the statement and the expression rules; records unsupported
    constructs instead of failing at once."""


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
    builder = Builder(parser, source)
    postlex = parser.options.postlex
    assert isinstance(postlex, _Indenter)
    try:
        postlex.max_tokens = max_tokens
        tree = parser.parse(text, start="file_input")
        postlex.max_tokens = _Indenter.max_tokens
        body = builder.transform(tree)
    except (LarkError, SyntaxProblem, RecursionError) as exc:
        raise translate(exc, source, parser) from None
    finally:
        postlex.max_tokens = _Indenter.max_tokens
    if builder.unsupported:
        line, col, message = min(builder.unsupported)
        raise source.error(message, line, col)
    _check_structure(body, source)
    return N.Module(body, filename)
