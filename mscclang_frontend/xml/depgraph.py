"""Dependencies between threadblocks of one GPU: a canonical order and a minimal set of waits.

Inside a GPU, each threadblock (TB) is a chain: its items run in order. Cross-TB dependencies
say "item (u, i) waits until TB t has finished its item k". `schedule` returns

- a deterministic topological order of all items (Kahn's algorithm choosing the ready item
  with the smallest (position in its TB, TB id)), and
- for every item, its cross-TB dependencies reduced to the minimal set: a wait on (t, k) is
  dropped when it is already implied, because an earlier item of the same TB, or another
  kept wait of the same item, transitively waited on (t, k') with k' >= k. This is the unique
  transitive reduction of the cross-TB edges given the TB chains, computed with vector clocks.

The reader applies it to operations (so a Program read from XML carries normalized
dependencies) and the writer to steps (so the XML carries no redundant ``depid``/``deps``);
applying it twice changes nothing, which makes XML -> Program -> XML -> Program a fixed point.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence

Item = tuple[int, int]
"""(threadblock, position in the threadblock)."""


class DepCycle(Exception):
    """The dependencies form a cycle; ``cycle`` lists its items in waiting order."""

    def __init__(self, cycle: list[Item]) -> None:
        super().__init__(f"dependency cycle through {cycle}")
        self.cycle = cycle


def schedule(
    tb_len: Sequence[int], cross: Mapping[Item, Iterable[Item]]
) -> tuple[list[Item], dict[Item, list[Item]]]:
    """The canonical order of all items and each item's reduced cross-TB waits (sorted).

    ``cross`` maps an item to the items it waits for. A wait on an earlier item of its own TB
    is dropped (the chain implies it); a wait on a later one, or any cycle, raises `DepCycle`.
    """
    n = len(tb_len)
    preds: dict[Item, set[Item]] = {}
    succs: dict[Item, list[Item]] = {}
    for item, targets in cross.items():
        u, i = item
        for t, k in targets:
            if not (0 <= t < n and 0 <= k < tb_len[t]):
                raise ValueError(f"dependency on missing item {(t, k)}")
            if t == u:
                if k >= i:
                    raise DepCycle([item, (t, k)] if k > i else [item])
                continue
            got = preds.setdefault(item, set())
            if (t, k) not in got:
                got.add((t, k))
                succs.setdefault((t, k), []).append(item)
    indeg = {
        (u, i): len(preds.get((u, i), ())) + (i > 0) for u in range(n) for i in range(tb_len[u])
    }
    heap = [(0, u) for u in range(n) if tb_len[u] and indeg[(u, 0)] == 0]
    heapq.heapify(heap)
    order: list[Item] = []
    while heap:
        i, u = heapq.heappop(heap)
        order.append((u, i))
        nxt = [(u, i + 1)] if i + 1 < tb_len[u] else []
        for s in nxt + succs.get((u, i), []):
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (s[1], s[0]))
    if len(order) < len(indeg):
        raise DepCycle(_find_cycle(indeg, preds))
    return order, _reduce(n, order, preds)


def _find_cycle(indeg: dict[Item, int], preds: dict[Item, set[Item]]) -> list[Item]:
    stuck = {x for x, d in indeg.items() if d > 0}
    x = min(stuck, key=lambda it: (it[1], it[0]))
    seen: dict[Item, int] = {}
    path: list[Item] = []
    while x not in seen:
        seen[x] = len(path)
        path.append(x)
        u, i = x
        options = sorted(p for p in preds.get(x, ()) if p in stuck)
        if i > 0 and (u, i - 1) in stuck:
            options.insert(0, (u, i - 1))
        x = options[0]
    cycle = path[seen[x] :]
    cycle.reverse()
    return cycle


def _reduce(n: int, order: list[Item], preds: dict[Item, set[Item]]) -> dict[Item, list[Item]]:
    clock: dict[Item, list[int]] = {}
    kept_all: dict[Item, list[Item]] = {}
    for item in order:
        u, i = item
        base = list(clock[(u, i - 1)]) if i > 0 else [-1] * n
        best: dict[int, int] = {}
        for t, k in preds.get(item, ()):
            if k > best.get(t, -1):
                best[t] = k
        cands = [(t, k) for t, k in best.items() if base[t] < k]
        kept = [
            (t, k)
            for t, k in cands
            if not any(clock[(t2, k2)][t] >= k for t2, k2 in cands if t2 != t)
        ]
        for d in kept:
            c = clock[d]
            for j in range(n):
                if c[j] > base[j]:
                    base[j] = c[j]
        base[u] = i
        clock[item] = base
        if kept:
            kept_all[item] = sorted(kept)
    return kept_all
