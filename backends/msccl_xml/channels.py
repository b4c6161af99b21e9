"""Channels of messages.

The runtime pairs sends and receives per (peer, channel) by order, and every threadblock works
on one channel. With hints (any operation of the Program carries a channel or threadblock
hint), a message takes its send's channel hint, else its receive's, else the channel that the
other operations of its send's (or receive's) hinted threadblock name, else 0; hints that
disagree are an error. Without hints every message starts on channel 0 and two spreads apply
when the runtime's limits require them (`spread`): ``by_pair`` channels put the messages of
the pair (a, b) on channel ``(a + b) mod by_pair`` (fewer threadblocks per channel: a rank's
peers are split across channels on both ends), and ``by_order`` channels cut the messages
between a pair into that many consecutive runs (fewer steps per threadblock). ``moved`` lists
messages given a channel of their own because they must be received out of send order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from backends.msccl_xml.errors import XmlExportError
from backends.msccl_xml.graph import Graph


@dataclass(frozen=True)
class Spread:
    by_pair: int = 1
    by_order: int = 1

    @property
    def channels(self) -> int:
        return self.by_pair * self.by_order


def assign_channels(g: Graph, spread: Spread, moved: Mapping[int, int]) -> list[int]:
    """The channel of every message (indexed like ``g.messages``)."""
    if g.hinted:
        return _hinted(g)
    per_pair: dict[tuple[int, int], list[int]] = defaultdict(list)
    for m, msg in enumerate(g.messages):
        per_pair[(msg.src, msg.dst)].append(m)
    out = [0] * len(g.messages)
    for (a, b), msgs in per_pair.items():
        msgs.sort(key=lambda m: (g.nodes[g.messages[m].send].op, g.nodes[g.messages[m].send].piece))
        n = len(msgs)
        base = ((a + b) % spread.by_pair) * spread.by_order
        for i, m in enumerate(msgs):
            out[m] = base + i * spread.by_order // n
    for m, ch in moved.items():
        out[m] = ch
    return out


def fresh_channel(g: Graph, channels: list[int], message: int) -> int:
    """The lowest channel no message between the message's two ranks uses."""
    msg = g.messages[message]
    used = {
        channels[m]
        for m, other in enumerate(g.messages)
        if (other.src, other.dst) == (msg.src, msg.dst)
    }
    c = 0
    while c in used:
        c += 1
    return c


def _hinted(g: Graph) -> list[int]:
    nodes = g.nodes
    tb_channels: dict[tuple[int, int], set[int]] = defaultdict(set)
    for n in nodes:
        if n.tb >= 0 and n.channel >= 0:
            tb_channels[(n.rank, n.tb)].add(n.channel)
    for (rank, tb), chans in tb_channels.items():
        if len(chans) > 1:
            a, b = sorted(chans)[:2]
            raise XmlExportError(
                f"Illegal threadblock assignment: rank {rank} threadblock {tb} holds operations "
                f"on channels {a} and {b}"
            )
    out = []
    for msg in g.messages:
        s, r = nodes[msg.send], nodes[msg.recv]
        if s.channel >= 0 and r.channel >= 0 and s.channel != r.channel:
            raise XmlExportError(
                f"{g.describe(s.gid)} is on channel {s.channel} but its receive "
                f"{g.describe(r.gid)} on channel {r.channel}"
            )
        ch = s.channel if s.channel >= 0 else r.channel
        if ch < 0:
            cands = tb_channels.get((s.rank, s.tb), set()) | tb_channels.get((r.rank, r.tb), set())
            if len(cands) > 1:
                raise XmlExportError(
                    f"{g.describe(s.gid)} and its receive sit in threadblocks on different "
                    f"channels ({', '.join(map(str, sorted(cands)))})"
                )
            ch = min(cands) if cands else 0
        out.append(ch)
    return out
