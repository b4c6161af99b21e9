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


def _attr(node: pb.Node, name: str, member: str, value: object) -> None:
    a = node.attr.add()
    a.name = name
    if member.endswith("_list"):
        getattr(a, member).values.extend(value)
    else:
        setattr(a, member, value)


def _metadata(role: str) -> bytes:
    meta = pb.GlobalMetadata(version=VERSION)
    a = meta.attr.add()
    a.name = "collc_workload"
    a.string_val = role
    return frame(meta.SerializeToString())


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
    node = pb.Node(id=0, name=name, type=pb.COMM_COLL_NODE)
    _attr(node, "is_cpu_op", "bool_val", False)
    _attr(node, "comm_type", "int64_val", COMM_TYPES[kind])
    _attr(node, "comm_size", "int64_val", comm_size)
    if pg_name:
        _attr(node, "pg_name", "string_val", pg_name)
    else:
        _attr(node, "involved_dim", "bool_list", [True] * num_dims)
    return _metadata("collective") + frame(node.SerializeToString())


def idle_workload(name: str = "idle") -> bytes:
    """The content of a workload ET for an NPU outside the collective: one COMP_NODE of
    duration 0 with ``is_cpu_op`` false, ``num_ops`` (int64) 0 and ``tensor_size`` (uint64) 0."""
    node = pb.Node(id=0, name=name, type=pb.COMP_NODE, duration_micros=0)
    _attr(node, "is_cpu_op", "bool_val", False)
    _attr(node, "num_ops", "int64_val", 0)
    _attr(node, "tensor_size", "uint64_val", 0)
    return _metadata("idle") + frame(node.SerializeToString())
