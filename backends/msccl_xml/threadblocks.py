"""Threadblocks: which threadblock (TB) runs which connection.

A TB has at most one send peer, at most one receive peer and one channel, and runs its steps
one after another; the runtime pairs sends and receives per (peer, channel), so one TB owns
each (peer, channel) of its GPU in each direction. `plan_threadblocks` fixes, before any step
is ordered, which TB owns each connection:

- Manual (operations with a ``threadblock`` hint): sends and local operations go to their
  hinted TB as its send side, receives as its receive side (MSCCLang's ``sendtb``/``recvtb``).
  A TB asked to send to two peers, receive from two, or work on two channels, and two TBs
  claiming one (peer, channel), are "Illegal threadblock assignment" errors.
- Fused steps need their receive peer and send peer in one TB: per GPU and channel, the
  (receive peer, send peer) pairs of fused steps are accepted most frequent first while each
  peer is still free; the fused steps of rejected pairs are unfused unless the remaining
  connections (below) put their two peers in one TB anyway.
- The other connections get their own TBs; in ``merge`` mode (MSCCLang's compact layout) a
  GPU's remaining send peers and receive peers on a channel are paired in peer order, so a
  TB often sends to and receives from the same peer.

Local operations have no peer; `backends.msccl_xml.order` places them when they become ready.
TB ids: hinted TBs first, in hint order, then the others sorted by (send, recv, channel) as
MSCCLang does, numbered densely from 0 (the runtime requires dense ids).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from backends.msccl_xml.errors import XmlExportError
from backends.msccl_xml.fusion import Fusion
from backends.msccl_xml.graph import Graph, Kind, Node

Conn = tuple[int, int, int]
"""(rank, peer, channel) of one side of a connection."""


@dataclass
class Step:
    nodes: tuple[int, ...]
    type: str


@dataclass
class Tb:
    rank: int
    created: int
    chan: int = 0
    send: int = -1
    recv: int = -1
    hint: int = -1
    steps: list[Step] = field(default_factory=list)
    id: int = -1


@dataclass
class Layout:
    """Per rank its TBs (in creation order), the owners of connections, accepted fusions."""

    tbs: list[list[Tb]]
    send_tb: dict[Conn, Tb]
    recv_tb: dict[Conn, Tb]
    manual: dict[tuple[int, int], Tb]
    fusions: dict[int, Fusion]

    def new_tb(self, rank: int, chan: int, hint: int = -1) -> Tb:
        tb = Tb(rank, len(self.tbs[rank]), chan, hint=hint)
        self.tbs[rank].append(tb)
        return tb

    def tb_of(self, node: Node, channels: list[int]) -> Tb:
        """The TB of a communication node."""
        conn = (node.rank, node.peer, channels[node.msg])
        return self.send_tb[conn] if node.kind is Kind.SEND else self.recv_tb[conn]

    def numbered(self) -> list[list[Tb]]:
        """Per rank the TBs that have steps, numbered densely, in id order."""
        out = []
        for rank_tbs in self.tbs:
            used = [t for t in rank_tbs if t.steps]
            manual = sorted((t for t in used if t.hint >= 0), key=lambda t: t.hint)
            auto = sorted(
                (t for t in used if t.hint < 0), key=lambda t: (t.send, t.recv, t.chan, t.created)
            )
            ordered = manual + auto
            for i, t in enumerate(ordered):
                t.id = i
            out.append(ordered)
        return out


def _own(layout: Layout, g: Graph, tb: Tb, node: Node, chan: int) -> None:
    sending = node.kind is Kind.SEND
    owners = layout.send_tb if sending else layout.recv_tb
    verb = "send to" if sending else "receive from"
    current = tb.send if sending else tb.recv
    if current not in (-1, node.peer):
        raise XmlExportError(
            f"Illegal threadblock assignment: rank {tb.rank} threadblock {tb.hint} would "
            f"{verb} both rank {current} and rank {node.peer} ({g.describe(node.gid)})"
        )
    other = owners.get((tb.rank, node.peer, chan))
    if other is not None and other is not tb:
        raise XmlExportError(
            f"Illegal threadblock assignment: threadblocks {other.hint} and {tb.hint} of rank "
            f"{tb.rank} both {verb} rank {node.peer} on channel {chan}"
        )
    if sending:
        tb.send = node.peer
    else:
        tb.recv = node.peer
    owners[(tb.rank, node.peer, chan)] = tb


def plan_threadblocks(
    g: Graph, fusions: dict[int, Fusion], channels: list[int], *, merge: bool
) -> Layout:
    """The TB layout; raises `XmlExportError` for illegal hints."""
    layout = Layout([[] for _ in g.ranks], {}, {}, {}, {})
    # Manual TBs and their channels.
    for n in g.nodes:
        if n.tb < 0:
            continue
        tb = layout.manual.get((n.rank, n.tb))
        if tb is None:
            tb = layout.manual[(n.rank, n.tb)] = layout.new_tb(n.rank, -1, n.tb)
        c = channels[n.msg] if n.msg >= 0 else n.channel
        if c >= 0:
            if tb.chan not in (-1, c):
                raise XmlExportError(
                    f"Illegal threadblock assignment: rank {n.rank} threadblock {n.tb} holds "
                    f"operations on channels {tb.chan} and {c}"
                )
            tb.chan = c
    for tb in layout.manual.values():
        tb.chan = max(tb.chan, 0)
    for n in g.nodes:
        if n.tb >= 0 and n.msg >= 0:
            _own(layout, g, layout.manual[(n.rank, n.tb)], n, channels[n.msg])
    # Fused steps: accept (recv peer, send peer) pairs per rank and channel.
    pairs: Counter[tuple[int, int, int, int]] = Counter()
    for f in fusions.values():
        r = g.nodes[f.recv]
        if r.tb < 0:
            s = g.nodes[f.send]
            pairs[(r.rank, channels[r.msg], r.peer, s.peer)] += 1
    paired_recv: dict[Conn, int] = {}
    paired_send: dict[Conn, int] = {}
    for (rank, c, p, q), _count in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        rc, sc = (rank, p, c), (rank, q, c)
        if rc in paired_recv or sc in paired_send:
            continue
        a, b = layout.recv_tb.get(rc), layout.send_tb.get(sc)
        if a is not None or b is not None:
            continue  # owned by hinted TBs
        paired_recv[rc] = q
        paired_send[sc] = p
        tb = layout.new_tb(rank, c)
        tb.recv, tb.send = p, q
        layout.recv_tb[rc] = layout.send_tb[sc] = tb
    # The remaining connections.
    sends: dict[tuple[int, int], set[int]] = defaultdict(set)
    recvs: dict[tuple[int, int], set[int]] = defaultdict(set)
    for n in g.nodes:
        if n.msg < 0:
            continue
        c = channels[n.msg]
        conn = (n.rank, n.peer, c)
        if n.kind is Kind.SEND and conn not in layout.send_tb:
            sends[(n.rank, c)].add(n.peer)
        elif n.receives and conn not in layout.recv_tb:
            recvs[(n.rank, c)].add(n.peer)
    for rank, c in sorted(set(sends) | set(recvs)):
        qs, ps = sorted(sends.get((rank, c), ())), sorted(recvs.get((rank, c), ()))
        if merge:
            width = max(len(qs), len(ps))
            q_list = qs + [-1] * (width - len(qs))
            p_list = ps + [-1] * (width - len(ps))
            couples = list(zip(q_list, p_list, strict=True))
        else:
            couples = [(q, -1) for q in qs] + [(-1, p) for p in ps]
        for q, p in couples:
            tb = layout.new_tb(rank, c)
            tb.send, tb.recv = q, p
            if q >= 0:
                layout.send_tb[(rank, q, c)] = tb
            if p >= 0:
                layout.recv_tb[(rank, p, c)] = tb
    # A fusion holds when one TB owns both of its connections: a pair accepted above, or a
    # receive peer and a send peer that the remaining connections happened to couple.
    taken: set[int] = set()
    for key, f in fusions.items():
        r = g.nodes[f.recv]
        owner = layout.recv_tb.get((r.rank, r.peer, channels[r.msg]))
        for send in (f.send, *f.others):
            s = g.nodes[send]
            if send not in taken and (
                r.tb >= 0 or owner is layout.send_tb.get((s.rank, s.peer, channels[s.msg]))
            ):
                layout.fusions[key] = Fusion(f.kind, f.recv, send)
                taken.add(send)
                break
    return layout
