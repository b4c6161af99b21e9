"""The writer's view of a Program: operations on physical slots, split to the runtime's count
limit, with their messages paired.

- Slots are physical (`Collective.physical`): in place, MSCCLang names every slot by the buffer
  that holds it (all-reduce: input; all-gather: output; reduce-scatter: input). A copy whose
  source and destination are the same physical slot does nothing and is dropped (its
  dependants inherit its dependencies).
- An operation moving more than ``max_count`` chunks becomes consecutive pieces, each a node
  depending on the one before; a send and its receive are cut alike, so piece k of the send
  pairs with piece k of the receive.
- Messages pair the k-th send from a to b with tag t with the k-th such receive, in program
  order (the Program's matching rule).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from enum import IntEnum

from backends.msccl_xml.errors import XmlExportError
from chakra_ir.collective import Buffer
from chakra_ir.program import OpKind, Program
from chakra_ir.text import format_op

Slot = tuple[int, int]
"""(buffer code, index) of a physical slot; (-1, -1) when unused."""

NO_SLOT: Slot = (-1, -1)


class Kind(IntEnum):
    SEND = 0
    RECV = 1
    RRC = 2  # receive and reduce into dst
    CPY = 3
    RE = 4


_KINDS = {
    OpKind.SEND: Kind.SEND,
    OpKind.RECV: Kind.RECV,
    OpKind.RECV_REDUCE: Kind.RRC,
    OpKind.COPY: Kind.CPY,
    OpKind.REDUCE: Kind.RE,
}


@dataclass(slots=True)
class Node:
    """One piece of one Program operation."""

    gid: int
    rank: int
    kind: Kind
    peer: int
    src: Slot
    dst: Slot
    count: int
    deps: list[int]
    channel: int
    tb: int
    op: int
    piece: int
    pieces: int
    msg: int = -1

    @property
    def receives(self) -> bool:
        return self.kind in (Kind.RECV, Kind.RRC)

    @property
    def local(self) -> bool:
        return self.kind in (Kind.CPY, Kind.RE)


@dataclass(frozen=True, slots=True)
class Message:
    send: int
    recv: int
    src: int
    dst: int


@dataclass
class Graph:
    program: Program
    nodes: list[Node]
    ranks: list[list[int]]
    messages: list[Message]
    dependents: list[list[int]] = field(default_factory=list)
    hinted: bool = False

    def describe(self, gid: int) -> str:
        """``rank 2 op 5 (send to=3 src=input[1] tag=0)``, with the piece when split."""
        n = self.nodes[gid]
        text = f"rank {n.rank} op {n.op} ({format_op(self.program.op(n.rank, n.op))})"
        if n.pieces > 1:
            text += f" piece {n.piece + 1}/{n.pieces}"
        return text


def build_graph(program: Program, max_count: int) -> Graph:
    """Nodes for every operation of ``program``; raises `XmlExportError` on unpaired messages."""
    nodes: list[Node] = []
    ranks: list[list[int]] = []
    hinted = bool((program.channel >= 0).any() or (program.threadblock >= 0).any())
    for r in range(program.num_ranks):
        base = int(program.rank_offsets[r])
        rank_nodes: list[int] = []
        # For each op, the nodes whose completion means the op is complete.
        rank_done: list[list[int]] = [[] for _ in range(program.rank_len(r))]
        pending = _local_order(program, r)
        for local in pending:
            g = base + local
            kind = _KINDS[OpKind(int(program.kind[g]))]
            count = int(program.count[g])
            src = _phys(program, r, int(program.src_buf[g]), int(program.src_index[g]))
            dst = _phys(program, r, int(program.dst_buf[g]), int(program.dst_index[g]))
            deps = sorted({x for d in program.deps_of(g).tolist() for x in rank_done[d]})
            if kind is Kind.CPY and src == dst:
                rank_done[local] = deps
                continue
            k = -(-count // max_count)
            sizes = [count // k + (1 if i < count % k else 0) for i in range(k)]
            offset = 0
            prev = -1
            for i, size in enumerate(sizes):
                gid = len(nodes)
                node = Node(
                    gid,
                    r,
                    kind,
                    int(program.peer[g]),
                    (src[0], src[1] + offset) if src != NO_SLOT else NO_SLOT,
                    (dst[0], dst[1] + offset) if dst != NO_SLOT else NO_SLOT,
                    size,
                    list(deps) if i == 0 else [prev],
                    int(program.channel[g]),
                    int(program.threadblock[g]),
                    local,
                    i,
                    k,
                )
                nodes.append(node)
                rank_nodes.append(gid)
                prev = gid
                offset += size
            rank_done[local] = [prev]
        ranks.append(sorted(rank_nodes, key=lambda x: (nodes[x].op, nodes[x].piece)))
    graph = Graph(program, nodes, ranks, [], hinted=hinted)
    graph.messages = _pair(program, graph)
    graph.dependents = [[] for _ in nodes]
    for n in nodes:
        for d in n.deps:
            graph.dependents[d].append(n.gid)
    return graph


def _local_order(program: Program, rank: int) -> list[int]:
    """The rank's operation ids in an order where dependencies come first."""
    n = program.rank_len(rank)
    base = int(program.rank_offsets[rank])
    deps = [program.deps_of(base + i).tolist() for i in range(n)]
    if all(d < i for i in range(n) for d in deps[i]):
        return list(range(n))
    children: list[list[int]] = [[] for _ in range(n)]
    indeg = [len(set(d)) for d in deps]
    for i in range(n):
        for d in set(deps[i]):
            children[d].append(i)
    ready = deque(i for i in range(n) if indeg[i] == 0)
    out: list[int] = []
    while ready:
        i = ready.popleft()
        out.append(i)
        for ch in children[i]:
            indeg[ch] -= 1
            if indeg[ch] == 0:
                ready.append(ch)
    if len(out) < n:
        raise XmlExportError(
            f"rank {rank} has a dependency cycle; verify the program before writing XML"
        )
    return out


def _phys(program: Program, rank: int, buf: int, index: int) -> Slot:
    if buf < 0:
        return NO_SLOT
    b, i = program.collective.physical(rank, Buffer(buf), index)
    return (int(b), i)


def _pair(program: Program, graph: Graph) -> list[Message]:
    nodes = graph.nodes
    queues: dict[tuple[int, int, int], deque[list[int]]] = defaultdict(deque)
    by_op: dict[tuple[int, int], list[int]] = defaultdict(list)
    for n in nodes:
        by_op[(n.rank, n.op)].append(n.gid)
    for r in range(program.num_ranks):
        base = int(program.rank_offsets[r])
        for local in range(program.rank_len(r)):
            g = base + local
            if int(program.kind[g]) == OpKind.SEND:
                key = (r, int(program.peer[g]), int(program.tag[g]))
                queues[key].append(by_op[(r, local)])
    messages: list[Message] = []
    for r in range(program.num_ranks):
        base = int(program.rank_offsets[r])
        for local in range(program.rank_len(r)):
            g = base + local
            if int(program.kind[g]) not in (OpKind.RECV, OpKind.RECV_REDUCE):
                continue
            key = (int(program.peer[g]), r, int(program.tag[g]))
            if not queues[key]:
                raise XmlExportError(
                    f"rank {r} op {local} receives from rank {key[0]} with tag {key[2]}, but no "
                    "send matches it; verify the program before writing XML"
                )
            sends = queues[key].popleft()
            recvs = by_op[(r, local)]
            if len(sends) != len(recvs) or any(
                nodes[s].count != nodes[v].count for s, v in zip(sends, recvs, strict=False)
            ):
                raise XmlExportError(
                    f"rank {r} op {local} receives a different number of chunks than its send "
                    "moves; verify the program before writing XML"
                )
            for s, v in zip(sends, recvs, strict=True):
                nodes[s].msg = nodes[v].msg = len(messages)
                messages.append(Message(s, v, nodes[s].rank, r))
    for key, left in queues.items():
        if left:
            first = nodes[left[0][0]]
            raise XmlExportError(
                f"rank {first.rank} op {first.op} sends to rank {key[1]} with tag {key[2]}, but no receive "
                "matches it; verify the program before writing XML"
            )
    return messages
