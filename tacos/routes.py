"""The routes a program's messages take, in the orientation of the real topology.

Every channel used by a phase (forward channels, and reversed channels of a phase synthesized on
the transposed topology) is registered once by its node path. A route's ``tag`` numbers the
distinct routes between one ordered pair of ranks, so messages on different routes between the
same ranks never match each other out of order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tacos.channels import Channel, Net, Timed, time_channel
from topologies.cost_model import CostModel


@dataclass
class Routes:
    """A registry of routes with their timing for one chunk size."""

    net: Net
    chunk_bytes: float
    cost: CostModel
    channels: list[Channel] = field(default_factory=list)
    timed: list[Timed] = field(default_factory=list)
    tags: list[int] = field(default_factory=list)
    _index: dict[tuple[int, ...], int] = field(default_factory=dict)
    _pairs: dict[tuple[int, int], int] = field(default_factory=dict)

    def add(self, ch: Channel) -> int:
        """The id of ``ch``'s route (registered on first use)."""
        rid = self._index.get(ch.nodes)
        if rid is not None:
            return rid
        rid = len(self.channels)
        self._index[ch.nodes] = rid
        self.channels.append(ch)
        self.timed.append(time_channel(self.net, ch, self.chunk_bytes, self.cost))
        pair = (ch.src, ch.dst)
        self.tags.append(self._pairs.get(pair, 0))
        self._pairs[pair] = self.tags[-1] + 1
        return rid

    def add_all(self, channels: list[Channel], *, reverse: bool = False) -> npt.NDArray[np.int64]:
        """Route ids for ``channels`` (reversed: each path run backwards, ends swapped)."""
        ids = []
        for ch in channels:
            if reverse:
                ch = Channel(ch.dst, ch.src, ch.nodes[::-1], ch.links[::-1])
            ids.append(self.add(ch))
        return np.array(ids, dtype=np.int64)

    def arrays(self) -> dict[str, npt.NDArray[np.int64]]:
        """Per route: ``dur``, ``link0``, ``ser0``, ``tag``, ``hops``; node CSR ``node_off``/``nodes``."""
        n = len(self.channels)
        dur = np.array([tm.dur for tm in self.timed], dtype=np.int64).reshape(n)
        link0 = np.array([tm.hops[0][0] for tm in self.timed], dtype=np.int64).reshape(n)
        ser0 = np.array([tm.hops[0][2] for tm in self.timed], dtype=np.int64).reshape(n)
        hops = np.array([len(tm.hops) for tm in self.timed], dtype=np.int64).reshape(n)
        lens = np.array([len(ch.nodes) for ch in self.channels], dtype=np.int64).reshape(n)
        node_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=node_off[1:])
        nodes = np.fromiter(
            (x for ch in self.channels for x in ch.nodes), dtype=np.int64, count=int(node_off[-1])
        )
        tag = np.array(self.tags, dtype=np.int64).reshape(n)
        return {
            "dur": dur,
            "link0": link0,
            "ser0": ser0,
            "hops": hops,
            "node_off": node_off,
            "nodes": nodes,
            "tag": tag,
        }
