"""The one-collective workload ETs ASTRA-sim runs (its Chakra workload feeder's node rules).

Each NPU's file ``<prefix>.<npu>.et`` holds a GlobalMetadata (version ``0.0.4``) and one node:

- an NPU that takes part: a COMM_COLL_NODE (id 0) with ``is_cpu_op`` (bool, false),
  ``comm_type`` (int64, ASTRA-sim's CollectiveCommType), ``comm_size`` (int64 bytes, > 0), and
  either ``involved_dim`` (bool_list, every dimension) when the collective spans all NPUs, or
  ``pg_name`` (string) naming its communicator group;
- an NPU outside the communicator group: one COMP_NODE (id 0) of duration 0 (1 ns in
  ASTRA-sim), because ASTRA-sim refuses a workload without a dependency-free node.

``comm_size`` follows ASTRA-sim's convention, which differs from collc's ``--size`` only for
all-gather: ASTRA-sim's all-gather size is the per-rank INPUT, so it is converted here, at this
boundary only. Custom collectives take their message sizes from their own ETs and ignore
``comm_size``, which must still be positive.
"""

from __future__ import annotations

from collections.abc import Sequence

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.framing import frame
from chakra_ir.et.schema import VERSION

_INT64_MAX = (1 << 63) - 1

COMM_TYPES: dict[CollectiveKind, int] = {
    CollectiveKind.ALLREDUCE: 0,
    CollectiveKind.ALLGATHER: 2,
    CollectiveKind.ALLTOALL: 6,
    CollectiveKind.REDUCE_SCATTER: 7,
}
"""collc kinds that ASTRA-sim simulates -> CollectiveCommType (ALL_REDUCE=0, ALL_GATHER=2,
ALL_TO_ALL=6, REDUCE_SCATTER=7)."""


def workload_comm_size(collective: Collective, chunk_bytes: int) -> int:
    """The workload node's ``comm_size`` in bytes: all-gather's per-rank input, else the
    largest buffer (all-reduce: the buffer; reduce-scatter: the input; all-to-all: the
    buffer), i.e. collc's size except for all-gather."""
    if collective.kind is CollectiveKind.ALLGATHER:
        return collective.input_chunks(0) * chunk_bytes
    return collective.size_chunks * chunk_bytes


WorkloadAttr = tuple[str, str, object]
"""An attribute of a workload node: (name, the AttributeProto member it is written in, value)."""


def workload_metadata(attrs: dict[str, str]) -> bytes:
    """A workload ET's framed GlobalMetadata: version set, string attributes ``attrs``."""
    meta = pb.GlobalMetadata(version=VERSION)
    for name, value in attrs.items():
        meta.attr.add(name=name, string_val=value)
    return frame(meta.SerializeToString())


def workload_node(
    id: int,
    name: str,
    node_type: int,
    attrs: Sequence[WorkloadAttr],
    *,
    data_deps: Sequence[int] = (),
    ctrl_deps: Sequence[int] = (),
    duration_micros: int = 0,
) -> bytes:
    """One framed workload node; every workload ET collc writes is made of these (the bundles'
    one-collective workloads here, `workloads.chakra_io`'s training iterations)."""
    node = pb.Node(id=id, name=name, type=node_type)  # type: ignore[arg-type]
    node.data_deps.extend(data_deps)
    node.ctrl_deps.extend(ctrl_deps)
    node.duration_micros = duration_micros
    for attr_name, member, value in attrs:
        a = node.attr.add(name=attr_name)
        if member.endswith("_list"):
            getattr(a, member).values.extend(value)
        else:
            setattr(a, member, value)
    return frame(node.SerializeToString())


def collective_workload(
    kind: CollectiveKind,
    comm_size: int,
    *,
    name: str,
    num_dims: int,
    pg_name: str = "",
) -> bytes:
    """The content of a workload ET of one COMM_COLL_NODE (see the module docstring).
    ``pg_name`` empty means the whole system (``involved_dim`` then lists ``num_dims`` trues)."""
    if kind not in COMM_TYPES:
        raise ValueError(f"ASTRA-sim simulates no {kind.value} collective")
    if not 0 < comm_size <= _INT64_MAX:
        raise ValueError(f"comm_size must be in 1..2^63-1, got {comm_size}")
    attrs: list[WorkloadAttr] = [
        ("is_cpu_op", "bool_val", False),
        ("comm_type", "int64_val", COMM_TYPES[kind]),
        ("comm_size", "int64_val", comm_size),
    ]
    if pg_name:
        attrs.append(("pg_name", "string_val", pg_name))
    else:
        attrs.append(("involved_dim", "bool_list", [True] * num_dims))
    node = workload_node(0, name, pb.COMM_COLL_NODE, attrs)
    return workload_metadata({"collc_workload": "collective"}) + node


def idle_workload(name: str = "idle") -> bytes:
    """The content of a workload ET for an NPU outside the collective: one COMP_NODE of
    duration 0 with ``is_cpu_op`` false, ``num_ops`` (int64) 0 and ``tensor_size`` (uint64) 0."""
    attrs: list[WorkloadAttr] = [
        ("is_cpu_op", "bool_val", False),
        ("num_ops", "int64_val", 0),
        ("tensor_size", "uint64_val", 0),
    ]
    node = workload_node(0, name, pb.COMP_NODE, attrs)
    return workload_metadata({"collc_workload": "idle"}) + node
