"""The expression language of a parameter set's derived knobs and constraints
(docs/explore.md, section 1): a small, side-effect-free subset of Python's expression syntax,
parsed with `ast` and interpreted here (never compiled or run by Python).

Allowed: numbers, strings, ``True``/``False``, names of knobs (a per-dimension knob is a list,
one value per dimension, innermost first), list and tuple literals, indexing ``x[i]``,
arithmetic ``+ - * / // % **``, comparisons (chains too), ``and``/``or``/``not``,
``a if c else b``, one-generator list comprehensions ``[f(b) for b in bw if b > 0]`` and the
functions `FUNCTIONS` (``prod``, ``sum``, ``min``, ``max``, ``len``, ``abs``, ``all``, ``any``,
``zip``, ``range``, ``int``, ``float``, ``round``, ``log2``, ``is_pow2``).
Anything else (attributes, other calls, lambdas, assignments) is an error naming its column.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from explore.network import ExploreError
from topologies.errors import SourcePos


def _prod(xs: Iterable[Any]) -> Any:
    out: Any = 1
    for x in xs:
        out *= x
    return out


def _is_pow2(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0 and x & (x - 1) == 0


def _log2(x: Any) -> float:
    return math.log2(x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "prod": _prod,
    "sum": sum,
    "min": min,
    "max": max,
    "len": len,
    "abs": abs,
    "all": all,
    "any": any,
    "zip": lambda *xs: list(zip(*xs, strict=True)),
    "range": lambda *xs: list(range(*xs)),
    "int": int,
    "float": float,
    "round": round,
    "log2": _log2,
    "is_pow2": _is_pow2,
}
"""The functions an expression may call."""

_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}


class EvalError(Exception):
    """An expression that failed on a point's values (a division by zero, a type mismatch):
    the point is infeasible, the file is not wrong."""


@dataclass(frozen=True)
class Expr:
    """A parsed expression: its ``text``, the knob ``names`` it reads, where it is."""

    text: str
    tree: ast.expr
    names: frozenset[str]
    pos: SourcePos | None = None

    def __call__(self, values: Mapping[str, Any]) -> Any:
        """The value for the knob values ``values``; EvalError if it fails on them."""
        try:
            return _eval(self.tree, values)
        except EvalError:
            raise
        except (ArithmeticError, TypeError, ValueError, IndexError, KeyError) as e:
            raise EvalError(f"{self.text}: {type(e).__name__}: {e}") from None


def parse_expr(text: str, known: Iterable[str], pos: SourcePos | None = None) -> Expr:
    """``text`` parsed, every name checked against ``known`` (knob names); ExploreError at
    ``pos`` (the column moved to the offending part) for bad syntax or an unknown name."""
    known = set(known)

    def fail(msg: str, node: ast.AST | None = None, col: int | None = None) -> ExploreError:
        where = pos
        c = col if col is not None else getattr(node, "col_offset", None)
        if pos is not None and c is not None and pos.line > 0:
            where = SourcePos(pos.file, pos.line, pos.column + c, text=pos.text)
        return ExploreError(f"{text!r}: {msg}", where)

    if not isinstance(text, str) or not text.strip():
        raise ExploreError("an expression must be a non-empty string", pos)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise fail(f"invalid expression ({e.msg})", col=max((e.offset or 1) - 1, 0)) from None
    names: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            if not isinstance(node.target, ast.Name | ast.Tuple) or node.is_async:
                raise fail("a comprehension binds names only", node.target)
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    bound.add(t.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in bound or node.id in FUNCTIONS or node.id in ("True", "False"):
                continue
            if node.id not in known:
                shown = ", ".join(sorted(known))
                raise fail(f"unknown knob {node.id!r} (known: {shown})", node)
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise fail(f"only the functions {', '.join(FUNCTIONS)} may be called", node)
            if node.keywords:
                raise fail("keyword arguments are not allowed", node)
        elif isinstance(node, ast.ListComp):
            if len(node.generators) != 1:
                raise fail("a list comprehension takes one 'for'", node)
        elif not isinstance(node, _ALLOWED):
            raise fail(f"{type(node).__name__} is not allowed in an expression", node)
    return Expr(text.strip(), tree, frozenset(names), pos)


_ALLOWED = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Subscript,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.comprehension,
    ast.Load,
    ast.Store,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.Slice,
)


def _eval(node: ast.expr, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in FUNCTIONS:
            return FUNCTIONS[node.id]
        if node.id in ("True", "False"):
            return node.id == "True"
        raise EvalError(f"{node.id} has no value")
    if isinstance(node, ast.List | ast.Tuple):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.Subscript):
        base = _eval(node.value, env)
        if isinstance(node.slice, ast.Slice):
            s = node.slice
            lo = _eval(s.lower, env) if s.lower else None
            hi = _eval(s.upper, env) if s.upper else None
            st = _eval(s.step, env) if s.step else None
            return base[lo:hi:st]
        return base[_eval(node.slice, env)]
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and isinstance(b, int | float) and abs(b) > 64:
            raise EvalError("an exponent above 64")
        return _BIN[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            v: Any = True
            for e in node.values:
                v = _eval(e, env)
                if not v:
                    return v
            return v
        v = False
        for e in node.values:
            v = _eval(e, env)
            if v:
                return v
        return v
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args])
    if isinstance(node, ast.ListComp):
        gen = node.generators[0]
        out = []
        for item in _eval(gen.iter, env):
            local = dict(env)
            _bind(gen.target, item, local)
            if all(_eval(c, local) for c in gen.ifs):
                out.append(_eval(node.elt, local))
        return out
    raise EvalError(f"{type(node).__name__} cannot be evaluated")


def _bind(target: ast.expr, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
        return
    assert isinstance(target, ast.Tuple)
    items = list(value)
    if len(items) != len(target.elts):
        raise EvalError(f"cannot unpack {len(items)} values into {len(target.elts)} names")
    for t, v in zip(target.elts, items, strict=True):
        _bind(t, v, env)
