"""Programs of process groups: one Program for every group's collective, and back.

A collective split into groups (`Collective.groups`) is one Program over the ranks of every
group. Groups exchange nothing, so such a program is exactly the union of one program per
group, each a collective of its own over the group-local ranks (`Collective.group_collective`).
`merge_groups` builds the union from the per-group programs (a producer that synthesizes or
builds each group alone); `split_groups` takes it apart again (for consumers that run groups as
separate instances).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective
from chakra_ir.program import COLUMNS, OpKind, Program
from topologies.errors import CollcError

I64 = npt.NDArray[np.int64]


def merge_groups(collective: Collective, programs: Sequence[Program], name: str = "") -> Program:
    """The Program of ``collective`` (split into groups) whose group ``g`` runs ``programs[g]``.

    ``programs[g]`` must be a program of ``collective.group_collective(g)`` (same kind, chunks,
    in-place flag and NPUs); its operations, dependencies and hints are kept as they are, its
    peers renamed to the ranks of the group and its in-network flows renumbered after the
    flows of the groups before it (flow ids are program-wide). Raises CollcError when a program does not fit its
    group.
    """
    c = collective
    if not c.groups:
        raise CollcError("merge_groups needs a collective split into groups")
    if len(programs) != len(c.groups):
        raise CollcError(f"{len(programs)} programs for {len(c.groups)} groups")
    for g, p in enumerate(programs):
        want = c.group_collective(g)
        got = p.collective
        if (got.kind, got.num_ranks, got.chunks_per_rank, got.inplace) != (
            want.kind,
            want.num_ranks,
            want.chunks_per_rank,
            want.inplace,
        ) or [got.npu(r) for r in range(got.num_ranks)] != [
            want.npu(r) for r in range(want.num_ranks)
        ]:
            raise CollcError(
                f"the program of group {g} runs {got.describe()}, not the group's "
                f"{want.describe()} on NPUs {[want.npu(r) for r in range(want.num_ranks)]}"
            )
    R = c.num_ranks
    # For every rank: its group's program and its rank there.
    src_prog = np.empty(R, dtype=np.int64)
    src_rank = np.empty(R, dtype=np.int64)
    for g, members in enumerate(c.groups):
        src_prog[list(members)] = g
        src_rank[list(members)] = np.arange(len(members))
    flow_base = np.zeros(len(programs), dtype=np.int64)
    for g, p in enumerate(programs[:-1]):
        flows = p.tag[p.kind >= OpKind.FLOW_IN]
        flow_base[g + 1] = flow_base[g] + (int(flows.max()) + 1 if flows.size else 0)
    parts: dict[str, list[npt.NDArray[np.generic]]] = {k: [] for k in COLUMNS}
    dep_parts: list[I64] = []
    dep_counts: list[I64] = []
    route_parts: list[I64] = []
    route_counts: list[I64] = []
    rank_len = np.zeros(R, dtype=np.int64)
    sizes = np.zeros((R, 3), dtype=np.int64)
    for r in range(R):
        p = programs[int(src_prog[r])]
        lr = int(src_rank[r])
        a, b = int(p.rank_offsets[lr]), int(p.rank_offsets[lr + 1])
        rank_len[r] = b - a
        sizes[r] = p.buffer_sizes[lr]
        ranks_of = np.asarray(c.groups[int(src_prog[r])], dtype=np.int64)
        for k in COLUMNS:
            col = getattr(p, k)[a:b]
            if k == "peer":
                col = np.where(col >= 0, ranks_of[np.maximum(col, 0)], -1)
            elif k == "tag" and flow_base[src_prog[r]]:
                col = np.where(p.kind[a:b] >= OpKind.FLOW_IN, col + flow_base[src_prog[r]], col)
            parts[k].append(col)
        da, db = int(p.dep_offsets[a]), int(p.dep_offsets[b])
        dep_parts.append(p.deps[da:db].astype(np.int64))
        dep_counts.append(np.diff(p.dep_offsets[a : b + 1]))
        ra, rb = int(p.route_offsets[a]), int(p.route_offsets[b])
        route_parts.append(p.route_nodes[ra:rb].astype(np.int64))
        route_counts.append(np.diff(p.route_offsets[a : b + 1]))
    rank_offsets = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(rank_len, out=rank_offsets[1:])
    n = int(rank_offsets[-1])

    def offsets(counts: list[I64]) -> I64:
        out = np.zeros(n + 1, dtype=np.int64)
        if counts:
            np.cumsum(np.concatenate(counts), out=out[1:])
        return out

    def cat(xs: Sequence[npt.NDArray[np.generic]]) -> npt.NDArray[np.generic]:
        return np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64)

    return Program.from_columns(
        c,
        rank_offsets,
        {k: cat(v) for k, v in parts.items()},
        offsets(dep_counts),
        cat(dep_parts),
        sizes,
        offsets(route_counts),
        cat(route_parts),
        name=name or (programs[0].name if programs else ""),
    )


def split_groups(program: Program) -> list[Program]:
    """Per group, the program it runs as a collective of its own (`merge_groups` reversed).

    Raises CollcError when a message crosses groups (the program is then no union of group
    programs)."""
    c = program.collective
    if not c.groups:
        return [program]
    out = []
    for g, members in enumerate(c.groups):
        sub_c = c.group_collective(g)
        rank_len = np.array([program.rank_len(r) for r in members], dtype=np.int64)
        rank_offsets = np.zeros(len(members) + 1, dtype=np.int64)
        np.cumsum(rank_len, out=rank_offsets[1:])
        sel = np.concatenate(
            [
                np.arange(int(program.rank_offsets[r]), int(program.rank_offsets[r + 1]))
                for r in members
            ]
        ).astype(np.int64)
        cols: dict[str, npt.NDArray[np.generic]] = {}
        for k in COLUMNS:
            cols[k] = getattr(program, k)[sel]
        peer = cols["peer"].astype(np.int64)
        lut = np.full(c.num_ranks, -1, dtype=np.int64)
        lut[list(members)] = np.arange(len(members))
        mapped = np.where(peer >= 0, lut[np.maximum(peer, 0)], -1)
        crossing = np.flatnonzero((peer >= 0) & (mapped < 0))
        if crossing.size:
            gop = int(sel[int(crossing[0])])
            raise CollcError(
                f"{program.describe_op(gop)} talks to rank {int(peer[int(crossing[0])])} of "
                f"another group: groups must not exchange messages"
            )
        cols["peer"] = mapped
        dep_counts = np.diff(program.dep_offsets)[sel]
        dep_off = np.zeros(len(sel) + 1, dtype=np.int64)
        np.cumsum(dep_counts, out=dep_off[1:])
        spans = [(int(program.rank_offsets[r]), int(program.rank_offsets[r + 1])) for r in members]
        deps = np.concatenate(
            [
                program.deps[int(program.dep_offsets[x]) : int(program.dep_offsets[y])]
                for x, y in spans
            ]
        )
        route_counts = np.diff(program.route_offsets)[sel]
        route_off = np.zeros(len(sel) + 1, dtype=np.int64)
        np.cumsum(route_counts, out=route_off[1:])
        nodes = np.concatenate(
            [
                program.route_nodes[int(program.route_offsets[x]) : int(program.route_offsets[y])]
                for x, y in spans
            ]
        )
        out.append(
            Program.from_columns(
                sub_c,
                rank_offsets,
                cols,
                dep_off,
                deps,
                program.buffer_sizes[list(members)],
                route_off,
                nodes,
                name=program.name,
            )
        )
    return out
