"""Shared helpers of the ET tests: random Programs and a reference reader over the bindings."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from chakra_ir.collective import Collective, CollectiveKind, custom_collective
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.framing import split_frames
from chakra_ir.et.wire import key, varint
from chakra_ir.program import COLUMNS, OpKind, Program

INT32 = st.integers(-(2**31), 2**31 - 1)


def pb_messages(data: bytes) -> tuple[pb.GlobalMetadata, list[pb.Node]]:
    """Parse an ET stream with the generated bindings only (framing by `split_frames`)."""
    starts, ends = split_frames(data, "<test>")
    meta = pb.GlobalMetadata.FromString(data[starts[0] : ends[0]])
    nodes = [
        pb.Node.FromString(data[a:b])
        for a, b in zip(starts[1:].tolist(), ends[1:].tolist(), strict=True)
    ]
    return meta, nodes


def frame(msg: bytes) -> bytes:
    return varint(len(msg)) + msg


def et_stream(meta: pb.GlobalMetadata, nodes: list[bytes]) -> bytes:
    """A framed ET stream of a metadata message and raw node bodies."""
    return frame(meta.SerializeToString()) + b"".join(frame(n) for n in nodes)


def attr(name: str, member: str, value: object) -> pb.AttributeProto:
    a = pb.AttributeProto(name=name)
    if member.endswith("_list"):
        getattr(a, member).values.extend(value)
    else:
        setattr(a, member, value)
    return a


def unknown_field(field: int, payload: bytes) -> bytes:
    """A length-delimited field that the schema does not define."""
    return key(field, 2) + varint(len(payload)) + payload


_CONTENTS = st.one_of(
    st.none(),
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 2**70)), min_size=1, max_size=3).map(
        lambda x: tuple(sorted(dict(x).items()))
    ),
)


@st.composite
def collectives(draw: st.DrawFn) -> Collective:
    """Any collective: every kind, in place or not, rooted, placed, or custom."""
    n = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(list(CollectiveKind)))
    if kind is CollectiveKind.CUSTOM:
        ins = [draw(st.lists(_CONTENTS, max_size=3)) for _ in range(n)]
        outs = [draw(st.lists(_CONTENTS, max_size=3)) for _ in range(n)]
        return custom_collective(
            n, ins, outs, name=draw(st.sampled_from(["custom", "my coll", "ü"]))
        )
    root = draw(st.integers(0, n - 1)) if kind.rooted else -1
    placement = tuple(draw(st.permutations(range(n + 2)))[:n]) if draw(st.booleans()) else ()
    return Collective(
        kind,
        n,
        draw(st.integers(1, 3)),
        inplace=draw(st.booleans()),
        root=root,
        placement=placement,
        name=draw(st.sampled_from(["", "x"])),
    )


@st.composite
def programs(draw: st.DrawFn, max_ops: int = 12) -> Program:
    """Random Programs, column by column: every op kind, deps on any op of the rank, hints,
    routes, negative tags and indices, empty ranks. Not verified (the codec must not care)."""
    coll = draw(collectives())
    n = coll.num_ranks
    lens = [draw(st.integers(0, max_ops)) for _ in range(n)]
    total = sum(lens)
    cols: dict[str, list[int]] = {c: [] for c in COLUMNS}
    deps: list[int] = []
    dep_counts: list[int] = []
    routes: list[int] = []
    route_counts: list[int] = []
    small = st.one_of(st.integers(-1, 6), INT32)
    for r in range(n):
        for _ in range(lens[r]):
            k = draw(st.sampled_from(list(OpKind)))
            comm = k <= OpKind.RECV_REDUCE
            cols["kind"].append(int(k))
            cols["peer"].append(
                draw(st.integers(0, n - 1))
                if comm and draw(st.booleans())
                else draw(small)
                if comm
                else draw(st.sampled_from([-1, -1, 3]))
            )
            src = k in (OpKind.SEND, OpKind.COPY, OpKind.REDUCE, OpKind.FLOW_IN)
            dst = k not in (OpKind.SEND, OpKind.FLOW_IN)
            cols["src_buf"].append(
                draw(st.integers(0, 2)) if src else draw(st.sampled_from([-1, -1, 1]))
            )
            cols["src_index"].append(draw(small) if src else draw(st.sampled_from([-1, -1, 4])))
            cols["dst_buf"].append(
                draw(st.integers(0, 2)) if dst else draw(st.sampled_from([-1, -1, 2]))
            )
            cols["dst_index"].append(draw(small) if dst else draw(st.sampled_from([-1, -1, 5])))
            cols["count"].append(draw(st.integers(1, 4)) if comm else draw(st.integers(0, 4)))
            cols["tag"].append(draw(st.sampled_from([0, 0, 1, -3, 2**31 - 1])))
            cols["channel"].append(draw(st.sampled_from([-1, -1, 0, 7])))
            cols["threadblock"].append(draw(st.sampled_from([-1, -1, 0, 3, -2])))
            gated = k == OpKind.SEND and draw(st.booleans())
            cols["after"].append(draw(st.integers(0, lens[r] - 1)) if gated else -1)
            d = draw(st.lists(st.integers(0, lens[r] - 1), max_size=3))
            deps.extend(d)
            dep_counts.append(len(d))
            rt = draw(st.lists(st.integers(-2, 300), max_size=4)) if draw(st.booleans()) else []
            routes.extend(rt)
            route_counts.append(len(rt))
    rank_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=rank_offsets[1:])
    dep_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(dep_counts, out=dep_offsets[1:])
    route_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(route_counts, out=route_offsets[1:])
    sizes = [[draw(st.integers(0, 9)) for _ in range(3)] for _ in range(n)]
    return Program.from_columns(
        coll,
        rank_offsets,
        {c: np.array(v, dtype=np.int64) for c, v in cols.items()},
        dep_offsets,
        np.array(deps, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        route_offsets,
        np.array(routes, dtype=np.int64),
        name=draw(st.sampled_from(["", "ring", "naïve prog"])),
    )
