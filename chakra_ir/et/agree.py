"""A collc ET file's Chakra-visible fields against collc's own attributes.

collc decodes its files from its ``collc_*`` attributes, but ASTRA-sim and the Chakra tools
execute the standard fields: the node ``type``, ``data_deps``, ``duration_micros`` and the
attributes `VISIBLE_ATTRS` (``comm_src``, ``comm_dst``, ``comm_tag``, ``comm_size``, ...).
If the two disagree, collc would verify one program while the other tools run another (a
send turned into a receive, a tag that pairs it with the wrong receive: a deadlock). So the
decoder lays out what it decoded again with the writer's own layout
(`chakra_ir.et.layout.node_table`) and requires every standard field of the file to be
exactly what collc would write, naming the file, the node and the field otherwise.

`check_rank` does this for one file as it is decoded, with the ``comm_tag`` values the file
holds; `check_program` then compares those tags, and ``total_chunk_cnt``, with what the
whole program gives (tags number the messages of each ordered pair of ranks, so they need
every rank).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import layout
from chakra_ir.et import schema as s
from chakra_ir.et.errors import EtDecodeError, EtEncodeError
from chakra_ir.et.table import NodeTable
from chakra_ir.program import COLUMNS, OpKind, Program

if TYPE_CHECKING:  # the reader is loaded by whoever decodes
    from chakra_ir.et.trace import EtTrace

I64 = npt.NDArray[np.int64]

VISIBLE_ATTRS = (
    "is_cpu_op",
    "comm_src",
    "comm_dst",
    "comm_tag",
    "comm_size",
    "msg_chunk_cnt",
    "total_chunk_cnt",
    "num_ops",
    "tensor_size",
)
"""The attributes other tools read that collc writes (ASTRA-sim's and the chunk counts of
the symbolic-size readers); each must be present exactly where collc writes it, with the
member (type) and value collc writes."""


@dataclass(frozen=True)
class RankTags:
    """What `check_rank` keeps of a file for `check_program`: per message operation its
    local index, its node, the node's byte offset and the file's ``comm_tag``; the
    ``total_chunk_cnt`` values seen, each with the first node holding it (value, node, byte
    offset, collc_op)."""

    file: str
    ops: I64
    nodes: I64
    offsets: I64
    tags: I64
    total_chunks: tuple[tuple[int, int, int, int], ...]


def _node_name(cop: int) -> str:
    return layout.NODE_NAMES[cop] if 0 <= cop < len(layout.NODE_NAMES) else f"collc_op {cop}"


def _type_name(t: int) -> str:
    try:
        return s.NodeType(t).name
    except ValueError:
        return f"NodeType({t})"


def _first(mask: npt.NDArray[np.bool_]) -> int:
    bad = np.flatnonzero(mask)
    return int(bad[0]) if bad.size else -1


def check_rank(
    t: EtTrace,
    rank: int,
    num_ranks: int,
    part: dict[str, Any],
    chunk_bytes: int,
    reduce_micros: int,
    et_format: int,
) -> RankTags:
    """Compare ``t`` (rank ``rank``'s file, whose decoded columns are ``part``) with collc's
    layout of those columns; raise `EtDecodeError` at the first node whose standard fields
    differ. The file's own ``comm_tag`` values stand in for the program's (`check_program`
    compares them)."""
    n = len(part["kind"])
    cop, _ = t.int_attr("collc_op")
    op_nodes = np.flatnonzero((cop <= OpKind.REDUCE) | (cop >= OpKind.FLOW_IN))
    kind = np.asarray(part["kind"], dtype=np.int64)
    msg = kind <= OpKind.RECV_REDUCE
    file_tags, _ = t.int_attr("comm_tag", -1)
    tags = np.where(msg, file_tags[op_nodes], -1).astype(np.int64)
    # A stand-in collective: the layout of one rank needs only its number of ranks
    # (total_chunk_cnt, which needs the real one, is compared by `check_program`).
    stand_in = Collective(CollectiveKind.ALLGATHER, num_ranks)
    rank_offsets = np.zeros(num_ranks + 1, dtype=np.int64)
    rank_offsets[rank + 1 :] = n
    program = Program.from_columns(
        stand_in,
        rank_offsets,
        {c: part[c] for c in COLUMNS},
        part["dep_offsets"],
        part["deps"],
        np.zeros((num_ranks, 3), dtype=np.int64),
        part["route_offsets"],
        part["route_nodes"],
    )
    try:
        lay = layout.ProgramLayout.of(
            program, chunk_bytes, reduce_micros, tags=tags, et_format=et_format
        )
    except EtEncodeError as e:
        raise EtDecodeError(
            f"its collc attributes describe what collc never writes: {e.message}", t.file, 0
        ) from None
    table = layout.node_table(lay, 0, n)[0] if n else layout.idle_table(lay, rank)
    _compare(t, table, cop)
    total = t.attrs.get("total_chunk_cnt")
    seen: dict[int, int] = {}  # each value: the first node holding it
    if total is not None and len(total):
        ok = total.integer_mask()
        for node, value in zip(total.nodes[ok].tolist(), total.ints[ok].tolist(), strict=True):
            seen.setdefault(int(value), int(node))
    nodes = op_nodes[msg]
    totals = tuple((v, n, int(t.offsets[n]), int(cop[n])) for v, n in sorted(seen.items()))
    return RankTags(t.file, np.flatnonzero(msg), nodes, t.offsets[nodes], tags[msg], totals)


def _compare(t: EtTrace, table: NodeTable, cop: I64) -> None:
    nn = table.num_nodes
    if nn != len(t):
        i = min(nn, len(t))
        where = int(t.offsets[i]) if i < len(t) else -1
        raise EtDecodeError(
            f"{len(t)} nodes, but collc's attributes lay out {nn}: another tool would run "
            "other nodes",
            t.file,
            where,
        )
    problems: list[tuple[int, str]] = []

    def note(i: int, text: str) -> None:
        if i >= 0:
            problems.append((i, text))

    i = _first(table.types != t.types)
    if i >= 0:
        note(
            i,
            f"type is {_type_name(int(t.types[i]))}, but collc_op {int(cop[i])} "
            f"({_node_name(int(cop[i]))}) is a {_type_name(int(table.types[i]))}",
        )
    rows_e = np.diff(table.dep_offsets)
    rows_t = np.diff(t.data_dep_offsets)
    bad = rows_e != rows_t
    if not bad.any() and len(table.deps):
        owner = np.repeat(np.arange(nn, dtype=np.int64), rows_e)
        bad = np.zeros(nn, dtype=np.bool_)
        bad[owner[table.deps != t.data_deps]] = True
    i = _first(bad)
    if i >= 0:
        want = table.deps[table.dep_offsets[i] : table.dep_offsets[i + 1]].tolist()
        have = t.data_deps[t.data_dep_offsets[i] : t.data_dep_offsets[i + 1]].tolist()
        note(i, f"data_deps {have}, but collc's attributes give {want}")
    i = _first(table.durations != t.durations)
    if i >= 0:
        note(
            i,
            f"duration_micros {int(t.durations[i])}, but collc writes "
            f"{int(table.durations[i])} for a {_node_name(int(cop[i]))} node",
        )
    for spec in table.attrs:
        if spec.name not in VISIBLE_ATTRS:
            continue
        want_here = spec.present_mask(nn)
        col = t.attrs.get(spec.name)
        if col is None:
            have, here = np.zeros(nn, dtype=np.int64), np.zeros(nn, dtype=np.bool_)
            member = np.zeros(nn, dtype=np.int64)
        else:
            have, here = col.int_values(nn)
            member = np.zeros(nn, dtype=np.int64)
            member[col.nodes] = col.member
        assert spec.values is not None
        differs = (want_here != here) | (
            want_here & ((spec.values != have) | (member != spec.member))
        )
        if spec.name == "total_chunk_cnt":  # its value needs the real collective
            differs = (want_here != here) | (want_here & (member != spec.member))
        i = _first(differs)
        if i < 0:
            continue
        if not here[i]:
            text = f"lacks {spec.name}" if want_here[i] else ""
            if col is not None and col.entry_of(i) >= 0 and want_here[i]:
                text = f"{spec.name} is not an integer"
        elif not want_here[i]:
            text = f"carries {spec.name}, which collc writes only on other nodes"
        elif member[i] != spec.member:
            text = (
                f"{spec.name} is written as field {int(member[i])}, collc writes field "
                f"{spec.member} (a reader of the other type reads 0)"
            )
        else:
            text = (
                f"{spec.name} is {int(have[i])}, but collc's attributes give {int(spec.values[i])}"
            )
        note(i, text)
    if problems:
        i, text = min(problems, key=lambda p: p[0])
        raise EtDecodeError(
            f"node {i} ({_node_name(int(cop[i]))}): {text}; ASTRA-sim and the Chakra tools "
            "read that field, so they would run another program than collc checks",
            t.file,
            int(t.offsets[i]),
        )


def check_program(program: Program, ranks: list[RankTags]) -> None:
    """Every message's ``comm_tag`` as the program numbers it (`layout.comm_tags`) and
    every ``total_chunk_cnt`` the collective's size in chunks; `EtDecodeError` naming the
    file and node otherwise."""
    try:
        want = layout.comm_tags(program)
    except EtEncodeError as e:
        raise EtDecodeError(e.message, ranks[0].file if ranks else "", 0) from None
    size = program.collective.size_chunks
    for r, rt in enumerate(ranks):
        expected = want[int(program.rank_offsets[r]) + rt.ops]
        bad = np.flatnonzero(expected != rt.tags)
        if bad.size:
            j = int(bad[0])
            node = int(rt.nodes[j])
            op = OpKind(int(program.kind[int(program.rank_offsets[r]) + int(rt.ops[j])]))
            raise EtDecodeError(
                f"node {node} ({op.name.lower()}): comm_tag {int(rt.tags[j])}, but the "
                f"message's place among those of its pair of ranks gives {int(expected[j])}; "
                "ASTRA-sim pairs sends and receives by comm_tag, so it would pair this one "
                "with another message",
                rt.file,
                int(rt.offsets[j]),
            )
        other = [x for x in rt.total_chunks if x[0] != size]
        if other:
            value, node, offset, cop = min(other, key=lambda x: x[1])
            raise EtDecodeError(
                f"node {node} ({_node_name(cop)}): total_chunk_cnt {value}, but the "
                f"collective has {size} chunks; readers of symbolic sizes divide by it",
                rt.file,
                offset,
            )
