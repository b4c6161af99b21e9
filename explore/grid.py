"""The baselines an allocation is compared with: the equal split of its total bandwidth and
the best point of a grid over the allocations the constraints allow (docs/libra.md,
section 6)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from explore.constraints import LinearConstraint

MAX_POINTS = 300_000
"""A grid is coarsened (its step doubled) until it has at most this many points."""


def equal_split(total: float, ndims: int) -> tuple[float, ...]:
    """Every dimension the same share of ``total``."""
    return (total / ndims,) * ndims


def grid_points(
    cons: Sequence[LinearConstraint],
    lo: Sequence[float],
    hi: Sequence[float],
    step: float,
) -> tuple[list[tuple[float, ...]], float]:
    """Every allocation whose bandwidths are multiples of ``step`` within [lo, hi] (the last
    dimension solved from an equality constraint when one names it) that satisfies
    ``cons``; and the step used (doubled until there are at most `MAX_POINTS` candidates)."""
    n = len(lo)
    eq = next((c for c in cons if c.sense == "==" and c.coeffs[n - 1] != 0), None)
    free = n - 1 if eq is not None else n
    while True:
        axes = []
        for d in range(free):
            top = hi[d] if not math.isinf(hi[d]) else lo[d]
            first = math.ceil(lo[d] / step - 1e-9)
            last = math.floor(top / step + 1e-9)
            axes.append([k * step for k in range(first, last + 1)] or [lo[d]])
        count = 1
        for a in axes:
            count *= len(a)
        if count <= MAX_POINTS:
            break
        step *= 2
    out = []
    for pt in itertools.product(*axes):
        bw = list(pt)
        if eq is not None:
            rest = sum(c * b for c, b in zip(eq.coeffs[:-1], pt, strict=True))
            bw.append((eq.rhs - rest) / eq.coeffs[n - 1])
        if all(b >= -1e-9 for b in bw) and all(c.holds(bw, 1e-9) for c in cons):
            out.append(tuple(max(0.0, b) for b in bw))
    return out, step


def grid_best(
    evaluate_many: Callable[[Sequence[Sequence[float]]], list[float]],
    points: Sequence[tuple[float, ...]],
) -> tuple[tuple[float, ...], float] | None:
    """The point of least value under ``evaluate_many``, with its value (None: no point)."""
    best: tuple[tuple[float, ...], float] | None = None
    for k in range(0, len(points), 20_000):
        batch = points[k : k + 20_000]
        for pt, v in zip(batch, evaluate_many(batch), strict=True):
            if best is None or v < best[1]:
                best = (pt, v)
    return best
