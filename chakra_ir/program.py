"""The Program: per-rank operations, stored column-wise.

A program of tens of millions of operations must fit in memory and move fast, so every field
is a numpy column over all operations, ranks laid out one after another (`rank_offsets`), and
dependencies and routes are offset arrays (CSR). `ProgramBuilder` appends operations one at a
time for generators and tests; `Program.ops(rank)` gives the object view of a rank, whose
operation types (`chakra_ir.ops`) this module re-exports.

An operation's id is its index within its rank; its dependencies are ids of the same rank.
Sends and receives between an ordered pair of ranks with equal tag match in program order (the
k-th such send with the k-th such receive), like MPI's non-overtaking rule.

In-network flows (FRED): a flow is named by a program-wide id. Every rank that contributes
to flow F has one ``FlowIn(F, src)``; every rank that receives its result has one
``FlowOut(F, dst)``. The network (switches that reduce and multicast) sums the contributions
of all the flow's inputs and writes the sum into every output's ``dst``: a reduce (one
output), a multicast (one input), an all-reduce (inputs = outputs) or a unicast. A flow's
FlowOut waits for every FlowIn of the flow; the flow id lives in the ``tag`` column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, Collective
from chakra_ir.ops import NO_HINTS as NO_HINTS
from chakra_ir.ops import Copy as Copy
from chakra_ir.ops import FlowIn as FlowIn
from chakra_ir.ops import FlowOut as FlowOut
from chakra_ir.ops import Hints as Hints
from chakra_ir.ops import Op as Op
from chakra_ir.ops import OpKind as OpKind
from chakra_ir.ops import Recv as Recv
from chakra_ir.ops import Reduce as Reduce
from chakra_ir.ops import Send as Send
from chakra_ir.ops import Slice as Slice
from chakra_ir.ops import format_op
from topologies.errors import CollcError

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


COLUMNS = (
    "kind",
    "peer",
    "src_buf",
    "src_index",
    "dst_buf",
    "dst_index",
    "count",
    "tag",
    "channel",
    "threadblock",
    "after",
)
COLUMN_DTYPES: dict[str, Any] = {
    "kind": np.int8,
    "peer": np.int32,
    "src_buf": np.int8,
    "src_index": np.int32,
    "dst_buf": np.int8,
    "dst_index": np.int32,
    "count": np.int32,
    "tag": np.int32,
    "channel": np.int32,
    "threadblock": np.int32,
    "after": np.int32,
}


@dataclass(frozen=True)
class GateWaits:
    """See `Program.gate_waits`. Per gated send: ``named`` (the global index of the send its
    hint names) and ``count`` (how many dependencies that send has); per wait: ``owner`` (the
    position of its gated send), ``within`` (its place among that send's waits) and
    ``target`` (the global index of the op waited for)."""

    named: I64
    count: I64
    owner: I64
    within: I64
    target: I64


@dataclass(eq=False)
class Program:
    """A collective algorithm: per rank, a list of operations with dependencies.

    Columns (one entry per operation, ranks concatenated in order):
      ``kind`` (`OpKind`), ``peer`` (-1 for local ops and flows), ``src_buf``/``src_index``
      (-1 for a Recv or FlowOut), ``dst_buf``/``dst_index`` (-1 for a Send or FlowIn),
      ``count`` (slots moved), ``tag`` (a flow's id for FlowIn/FlowOut),
      ``channel``/``threadblock``/``after`` (hints, -1 when unset).
    CSR arrays: ``dep_offsets``/``deps`` (rank-local ids), ``route_offsets``/``route_nodes``
    (a Send's charged node path; empty when none).
    ``buffer_sizes[r]`` = (input, output, scratch) slots of rank r.
    The program is size-free: bytes = slots x chunk bytes, bound when a size is given.
    Construct with `ProgramBuilder` or `Program.from_columns`; treat as immutable.
    """

    collective: Collective
    rank_offsets: I64
    kind: I8
    peer: I32
    src_buf: I8
    src_index: I32
    dst_buf: I8
    dst_index: I32
    count: I32
    tag: I32
    channel: I32
    threadblock: I32
    after: I32
    dep_offsets: I64
    deps: I32
    route_offsets: I64
    route_nodes: I32
    buffer_sizes: I32
    name: str = ""
    _views: dict[int, list[Op]] = field(default_factory=dict, repr=False)

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def from_columns(
        cls,
        collective: Collective,
        rank_offsets: npt.ArrayLike,
        columns: Mapping[str, npt.ArrayLike],
        dep_offsets: npt.ArrayLike,
        deps: npt.ArrayLike,
        buffer_sizes: npt.ArrayLike,
        route_offsets: npt.ArrayLike | None = None,
        route_nodes: npt.ArrayLike | None = None,
        name: str = "",
    ) -> Program:
        """Build from whole columns (the fast path for generators and decoders).

        ``columns`` holds every name of `COLUMNS`; ``channel``, ``threadblock``, ``after`` and
        ``tag`` may be omitted (-1, -1, -1, 0). Arrays are converted to the canonical dtypes.
        """
        ro = np.ascontiguousarray(rank_offsets, dtype=np.int64)
        n = int(ro[-1])
        cols: dict[str, Any] = {}
        for name_ in COLUMNS:
            if name_ in columns:
                arr = np.ascontiguousarray(columns[name_], dtype=COLUMN_DTYPES[name_])
            else:
                fill = 0 if name_ == "tag" else -1
                arr = np.full(n, fill, dtype=COLUMN_DTYPES[name_])
            if arr.shape != (n,):
                raise ValueError(f"column {name_} has shape {arr.shape}, expected ({n},)")
            cols[name_] = arr
        if route_offsets is None:
            r_off = np.zeros(n + 1, dtype=np.int64)
            r_nodes = np.zeros(0, dtype=np.int32)
        else:
            r_off = np.ascontiguousarray(route_offsets, dtype=np.int64)
            r_nodes = np.ascontiguousarray(route_nodes, dtype=np.int32)
        return cls(
            collective=collective,
            rank_offsets=ro,
            dep_offsets=np.ascontiguousarray(dep_offsets, dtype=np.int64),
            deps=np.ascontiguousarray(deps, dtype=np.int32),
            route_offsets=r_off,
            route_nodes=r_nodes,
            buffer_sizes=np.ascontiguousarray(buffer_sizes, dtype=np.int32).reshape(-1, 3),
            name=name,
            **cols,
        )

    # -- shape ---------------------------------------------------------------------------------
    @property
    def num_ranks(self) -> int:
        return len(self.rank_offsets) - 1

    @property
    def num_ops(self) -> int:
        return int(self.rank_offsets[-1])

    def rank_len(self, rank: int) -> int:
        return int(self.rank_offsets[rank + 1] - self.rank_offsets[rank])

    def op_rank(self) -> I32:
        """The rank of every operation (a column)."""
        counts = np.diff(self.rank_offsets)
        return np.repeat(np.arange(self.num_ranks, dtype=np.int32), counts)

    def local_ids(self) -> I32:
        """Every operation's rank-local id (a column)."""
        g = np.arange(self.num_ops, dtype=np.int64)
        return (g - np.repeat(self.rank_offsets[:-1], np.diff(self.rank_offsets))).astype(np.int32)

    def deps_of(self, g: int) -> I32:
        """Rank-local dependency ids of the operation with global index ``g``."""
        return self.deps[self.dep_offsets[g] : self.dep_offsets[g + 1]]

    def route_of(self, g: int) -> tuple[int, ...]:
        return tuple(
            int(x) for x in self.route_nodes[self.route_offsets[g] : self.route_offsets[g + 1]]
        )

    @property
    def has_routes(self) -> bool:
        return len(self.route_nodes) > 0

    @property
    def has_flows(self) -> bool:
        """Whether any operation is an in-network flow's FlowIn or FlowOut."""
        return bool(np.any(self.kind >= OpKind.FLOW_IN))

    def flows(self) -> dict[int, tuple[list[int], list[int]]]:
        """Per flow id, the global indices of its FlowIns and of its FlowOuts (program order;
        either list may be empty in a program that `verify` would refuse)."""
        out: dict[int, tuple[list[int], list[int]]] = {}
        for g in np.flatnonzero(self.kind >= OpKind.FLOW_IN).tolist():
            side = 0 if int(self.kind[g]) == OpKind.FLOW_IN else 1
            out.setdefault(int(self.tag[g]), ([], []))[side].append(g)
        return out

    def flow_refusal(self, target: str, why: str) -> str | None:
        """The one-line reason a consumer that cannot express in-network flows gives for
        refusing this program (None when it has none): the first flow op, ``target`` and
        ``why``."""
        at = np.flatnonzero(self.kind >= OpKind.FLOW_IN)
        if not at.size:
            return None
        return (
            f"{self.describe_op(int(at[0]))}: the program uses in-network flows, which "
            f"{target} cannot express ({why})"
        )

    # -- object view ---------------------------------------------------------------------------
    def op(self, rank: int, local: int) -> Op:
        """One operation as an object (cheap enough for tests and error messages)."""
        return _make_op(self, int(self.rank_offsets[rank]) + local)

    def ops(self, rank: int) -> list[Op]:
        """All operations of ``rank`` as objects; cached."""
        if rank not in self._views:
            start, end = int(self.rank_offsets[rank]), int(self.rank_offsets[rank + 1])
            self._views[rank] = [_make_op(self, g) for g in range(start, end)]
        return self._views[rank]

    def __iter__(self) -> Iterator[tuple[int, int, Op]]:
        """(rank, local id, op) for every operation, rank by rank."""
        for r in range(self.num_ranks):
            for i, o in enumerate(self.ops(r)):
                yield r, i, o

    # -- equality ------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        if self.collective != other.collective or self.name != other.name:
            return False
        arrays = (
            "rank_offsets",
            *COLUMNS,
            "dep_offsets",
            "deps",
            "route_offsets",
            "route_nodes",
            "buffer_sizes",
        )
        return all(np.array_equal(getattr(self, a), getattr(other, a)) for a in arrays)

    __hash__ = None  # type: ignore[assignment]

    def describe_op(self, g: int) -> str:
        """``rank 3 op 17 (recv-reduce from 2 into input[4])`` for error messages."""
        r = int(np.searchsorted(self.rank_offsets, g, side="right") - 1)
        local = g - int(self.rank_offsets[r])
        return f"rank {r} op {local} ({format_op(self.op(r, local))})"

    def gate_waits(self, gated: npt.NDArray[np.integer[Any]]) -> GateWaits:
        """What the gates of the sends ``gated`` (global op indices, each with an ``after``
        hint) wait for: the dependencies of the send each hint names. The ET layout and the
        simulator's task graph both place gates from this."""
        g = np.asarray(gated, dtype=np.int64)
        rank = self.op_rank()[g].astype(np.int64)
        named = self.rank_offsets[rank] + self.after[g].astype(np.int64)
        count = (self.dep_offsets[named + 1] - self.dep_offsets[named]).astype(np.int64)
        total = int(count.sum())
        owner = np.repeat(np.arange(len(g), dtype=np.int64), count)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        src = self.dep_offsets[named][owner] + within
        target = self.rank_offsets[rank[owner]] + self.deps[src].astype(np.int64)
        return GateWaits(named, count, owner, within, target)

    def global_index(self, rank: int, local: int) -> int:
        return int(self.rank_offsets[rank]) + local


def _slice(buf: int, index: int, count: int) -> Slice:
    return Slice(Buffer(buf), index, count)


def _make_op(p: Program, g: int) -> Op:
    k = OpKind(int(p.kind[g]))
    deps = tuple(int(d) for d in p.deps_of(g))
    route = p.route_of(g)
    ch, tb, af = int(p.channel[g]), int(p.threadblock[g]), int(p.after[g])
    hints = Hints(route, ch, tb, af)
    if hints == NO_HINTS:
        hints = NO_HINTS
    count = int(p.count[g])
    if k is OpKind.FLOW_IN:
        return FlowIn(int(p.tag[g]), _slice(p.src_buf[g], p.src_index[g], count), deps, hints)
    if k is OpKind.FLOW_OUT:
        return FlowOut(int(p.tag[g]), _slice(p.dst_buf[g], p.dst_index[g], count), deps, hints)
    if k is OpKind.SEND:
        return Send(
            int(p.peer[g]), _slice(p.src_buf[g], p.src_index[g], count), int(p.tag[g]), deps, hints
        )
    if k in (OpKind.RECV, OpKind.RECV_REDUCE):
        return Recv(
            int(p.peer[g]),
            _slice(p.dst_buf[g], p.dst_index[g], count),
            int(p.tag[g]),
            k is OpKind.RECV_REDUCE,
            deps,
            hints,
        )
    src = _slice(p.src_buf[g], p.src_index[g], count)
    dst = _slice(p.dst_buf[g], p.dst_index[g], count)
    if k is OpKind.COPY:
        return Copy(src, dst, deps, hints)
    return Reduce(src, dst, deps, hints)


class ProgramBuilder:
    """Appends operations rank by rank, in any order of ranks, and builds a `Program`.

    Each method returns the rank-local id of the new operation. ``deps`` are rank-local ids.
    With ``auto_deps`` the builder adds MSCCLang's per-slot dependencies (a read depends on
    the slot's last writer; a write on the readers since then, else on the last writer), so
    generators need to state only the extra ordering they want. Buffer sizes default to the
    collective's input/output sizes and the largest scratch slot used.
    """

    def __init__(self, collective: Collective, *, auto_deps: bool = False, name: str = "") -> None:
        self.collective = collective
        self.name = name
        self.auto_deps = auto_deps
        n = collective.num_ranks
        self._rows: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
        self._deps: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
        self._routes: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
        self._scratch = [0] * n
        # per rank: physical slot -> (last writer, readers since)
        self._slots: list[dict[tuple[int, int], tuple[int, list[int]]]] = [{} for _ in range(n)]

    def _check_rank(self, rank: int, what: str = "rank") -> None:
        if not 0 <= rank < self.collective.num_ranks:
            raise CollcError(f"{what} {rank} is outside 0..{self.collective.num_ranks - 1}")

    def _add(
        self,
        rank: int,
        row: tuple[int, ...],
        deps: Sequence[int],
        hints: Hints,
        reads: Slice | None,
        writes: Slice | None,
    ) -> int:
        self._check_rank(rank)
        local = len(self._rows[rank])
        dep_set = list(deps)
        for s in (reads, writes):
            if s is not None and s.buffer is Buffer.SCRATCH:
                self._scratch[rank] = max(self._scratch[rank], s.index + s.count)
        if self.auto_deps:
            dep_set.extend(self._slot_deps(rank, local, reads, writes))
        ordered = tuple(sorted(set(dep_set)))
        self._rows[rank].append((*row, hints.channel, hints.threadblock, hints.after))
        self._deps[rank].append(ordered)
        self._routes[rank].append(hints.route)
        return local

    def _slot_deps(
        self, rank: int, local: int, reads: Slice | None, writes: Slice | None
    ) -> list[int]:
        slots = self._slots[rank]
        phys = self.collective.physical
        out: list[int] = []
        if reads is not None:
            for i in range(reads.index, reads.index + reads.count):
                key = phys(rank, reads.buffer, i)
                k = (int(key[0]), key[1])
                writer, readers = slots.get(k, (-1, []))
                if writer >= 0:
                    out.append(writer)
                readers = [*readers, local]
                slots[k] = (writer, readers)
        if writes is not None:
            for i in range(writes.index, writes.index + writes.count):
                key = phys(rank, writes.buffer, i)
                k = (int(key[0]), key[1])
                writer, readers = slots.get(k, (-1, []))
                prior = [x for x in readers if x != local]
                if prior:
                    out.extend(prior)
                elif writer >= 0:
                    out.append(writer)
                slots[k] = (local, [])
        return out

    def send(
        self,
        rank: int,
        peer: int,
        src: Slice,
        *,
        tag: int = 0,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        self._check_rank(peer, "peer")
        row = (OpKind.SEND, peer, src.buffer, src.index, -1, -1, src.count, tag)
        return self._add(rank, row, deps, hints, src, None)

    def recv(
        self,
        rank: int,
        peer: int,
        dst: Slice,
        *,
        tag: int = 0,
        reduce: bool = False,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        self._check_rank(peer, "peer")
        kind = OpKind.RECV_REDUCE if reduce else OpKind.RECV
        row = (kind, peer, -1, -1, dst.buffer, dst.index, dst.count, tag)
        # A reducing receive reads its destination too.
        return self._add(rank, row, deps, hints, dst if reduce else None, dst)

    def copy(
        self,
        rank: int,
        src: Slice,
        dst: Slice,
        *,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        return self._local(OpKind.COPY, rank, src, dst, deps, hints)

    def reduce(
        self,
        rank: int,
        src: Slice,
        dst: Slice,
        *,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        """``dst <- dst (+) src``."""
        return self._local(OpKind.REDUCE, rank, src, dst, deps, hints)

    def flow_in(
        self,
        rank: int,
        flow: int,
        src: Slice,
        *,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        """Contribute ``src`` of ``rank`` to in-network flow ``flow``."""
        row = (OpKind.FLOW_IN, -1, src.buffer, src.index, -1, -1, src.count, flow)
        return self._add(rank, row, deps, hints, src, None)

    def flow_out(
        self,
        rank: int,
        flow: int,
        dst: Slice,
        *,
        deps: Sequence[int] = (),
        hints: Hints = NO_HINTS,
    ) -> int:
        """Deliver the result of in-network flow ``flow`` into ``dst`` of ``rank``."""
        row = (OpKind.FLOW_OUT, -1, -1, -1, dst.buffer, dst.index, dst.count, flow)
        return self._add(rank, row, deps, hints, None, dst)

    def _local(
        self, kind: OpKind, rank: int, src: Slice, dst: Slice, deps: Sequence[int], hints: Hints
    ) -> int:
        if src.count != dst.count:
            raise CollcError(f"{kind.name.lower()} of {src.count} slots into {dst.count} slots")
        row = (kind, -1, src.buffer, src.index, dst.buffer, dst.index, src.count, 0)
        # Reduce reads dst as well; recording the write after the read covers it.
        return self._add(rank, row, deps, hints, src, dst)

    def add(self, rank: int, op: Op) -> int:
        """Append an object-view operation (its deps are kept as given)."""
        if isinstance(op, Send):
            return self.send(rank, op.peer, op.src, tag=op.tag, deps=op.deps, hints=op.hints)
        if isinstance(op, Recv):
            return self.recv(
                rank, op.peer, op.dst, tag=op.tag, reduce=op.reduce, deps=op.deps, hints=op.hints
            )
        if isinstance(op, Copy):
            return self.copy(rank, op.src, op.dst, deps=op.deps, hints=op.hints)
        if isinstance(op, FlowIn):
            return self.flow_in(rank, op.flow, op.src, deps=op.deps, hints=op.hints)
        if isinstance(op, FlowOut):
            return self.flow_out(rank, op.flow, op.dst, deps=op.deps, hints=op.hints)
        return self.reduce(rank, op.src, op.dst, deps=op.deps, hints=op.hints)

    def num_ops(self, rank: int) -> int:
        return len(self._rows[rank])

    def build(self) -> Program:
        """The finished Program. The builder may not be used afterwards."""
        c = self.collective
        n = c.num_ranks
        counts = [len(r) for r in self._rows]
        rank_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=rank_offsets[1:])
        rows = [row for rank_rows in self._rows for row in rank_rows]
        width = len(COLUMNS)
        table = np.array(rows, dtype=np.int64).reshape(-1, width)
        columns = {name: table[:, i] for i, name in enumerate(COLUMNS)}
        all_deps = [d for rank_deps in self._deps for d in rank_deps]
        dep_offsets = np.zeros(len(all_deps) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in all_deps], out=dep_offsets[1:])
        flat_deps = np.fromiter(
            (x for d in all_deps for x in d), dtype=np.int32, count=int(dep_offsets[-1])
        )
        all_routes = [rt for rank_routes in self._routes for rt in rank_routes]
        route_offsets = np.zeros(len(all_routes) + 1, dtype=np.int64)
        np.cumsum([len(rt) for rt in all_routes], out=route_offsets[1:])
        route_nodes = np.fromiter(
            (x for rt in all_routes for x in rt), dtype=np.int32, count=int(route_offsets[-1])
        )
        sizes = np.array(
            [(c.input_chunks(r), c.output_chunks(r), self._scratch[r]) for r in range(n)],
            dtype=np.int32,
        ).reshape(n, 3)
        return Program.from_columns(
            c,
            rank_offsets,
            columns,
            dep_offsets,
            flat_deps,
            sizes,
            route_offsets,
            route_nodes,
            name=self.name,
        )
