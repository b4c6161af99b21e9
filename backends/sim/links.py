"""The congestion engine's links: per message size, every link's serialization and arrival
times in whole ps (`HopCosts`), and ASTRA-sim's link queues (`AstraLinks`, the engine's
``task_order=False`` rule)."""

from __future__ import annotations

import heapq
from collections import deque

from topologies.cost_model import CostModel
from topologies.topology import Topology

Costs = list[int] | dict[int, int]
"""Per link index, a time in ps: a full row over all links, or only the links of one route."""


class HopCosts:
    """Per message size, the serialization and arrival times of every link in whole ps, from
    the cost model: ``ser[l], arr[l] = cost.hop_ps(link, bytes, into_switch)``.

    Rows over all links are cached for the first `MAX_ROWS` sizes; beyond that, each message
    gets the entries of its own route only (cached per size and route).
    """

    MAX_ROWS = 64

    def __init__(self, topology: Topology, cost: CostModel) -> None:
        self.links = topology.links
        self.cost = cost
        self.into_switch = [topology.is_switch(lk.dst) for lk in self.links]
        self.full: dict[int, tuple[Costs, Costs]] = {}
        self.partial: dict[tuple[int, tuple[int, ...]], tuple[Costs, Costs]] = {}

    def rows(self, nbytes: int, route: tuple[int, ...]) -> tuple[Costs, Costs]:
        """``(ser, arr)`` indexable by the link indices of ``route`` (at least)."""
        v = self.full.get(nbytes)
        if v is not None:
            return v
        cost, links, sw = self.cost, self.links, self.into_switch
        if len(self.full) < self.MAX_ROWS:
            both = [cost.hop_ps(lk, nbytes, x) for lk, x in zip(links, sw, strict=True)]
            v = ([b[0] for b in both], [b[1] for b in both])
            self.full[nbytes] = v
            return v
        key = (nbytes, route)
        v = self.partial.get(key)
        if v is None:
            part = {li: cost.hop_ps(links[li], nbytes, sw[li]) for li in route}
            v = ({li: b[0] for li, b in part.items()}, {li: b[1] for li, b in part.items()})
            self.partial[key] = v
        return v


class AstraLinks:
    """ASTRA-sim's links (``task_order=False``): a free link takes a message at once
    (``Link::schedule_chunk_transmission``: it queues the message's arrival at the far end,
    then its own free event, code ``-(li + 1)``); a message finding it busy waits in its
    pending list until that free event starts it."""

    def __init__(
        self,
        nlinks: int,
        busy: list[float],
        buckets: dict[float, list[int]],
        times: list[float],
        recs: tuple[list[int], list[float], list[float], list[int]] | None,
    ) -> None:
        self.taken = bytearray(nlinks)
        self.pending: list[deque[tuple[int, tuple[Costs, Costs]]]] = [
            deque() for _ in range(nlinks)
        ]
        self.busy, self.buckets, self.times, self.recs = busy, buckets, times, recs

    def request(self, li: int, code: int, mr: tuple[Costs, Costs], now: float) -> None:
        """Message event ``code`` (costs ``mr``) asks for link ``li`` at ``now``."""
        if self.taken[li]:
            self.pending[li].append((code, mr))
        else:
            self._start(li, code, mr, now)

    def freed(self, li: int, now: float) -> None:
        """Link ``li``'s free event: its next pending message starts, or it is free."""
        if self.pending[li]:
            code, mr = self.pending[li].popleft()
            self._start(li, code, mr, now)
        else:
            self.taken[li] = 0

    def _start(self, li: int, code: int, mr: tuple[Costs, Costs], now: float) -> None:
        self.taken[li] = 1
        c = mr[0][li]
        self.busy[li] += c
        if self.recs is not None:
            links, starts, durations, tasks = self.recs
            links.append(li)
            starts.append(now)
            durations.append(c)
            tasks.append(code >> 2)
        for at, ev in ((now + mr[1][li], code), (now + c, -li - 1)):
            bk = self.buckets.get(at)
            if bk is None:
                self.buckets[at] = [ev]
                heapq.heappush(self.times, at)
            else:
                bk.append(ev)
