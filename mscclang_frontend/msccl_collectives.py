"""The collectives a MSCCLang program runs: the built-in ones (``AllReduce``, ``AllGather``,
``ReduceScatter``, ``AllToAll``), msccl-tools' ``SendRecv``, and ``Collective``, the base class
of custom collectives.
"""

from __future__ import annotations

from chakra_ir.collective import CollectiveKind
from mscclang_frontend.msccl_types import as_bool, as_int
from mscclang_frontend.values import ApiError, BuiltinClass, UserInstance

_KIND_NAMES = {
    CollectiveKind.ALLREDUCE: "allreduce",
    CollectiveKind.ALLGATHER: "allgather",
    CollectiveKind.REDUCE_SCATTER: "reduce_scatter",
    CollectiveKind.ALLTOALL: "alltoall",
}


class BuiltinCollective:
    """``AllReduce``, ``AllGather``, ``ReduceScatter`` or ``AllToAll``."""

    def __init__(self, kind: CollectiveKind, num_ranks: int, chunk_factor: int, inplace: bool):
        self.kind = kind
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace
        self.name = _KIND_NAMES[kind]

    def __repr__(self) -> str:
        cls = {
            CollectiveKind.ALLREDUCE: "AllReduce",
            CollectiveKind.ALLGATHER: "AllGather",
            CollectiveKind.REDUCE_SCATTER: "ReduceScatter",
            CollectiveKind.ALLTOALL: "AllToAll",
        }[self.kind]
        return f"{cls}({self.num_ranks}, {self.chunk_factor}, {self.inplace})"


def _collective_init(
    inst: UserInstance, num_ranks: object, chunk_factor: object, inplace: object = False
) -> None:
    inst.attrs["num_ranks"] = as_int(num_ranks, "num_ranks", 0, minimum=1)
    inst.attrs["chunk_factor"] = as_int(chunk_factor, "chunk_factor", 1, minimum=1)
    inst.attrs["inplace"] = as_bool(inplace, "inplace", 2)
    inst.attrs["name"] = "custom"


def _collective_init_buffers(inst: UserInstance) -> object:
    raise ApiError(f"{inst.cls.name} must define init_buffers(self)")


def _collective_check(inst: UserInstance, prog: object) -> object:
    raise ApiError(f"{inst.cls.name} must define check(self, prog) for Check()")


def _collective_get_buffer_index(
    inst: UserInstance, rank: object, buffer: object, index: object
) -> object:
    return (buffer, index)


COLLECTIVE_BASE = BuiltinClass(
    "Collective",
    {
        "__init__": _collective_init,
        "init_buffers": _collective_init_buffers,
        "check": _collective_check,
        "get_buffer_index": _collective_get_buffer_index,
    },
)
"""The class custom collectives derive from (``class Pipeline(Collective): ...``)."""


class SendRecvCollective:
    """msccl-tools' ``SendRecv``: rank r's output slot c must end with input slot c of rank
    1 - r; in place the output aliases the input slot for slot."""

    num_ranks = 2
    name = "sendrecv"

    def __init__(self, chunk_factor: int, inplace: bool) -> None:
        self.chunk_factor = chunk_factor
        self.inplace = inplace

    def __repr__(self) -> str:
        return f"SendRecv(2, {self.chunk_factor}, {self.inplace})"
