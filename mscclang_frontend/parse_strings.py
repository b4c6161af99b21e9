"""String literals: Python's backslash escapes (`decode_escapes`), the prefix and body of a
string token (`split_literal`) and the literal text and replacement fields of an f-string
(`split_fstring`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from lark import Token

from mscclang_frontend import nodes as N
from mscclang_frontend.parse_errors import SyntaxProblem
from mscclang_frontend.parse_tree import tok_pos

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


def split_literal(text: str) -> tuple[str, str, int]:
    """``(prefix, body, offset of body in text)`` of a string token."""
    i = 0
    while text[i] not in "'\"":
        i += 1
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    start = i + len(quote)
    return text[:i].lower(), text[start : len(text) - len(quote)], start


def split_fstring(
    tok: Token, parse_inner: Callable[[str, int, int], N.Expr]
) -> list[str | N.FField]:
    """The parts of an f-string token: literal text and `nodes.FField` replacement fields,
    whose expressions ``parse_inner(text, line, column)`` parses."""
    prefix, body, offset = split_literal(tok.value)
    raw = "r" in prefix
    tline, tcol = tok_pos(tok)

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
            raise SyntaxProblem(f"invalid string literal: {e}", *where(k)) from None

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
            raise SyntaxProblem("f-string: single '}' is not allowed", *where(i))
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
            raise SyntaxProblem("f-string: expecting '}'", *where(i))
        expr_text = body[start:j]
        debug = ""
        stripped = expr_text.rstrip()
        if stripped.endswith("=") and not stripped.endswith(("==", "!=", "<=", ">=")):
            debug = expr_text
            expr_text = stripped[:-1]
        if not expr_text.strip():
            raise SyntaxProblem("f-string: empty expression not allowed", *where(i))
        conversion = ""
        if body[j] == "!":
            conversion = body[j + 1 : j + 2]
            if conversion not in ("r", "s", "a") or body[j + 2 : j + 3] not in (":", "}"):
                raise SyntaxProblem(
                    "f-string: invalid conversion character (expected 's', 'r' or 'a')",
                    *where(j),
                )
            j += 2
        spec = ""
        if body[j] == ":":
            end = body.find("}", j)
            if end < 0:
                raise SyntaxProblem("f-string: expecting '}'", *where(i))
            spec = body[j + 1 : end]
            if "{" in spec:
                raise SyntaxProblem(
                    "f-string: nested replacement fields in format specs are not supported",
                    *where(j),
                )
            j = end
        if debug and not conversion and not spec:
            conversion = "r"
        eline, ecol = where(start)
        expr = parse_inner(expr_text, eline, ecol)
        out.append(N.FField(expr, conversion, spec, debug))
        i = j + 1
        lit_start = i
    if buf:
        out.append(literal("".join(buf), lit_start))
    return out
