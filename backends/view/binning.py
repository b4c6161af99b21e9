"""Intervals summed per entity and time bin: the heatmaps of the page and its aggregates.

`bin_busy` spreads each interval ``[start, start + dur)`` of an entity (a link, a rank) over
equal time bins, so that ``busy[e, b]`` is the time entity ``e`` spent busy in bin ``b``
(overlapping intervals add up). `bin_counts` counts the intervals that start in each bin.
Both are exact sums: ``busy.sum(axis=1)`` is each entity's total interval time.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def bin_busy(entity: I64, start: F64, dur: F64, num_entities: int, bins: int, span: float) -> F64:
    """``busy[e, b]``: the time intervals of entity ``e`` cover in bin ``b`` of ``bins`` equal
    bins over ``[0, span)`` (the last bin is closed, so an interval ending at ``span`` counts)."""
    out = np.zeros(num_entities * bins, dtype=np.float64)
    if len(entity) == 0 or span <= 0:
        return out.reshape(num_entities, bins)
    w = span / bins
    end = start + dur
    b0 = np.clip((start / w).astype(np.int64), 0, bins - 1)
    b1 = np.clip((np.maximum(end, start) / w).astype(np.int64), 0, bins - 1)
    b1 = np.where((end > start) & (b1 * w >= end), np.maximum(b1 - 1, b0), b1)
    base = entity * bins
    one = b0 == b1
    out += np.bincount(base[one] + b0[one], weights=dur[one], minlength=out.size)
    many = ~one
    if many.any():
        e, s, t, lo, hi = base[many], start[many], end[many], b0[many], b1[many]
        out += np.bincount(e + lo, weights=(lo + 1) * w - s, minlength=out.size)
        out += np.bincount(e + hi, weights=t - hi * w, minlength=out.size)
        full = hi - lo > 1
        if full.any():  # whole bins lo+1..hi-1: +w from lo+1, -w from hi, summed along bins
            row = e[full] // bins * (bins + 1)
            diff = np.bincount(row + lo[full] + 1, minlength=num_entities * (bins + 1))
            diff -= np.bincount(row + hi[full], minlength=num_entities * (bins + 1))
            whole = np.cumsum(diff.reshape(num_entities, bins + 1), axis=1)[:, :bins]
            out += whole.ravel() * w
    return out.reshape(num_entities, bins)


def bin_counts(entity: I64, start: F64, num_entities: int, bins: int, span: float) -> I64:
    """``count[e, b]``: how many intervals of entity ``e`` start in bin ``b``."""
    if len(entity) == 0 or span <= 0:
        return np.zeros((num_entities, bins), dtype=np.int64)
    b = np.clip((start / (span / bins)).astype(np.int64), 0, bins - 1)
    flat = np.bincount(entity * bins + b, minlength=num_entities * bins)
    return flat.astype(np.int64).reshape(num_entities, bins)
