"""Instruction fusion: a receive and the send that forwards what it received become one step.

A receive R into slot X fuses with a send S of X (same slots, same count) when S is one of R's
dependants (a reducing receive: its only one) and S waits for nothing R does not (S's other
dependencies are R's): running S as part of R is then exactly R followed at once by S, and R's
other dependants find X written as before. Manual threadblock hints must agree, and so must
explicit channel hints. The fused step is

- ``rcs`` for a plain receive (store X, forward it), with the first fitting send among its
  dependants in program order (msccl-tools' choice), or another fitting one when only that
  one's peer shares a threadblock with the receive's (`threadblocks.plan_threadblocks`);
- ``rrcs`` for a reducing receive (X <- recv (+) X, forward it);
- ``rrs`` for a reducing receive whose sum is dead: a writer W of the rank overwrites all of X
  after S (W depends on S, directly or not), and every other access to X on the rank comes
  before R or after W by dependencies; ``rrs`` forwards the sum without storing it.

These are MSCCLang's instruction-fusion rules (msccl-tools), stated on dependencies: its
"only successor" of a reducing receive is "only dependant", its ``rcs`` takes any successor,
and its ``rrs`` pattern (the send's successor is a receive into the slot) is the dead-sum
test.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from backends.msccl_xml.graph import Graph, Kind, Node

_BITSET_LIMIT = 20000
"""Ranks with more nodes skip the ``rrs`` test (it needs ancestor sets); they use ``rrcs``."""


@dataclass(frozen=True)
class Fusion:
    kind: str  # "rcs", "rrcs" or "rrs"
    recv: int
    send: int
    others: tuple[int, ...] = ()  # further sends an rcs may take instead (threadblocks decide)


def find_fusions(g: Graph) -> dict[int, Fusion]:
    """Fusable (receive, send) pairs, keyed by the receive's node id."""
    out: dict[int, Fusion] = {}
    dead = _DeadSum(g)
    for r_node in g.nodes:
        if not r_node.receives:
            continue
        dependants = g.dependents[r_node.gid]
        if r_node.kind is Kind.RECV:
            # A plain receive stores what it forwards, so its other dependants still find
            # the slot written: the first fitting send fuses, as in msccl-tools.
            fits = [d for d in dependants if _compatible(r_node, g.nodes[d])]
            if fits:
                out[r_node.gid] = Fusion("rcs", r_node.gid, fits[0], tuple(fits[1:]))
            continue
        if len(dependants) != 1 or not _compatible(r_node, g.nodes[dependants[0]]):
            continue
        s_node = g.nodes[dependants[0]]
        kind = "rrs" if dead.is_dead(r_node, s_node) else "rrcs"
        out[r_node.gid] = Fusion(kind, r_node.gid, s_node.gid)
    return out


def _compatible(r: Node, s: Node) -> bool:
    if s.kind is not Kind.SEND or s.src != r.dst or s.count != r.count:
        return False
    if not set(s.deps) <= {r.gid, *r.deps}:
        return False
    if r.tb != s.tb:
        return False
    return not (r.channel >= 0 and s.channel >= 0 and r.channel != s.channel)


def _slots(n: Node) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Slots ``n`` reads and writes."""
    reads: list[tuple[int, int]] = []
    writes: list[tuple[int, int]] = []
    span = range(n.count)
    if n.kind in (Kind.SEND, Kind.CPY, Kind.RE):
        reads += [(n.src[0], n.src[1] + i) for i in span]
    if n.kind in (Kind.RRC, Kind.RE):
        reads += [(n.dst[0], n.dst[1] + i) for i in span]
    if n.kind is not Kind.SEND:
        writes += [(n.dst[0], n.dst[1] + i) for i in span]
    return reads, writes


class _DeadSum:
    """The ``rrs`` test, with per-rank ancestor bitsets built on first use."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.ancestors: dict[int, dict[int, int]] = {}
        self.access: dict[int, dict[tuple[int, int], list[int]]] = {}

    def _rank(self, rank: int) -> bool:
        if rank in self.ancestors:
            return True
        ids = self.g.ranks[rank]
        if len(ids) > _BITSET_LIMIT:
            return False
        nodes = self.g.nodes
        indeg = {i: len(set(nodes[i].deps)) for i in ids}
        ready = deque(i for i in ids if indeg[i] == 0)
        anc: dict[int, int] = {}
        while ready:
            i = ready.popleft()
            bits = 0
            for d in set(nodes[i].deps):
                bits |= anc[d] | (1 << d)
            anc[i] = bits
            for ch in self.g.dependents[i]:
                indeg[ch] -= 1
                if indeg[ch] == 0:
                    ready.append(ch)
        access: dict[tuple[int, int], list[int]] = {}
        for i in ids:
            reads, writes = _slots(nodes[i])
            for slot in {*reads, *writes}:
                access.setdefault(slot, []).append(i)
        self.ancestors[rank] = anc
        self.access[rank] = access
        return True

    def is_dead(self, r: Node, s: Node) -> bool:
        if not self._rank(r.rank):
            return False
        nodes = self.g.nodes
        anc = self.ancestors[r.rank]
        access = self.access[r.rank]
        slots = [(r.dst[0], r.dst[1] + i) for i in range(r.count)]
        touching = {y for slot in slots for y in access.get(slot, [])} - {r.gid, s.gid}
        for w_id in sorted(touching):
            w = nodes[w_id]
            if w.kind not in (Kind.RECV, Kind.CPY) or w.dst != r.dst or w.count != r.count:
                continue
            if not (anc[w_id] >> s.gid) & 1:
                continue
            others = touching - {w_id}
            if all((anc[r.gid] >> y) & 1 or (anc[y] >> w_id) & 1 for y in others):
                return True
        return False
