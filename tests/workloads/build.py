"""Small workloads built by hand for the workload tests.

Each helper makes one `WNode`; `workload` wraps per-NPU node lists into a `Workload` whose
files are named ``npu<i>.et``, so messages can be checked for the file. Variants of a node
(an attribute missing, a wrong value) are made with `dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workloads.model import CollKind, NodeKind, WNode, Workload

AR, AG, RS, A2A = (
    CollKind.ALL_REDUCE,
    CollKind.ALL_GATHER,
    CollKind.REDUCE_SCATTER,
    CollKind.ALL_TO_ALL,
)


def comp(
    id: int,
    us: int,
    deps: Sequence[int] = (),
    *,
    num_ops: int | None = None,
    tensor_size: int | None = None,
    is_cpu_op: bool = False,
) -> WNode:
    """A COMP node of ``us`` microseconds depending on ``deps``."""
    return WNode(
        id=id,
        name=f"comp{id}",
        kind=NodeKind.COMP,
        data_deps=tuple(deps),
        duration_micros=us,
        num_ops=num_ops,
        tensor_size=tensor_size,
        is_cpu_op=is_cpu_op,
    )


def coll(
    id: int,
    kind: int,
    size: int,
    pg: str = "",
    deps: Sequence[int] = (),
    *,
    involved_dim: tuple[bool, ...] | None = None,
    us: int = 0,
) -> WNode:
    """A COMM_COLL node: ``kind`` (a `CollKind`) of ``size`` bytes on group ``pg``; ``us`` is
    its ``duration_micros`` (what a BROADCAST takes)."""
    return WNode(
        id=id,
        name=f"coll{id}",
        kind=NodeKind.COLL,
        data_deps=tuple(deps),
        duration_micros=us,
        comm_type=int(kind),
        comm_size=size,
        pg_name=pg,
        involved_dim=involved_dim,
    )


def send(id: int, src: int, dst: int, size: int, tag: int = 0, deps: Sequence[int] = ()) -> WNode:
    """A COMM_SEND node of NPU ``src`` to ``dst``."""
    return WNode(
        id=id,
        name=f"send{id}",
        kind=NodeKind.SEND,
        data_deps=tuple(deps),
        comm_src=src,
        comm_dst=dst,
        comm_size=size,
        comm_tag=tag,
    )


def recv(id: int, src: int, dst: int, size: int, tag: int = 0, deps: Sequence[int] = ()) -> WNode:
    """A COMM_RECV node on NPU ``dst`` of a message from ``src``."""
    return WNode(
        id=id,
        name=f"recv{id}",
        kind=NodeKind.RECV,
        data_deps=tuple(deps),
        comm_src=src,
        comm_dst=dst,
        comm_size=size,
        comm_tag=tag,
    )


def mem(id: int, size: int, deps: Sequence[int] = (), *, store: bool = False) -> WNode:
    """A MEM_LOAD (or MEM_STORE) node of ``size`` bytes."""
    kind = NodeKind.MEM_STORE if store else NodeKind.MEM_LOAD
    return WNode(id=id, name=f"mem{id}", kind=kind, data_deps=tuple(deps), tensor_size=size)


def other(id: int, kind: int, deps: Sequence[int] = ()) -> WNode:
    """A node without attributes (METADATA, INVALID)."""
    return WNode(id=id, name=f"n{id}", kind=kind, data_deps=tuple(deps))


def workload(
    *ranks: Sequence[WNode], groups: Mapping[str, tuple[int, ...]] | None = None
) -> Workload:
    """A workload of the given per-NPU node lists; NPU i's file is ``npu<i>.et``."""
    return Workload(
        [list(r) for r in ranks],
        dict(groups or {}),
        [f"npu{i}.et" for i in range(len(ranks))],
    )


def same(
    n: int, nodes: Sequence[WNode], groups: Mapping[str, tuple[int, ...]] | None = None
) -> Workload:
    """``n`` NPUs running the same node list."""
    return workload(*([list(nodes)] * n), groups=groups)
