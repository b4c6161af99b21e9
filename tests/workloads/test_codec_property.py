"""Property: any node a workload ET can hold survives `encode_rank` then `read_rank` exactly,
and the decode cache never changes what a node reads as."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.chakra_io import encode_rank, read_rank
from workloads.model import NodeKind, WNode

_I32 = st.integers(min_value=0, max_value=(1 << 31) - 1)
_I64 = st.integers(min_value=0, max_value=(1 << 63) - 1)
_U64 = st.integers(min_value=0, max_value=(1 << 64) - 1)
_OPT = st.none() | _I32


@st.composite
def nodes(draw: st.DrawFn) -> list[WNode]:
    count = draw(st.integers(min_value=1, max_value=12))
    ids = draw(st.lists(_I64, min_size=count, max_size=count, unique=True))
    out = []
    for i, nid in enumerate(ids):
        kind = draw(st.sampled_from(list(NodeKind)))
        earlier = ids[:i]
        deps = draw(st.lists(st.sampled_from(earlier), max_size=3)) if earlier else []
        ctrl = draw(st.lists(st.sampled_from(earlier), max_size=2)) if earlier else []
        out.append(
            WNode(
                id=nid,
                name=draw(st.text(max_size=8)),
                kind=int(kind),
                data_deps=tuple(deps),
                ctrl_deps=tuple(ctrl),
                duration_micros=draw(_U64),
                is_cpu_op=draw(st.booleans()),
                num_ops=draw(st.none() | _I64),
                tensor_size=draw(st.none() | _U64),
                comm_type=draw(st.none() | st.integers(0, 9)),
                comm_size=draw(st.none() | _I64),
                # pg_name and involved_dim are written on collectives only.
                pg_name=draw(st.text(max_size=4)) if kind == NodeKind.COLL else "",
                involved_dim=(
                    draw(st.none() | st.lists(st.booleans(), max_size=5).map(tuple))
                    if kind == NodeKind.COLL
                    else None
                ),
                comm_src=draw(_OPT),
                comm_dst=draw(_OPT),
                comm_tag=draw(_OPT),
                comm_priority=draw(_I32),
            )
        )
    return out


@settings(max_examples=80, deadline=None)
@given(ranks=st.lists(nodes(), min_size=1, max_size=3))
def test_encode_then_read_gives_the_same_nodes(ranks: list[list[WNode]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache: dict[bytes, WNode] = {}
        for r, want in enumerate(ranks):
            path = Path(tmp) / f"w.{r}.et"
            path.write_bytes(encode_rank(want))
            assert read_rank(path, cache) == want
            assert read_rank(path) == want  # without the cache: the same nodes
