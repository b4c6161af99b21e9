"""The constraint language: linear constraints on the per-NPU bandwidths (docs/libra.md,
section 4).

```
constraint := expr (REL expr)+          REL: <=  >=  ==  (= is ==); a chain a >= b >= c
expr       := [+|-] term ((+|-) term)*
term       := NUMBER [UNIT] | [NUMBER *] var | var * NUMBER
var        := bwK | bw[K] | bw_K            dimension K's bandwidth (0 innermost)
            | sum | total | sum(bw)          the sum over every dimension
```
A number without a unit is GB/s (LIBRA's unit, = bytes per ns); with one it is any bandwidth
`topologies.units` reads (``500GB/s``, ``4Tbps``). Errors name the constraint's text and the
column of the offending token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from explore.network import ExploreError
from topologies.errors import SourcePos, SpecError
from topologies.units import parse_bandwidth_bytes_per_ns

SENSES = ("<=", ">=", "==")


@dataclass(frozen=True)
class LinearConstraint:
    """``sum_d coeffs[d] * bw[d]  sense  rhs`` (bw in GB/s); ``text`` and ``pos`` say where
    it was written."""

    coeffs: tuple[float, ...]
    sense: str
    rhs: float
    text: str
    pos: SourcePos | None = None

    def holds(self, bw: Sequence[float], tol: float = 1e-9) -> bool:
        """Whether ``bw`` satisfies it, up to ``tol`` relative to the right-hand side."""
        lhs = sum(c * b for c, b in zip(self.coeffs, bw, strict=True))
        slack = tol * max(
            1.0, abs(self.rhs), sum(abs(c * b) for c, b in zip(self.coeffs, bw, strict=True))
        )
        if self.sense == "<=":
            return lhs <= self.rhs + slack
        if self.sense == ">=":
            return lhs >= self.rhs - slack
        return abs(lhs - self.rhs) <= slack

    def __str__(self) -> str:
        return self.text


def linear_text(coeffs: Sequence[float], sense: str, rhs: float) -> str:
    """``bw0 - bw1 >= 0``: a constraint written in the language."""
    parts: list[str] = []
    for d, c in enumerate(coeffs):
        if c == 0:
            continue
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        term = f"bw{d}" if mag == 1 else f"{mag:g}*bw{d}"
        parts.append(f"{sign} {term}" if parts else (f"-{term}" if c < 0 else term))
    return f"{' '.join(parts) or '0'} {sense} {rhs:g}"


_TOKEN = re.compile(
    r"\s*(?:(?P<rel><=|>=|==|=|<|>)|(?P<op>[+\-*()\[\]])"
    r"|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:[A-Za-z]+/s|[A-Za-z]+ps)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<bad>\S))"
)


def parse_constraint(
    text: str, ndims: int, *, source: str = "--constraint"
) -> list[LinearConstraint]:
    """The linear constraints ``text`` states (one, or one per link of a chain), for a
    network of ``ndims`` dimensions. ExploreError with the column of the offending token."""
    toks: list[tuple[str, str, int]] = []
    pos = 0
    text_s = text.rstrip()
    while pos < len(text_s):
        m = _TOKEN.match(text_s, pos)
        assert m is not None
        kind = m.lastgroup or "bad"
        col = m.start(kind) + 1
        toks.append((kind, m.group(kind), col))
        pos = m.end()

    def where(col: int) -> SourcePos:
        return SourcePos(file=source, column=col, text=text)

    def fail(col: int, message: str) -> ExploreError:
        return ExploreError(message, where(col))

    i = 0

    def peek() -> tuple[str, str, int]:
        return toks[i] if i < len(toks) else ("end", "", len(text_s) + 1)

    def var_index(name: str, col: int) -> list[int]:
        nonlocal i
        if name in ("sum", "total"):
            if peek()[1] == "(":
                i += 1
                k, v, c = peek()
                if v != "bw":
                    raise fail(c, "expected sum(bw)")
                i += 1
                if peek()[1] != ")":
                    raise fail(peek()[2], "expected ')' after sum(bw")
                i += 1
            return list(range(ndims))
        m = re.fullmatch(r"bw_?(\d+)", name)
        if name == "bw" and peek()[1] == "[":
            i += 1
            k, v, c = peek()
            if k != "num" or not v.isdigit():
                raise fail(c, "expected a dimension number inside bw[...]")
            i += 1
            if peek()[1] != "]":
                raise fail(peek()[2], "expected ']'")
            i += 1
            d = int(v)
        elif m:
            d = int(m.group(1))
        else:
            raise fail(
                col,
                f"unknown name {name!r} (expected bw0..bw{ndims - 1}, bw[K], sum or total)",
            )
        if d >= ndims:
            raise fail(
                col, f"unknown dimension bw{d}: the network has {ndims} (bw0..bw{ndims - 1})"
            )
        return [d]

    def number(v: str, col: int) -> float:
        if re.search(r"[A-Za-z]", v):
            try:
                return parse_bandwidth_bytes_per_ns(v)
            except SpecError as e:
                raise fail(col, e.message) from None
        return float(v)

    def expr() -> tuple[list[float], float]:
        nonlocal i
        coeffs = [0.0] * ndims
        const = 0.0
        sign = 1.0
        first = True
        while True:
            k, v, c = peek()
            if v in "+-" and k == "op":
                sign = sign if v == "+" else -sign
                i += 1
                k, v, c = peek()
            elif not first:
                break
            first = False
            scale = 1.0
            if k == "num":
                i += 1
                val = number(v, c)
                if peek()[1] == "*":
                    i += 1
                    scale = val
                    k, v, c = peek()
                    if k != "name":
                        raise fail(c, "expected a bandwidth (bwK or sum) after '*'")
                else:
                    const += sign * val
                    sign = 1.0
                    continue
            if k != "name":
                raise fail(c, f"expected a number or a bandwidth, found {v or 'the end'!r}")
            i += 1
            dims = var_index(v, c)
            if peek()[1] == "*":
                i += 1
                k2, v2, c2 = peek()
                if k2 != "num":
                    raise fail(
                        c2, "only a number may multiply a bandwidth (the constraint is linear)"
                    )
                i += 1
                scale *= number(v2, c2)
            for d in dims:
                coeffs[d] += sign * scale
            sign = 1.0
        return coeffs, const

    sides: list[tuple[list[float], float, int]] = []
    rels: list[tuple[str, int]] = []
    while True:
        start = peek()[2]
        coeffs, const = expr()
        sides.append((coeffs, const, start))
        k, v, c = peek()
        if k == "end":
            break
        if k != "rel":
            raise fail(c, f"unexpected {v!r} (expected +, -, <=, >= or ==)")
        if v in ("<", ">"):
            raise fail(c, f"strict {v!r} is not allowed: use {v}= (the constraints are closed)")
        rels.append(("==" if v in ("=", "==") else v, c))
        i += 1
    if not rels:
        raise fail(len(text_s) + 1, "a constraint needs a relation: <=, >= or ==")
    out = []
    for n, (sense, col) in enumerate(rels):
        (lc, lk, lcol), (rc, rk, _) = sides[n], sides[n + 1]
        cf = tuple(a - b for a, b in zip(lc, rc, strict=True))
        rhs = rk - lk
        if all(c == 0 for c in cf):
            raise fail(lcol, "the constraint names no bandwidth")
        out.append(LinearConstraint(cf, sense, rhs, linear_text(cf, sense, rhs), where(col)))
    return out


def total_constraint(total: float, ndims: int) -> LinearConstraint:
    """``sum == total`` (``--total-bw``)."""
    return LinearConstraint(
        (1.0,) * ndims, "==", total, f"sum == {total:g}", SourcePos(file="--total-bw")
    )
