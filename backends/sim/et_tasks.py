"""The task graph of node-level ET traces written by any tool (`chakra_ir.et.EtTrace`).

ETs without collc's attributes (converters, hand-written custom collectives) cannot become a
Program, but they can be timed. Per rank (trace ``r`` is rank ``r``), in file order:

- ``COMM_SEND_NODE`` -> SEND to ``comm_dst`` of ``comm_size`` bytes with ``comm_tag``;
  ``COMM_RECV_NODE`` -> RECV from ``comm_src``. ``comm_src`` of a send (``comm_dst`` of a
  receive), when present, must be the rank itself, as ASTRA-sim requires.
- ``COMP_NODE`` -> COMP of ``duration_micros``: ``duration_ns = 1000 x duration_micros``
  under collc's cost model, and the ASTRA-sim model applies its own rule (0 µs -> 1 ns).
- ``INVALID_NODE`` and ``METADATA_NODE`` take no time; memory and collective nodes cannot be
  simulated here (SimError).
- ``data_deps`` and ``ctrl_deps`` both gate issue (ASTRA-sim's feeder_v3).

Messages match on (src, dst, tag, size) in file order. The graph is marked
``semantics_checked=False``: results say that the collective's semantics were not checked, and
why: the ETs carry no collc attributes, or (collc's own ETs copied without their folder's
manifest) they do but nothing says which program and topology they were written for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from backends.sim.errors import SimError
from backends.sim.models import simulate_tasks
from backends.sim.results import SimResult
from backends.sim.tasks import I64, Detail, TaskGraph, TaskKind
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology

if TYPE_CHECKING:  # chakra_ir.et loads protobuf: imported only when traces are simulated
    from chakra_ir.et import EtTrace


def _fail(t: EtTrace, rank: int, i: int, message: str) -> SimError:
    return SimError(f"{t.file}: rank {rank} node {int(t.ids[i])}: {message}")


def _rank_tasks(
    t: EtTrace, rank: int, num_ranks: int
) -> dict[str, npt.NDArray[np.int64 | np.int8]]:
    from chakra_ir.et.schema import NodeType

    n = len(t)
    types = t.types.astype(np.int64)
    kind = np.full(n, TaskKind.COMP, dtype=np.int8)
    detail = np.full(n, Detail.COMP, dtype=np.int8)
    is_send = types == NodeType.COMM_SEND_NODE
    is_recv = types == NodeType.COMM_RECV_NODE
    noop = (types == NodeType.INVALID_NODE) | (types == NodeType.METADATA_NODE)
    other = ~(is_send | is_recv | noop | (types == NodeType.COMP_NODE))
    if other.any():
        i = int(np.flatnonzero(other)[0])
        name = t.node(i).type_name
        raise _fail(t, rank, i, f"{name} cannot be simulated (only SEND, RECV and COMP nodes)")
    kind[is_send] = TaskKind.SEND
    kind[is_recv] = TaskKind.RECV
    detail[is_send] = Detail.SEND
    detail[is_recv] = Detail.RECV
    detail[noop] = Detail.NOOP

    def attr(name: str, needed: np.ndarray) -> I64:
        values, present = t.int_attr(name)
        missing = needed & ~present
        if missing.any():
            raise _fail(t, rank, int(np.flatnonzero(missing)[0]), f"attribute {name} is missing")
        return values

    comm = is_send | is_recv
    size = attr("comm_size", comm)
    tag = attr("comm_tag", comm)
    dst = attr("comm_dst", is_send)
    src = attr("comm_src", is_recv)
    for name, side, own in (("comm_src", is_send, "sender"), ("comm_dst", is_recv, "receiver")):
        values, present = t.int_attr(name)
        bad = side & present & (values != rank)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _fail(t, rank, i, f"{name} is {int(values[i])}, but the {own} is rank {rank}")
    peer = np.where(is_send, dst, np.where(is_recv, src, -1)).astype(np.int64)
    bad = comm & ((peer < 0) | (peer >= num_ranks))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(t, rank, i, f"peer {int(peer[i])} is not a rank of the {num_ranks} traces")
    bad = comm & (size <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(t, rank, i, f"comm_size must be positive, got {int(size[i])}")

    # data and ctrl deps, merged per node (data first), as file positions.
    d_cnt = np.diff(t.data_dep_offsets)
    c_cnt = np.diff(t.ctrl_dep_offsets)
    owner = np.concatenate(
        [
            np.repeat(np.arange(n, dtype=np.int64), d_cnt),
            np.repeat(np.arange(n, dtype=np.int64), c_cnt),
        ]
    )
    ids = np.concatenate([t.data_deps, t.ctrl_deps]).astype(np.int64)
    order = np.argsort(owner, kind="stable")
    deps = t.index_of(ids[order]) if len(ids) else np.zeros(0, dtype=np.int64)
    counts = d_cnt + c_cnt
    durations = t.durations.astype(np.int64)
    durations[kind != TaskKind.COMP] = 0
    durations[noop] = 0
    return {
        "kind": kind,
        "detail": detail,
        "peer": peer,
        "nbytes": np.where(comm, size, 0).astype(np.int64),
        "tag": np.where(comm, tag, 0).astype(np.int64),
        "duration_us": durations,
        "dep_counts": counts.astype(np.int64),
        "deps": deps.astype(np.int64),
        "origin": t.ids.astype(np.int64),
    }


def tasks_from_et(traces: Sequence[EtTrace], npus: Sequence[int] | None = None) -> TaskGraph:
    """The task graph of per-rank traces (index = rank); ``npus[r]`` places rank ``r``
    (identity by default). Raises SimError for nodes that cannot be simulated."""
    R = len(traces)
    if R == 0:
        raise SimError("no ET traces to simulate")
    placement = tuple(range(R)) if npus is None else tuple(int(x) for x in npus)
    if len(placement) != R:
        raise SimError(f"{len(placement)} NPUs given for {R} ranks")
    parts = [_rank_tasks(t, r, R) for r, t in enumerate(traces)]
    counts = [len(p["kind"]) for p in parts]
    rank_offsets = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(counts, out=rank_offsets[1:])
    dep_counts = np.concatenate([p["dep_counts"] for p in parts])
    dep_offsets = np.zeros(len(dep_counts) + 1, dtype=np.int64)
    np.cumsum(dep_counts, out=dep_offsets[1:])
    deps = np.concatenate([p["deps"] + rank_offsets[r] for r, p in enumerate(parts)]).astype(
        np.int64
    )
    duration_us = np.concatenate([p["duration_us"] for p in parts])
    n = int(rank_offsets[-1])
    return TaskGraph(
        npus=placement,
        rank_offsets=rank_offsets,
        kind=np.concatenate([p["kind"] for p in parts]).astype(np.int8),
        detail=np.concatenate([p["detail"] for p in parts]).astype(np.int8),
        peer=np.concatenate([p["peer"] for p in parts]),
        nbytes=np.concatenate([p["nbytes"] for p in parts]),
        tag=np.concatenate([p["tag"] for p in parts]),
        duration_ns=duration_us.astype(np.float64) * 1000.0,
        duration_us=duration_us,
        dep_offsets=dep_offsets,
        deps=deps,
        route_offsets=np.zeros(n + 1, dtype=np.int64),
        route_nodes=np.zeros(0, dtype=np.int64),
        origin=np.concatenate([p["origin"] for p in parts]),
        source="et",
        semantics_checked=False,
        notes=_why_unchecked(traces),
    )


def _why_unchecked(traces: Sequence[EtTrace]) -> tuple[str, ...]:
    mine = sum("collc_et_format" in t.metadata for t in traces)
    if not mine:
        return ()
    return (
        f"{mine} of the {len(traces)} ETs carry collc attributes, but without their folder's "
        "manifest (manifest.json) they were timed as node-level ETs: timing only, "
        "semantics not checked",
    )


def simulate_et(
    traces: Sequence[EtTrace],
    topology: Topology,
    *,
    model: str = "congestion",
    cost: CostModel = DEFAULT_COST_MODEL,
    packet_bytes: int | None = None,
    keep_timeline: bool = False,
    npus: Sequence[int] | None = None,
) -> SimResult:
    """Time per-rank ET traces written by any tool on ``topology``; see `simulate`.

    The result has no bandwidth figures (the collective and its size are unknown) and notes
    that the semantics were not checked.
    """
    graph = tasks_from_et(traces, npus)
    return simulate_tasks(
        graph,
        topology,
        model=model,
        cost=cost,
        packet_bytes=packet_bytes,
        keep_timeline=keep_timeline,
    )
