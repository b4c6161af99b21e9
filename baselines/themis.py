"""Themis (ISCA'22) inter-dimension scheduling: a dimension order per chunk (`offlineGreedy`).

A hierarchical collective sends every chunk through each dimension of the network once
(`baselines.hierarchical`). The default order is the same for every chunk (reduce-scatter
along dimensions 0, 1, ..., n-1; all-gather back n-1, ..., 0), which leaves the dimension that
gets the most bytes per unit of bandwidth as the bottleneck while the others idle. Themis picks
a different order per chunk so that the dimensions stay equally busy. The rule, exactly as
the Themis paper (ISCA 2022) states it:

State: per dimension ``d`` its size ``p_d``, bandwidth ``B_d`` and accumulated load ``L_d``, a
time measured in bytes at ``B_0`` (bytes moved on ``d`` times ``B_0 / B_d``); all loads start
at 0 (one collective). Every chunk has the same size ``c``: the whole chunk for all-reduce and
reduce-scatter, the per-rank piece the chunk starts with for all-gather (ASTRA-sim's all-gather
size is the per-rank input). Per chunk, in chunk order:

1. Sort the dimensions by ascending ``L_d`` (ties: lower dimension first). For all-gather,
   reverse that order, so the least-loaded dimension comes last, where the data is largest.
2. If ``max_d L_d - min_d L_d < c / 16`` the chunk takes the default order instead: 0..n-1,
   reversed for all-gather (n-1..0, ASTRA-sim's default all-gather order), as step 1 reverses
   every all-gather order. The loads are still updated.
3. Update the loads along the chosen order, starting from ``c``:
   reduce-scatter on ``d``: ``L_d += c (p_d - 1) / p_d / (B_d / B_0)``, then ``c /= p_d``;
   all-gather on ``d``: ``L_d += c (p_d - 1) / (B_d / B_0)``, then ``c *= p_d``.
   All-reduce counts as its reduce-scatter (its all-gather mirrors it and adds the same load).
4. An all-reduce chunk runs its reduce-scatter phases in the chosen order, then its all-gather
   phases in the reverse order (no separate all-reduce phase on the last dimension).

Dimensions of size 1 take no part: they never appear in an order and carry no load. Only
ratios of sizes and of bandwidths matter, so ``c`` defaults to 1.
"""

from __future__ import annotations

from collections.abc import Sequence

from baselines.base import BaselineError
from chakra_ir import CollectiveKind

THEMIS_KINDS = frozenset(
    {CollectiveKind.ALLREDUCE, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLGATHER}
)

THRESHOLD_DIVISOR = 16
"""A load gap below ``c / THRESHOLD_DIVISOR`` falls back to the default order."""


def default_order(kind: CollectiveKind, sizes: Sequence[int]) -> tuple[int, ...]:
    """The dimensions a chunk traverses by default (ASTRA-sim's ``ascending``): 0..n-1 for
    all-reduce and reduce-scatter (the reduce-scatter order), n-1..0 for all-gather; dimensions
    of size 1 left out."""
    dims = tuple(d for d, p in enumerate(sizes) if p > 1)
    return dims[::-1] if kind is CollectiveKind.ALLGATHER else dims


def themis_orders(
    kind: CollectiveKind,
    sizes: Sequence[int],
    bandwidths: Sequence[float],
    chunks: int,
    *,
    chunk_size: float = 1.0,
) -> list[tuple[int, ...]]:
    """Per chunk ``0..chunks-1``, the order in which it traverses the dimensions.

    For all-reduce and reduce-scatter it is the reduce-scatter order (an all-reduce runs its
    all-gather phases in the reverse order); for all-gather the all-gather order. ``sizes`` and
    ``bandwidths`` (any one unit; only ratios matter) give one entry per dimension;
    ``chunk_size`` is ``c`` (see the module docstring). Raises `BaselineError` for another kind,
    mismatched lengths, a size below 1 or a bandwidth that is not positive.
    """
    orders, _ = themis_orders_and_loads(kind, sizes, bandwidths, chunks, chunk_size=chunk_size)
    return orders


def themis_orders_and_loads(
    kind: CollectiveKind,
    sizes: Sequence[int],
    bandwidths: Sequence[float],
    chunks: int,
    *,
    chunk_size: float = 1.0,
) -> tuple[list[tuple[int, ...]], list[float]]:
    """`themis_orders`, plus the per-dimension loads ``L_d`` after the last chunk (0 for
    dimensions of size 1)."""
    if kind not in THEMIS_KINDS:
        raise BaselineError(f"themis does not order the dimensions of {kind.value}")
    n = len(sizes)
    if len(bandwidths) != n or n == 0:
        raise BaselineError(
            f"themis needs one bandwidth per dimension: {n} sizes, {len(bandwidths)} bandwidths"
        )
    if any(p < 1 for p in sizes):
        raise BaselineError(f"dimension sizes must be at least 1, got {list(sizes)}")
    if any(not b > 0 for b in bandwidths):
        raise BaselineError(f"dimension bandwidths must be positive, got {list(bandwidths)}")
    if chunks < 0 or not chunk_size > 0:
        raise BaselineError("themis needs a non-negative chunk count and a positive chunk size")
    gather = kind is CollectiveKind.ALLGATHER
    dims = [d for d in range(n) if sizes[d] > 1]
    relative = [b / bandwidths[0] for b in bandwidths]  # B_d / B_0
    load = [0.0] * n
    fallback = default_order(kind, sizes)
    orders: list[tuple[int, ...]] = []
    for _ in range(chunks):
        ranked = sorted(dims, key=lambda d: (load[d], d))
        order = tuple(ranked[::-1] if gather else ranked)
        if dims:
            gap = max(load[d] for d in dims) - min(load[d] for d in dims)
            if gap < chunk_size / THRESHOLD_DIVISOR:
                order = fallback
        c = chunk_size
        for d in order:
            p = sizes[d]
            if gather:
                load[d] += c * (p - 1) / relative[d]
                c *= p
            else:
                load[d] += c * (p - 1) / p / relative[d]
                c /= p
        orders.append(order)
    return orders, load
