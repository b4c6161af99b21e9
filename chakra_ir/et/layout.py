"""How a Program is laid out as Chakra ET nodes (docs/architecture.md), in columns.

Per rank, operations become nodes in program order, ids 0, 1, ... in file order:

- ``Send`` -> COMM_SEND_NODE; ``Recv`` -> COMM_RECV_NODE; ``Copy``/``Reduce`` -> COMP_NODE;
  ``FlowIn``/``FlowOut`` (in-network flows) -> COMM_COLL_NODE, which only collc reads: a
  program with flows cannot run in ASTRA-sim, whose switches do not reduce;
- a reducing ``Recv`` -> COMM_RECV_NODE (``collc_op`` 2); when reductions take time
  (``reduce_micros`` > 0) it is followed by a COMP_NODE (the reduction) that data-depends on
  it, and operations that depend on the reducing receive depend on that COMP node. A
  reduction of 0 µs gets no node, because ASTRA-sim would run it for 1 ns (format 1 always
  wrote it; `chakra_ir.et.codec` still reads such files);
- a ``Send`` with an ``after`` hint (send ``A`` of its rank) -> a gate COMP_NODE (duration 0,
  which ASTRA-sim runs for 1 ns) right before its COMM_SEND_NODE: the gate depends on what
  ``A``'s node depends on, and the send also on the gate. A simulator that issues the nodes
  ready at one instant in any order then still issues the send after ``A``;
- an operation's dependencies -> ``data_deps`` (node ids);
- a rank without operations gets one idle COMP_NODE (duration 0), because ASTRA-sim refuses a
  file without a dependency-free node.

Attributes, in this order on each node that has them (ASTRA-sim's first, with the exact oneof
members of its canonical-types table; then collc's, all int32 unless said):

====================  ==========  ==============================================================
name                  member      on / value
====================  ==========  ==============================================================
is_cpu_op             bool        every node, false
comm_src, comm_dst    int32       send/recv: sender and receiver rank (own rank on its side)
comm_tag              int32       send/recv: the message's number between its ordered pair of
                                  ranks (`comm_tags`), equal on the send and its receive
comm_size             int64       send/recv/flow: count x chunk bytes (> 0)
msg_chunk_cnt         int32       send/recv: count
total_chunk_cnt       int32       send/recv: the collective's size in chunks (``size_chunks``)
num_ops               int64       COMP: bytes reduced (one operation a byte); 0 for copy/idle
tensor_size           uint64      COMP: bytes read/written (count x chunk bytes)
collc_op              int32       every node: `OpKind` value (0-4, 8 flow-in, 9 flow-out), 5 =
                                  reduction after a reducing receive, 6 = idle, 7 = gate
collc_peer            int32       copy/reduce/flow whose peer column is not -1
collc_src_buf/_index  int32       op nodes, except a recv whose value is -1
collc_dst_buf/_index  int32       op nodes, except a send whose value is -1
collc_count           int32       op nodes
collc_tag             int32       send/recv; flow-in/out (the flow id); copy/reduce when not 0
collc_channel         int32       op nodes whose channel hint is not -1
collc_threadblock     int32       op nodes whose threadblock hint is not -1
collc_after           int32       sends whose after hint is not -1
collc_route           int64_list  op nodes with a route hint
====================  ==========  ==============================================================

An absent collc attribute means the default of its kind above, so decoding restores every
column exactly. COMP durations: copy 0 (ASTRA-sim makes it 1 ns), reductions
``reduce_micros`` (integer microseconds: a local ``Reduce`` of less than a microsecond is
written as 0, i.e. 1 ns in ASTRA-sim; a reducing receive's reduction of 0 µs has no node).

GlobalMetadata: version ``0.0.4`` and ``collc_et_format`` (int32, `ET_FORMAT`),
``collc_rank``, ``collc_num_ranks`` (int32), ``collc_program`` and ``collc_collective``
(string; the collective as JSON, `chakra_ir.collective.collective_to_dict`; for a custom
collective without the per-rank conditions, which ``collc_custom_input`` and
``collc_custom_output`` hold for the file's own rank as JSON lists),
``collc_buffer_sizes`` (int64_list: input, output, scratch slots of this rank),
``collc_chunk_bytes`` and ``collc_reduce_micros`` (int64).
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass

import numpy as np

from chakra_ir.collective import Collective, CollectiveKind, Contents, collective_to_dict
from chakra_ir.et import schema as s
from chakra_ir.et.errors import EtEncodeError
from chakra_ir.et.framing import frame
from chakra_ir.et.table import AttrSpec, NodeTable
from chakra_ir.et.wire import BOOL, I64, WT_LEN, WT_VARINT, key, varint
from chakra_ir.program import OpKind, Program

ET_FORMAT = 2
"""Version of collc's attribute layout (GlobalMetadata ``collc_et_format``). Format 1 differs
only in that every reducing receive is followed by its reduction node, whatever its time."""

READABLE_FORMATS = (1, 2)
"""The formats `chakra_ir.et.codec` decodes."""

OP_REDUCE_AFTER_RECV = 5
OP_IDLE = 6
OP_GATE = 7

NODE_NAMES = (
    "send",
    "recv",
    "recv_reduce",
    "copy",
    "reduce",
    "reduce_received",
    "idle",
    "gate",
    "flow_in",
    "flow_out",
)
"""Node name per ``collc_op`` value."""

NODE_TYPES = np.array(
    [s.NodeType.COMM_SEND_NODE, s.NodeType.COMM_RECV_NODE, s.NodeType.COMM_RECV_NODE]
    + [s.NodeType.COMP_NODE] * 5
    + [s.NodeType.COMM_COLL_NODE] * 2,
    dtype=np.int64,
)
"""Node type per ``collc_op`` value."""

_INT32_MAX = (1 << 31) - 1
_INT64_MAX = (1 << 63) - 1


def comm_tags(p: Program) -> I64:
    """``comm_tag`` of every operation (-1 for local ones).

    For messages from rank ``a`` to rank ``b`` with collc tag ``t``, the ``k``-th (program
    order) gets ``offset(a, b, t) + k``, where the offsets number the tags of the pair in
    ascending order, each taking as many values as the more numerous side (sends or
    receives) uses. The ``k``-th send ``a -> b`` with tag ``t`` and the ``k``-th receive on
    ``b`` from ``a`` with tag ``t`` match (the IR's rule), so they get the same value; and
    values are unique per ordered pair. With one tag per pair it is the message's sequence
    number. Raises EtEncodeError when a pair exchanges more than 2**31 messages.
    """
    n = p.num_ops
    out = np.full(n, -1, dtype=np.int64)
    kind = p.kind
    is_send = kind == OpKind.SEND
    is_recv = (kind == OpKind.RECV) | (kind == OpKind.RECV_REDUCE)
    msg = np.flatnonzero(is_send | is_recv)
    if msg.size == 0:
        return out
    rank = p.op_rank().astype(np.int64)[msg]
    peer = p.peer[msg].astype(np.int64)
    side = is_recv[msg].astype(np.int64)
    src = np.where(side == 0, rank, peer)
    dst = np.where(side == 0, peer, rank)
    shift = np.uint64(1 << 31)
    pair_key = ((src.astype(np.uint64) + shift) << np.uint64(32)) | (dst.astype(np.uint64) + shift)
    _, pair = np.unique(pair_key, return_inverse=True)
    pair = pair.reshape(-1).astype(np.int64)
    utags, tcode = np.unique(p.tag[msg], return_inverse=True)
    tcode = tcode.reshape(-1).astype(np.int64)
    nt = len(utags)
    key = (pair * nt + tcode) * 2 + side
    order = np.argsort(key, kind="stable")  # program order within a (pair, tag, side) group
    sk = key[order]
    first = np.ones(len(sk), dtype=np.bool_)
    first[1:] = sk[1:] != sk[:-1]
    grp = np.cumsum(first) - 1
    grp_start = np.flatnonzero(first)
    k_sorted = np.arange(len(sk), dtype=np.int64) - grp_start[grp]
    grp_count = np.diff(np.append(grp_start, len(sk)))
    tkey = sk[grp_start] >> 1  # (pair, tag) of each group; ascending
    ukeys, inv = np.unique(tkey, return_inverse=True)
    inv = inv.reshape(-1)
    width = np.zeros(len(ukeys), dtype=np.int64)
    np.maximum.at(width, inv, grp_count)
    key_pair = ukeys // nt
    excl = np.cumsum(width) - width
    pair_first = np.ones(len(ukeys), dtype=np.bool_)
    pair_first[1:] = key_pair[1:] != key_pair[:-1]
    base = excl[np.flatnonzero(pair_first)][np.cumsum(pair_first) - 1]
    offset = excl - base
    tags_sorted = offset[inv[grp]] + k_sorted
    if len(tags_sorted) and int(tags_sorted.max()) > _INT32_MAX:
        raise EtEncodeError(
            "a pair of ranks exchanges more than 2**31 messages (comm_tag is int32)"
        )
    tags = np.empty(len(msg), dtype=np.int64)
    tags[order] = tags_sorted
    out[msg] = tags
    return out


def collective_json(c: Collective) -> str:
    """``collc_collective``: the collective as compact JSON (`collective_to_dict`), without
    the per-rank pre- and postconditions of a custom collective, which each rank's file
    carries for itself (``collc_custom_input``/``collc_custom_output``)."""
    d = collective_to_dict(c)
    d.pop("custom_input", None)
    d.pop("custom_output", None)
    return json.dumps(d, separators=(",", ":"), sort_keys=True)


def _row_json(row: tuple[Contents | None, ...]) -> str:
    """One rank's slots of a custom collective, as `collective_to_dict` writes them."""
    return json.dumps(
        [None if x is None else [[i, m] for i, m in x] for x in row], separators=(",", ":")
    )


MetaValue = int | str | list[int]


def metadata_attrs(
    p: Program, rank: int, chunk_bytes: int, reduce_micros: int, coll_json: str | None = None
) -> list[tuple[str, int, MetaValue]]:
    """The attributes of ``rank``'s GlobalMetadata: ``(name, AttributeProto member, value)``
    (``coll_json``: `collective_json`, computed when not given)."""
    c = p.collective
    attrs: list[tuple[str, int, MetaValue]] = [
        ("collc_et_format", s.INT32_VAL, ET_FORMAT),
        ("collc_rank", s.INT32_VAL, rank),
        ("collc_num_ranks", s.INT32_VAL, p.num_ranks),
        ("collc_program", s.STRING_VAL, p.name),
        (
            "collc_collective",
            s.STRING_VAL,
            coll_json if coll_json is not None else collective_json(c),
        ),
    ]
    if c.kind is CollectiveKind.CUSTOM:
        attrs.append(("collc_custom_input", s.STRING_VAL, _row_json(c.custom_input[rank])))
        attrs.append(("collc_custom_output", s.STRING_VAL, _row_json(c.custom_output[rank])))
    attrs.append(("collc_buffer_sizes", s.INT64_LIST, [int(x) for x in p.buffer_sizes[rank]]))
    attrs.append(("collc_chunk_bytes", s.INT64_VAL, chunk_bytes))
    attrs.append(("collc_reduce_micros", s.INT64_VAL, reduce_micros))
    return attrs


def metadata_message(
    p: Program, rank: int, chunk_bytes: int, reduce_micros: int, coll_json: str | None = None
) -> bytes:
    """The framed GlobalMetadata of ``rank``'s file (`metadata_attrs`), byte for byte what the
    generated bindings write (`chakra_ir.et.pbwrite.metadata_message_pb`, which tests compare),
    with their errors for a value out of range; written by hand so that writing a program
    loads no protobuf (start-up time)."""
    parts = [_len_field(s.META_VERSION, s.VERSION.encode())]
    for name, member, value in metadata_attrs(p, rank, chunk_bytes, reduce_micros, coll_json):
        body = _len_field(s.ATTR_NAME, name.encode())
        if member == s.STRING_VAL:
            assert isinstance(value, str)
            body += key(member, WT_LEN) + _length_prefixed(value.encode())
        elif member == s.INT64_LIST:
            assert isinstance(value, list)
            packed = b"".join(varint(_in_range(v, _INT64_MAX)) for v in value)
            body += key(member, WT_LEN) + _length_prefixed(_len_field(1, packed))
        else:
            assert not isinstance(value, str | list)
            top = _INT32_MAX if member == s.INT32_VAL else _INT64_MAX
            body += key(member, WT_VARINT) + varint(_in_range(value, top))
        parts.append(key(s.META_ATTR, WT_LEN) + _length_prefixed(body))
    return frame(b"".join(parts))


def _length_prefixed(data: bytes) -> bytes:
    return varint(len(data)) + data


def _len_field(field: int, data: bytes) -> bytes:
    """A bytes or string field, or a packed repeated one; omitted when empty, as proto3 does
    outside a oneof."""
    return key(field, WT_LEN) + _length_prefixed(data) if data else b""


def _in_range(value: int, top: int) -> int:
    """``value`` as a Python int, or protobuf's error when an int32/int64 cannot hold it."""
    v = operator.index(value)
    if not -top - 1 <= v <= top:
        raise ValueError(f"Value out of range: {v}")
    return v


def check_encodable(p: Program, chunk_bytes: int, reduce_micros: int) -> None:
    """Raise EtEncodeError when ``p`` cannot be written: a non-positive chunk size, a negative
    reduction time, a send or receive of fewer than 1 slot (ASTRA-sim needs comm_size > 0), a
    negative count, sizes past int64, or a dependency outside its rank."""
    if chunk_bytes < 1:
        raise EtEncodeError(f"chunk bytes must be at least 1, got {chunk_bytes}")
    if not 0 <= reduce_micros <= _INT64_MAX:
        raise EtEncodeError(
            f"reduction time must be a non-negative number of µs, got {reduce_micros}"
        )
    if p.num_ops == 0:
        return
    kind = p.kind
    comm = kind <= OpKind.RECV_REDUCE
    bad = np.flatnonzero((comm & (p.count < 1)) | (p.count < 0))
    if bad.size:
        g = int(bad[0])
        raise EtEncodeError(
            f"{p.describe_op(g)} moves {int(p.count[g])} slots; an ET message needs at least 1 byte"
        )
    if int(p.count.max()) * chunk_bytes > _INT64_MAX:
        raise EtEncodeError(f"{int(p.count.max())} slots of {chunk_bytes} bytes exceed int64")
    if p.collective.size_chunks > _INT32_MAX:
        raise EtEncodeError("the collective's size in chunks exceeds int32")
    bad = np.flatnonzero((p.after != -1) & (kind != OpKind.SEND))
    if bad.size:
        raise EtEncodeError(f"{p.describe_op(int(bad[0]))}: only a send may carry an after hint")
    rank_len_op = np.diff(p.rank_offsets)[p.op_rank()]
    bad = np.flatnonzero((p.after < -1) | (p.after >= rank_len_op))
    if bad.size:
        g = int(bad[0])
        raise EtEncodeError(
            f"{p.describe_op(g)}: its after hint names op {int(p.after[g])}, which its rank "
            "does not have"
        )
    if len(p.deps):
        owner = np.repeat(np.arange(p.num_ops, dtype=np.int64), np.diff(p.dep_offsets))
        rank_len = np.diff(p.rank_offsets)[p.op_rank()[owner]]
        out = np.flatnonzero((p.deps < 0) | (p.deps >= rank_len))
        if out.size:
            g = int(owner[out[0]])
            raise EtEncodeError(
                f"{p.describe_op(g)} depends on op {int(p.deps[out[0]])}, which its rank does not have"
            )


@dataclass(frozen=True)
class ProgramLayout:
    """Whole-program facts the per-batch layout needs: per op its rank, whether a reduction
    node follows it (a reducing receive, when reductions take time), whether a gate precedes
    it, its node id in its rank's file (the gate's is one less), and its ``comm_tag``."""

    program: Program
    chunk_bytes: int
    reduce_micros: int
    op_rank: I64
    split: BOOL
    gated: BOOL
    node_id: I64
    tags: I64
    coll_json: str

    @classmethod
    def of(
        cls,
        p: Program,
        chunk_bytes: int,
        reduce_micros: int,
        *,
        tags: I64 | None = None,
        et_format: int = ET_FORMAT,
    ) -> ProgramLayout:
        """Check ``p`` (`check_encodable`) and lay it out. ``tags`` replaces `comm_tags`
        (a reader laying out one rank's operations, whose tags need every rank) and
        ``et_format`` 1 gives every reducing receive its reduction node, as that format did
        (`chakra_ir.et.agree` compares a file with the layout of what it decodes to)."""
        check_encodable(p, chunk_bytes, reduce_micros)
        op_rank = p.op_rank().astype(np.int64)
        split = (p.kind == OpKind.RECV_REDUCE) & (reduce_micros > 0 or et_format == 1)
        gated = p.after != -1
        rr_cum = np.zeros(p.num_ops + 1, dtype=np.int64)
        np.cumsum(split, out=rr_cum[1:])
        g_cum = np.zeros(p.num_ops + 1, dtype=np.int64)
        np.cumsum(gated, out=g_cum[1:])
        start = p.rank_offsets[:-1][op_rank]
        node_id = (
            np.arange(p.num_ops, dtype=np.int64)
            - start
            + rr_cum[:-1]
            - rr_cum[start]
            + g_cum[1:]
            - g_cum[start]
        )
        return cls(
            p,
            chunk_bytes,
            reduce_micros,
            op_rank,
            split,
            gated,
            node_id,
            comm_tags(p) if tags is None else tags,
            collective_json(p.collective),
        )


def node_table(lay: ProgramLayout, g0: int, g1: int) -> tuple[NodeTable, I64]:
    """The nodes of operations ``g0 .. g1 - 1`` (global indices; the range may start and end
    inside a rank), and the rank of each file segment of the table (``file_offsets`` splits
    the nodes by rank). Ranks without operations are not covered: see `idle_table`."""
    p = lay.program
    nb = g1 - g0
    kind = p.kind[g0:g1].astype(np.int64)
    split = lay.split[g0:g1]
    gated = lay.gated[g0:g1]
    before = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(split.astype(np.int64) + gated, out=before[1:])
    nn = nb + int(before[-1])
    op_node = np.arange(nb, dtype=np.int64) + before[:-1] + gated  # a gate comes first
    rr_ops = np.flatnonzero(split)
    comp_node = op_node[rr_ops] + 1
    g_ops = np.flatnonzero(gated)
    gate_node = op_node[g_ops] - 1

    node_op = np.empty(nn, dtype=np.int64)
    node_op[op_node] = np.arange(nb, dtype=np.int64)
    node_op[comp_node] = rr_ops
    node_op[gate_node] = g_ops
    cop = np.empty(nn, dtype=np.int64)
    cop[op_node] = kind
    cop[comp_node] = OP_REDUCE_AFTER_RECV
    cop[gate_node] = OP_GATE
    op_rank = lay.op_rank[g0:g1]
    node_rank = op_rank[node_op]
    ids = (
        lay.node_id[g0:g1][node_op]
        + (cop == OP_REDUCE_AFTER_RECV)
        - (cop == OP_GATE).astype(np.int64)
    )
    change = np.flatnonzero(node_rank[1:] != node_rank[:-1]) + 1
    file_offsets = np.concatenate([[0], change, [nn]]).astype(np.int64)
    file_ranks = node_rank[file_offsets[:-1]]

    # data_deps: an op's deps (op ids) -> the node completing each (a reducing receive's
    # reduction node), then its gate; a reduction node -> its receive; a gate -> what the
    # send it follows (A) depends on, and A's own gate.
    def done_node(target: I64) -> I64:
        out: I64 = lay.node_id[target] + lay.split[target]
        return out

    d0, d1 = int(p.dep_offsets[g0]), int(p.dep_offsets[g1])
    op_dep_count = np.diff(p.dep_offsets[g0 : g1 + 1]).astype(np.int64)
    waits = p.gate_waits(g0 + g_ops)
    g_after, a_count = waits.named, waits.count
    a_gated = lay.gated[g_after]
    dep_count = np.zeros(nn, dtype=np.int64)
    dep_count[op_node] = op_dep_count + gated
    dep_count[comp_node] = 1
    dep_count[gate_node] = a_count + a_gated
    dep_offsets = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(dep_count, out=dep_offsets[1:])
    deps = np.zeros(int(dep_offsets[-1]), dtype=np.int64)
    if d1 > d0:
        owner = np.repeat(np.arange(nb, dtype=np.int64), op_dep_count)
        target = p.rank_offsets[op_rank[owner]] + p.deps[d0:d1].astype(np.int64)
        within = np.arange(d1 - d0, dtype=np.int64) - np.repeat(
            np.cumsum(op_dep_count) - op_dep_count, op_dep_count
        )
        deps[dep_offsets[op_node[owner]] + within] = done_node(target)
    deps[dep_offsets[op_node[g_ops]] + op_dep_count[g_ops]] = ids[gate_node]
    deps[dep_offsets[comp_node]] = ids[comp_node] - 1
    deps[dep_offsets[gate_node[waits.owner]] + waits.within] = done_node(waits.target)
    sel = np.flatnonzero(a_gated)
    deps[dep_offsets[gate_node[sel]] + a_count[sel]] = lay.node_id[g_after[sel]] - 1

    def col(name: str) -> I64:
        out: I64 = getattr(p, name)[g0:g1][node_op].astype(np.int64)
        return out

    r0, r1 = int(p.route_offsets[g0]), int(p.route_offsets[g1])
    route_len = np.zeros(nn, dtype=np.int64)
    route_len[op_node] = np.diff(p.route_offsets[g0 : g1 + 1])
    route_offsets = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(route_len, out=route_offsets[1:])
    # Op order and node order agree, so the op routes keep their order.
    route_values = p.route_nodes[r0:r1].astype(np.int64)

    table = _table(
        lay,
        file_offsets,
        ids,
        cop,
        node_rank,
        dep_offsets,
        deps,
        count=col("count"),
        peer=col("peer"),
        src_buf=col("src_buf"),
        src_index=col("src_index"),
        dst_buf=col("dst_buf"),
        dst_index=col("dst_index"),
        tag=col("tag"),
        channel=col("channel"),
        threadblock=col("threadblock"),
        after=col("after"),
        ctag=lay.tags[g0:g1][node_op],
        route_offsets=route_offsets,
        route_values=route_values,
    )
    return table, file_ranks


def idle_table(lay: ProgramLayout, rank: int) -> NodeTable:
    """The one idle node of a rank without operations."""
    one = np.ones(1, dtype=np.int64)
    z = np.zeros(1, dtype=np.int64)
    m = -one
    return _table(
        lay,
        np.array([0, 1], dtype=np.int64),
        z,
        np.full(1, OP_IDLE, dtype=np.int64),
        np.full(1, rank, dtype=np.int64),
        np.zeros(2, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        count=z,
        peer=m,
        src_buf=m,
        src_index=m,
        dst_buf=m,
        dst_index=m,
        tag=z,
        channel=m,
        threadblock=m,
        after=m,
        ctag=m,
        route_offsets=np.zeros(2, dtype=np.int64),
        route_values=np.zeros(0, dtype=np.int64),
    )


def _table(
    lay: ProgramLayout,
    file_offsets: I64,
    ids: I64,
    cop: I64,
    node_rank: I64,
    dep_offsets: I64,
    deps: I64,
    *,
    count: I64,
    peer: I64,
    src_buf: I64,
    src_index: I64,
    dst_buf: I64,
    dst_index: I64,
    tag: I64,
    channel: I64,
    threadblock: I64,
    after: I64,
    ctag: I64,
    route_offsets: I64,
    route_values: I64,
) -> NodeTable:
    """The table of nodes whose op columns (per node; a reduction node repeats its receive's)
    are given; attributes as the module docstring lists them."""
    nn = len(ids)
    is_flow = cop >= OpKind.FLOW_IN
    is_opnode = (cop <= OpKind.REDUCE) | is_flow
    is_send = cop == OpKind.SEND
    is_recv = (cop == OpKind.RECV) | (cop == OpKind.RECV_REDUCE)
    is_comm = is_send | is_recv
    is_comp = ~is_comm & ~is_flow
    is_reduction = (cop == OpKind.REDUCE) | (cop == OP_REDUCE_AFTER_RECV)
    count = np.where((cop == OP_IDLE) | (cop == OP_GATE), 0, count)
    nbytes = count * lay.chunk_bytes
    durations = np.where(is_reduction, lay.reduce_micros, 0).astype(np.int64)
    attrs = (
        AttrSpec("is_cpu_op", s.BOOL_VAL, np.zeros(nn, dtype=np.int64)),
        AttrSpec("comm_src", s.INT32_VAL, np.where(is_send, node_rank, peer), is_comm),
        AttrSpec("comm_dst", s.INT32_VAL, np.where(is_send, peer, node_rank), is_comm),
        AttrSpec("comm_tag", s.INT32_VAL, ctag, is_comm),
        AttrSpec("comm_size", s.INT64_VAL, nbytes, is_comm | is_flow),
        AttrSpec("msg_chunk_cnt", s.INT32_VAL, count, is_comm),
        AttrSpec(
            "total_chunk_cnt",
            s.INT32_VAL,
            np.full(nn, lay.program.collective.size_chunks, dtype=np.int64),
            is_comm,
        ),
        AttrSpec("num_ops", s.INT64_VAL, np.where(is_reduction, nbytes, 0), is_comp),
        AttrSpec("tensor_size", s.UINT64_VAL, nbytes, is_comp),
        AttrSpec("collc_op", s.INT32_VAL, cop),
        AttrSpec("collc_peer", s.INT32_VAL, peer, is_opnode & ~is_comm & (peer != -1)),
        AttrSpec("collc_src_buf", s.INT32_VAL, src_buf, is_opnode & ~(is_recv & (src_buf == -1))),
        AttrSpec(
            "collc_src_index", s.INT32_VAL, src_index, is_opnode & ~(is_recv & (src_index == -1))
        ),
        AttrSpec("collc_dst_buf", s.INT32_VAL, dst_buf, is_opnode & ~(is_send & (dst_buf == -1))),
        AttrSpec(
            "collc_dst_index", s.INT32_VAL, dst_index, is_opnode & ~(is_send & (dst_index == -1))
        ),
        AttrSpec("collc_count", s.INT32_VAL, count, is_opnode),
        AttrSpec("collc_tag", s.INT32_VAL, tag, is_opnode & (is_comm | is_flow | (tag != 0))),
        AttrSpec("collc_channel", s.INT32_VAL, channel, is_opnode & (channel != -1)),
        AttrSpec("collc_threadblock", s.INT32_VAL, threadblock, is_opnode & (threadblock != -1)),
        AttrSpec("collc_after", s.INT32_VAL, after, is_opnode & (after != -1)),
        AttrSpec("collc_route", s.INT64_LIST, list_offsets=route_offsets, list_values=route_values),
    )
    return NodeTable(
        file_offsets=file_offsets,
        ids=ids,
        types=NODE_TYPES[cop],
        name_codes=cop,
        names=NODE_NAMES,
        dep_offsets=dep_offsets,
        deps=deps,
        durations=durations,
        attrs=attrs,
    )
