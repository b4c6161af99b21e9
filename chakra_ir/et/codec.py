"""The Program codec: a Program to per-rank Chakra ET files and back.

`encode_program`/`write_et_files` write the layout of `chakra_ir.et.layout` with the fast
serializer, a batch of ranks at a time (memory stays bounded by the batch, not the program).
`decode_program` reads collc's ETs back so that ``decode_program(encode_program(p, b)) == p``;
ETs without collc's attributes load only at the node level (`chakra_ir.et.reader`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective, CollectiveKind, collective_from_dict
from chakra_ir.et import agree, layout
from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.fastwrite import serialize_nodes
from chakra_ir.et.framing import RankFileWriter
from chakra_ir.et.layout import ProgramLayout
from chakra_ir.et.wire import I64, expand_ranges
from chakra_ir.program import COLUMNS, OpKind, Program
from topologies.errors import CollcError

# Start-up (issue 12): the reader (and protobuf behind it) only for decoding.
if TYPE_CHECKING:
    from chakra_ir.et.trace import AttrColumn, EtTrace

BATCH_OPS = 1 << 16
"""Operations serialized per batch: small enough for the batch's temporaries to stay in
memory malloc reuses (fresh pages cost more than the arithmetic)."""


def iter_rank_files(
    program: Program, chunk_bytes: int, *, reduce_micros: int = 0, batch_ops: int = BATCH_OPS
) -> Iterator[tuple[int, bytes | memoryview]]:
    """Yield ``(rank, chunk)`` pieces of every rank's file, ranks in ascending order: a rank's
    file content is the concatenation of its chunks, the first being its GlobalMetadata.
    Serializes ``batch_ops`` operations at a time (batches may cut ranks). Raises
    EtEncodeError for a program that cannot be written (`layout.check_encodable`).
    """
    lay = ProgramLayout.of(program, chunk_bytes, reduce_micros)
    started = -1

    def start_ranks(upto: int) -> Iterator[tuple[int, bytes | memoryview]]:
        """Start every rank after the last started one up to ``upto`` (its metadata); the
        ranks before ``upto`` have no operations and get a lone idle node."""
        nonlocal started
        for q in range(started + 1, min(upto, program.num_ranks - 1) + 1):
            yield q, layout.metadata_message(program, q, chunk_bytes, reduce_micros, lay.coll_json)
            if q < upto:
                data, _ = serialize_nodes(layout.idle_table(lay, q))
                yield q, data.tobytes()
        started = max(started, upto)

    n = program.num_ops
    for g0 in range(0, n, batch_ops):
        g1 = min(n, g0 + batch_ops)
        table, ranks = layout.node_table(lay, g0, g1)
        data, bounds = serialize_nodes(table)
        view = memoryview(data.data)
        for i, rank in enumerate(ranks.tolist()):
            yield from start_ranks(rank)
            yield rank, view[int(bounds[i]) : int(bounds[i + 1])]
    yield from start_ranks(program.num_ranks)


def encode_program(program: Program, chunk_bytes: int, *, reduce_micros: int = 0) -> list[bytes]:
    """Each rank's ET file content (index = rank), messages of ``count x chunk_bytes`` bytes
    and reductions of ``reduce_micros`` µs. The whole output is held in memory: prefer
    `write_et_files` for large programs. Raises EtEncodeError (a CollcError) for a program
    that cannot be written (message of 0 slots, dependency outside its rank, ...)."""
    parts: list[list[bytes | memoryview]] = [[] for _ in range(program.num_ranks)]
    for rank, chunk in iter_rank_files(program, chunk_bytes, reduce_micros=reduce_micros):
        parts[rank].append(chunk)
    return [b"".join(p) for p in parts]


def write_et_files(
    program: Program,
    out_dir: str | os.PathLike[str],
    prefix: str,
    chunk_bytes: int,
    *,
    reduce_micros: int = 0,
) -> list[Path]:
    """Write ``<out_dir>/<prefix>.<rank>.et`` for every rank (each through a temporary file
    renamed into place) and return the paths by rank. Creates ``out_dir``. Memory is bounded
    by a batch of ranks. Raises EtEncodeError as `encode_program` does."""
    pieces = iter_rank_files(program, chunk_bytes, reduce_micros=reduce_micros)
    return write_rank_pieces(out_dir, prefix, program.num_ranks, pieces)


def write_rank_pieces(
    out_dir: str | os.PathLike[str],
    prefix: str,
    num_ranks: int,
    pieces: Iterable[tuple[int, bytes | memoryview]],
) -> list[Path]:
    """Write ``<out_dir>/<prefix>.<rank>.et`` for ranks ``0..num_ranks-1`` from ``(rank,
    bytes)`` pieces, appended in the order given (each file under a temporary name, renamed
    when all are written); the paths by rank. The one place ET files reach the disk."""
    if not prefix or "/" in prefix or os.sep in prefix:
        raise CollcError(f"ET prefix must be a plain file name stem, got {prefix!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{prefix}.{rank}.et" for rank in range(num_ranks)]
    with RankFileWriter(paths) as w:
        for rank, piece in pieces:
            w.write(rank, piece)
    return paths


def decode_program(sources: Sequence[bytes | str | os.PathLike[str]]) -> Program:
    """The Program a set of collc ET files encodes: ``sources`` are the per-rank file contents
    or paths, in any order (each file names its rank). Files are read one at a time, so
    memory holds the Program and one file's trace.

    Raises EtDecodeError naming the file (and byte offset) when a file does not read, lacks
    collc's attributes (an ET of another tool: its semantics cannot be checked; load it with
    `chakra_ir.et.read_et_folder` for timing instead), or is inconsistent with the others.
    """
    from chakra_ir.et.reader import iter_et_sources

    return program_from_traces(iter_et_sources(sources))


@dataclass(frozen=True)
class DecodedSet:
    """A decoded ET set: the Program and the sizes the files themselves state."""

    program: Program
    chunk_bytes: int
    """``collc_chunk_bytes``, equal in every file; every message's ``comm_size`` is its slot
    count times this (checked while decoding)."""
    reduce_micros: int
    """``collc_reduce_micros`` of the first file."""


def decode_rank_files(paths: Sequence[str | os.PathLike[str]]) -> DecodedSet:
    """Decode the per-rank files of an output folder, ``paths[r]`` being rank ``r``'s file.

    Like `decode_program`, and besides: each file must hold the rank its position (its name)
    gives it, so files swapped or copied over each other on disk are refused, naming the file.
    """
    from chakra_ir.et.reader import iter_et_sources

    return _decode(iter_et_sources(paths), positional=True)


def _meta_int(t: EtTrace, name: str) -> int:
    v = t.metadata.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise EtDecodeError(f"GlobalMetadata lacks the integer attribute {name}", t.file, 0)
    return v


def _meta_str(t: EtTrace, name: str) -> str:
    v = t.metadata.get(name)
    if not isinstance(v, str):
        raise EtDecodeError(f"GlobalMetadata lacks the string attribute {name}", t.file, 0)
    return v


def _check_collc(t: EtTrace) -> None:
    if "collc_et_format" not in t.metadata:
        raise EtDecodeError(
            "the ET has no collc attributes (written by another tool?), so its semantics "
            "cannot be checked; it can still be loaded at the node level for timing",
            t.file,
            0,
        )
    fmt = _meta_int(t, "collc_et_format")
    if fmt not in layout.READABLE_FORMATS:
        known = ", ".join(map(str, layout.READABLE_FORMATS))
        raise EtDecodeError(
            f"collc ET format {fmt} is not supported (this collc reads formats {known})",
            t.file,
            0,
        )


def program_from_traces(traces: Iterable[EtTrace]) -> Program:
    """The Program of collc ET traces (one per rank, any order); see `decode_program`.
    Each trace is converted as it arrives, so an iterator keeps one trace in memory."""
    return _decode(traces, positional=False).program


def _decode(traces: Iterable[EtTrace], *, positional: bool) -> DecodedSet:
    """`program_from_traces`; with ``positional`` the i-th trace must be rank i."""
    first: EtTrace | None = None
    head: tuple[int, str, str, int] = (0, "", "", 0)
    files: dict[int, str] = {}
    parts: dict[int, dict[str, npt.NDArray[np.integer[Any]]]] = {}
    sizes: dict[int, list[int]] = {}
    custom: dict[int, tuple[object, object]] = {}
    tags: dict[int, agree.RankTags] = {}
    for position, t in enumerate(traces):
        _check_collc(t)
        mine = (
            _meta_int(t, "collc_num_ranks"),
            _meta_str(t, "collc_collective"),
            _meta_str(t, "collc_program"),
            _meta_int(t, "collc_chunk_bytes"),
        )
        if first is None:
            first, head = t, mine
        else:
            for what, a, b in zip(
                ("number of ranks", "collective", "program name", "chunk size"),
                mine,
                head,
                strict=True,
            ):
                if a != b:
                    raise EtDecodeError(f"its {what} differs from that of {first.file}", t.file, 0)
        num_ranks = head[0]
        rank = _meta_int(t, "collc_rank")
        if not 0 <= rank < num_ranks:
            raise EtDecodeError(f"rank {rank} is outside 0..{num_ranks - 1}", t.file, 0)
        if positional and rank != position:
            raise EtDecodeError(
                f"the file holds rank {rank}, but its name makes it rank {position} "
                "(rank files renamed or swapped?)",
                t.file,
                0,
            )
        if rank in files:
            raise EtDecodeError(f"rank {rank} also comes from {files[rank]}", t.file, 0)
        bs = t.metadata.get("collc_buffer_sizes")
        if not (isinstance(bs, list) and len(bs) == 3 and all(isinstance(x, int) for x in bs)):
            raise EtDecodeError("GlobalMetadata lacks collc_buffer_sizes (3 integers)", t.file, 0)
        files[rank] = t.file
        sizes[rank] = bs
        if "collc_custom_input" in t.metadata or "collc_custom_output" in t.metadata:
            try:
                custom[rank] = (
                    json.loads(_meta_str(t, "collc_custom_input")),
                    json.loads(_meta_str(t, "collc_custom_output")),
                )
            except ValueError as e:
                raise EtDecodeError(
                    f"collc_custom_input/output is not JSON: {e}", t.file, 0
                ) from None
        parts[rank] = _rank_columns(t, head[3])
        file_micros = t.metadata.get("collc_reduce_micros", 0)
        tags[rank] = agree.check_rank(
            t,
            rank,
            num_ranks,
            parts[rank],
            head[3],
            file_micros if isinstance(file_micros, int) else 0,
            _meta_int(t, "collc_et_format"),
        )
    if first is None:
        raise CollcError("no ET files to decode")
    num_ranks, coll_text, name, chunk_bytes = head
    reduce_micros = first.metadata.get("collc_reduce_micros", 0)
    if len(files) != num_ranks:
        missing = min(set(range(num_ranks)) - set(files))
        raise EtDecodeError(
            f"the ET set has {len(files)} of {num_ranks} ranks (rank {missing} is missing)",
            first.file,
            0,
        )
    try:
        raw = json.loads(coll_text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        if raw.get("kind") == CollectiveKind.CUSTOM.value:
            if len(custom) != num_ranks:
                raise ValueError(
                    "a custom collective needs collc_custom_input/output in every file"
                )
            raw["custom_input"] = [custom[r][0] for r in range(num_ranks)]
            raw["custom_output"] = [custom[r][1] for r in range(num_ranks)]
        collective: Collective = collective_from_dict(raw)
    except (ValueError, CollcError) as e:
        raise EtDecodeError(
            f"collc_collective does not describe a collective: {e}", first.file, 0
        ) from None

    ordered = [parts.pop(r) for r in range(num_ranks)]
    rank_offsets = np.zeros(num_ranks + 1, dtype=np.int64)
    np.cumsum([len(c["kind"]) for c in ordered], out=rank_offsets[1:])
    columns = {c: np.concatenate([part[c] for part in ordered]) for c in COLUMNS}
    dep_offsets = _join_offsets([part["dep_offsets"] for part in ordered])
    route_offsets = _join_offsets([part["route_offsets"] for part in ordered])
    program = Program.from_columns(
        collective,
        rank_offsets,
        dict(columns),
        dep_offsets,
        np.concatenate([part["deps"] for part in ordered]),
        np.array([sizes[r] for r in range(num_ranks)], dtype=np.int64),
        route_offsets,
        np.concatenate([part["route_nodes"] for part in ordered]),
        name=name,
    )
    agree.check_program(program, [tags[r] for r in range(num_ranks)])
    micros = reduce_micros if isinstance(reduce_micros, int) else 0
    return DecodedSet(program, chunk_bytes, micros)


def _join_offsets(offsets: list[npt.NDArray[np.integer[Any]]]) -> I64:
    """Concatenate CSR offset arrays of consecutive row blocks."""
    counts = np.concatenate([np.diff(o) for o in offsets])
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _check_reduction_nodes(t: EtTrace, rr: I64, c5: I64) -> None:
    """Each reducing receive ``rr`` is followed by its reduction node (``c5``), which depends
    on it alone."""
    dep_count = np.diff(t.data_dep_offsets)
    if not np.array_equal(rr + 1, c5) or (
        c5.size and not ((dep_count[c5] == 1) & (t.data_deps[t.data_dep_offsets[c5]] == rr)).all()
    ):
        bad = int(c5[0]) if c5.size else int(rr[0])
        for a, b in zip(rr.tolist(), c5.tolist(), strict=False):
            if a + 1 != b:
                bad = a
                break
        raise EtDecodeError(
            f"node {bad}: a reducing receive must be followed by its reduction node, which depends on it alone",
            t.file,
            int(t.offsets[bad]),
        )


def _rank_columns(t: EtTrace, chunk_bytes: int) -> dict[str, npt.NDArray[np.integer[Any]]]:
    """One rank's Program columns from its trace (collc layout, see `chakra_ir.et.layout`);
    every message's ``comm_size`` must be its slot count times ``chunk_bytes``."""
    n = len(t)
    if chunk_bytes < 1:
        raise EtDecodeError(f"collc_chunk_bytes must be at least 1, got {chunk_bytes}", t.file, 0)
    if not np.array_equal(t.ids, np.arange(n, dtype=np.int64)):
        bad = int(np.flatnonzero(t.ids != np.arange(n))[0])
        raise EtDecodeError(
            f"node {bad} has id {int(t.ids[bad])}; collc ET nodes are numbered 0.. in file order",
            t.file,
            int(t.offsets[bad]),
        )
    if len(t.ctrl_deps):
        owner = int(np.searchsorted(t.ctrl_dep_offsets, 0, side="right") - 1)
        raise EtDecodeError("collc ETs carry no ctrl_deps", t.file, int(t.offsets[max(owner, 0)]))

    cop, has_op = t.int_attr("collc_op")
    if not has_op.all():
        bad = int(np.flatnonzero(~has_op)[0])
        raise EtDecodeError(f"node {bad} lacks the collc_op attribute", t.file, int(t.offsets[bad]))
    bad_op = np.flatnonzero((cop < 0) | (cop > OpKind.FLOW_OUT))
    if bad_op.size:
        b = int(bad_op[0])
        raise EtDecodeError(
            f"node {b} has unknown collc_op {int(cop[b])}", t.file, int(t.offsets[b])
        )
    is_op = (cop <= OpKind.REDUCE) | (cop >= OpKind.FLOW_IN)
    is_comp5 = cop == layout.OP_REDUCE_AFTER_RECV
    idle = np.flatnonzero(cop == layout.OP_IDLE)
    if idle.size and n != 1:
        b = int(idle[0])
        raise EtDecodeError(
            "an idle node must be the only node of its file", t.file, int(t.offsets[b])
        )
    # Every reducing receive is followed by its reduction node, which depends on it alone;
    # unless reductions take 0 µs (format 2 on), which leaves them without nodes.
    rr = np.flatnonzero(cop == OpKind.RECV_REDUCE)
    c5 = np.flatnonzero(is_comp5)
    micros = t.metadata.get("collc_reduce_micros", 0)
    if _meta_int(t, "collc_et_format") == 1 or (isinstance(micros, int) and micros > 0):
        _check_reduction_nodes(t, rr, c5)
    elif c5.size:
        b = int(c5[0])
        raise EtDecodeError(
            f"node {b}: a reduction node, but this file's reductions take 0 µs and have none "
            "(collc_reduce_micros 0)",
            t.file,
            int(t.offsets[b]),
        )

    # Every gate is followed by the send it gates, which carries collc_after and depends on it.
    gates = np.flatnonzero(cop == layout.OP_GATE)
    if gates.size:
        nxt = gates + 1
        _, has_after = t.int_attr("collc_after")
        ok = nxt < n
        ok[ok] &= (cop[nxt[ok]] == OpKind.SEND) & has_after[nxt[ok]]
        if ok.all():
            ends = t.data_dep_offsets[nxt + 1]
            last = t.data_deps[np.maximum(ends - 1, 0)]
            ok &= (ends > t.data_dep_offsets[nxt]) & (last == gates)
        if not ok.all():
            b = int(gates[np.flatnonzero(~ok)[0]])
            raise EtDecodeError(
                f"node {b}: a gate must be followed by its send, which carries collc_after and "
                "depends on it last",
                t.file,
                int(t.offsets[b]),
            )
    is_gate = cop == layout.OP_GATE
    op_nodes = np.flatnonzero(is_op)
    node_to_op = np.cumsum(is_op) - 1  # a reduction node maps to its receive
    kind = cop[op_nodes]
    send = kind == OpKind.SEND
    recv = (kind == OpKind.RECV) | (kind == OpKind.RECV_REDUCE)
    flow_in, flow_out = kind == OpKind.FLOW_IN, kind == OpKind.FLOW_OUT

    def attr(name: str, default: int) -> I64:
        values, _ = t.int_attr(name, default)
        out: I64 = values[op_nodes]
        return out

    count, has_count = t.int_attr("collc_count")
    if not has_count[op_nodes].all():
        bad = int(op_nodes[~has_count[op_nodes]][0])
        raise EtDecodeError(
            f"node {bad} lacks the collc_count attribute", t.file, int(t.offsets[bad])
        )
    is_msg = send | recv | flow_in | flow_out
    comm_size = attr("comm_size", -1)
    want = count[op_nodes].astype(np.float64) * float(chunk_bytes)
    wrong = np.flatnonzero(is_msg & (comm_size.astype(np.float64) != want))
    if wrong.size:
        b = int(op_nodes[wrong[0]])
        raise EtDecodeError(
            f"node {b}: comm_size {int(comm_size[wrong[0]])} is not its {int(count[b])} slots "
            f"x collc_chunk_bytes {chunk_bytes}",
            t.file,
            int(t.offsets[b]),
        )
    comm_src, comm_dst = attr("comm_src", -1), attr("comm_dst", -1)
    peer = np.where(send, comm_dst, np.where(recv, comm_src, attr("collc_peer", -1)))
    tag = attr("collc_tag", 0)

    d_rows = np.diff(t.data_dep_offsets)[op_nodes]
    d_idx = np.repeat(t.data_dep_offsets[op_nodes], d_rows) + (
        np.arange(int(d_rows.sum()), dtype=np.int64) - np.repeat(np.cumsum(d_rows) - d_rows, d_rows)
    )
    targets = t.data_deps[d_idx] if d_idx.size else np.zeros(0, dtype=np.int64)
    if gates.size:  # a send's dependency on its gate is the after hint, not an operation
        keep = ~is_gate[targets]
        dep_owner = np.repeat(np.arange(len(op_nodes), dtype=np.int64), d_rows)
        d_rows = np.bincount(dep_owner[keep], minlength=len(op_nodes)).astype(np.int64)
        targets = targets[keep]
    deps = node_to_op[targets] if targets.size else np.zeros(0, dtype=np.int64)
    dep_offsets = np.zeros(len(op_nodes) + 1, dtype=np.int64)
    np.cumsum(d_rows, out=dep_offsets[1:])

    route_nodes, route_offsets = _list_rows(t.attrs.get("collc_route"), op_nodes, t)
    columns = {
        "kind": kind,
        "peer": peer,
        "src_buf": attr("collc_src_buf", -1),
        "src_index": attr("collc_src_index", -1),
        "dst_buf": attr("collc_dst_buf", -1),
        "dst_index": attr("collc_dst_index", -1),
        "count": count[op_nodes],
        "tag": tag,
        "channel": attr("collc_channel", -1),
        "threadblock": attr("collc_threadblock", -1),
        "after": attr("collc_after", -1),
    }
    # A buffer an operation uses must be input, output or scratch (codes 0..2): anything else
    # is no Program at all, not even a wrong one (it could not be printed or verified).
    for field, used in (
        ("collc_src_buf", ~recv & ~flow_out),
        ("collc_dst_buf", ~send & ~flow_in),
    ):
        code = columns[field[6:]]
        # A field the operation does not use may be absent (-1) or name a buffer, no more:
        # every reader of a Program may print or map it.
        nobuf = np.flatnonzero((used & ((code < 0) | (code > 2))) | (code < -1) | (code > 2))
        if nobuf.size:
            b = int(op_nodes[nobuf[0]])
            raise EtDecodeError(
                f"node {b}: {field} {int(code[nobuf[0]])} names no buffer (0 input, 1 output, "
                "2 scratch)",
                t.file,
                int(t.offsets[b]),
            )
    out: dict[str, npt.NDArray[np.integer[Any]]] = {
        name: _narrow(t, name, values, op_nodes) for name, values in columns.items()
    }
    out["dep_offsets"] = dep_offsets
    out["deps"] = deps.astype(np.int32)
    out["route_offsets"] = route_offsets
    route_ok = (route_nodes >= -(1 << 31)) & (route_nodes < 1 << 31)
    if not route_ok.all():
        raise EtDecodeError("a collc_route node is outside int32", t.file, 0)
    out["route_nodes"] = route_nodes.astype(np.int32)
    return out


_NARROW = {"kind": np.int8, "src_buf": np.int8, "dst_buf": np.int8}
_SOURCE = {
    "kind": "collc_op",
    "peer": "the peer (comm_src/comm_dst/collc_peer)",
    "tag": "collc_tag",
}


def _narrow(t: EtTrace, name: str, values: I64, nodes: I64) -> npt.NDArray[np.integer[Any]]:
    """``values`` as the Program column's dtype (int8 or int32); EtDecodeError naming the
    first node whose value does not fit."""
    dtype = _NARROW.get(name, np.int32)
    info = np.iinfo(dtype)
    bad = np.flatnonzero((values < info.min) | (values > info.max))
    if bad.size:
        node = int(nodes[bad[0]])
        raise EtDecodeError(
            f"node {node}: {_SOURCE.get(name, 'collc_' + name)} {int(values[bad[0]])} is outside "
            f"{np.dtype(dtype).name}",
            t.file,
            int(t.offsets[node]),
        )
    return values.astype(dtype)


def _list_rows(col: AttrColumn | None, nodes: I64, t: EtTrace) -> tuple[I64, I64]:
    """CSR rows of an integer-list attribute for ``nodes`` (empty where absent)."""
    offsets = np.zeros(len(nodes) + 1, dtype=np.int64)
    if col is None or len(col) == 0:
        return np.zeros(0, dtype=np.int64), offsets
    if col.objects:
        j = next(iter(col.objects))
        raise EtDecodeError(
            f"node {int(col.nodes[j])}: {col.name} is not an integer list",
            t.file,
            int(t.offsets[col.nodes[j]]),
        )
    pos = np.searchsorted(col.nodes, nodes)
    has = (pos < len(col.nodes)) & (col.nodes[np.minimum(pos, len(col.nodes) - 1)] == nodes)
    entry = pos[has]
    lens = np.zeros(len(nodes), dtype=np.int64)
    lens[has] = np.diff(col.list_offsets)[entry]
    np.cumsum(lens, out=offsets[1:])
    starts = np.zeros(len(nodes), dtype=np.int64)
    starts[has] = col.list_offsets[entry]
    return col.list_values[expand_ranges(starts, lens)], offsets
