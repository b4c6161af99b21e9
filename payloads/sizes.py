"""Per-message wire sizes of a Program under a payload, and the work at the endpoints.

`message_sizes` runs the verifier's symbolic execution (`chakra_ir.verify.message_contents`)
to learn which contributions every message carries. A slot holding chunk ``i`` summed over the
ranks of ``mask`` weighs what the union of those ranks' supports in region ``i`` of the tensor
weighs: ``1-(1-rho)^k`` of its elements for a statistical payload (``k`` contributions), the
exact union for real tensors. A message is its slots, each a block encoded in the message's
format: the payload's fixed format, or with ``auto`` the one that makes the message fastest
(`fastest`: its wire time on its route, store-and-forward, and its endpoint work,
`payloads.endpoint`, where a dense message needs no conversion; ties to the smaller); without
a topology, the smallest.
Region ``i`` is elements ``[i E, (i+1) E)`` of the flattened tensor, ``E`` elements per chunk;
when the tensor is a matrix ``M x K`` and ``K`` divides ``E``, a region is a block of whole
rows, else a vector.

A dense payload gives every message ``count x chunk_bytes``, exactly as without a payload;
in-network flows always carry dense data (FRED's switch adders work lane by lane and cannot
merge indices). The endpoint model is in `payloads.endpoint`.

The result, `MessageSizes`, is a table by global operation index that the simulator, the
bounds and `bench` take as an input; the Program itself is unchanged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective, Contents
from chakra_ir.program import OpKind, Program
from payloads.describe import Payload
from payloads.endpoint import endpoint_ns
from payloads.errors import PayloadError
from payloads.formats import FORMATS, BlockStats, fill_in, format_bytes

if TYPE_CHECKING:
    from chakra_ir.verify import MessageTrace
    from topologies.topology import Topology

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
DENSE = FORMATS.index("dense")


@dataclass(frozen=True)
class MessageSizes:
    """Per global operation of a Program: ``op_bytes`` (a Send's or Recv's message bytes, a
    FlowIn's or FlowOut's slots' bytes; 0 for local operations), ``compute_ns`` (a Recv's
    work after its message has arrived: format conversion and merge), ``op_format`` (index
    in `FORMATS` of a message's format, -1 for local operations) and ``op_nnz`` (the non-zero
    values a message carries)."""

    op_bytes: I64
    compute_ns: F64
    op_format: npt.NDArray[np.int8]
    op_nnz: I64
    payload: str
    chunk_bytes: int

    def sent(self, program: Program) -> I64:
        """Bytes each rank sends (Sends and FlowIns)."""
        is_send = (program.kind == OpKind.SEND) | (program.kind == OpKind.FLOW_IN)
        return np.bincount(
            program.op_rank()[is_send], weights=self.op_bytes[is_send], minlength=program.num_ranks
        ).astype(np.int64)

    def sent_nnz(self, program: Program) -> I64:
        """Non-zero values each rank sends."""
        is_send = program.kind == OpKind.SEND
        return np.bincount(
            program.op_rank()[is_send], weights=self.op_nnz[is_send], minlength=program.num_ranks
        ).astype(np.int64)

    def formats_used(self, program: Program) -> dict[str, int]:
        """Messages per format (Sends only)."""
        f = self.op_format[program.kind == OpKind.SEND]
        return {
            FORMATS[i]: int(c)
            for i, c in enumerate(np.bincount(f[f >= 0], minlength=len(FORMATS)))
            if c
        }


def elements_per_chunk(payload: Payload, collective: Collective, chunk_bytes: int) -> int:
    """``E``: a tensor's elements over its regions, else the chunk's bytes over the value's."""
    if payload.tensors is not None:
        regions = collective.input_chunks(0)
        return -(-payload.tensors.elements // regions)
    return max(1, chunk_bytes // payload.value_bytes)


def check_tensors(payload: Payload, collective: Collective) -> None:
    """`PayloadError` unless a tensor payload holds one tensor per rank of ``collective``."""
    t = payload.tensors
    ranks = collective.num_ranks
    if t is not None and len(t.arrays) != ranks:
        raise PayloadError(f"{t.source}: {len(t.arrays)} tensors for {ranks} ranks (one per rank)")


def payload_chunk_bytes(payload: Payload, collective: Collective) -> int | None:
    """The chunk size real tensors imply for ``collective`` (None for other payloads)."""
    if payload.tensors is None:
        return None
    check_tensors(payload, collective)
    return elements_per_chunk(payload, collective, 0) * payload.value_bytes


class _Weigher:
    """Per-slot sizes in every format, cached by slot contents."""

    def __init__(self, payload: Payload, program: Program, chunk_bytes: int) -> None:
        self.p = payload
        self.E = elements_per_chunk(payload, program.collective, chunk_bytes)
        c = program.collective
        self.full = c.group_size
        self.total = payload.tensors.elements if payload.tensors is not None else None
        self.cache: dict[Contents, tuple[I64, int]] = {}
        self.positions: list[I64] = []
        if payload.tensors is not None:
            check_tensors(payload, program.collective)
            t = payload.tensors
            self.positions = [np.flatnonzero(a.ravel()) for a in t.arrays]

    def shape(self, region: int) -> tuple[int, int]:
        n = self.E if self.total is None else max(0, min(self.E, self.total - region * self.E))
        if self.p.shape is not None:
            K = self.p.shape[1]
            if self.E % K == 0 and n % K == 0 and n:
                return n // K, K
        return 1, max(n, 1)

    def stats(self, contents: Contents) -> BlockStats:
        region = contents[0][0]
        rows, cols = self.shape(region)
        k = sum(mask.bit_count() for _, mask in contents)
        complete = self.p.topk and all(mask.bit_count() == self.full for _, mask in contents)
        params = self.p.params
        if self.p.tensors is None:
            density = self.p.density if complete else fill_in(self.p.density, k)
            return BlockStats.expected(rows, cols, density, params)
        lo = [region * self.E for region, _ in contents]
        parts = []
        for (_idx, mask), start in zip(contents, lo, strict=True):
            for r in _bits(mask):
                pos = self.positions[r]
                a, b = np.searchsorted(pos, [start, start + self.E])
                parts.append(pos[a:b] - start)
        union = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
        if complete:
            union = self._top(contents, union)
        return BlockStats.of_positions(rows, cols, union, params)

    def _top(self, contents: Contents, union: I64) -> I64:
        """Ok-Topk's re-selection: the largest sums, as many as one rank holds on average."""
        assert self.p.tensors is not None
        idx, mask = contents[0]
        start = idx * self.E
        total = sum(
            self.p.tensors.arrays[r].ravel()[start + union].astype(np.float64) for r in _bits(mask)
        )
        per_rank = sum(
            int(np.count_nonzero(self.p.tensors.arrays[r].ravel()[start : start + self.E]))
            for r in _bits(mask)
        )
        m = round(per_rank / max(1, mask.bit_count()))
        if m >= union.size:
            return union
        top = np.argpartition(-np.abs(np.asarray(total)), m)[:m]
        return np.sort(union[top])

    def weigh(self, contents: Contents) -> tuple[I64, int]:
        """Bytes of the slot in every format, and its non-zeros."""
        hit = self.cache.get(contents)
        if hit is None:
            s = self.stats(contents)
            sizes = np.array([format_bytes(f, s, self.p.params) for f in FORMATS], dtype=np.int64)
            hit = (sizes, s.nnz)
            self.cache[contents] = hit
        return hit


def _bits(mask: int) -> list[int]:
    out = []
    r = 0
    while mask:
        if mask & 1:
            out.append(r)
        mask >>= 1
        r += 1
    return out


def message_sizes(
    program: Program,
    payload: Payload,
    chunk_bytes: int,
    *,
    converter: str = "sw",
    trace: MessageTrace | None = None,
    topology: Topology | None = None,
) -> MessageSizes:
    """The wire size of every message of ``program`` under ``payload`` with chunks of
    ``chunk_bytes``, and the endpoint work of every receive under ``converter`` (``sw`` or
    ``hw``); see the module docstring. ``trace`` is the program's `MessageTrace` when the
    caller has one (else the program is verified here). ``topology``, the one the program
    runs on, lets ``auto`` weigh each message's wire time on its route (else it picks by
    bytes). Raises `VerifyError` for a wrong program and `PayloadError` for tensors that do
    not fit it."""
    p = program
    n = p.num_ops
    kind = p.kind
    comm = (kind == OpKind.SEND) | (kind == OpKind.RECV) | (kind == OpKind.RECV_REDUCE)
    flows = (kind == OpKind.FLOW_IN) | (kind == OpKind.FLOW_OUT)
    dense_bytes = p.count.astype(np.int64) * int(chunk_bytes)
    op_bytes = np.where(comm | flows, dense_bytes, 0).astype(np.int64)
    op_format = np.where(comm | flows, DENSE, -1).astype(np.int8)
    compute = np.zeros(n, dtype=np.float64)
    if payload.dense:
        nnz = np.where(comm | flows, p.count.astype(np.int64), 0) * max(
            1, chunk_bytes // payload.value_bytes
        )
        return MessageSizes(op_bytes, compute, op_format, nnz, payload.spec, chunk_bytes)
    if converter not in ("sw", "hw"):
        raise PayloadError(f"unknown converter {converter!r} (expected hw or sw)")
    if trace is None:
        from chakra_ir.verify import message_contents

        trace = message_contents(p)
    w = _Weigher(payload, p, chunk_bytes)
    op_nnz = np.zeros(n, dtype=np.int64)
    fixed = -1 if payload.fmt == "auto" else FORMATS.index(payload.fmt)
    match = trace.match
    recvs = np.flatnonzero(match >= 0)
    recv_of = dict(zip(match[recvs].tolist(), recvs.tolist(), strict=True))
    ns_per_byte = _route_ns_per_byte(p, topology) if fixed < 0 and topology is not None else None
    for g in np.flatnonzero(kind == OpKind.SEND).tolist():
        total = np.zeros(len(FORMATS), dtype=np.int64)
        nz = 0
        for contents in trace.carried[g]:
            sizes, k = w.weigh(contents)
            total += sizes
            nz += k
        rv = recv_of[g]
        reduce = bool(kind[rv] == OpKind.RECV_REDUCE)
        held = np.zeros(len(FORMATS), dtype=np.int64)
        if reduce:
            for contents in trace.held[rv]:
                held += w.weigh(contents)[0]
        work = [
            endpoint_ns(payload, f, int(total[i]), int(held[i]), reduce, converter)
            for i, f in enumerate(FORMATS)
        ]
        if fixed >= 0:
            f = fixed
        elif ns_per_byte is None:
            f = int(np.argmin(total))
        else:
            f = fastest(total, work, ns_per_byte[g], reduce)
        for x in (g, rv):
            op_bytes[x] = total[f]
            op_format[x] = f
            op_nnz[x] = nz
        compute[rv] = work[f]
    dense_nnz = p.count.astype(np.int64) * w.E
    op_nnz[flows] = dense_nnz[flows]
    return MessageSizes(op_bytes, compute, op_format, op_nnz, payload.spec, chunk_bytes)


def fastest(nbytes: I64, work_ns: list[float], ns_per_byte: float, reduce: bool) -> int:
    """``auto``'s choice for one message: the format (index in `FORMATS`) of least time, its
    wire time (its bytes serialized along the route, ``ns_per_byte``: the sum over the route's
    links of one over their bandwidth) and its endpoint work ``work_ns`` combined: added up
    for a reducing receive (the merged sum is what moves on next), the larger of the two for
    a plain one (its conversion overlaps the transfers after it on the link). Ties go to the
    smaller, then to the first listed."""
    best = 0
    best_key = (float("inf"), 0)
    for i in range(len(FORMATS)):
        wire = float(nbytes[i]) * ns_per_byte
        key = (wire + work_ns[i] if reduce else max(wire, work_ns[i]), int(nbytes[i]))
        if key < best_key:
            best, best_key = i, key
    return best


def _route_ns_per_byte(program: Program, topology: Topology) -> dict[int, float]:
    """Per Send (global op index): the sum over the links of its route of one over their
    bandwidth (ns per byte). The route is the Send's hint, else the topology's route between
    the two ranks' NPUs; between parallel links the one `Topology.route_links` takes."""
    p = program
    c = p.collective
    rank = p.op_rank()
    out: dict[int, float] = {}
    cache: dict[tuple[int, ...], float] = {}
    off, nodes = p.route_offsets, p.route_nodes
    for g in np.flatnonzero(p.kind == OpKind.SEND).tolist():
        a, b = int(off[g]), int(off[g + 1])
        if b - a >= 2:
            path = tuple(nodes[a:b].tolist())
        else:
            path = topology.route(c.npu(int(rank[g])), c.npu(int(p.peer[g])))
        t = cache.get(path)
        if t is None:
            t = 0.0
            for u, v in itertools.pairwise(path):
                links = topology.links_between(u, v)
                if links:
                    t += 1.0 / max(lk.bandwidth_bytes_per_ns for lk in links)
            cache[path] = t
        out[g] = t
    return out
