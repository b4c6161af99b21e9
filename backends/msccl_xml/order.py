"""The order of steps in each threadblock, found by playing the program out.

A unit is what becomes one step: a node, or a fused (receive, send) pair. `schedule` runs the
threadblock-serialized program the way the runtime does (see `backends.msccl_xml.deadlock`):
each threadblock (TB) takes one unit at a time; a unit starts once its dependencies have
finished and, if it receives, once its message is the oldest one not yet received on its
connection (the runtime pairs a connection's k-th send with its k-th receive, so this keeps
the Program's matching); it then receives, and then sends as soon as the connection holds
fewer than ``capacity`` messages. An idle TB starts, among the units it can start now, the one
with the smallest (depth, -height, node id), depth and height being the longest chains of
dependencies and messages before and after the unit (MSCCLang orders by chunk step and
priority the same way). Units append to their TB's steps as they start, so every TB's order is
one that the runtime can execute: a layout that `schedule` completes cannot deadlock.

Local operations have no connection: when one becomes ready it joins the TB of the dependency
that finished last (or the TB with the fewest steps; a new one if all are waiting to send),
unless that would let the runtime fuse more than ``max_reduce_fusion`` consecutive ``re``
steps, or ``re`` steps of different counts.

When the play gets stuck, `schedule` returns `Stuck` with a message to move to a channel of its
own: a receive that must overtake an older message of its connection ("order"), or a send that
finds its connection's buffer full ("buffer"). With ``capacity=None`` buffers are unbounded.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from backends.msccl_xml.errors import XmlExportError
from backends.msccl_xml.fusion import Fusion
from backends.msccl_xml.graph import Graph, Kind
from backends.msccl_xml.threadblocks import Layout, Step, Tb

_SINGLE = {Kind.SEND: "s", Kind.RECV: "r", Kind.RRC: "rrc", Kind.CPY: "cpy", Kind.RE: "re"}

Key = tuple[int, int, int, int]


@dataclass
class Unit:
    nodes: tuple[int, ...]
    fusion: Fusion | None
    rank: int
    type: str = ""
    recv_msg: int = -1
    send_msg: int = -1


def make_units(g: Graph, fusions: dict[int, Fusion]) -> tuple[list[Unit], list[int]]:
    """Units and, per node, the index of its unit."""
    units: list[Unit] = []
    unit_of = [-1] * len(g.nodes)
    fused_sends = {f.send for f in fusions.values()}
    for rank_nodes in g.ranks:
        for gid in rank_nodes:
            if gid in fused_sends:
                continue
            f = fusions.get(gid)
            nodes = (f.recv, f.send) if f else (gid,)
            unit = Unit(nodes, f, g.nodes[gid].rank)
            unit.type = f.kind if f else _SINGLE[g.nodes[gid].kind]
            for x in nodes:
                unit_of[x] = len(units)
                node = g.nodes[x]
                if node.receives:
                    unit.recv_msg = node.msg
                elif node.msg >= 0:
                    unit.send_msg = node.msg
            units.append(unit)
    return units, unit_of


@dataclass
class Stuck:
    """The play stopped. ``why`` is "order" when ``message`` must be received before older
    messages of its connection, "buffer" when it cannot be sent before its receiver drains
    the connection."""

    message: int
    why: str


@dataclass
class _TbState:
    tb: Tb
    sends: list[tuple[Key, int]] = field(default_factory=list)
    locals: list[tuple[Key, int]] = field(default_factory=list)
    recvs: dict[int, int] = field(default_factory=dict)  # message -> ready unit
    busy: int = -1  # a unit waiting to send
    queued: bool = False
    re_run: tuple[tuple[int, int], int, int, int] | None = None  # dst, srcbuf, count, length


class _Play:
    def __init__(
        self,
        g: Graph,
        units: list[Unit],
        unit_of: list[int],
        channels: list[int],
        layout: Layout,
        capacity: int | None,
        max_reduce_fusion: int,
    ) -> None:
        self.g = g
        self.units = units
        self.channels = channels
        self.layout = layout
        self.capacity = capacity
        self.max_re = max_reduce_fusion
        n = len(units)
        self.preds: list[set[int]] = [set() for _ in range(n)]
        for u, unit in enumerate(units):
            for x in unit.nodes:
                for d in g.nodes[x].deps:
                    if unit_of[d] != u:
                        self.preds[u].add(unit_of[d])
            if unit.recv_msg >= 0:
                self.preds[u].add(unit_of[g.messages[unit.recv_msg].send])
        self.succs: list[list[int]] = [[] for _ in range(n)]
        for u in range(n):
            for p in sorted(self.preds[u]):
                self.succs[p].append(u)
        self.key = self._keys()
        self.indeg = [len(p) for p in self.preds]
        self.done = [False] * n
        self.finished_at = [-1] * n
        self.clock = 0
        self.state: dict[int, _TbState] = {}
        for rank_tbs in layout.tbs:
            for tb in rank_tbs:
                self.state[id(tb)] = _TbState(tb)
        self.queues: dict[tuple[int, int, int], deque[int]] = {}
        self.work: deque[_TbState] = deque()
        self.tb_of_unit: dict[int, Tb] = {}
        self.send_unit: dict[int, int] = {}
        self.recv_unit: dict[int, int] = {}
        for u, unit in enumerate(units):
            if unit.send_msg >= 0:
                self.send_unit[unit.send_msg] = u
            if unit.recv_msg >= 0:
                self.recv_unit[unit.recv_msg] = u

    def _keys(self) -> list[Key]:
        n = len(self.units)
        indeg = [len(p) for p in self.preds]
        ready = deque(u for u in range(n) if indeg[u] == 0)
        topo: list[int] = []
        while ready:
            u = ready.popleft()
            topo.append(u)
            for s in self.succs[u]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        if len(topo) < n:
            stuck = next(u for u in range(n) if indeg[u] > 0)
            raise XmlExportError(
                f"{self.g.describe(self.units[stuck].nodes[0])} is part of a dependency cycle; "
                "verify the program before writing XML"
            )
        depth = [0] * n
        for u in topo:
            for s in self.succs[u]:
                depth[s] = max(depth[s], depth[u] + 1)
        height = [0] * n
        for u in reversed(topo):
            for s in self.succs[u]:
                height[u] = max(height[u], height[s] + 1)
        return [(depth[u], -height[u], self.units[u].nodes[0], u) for u in range(n)]

    # -- helpers -------------------------------------------------------------------------------
    def conn(self, m: int) -> tuple[int, int, int]:
        msg = self.g.messages[m]
        return (msg.src, msg.dst, self.channels[m])

    def wake(self, st: _TbState) -> None:
        if not st.queued:
            st.queued = True
            self.work.append(st)

    def tb_state_of_comm(self, u: int) -> _TbState:
        node = self.g.nodes[self.units[u].nodes[0]]
        return self.state[id(self.layout.tb_of(node, self.channels))]

    def local_tb(self, u: int, exclude: Tb | None = None) -> _TbState:
        unit = self.units[u]
        node = self.g.nodes[unit.nodes[0]]
        if node.tb >= 0:
            return self.state[id(self.layout.manual[(node.rank, node.tb)])]
        rank_tbs = self.layout.tbs[node.rank]
        cands: list[Tb] = []
        finished = [p for p in self.preds[u] if self.units[p].rank == unit.rank]
        if finished:
            last = max(finished, key=lambda p: self.finished_at[p])
            cands.append(self.tb_of_unit[last])
        cands += sorted(rank_tbs, key=lambda t: (len(t.steps), t.created))
        for tb in cands:
            st = self.state[id(tb)]
            # A TB waiting to send could hold the operation back behind its own wait.
            if tb is not exclude and st.busy < 0 and self._accepts(st, u):
                return st
        tb = self.layout.new_tb(node.rank, 0)
        st = self.state[id(tb)] = _TbState(tb)
        return st

    def _accepts(self, st: _TbState, u: int) -> bool:
        node = self.g.nodes[self.units[u].nodes[0]]
        if node.kind is not Kind.RE or st.re_run is None or node.tb >= 0:
            return True
        dst, srcbuf, count, length = st.re_run
        if dst != node.dst or srcbuf != node.src[0]:
            return True
        return count == node.count and length < self.max_re

    def make_ready(self, u: int) -> None:
        unit = self.units[u]
        if unit.recv_msg >= 0:
            st = self.tb_state_of_comm(u)
            st.recvs[unit.recv_msg] = u
        elif unit.send_msg >= 0:
            st = self.tb_state_of_comm(u)
            heapq.heappush(st.sends, (self.key[u], u))
        else:
            st = self.local_tb(u)
            heapq.heappush(st.locals, (self.key[u], u))
        self.wake(st)

    def finish(self, st: _TbState, u: int) -> None:
        self.done[u] = True
        self.finished_at[u] = self.clock
        self.clock += 1
        self.tb_of_unit[u] = st.tb
        for s in self.succs[u]:
            self.indeg[s] -= 1
            if self.indeg[s] == 0:
                self.make_ready(s)

    def try_send(self, st: _TbState, u: int) -> bool:
        m = self.units[u].send_msg
        c = self.conn(m)
        q = self.queues.setdefault(c, deque())
        if self.capacity is not None and len(q) >= self.capacity:
            return False
        q.append(m)
        if len(q) == 1:
            self.wake(self.tb_state_of_comm(self.recv_unit[m]))
        return True

    def candidates(self, st: _TbState) -> list[tuple[Key, int]]:
        out: list[tuple[Key, int]] = []
        tb = st.tb
        if st.recvs and tb.recv >= 0:
            q = self.queues.get((tb.recv, tb.rank, tb.chan))
            if q and q[0] in st.recvs:
                u = st.recvs[q[0]]
                out.append((self.key[u], u))
        if st.sends:
            q = self.queues.get((tb.rank, tb.send, tb.chan))
            if self.capacity is None or q is None or len(q) < self.capacity:
                out.append(st.sends[0])
        while st.locals:
            key, u = st.locals[0]
            if self._accepts(st, u):
                out.append((key, u))
                break
            heapq.heappop(st.locals)
            other = self.local_tb(u, exclude=tb)
            heapq.heappush(other.locals, (key, u))
            self.wake(other)
        return out

    def start(self, st: _TbState, u: int) -> None:
        unit = self.units[u]
        st.tb.steps.append(Step(unit.nodes, unit.type))
        if unit.type == "re":
            node = self.g.nodes[unit.nodes[0]]
            run = st.re_run
            length = run[3] + 1 if run and run[0] == node.dst and run[1] == node.src[0] else 1
            st.re_run = (node.dst, node.src[0], node.count, length)
        else:
            st.re_run = None
        if unit.recv_msg >= 0:
            del st.recvs[unit.recv_msg]
            c = self.conn(unit.recv_msg)
            self.queues[c].popleft()
            sender = self.tb_state_of_comm(self.send_unit[unit.recv_msg])
            self.wake(sender)
            self.wake(st)
        elif unit.send_msg >= 0:
            heapq.heappop(st.sends)
        else:
            heapq.heappop(st.locals)
        if unit.send_msg >= 0 and not self.try_send(st, u):
            st.busy = u
            return
        self.finish(st, u)

    def run(self) -> Stuck | None:
        for u in range(len(self.units)):
            if self.indeg[u] == 0:
                self.make_ready(u)
        while self.work:
            st = self.work.popleft()
            st.queued = False
            while True:
                if st.busy >= 0:
                    if not self.try_send(st, st.busy):
                        break
                    u, st.busy = st.busy, -1
                    self.finish(st, u)
                cands = self.candidates(st)
                if not cands:
                    break
                self.start(st, min(cands)[1])
        if all(self.done):
            return None
        return self.stuck()

    def stuck(self) -> Stuck:
        waiting: dict[int, int] = {}
        full: list[int] = []
        for st in self.state.values():
            waiting.update({u: m for m, u in st.recvs.items()})
            if st.busy >= 0:
                full.append(st.busy)
            elif st.sends:
                full.append(st.sends[0][1])
        for st in sorted(self.state.values(), key=lambda s: (s.tb.rank, s.tb.created)):
            tb = st.tb
            q = self.queues.get((tb.recv, tb.rank, tb.chan))
            if not st.recvs or not q:
                continue
            front = self.recv_unit[q[0]]
            seen = {front}
            frontier = [front]
            while frontier:
                x = frontier.pop()
                if x in waiting and x != front:
                    return Stuck(waiting[x], "order")
                for p in sorted(self.preds[x]):
                    if not self.done[p] and p not in seen:
                        seen.add(p)
                        frontier.append(p)
        if full:
            u = min(full, key=lambda x: self.key[x])
            return Stuck(self.units[u].send_msg, "buffer")
        if waiting:
            return Stuck(waiting[min(waiting, key=lambda x: self.key[x])], "order")
        raise XmlExportError(
            "the program's dependencies form a cycle; verify it before writing XML"
        )


def schedule(
    g: Graph,
    units: list[Unit],
    unit_of: list[int],
    channels: list[int],
    layout: Layout,
    *,
    capacity: int | None,
    max_reduce_fusion: int,
) -> Stuck | None:
    """Fill the layout's TBs with steps in a runnable order; `Stuck` when the play stops."""
    return _Play(g, units, unit_of, channels, layout, capacity, max_reduce_fusion).run()
