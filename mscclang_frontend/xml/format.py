"""Facts about the MSCCL-IR XML format that the reader and the writer share.

The format msccl-tools writes and the MSCCL runtime reads (docs/mscclang.md). A step's type says what it does with the threadblock's
receive peer and send peer and with its local buffers; the runtime reads ``srcbuf``/``srcoff``
as the *local* operand of every reducing receive (``rrc``, ``rrs``, ``rrcs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from chakra_ir.collective import Buffer, CollectiveKind


@dataclass(frozen=True)
class StepType:
    """What one XML step type does.

    ``recv``/``send``: whether it receives from the threadblock's ``recv`` peer / sends to its
    ``send`` peer. ``reduce``: the received data is reduced with the local operand ``src``.
    ``store``: it writes ``dst`` (``rrs`` forwards without storing). ``local``: a copy or reduce
    inside the GPU. ``reads_src``/``writes_dst``: which local operands the runtime touches,
    the ones whose offsets the runtime checks against the buffer sizes.
    """

    name: str
    recv: bool = False
    send: bool = False
    reduce: bool = False
    store: bool = False
    local: bool = False
    reads_src: bool = False
    writes_dst: bool = False


STEP_TYPES: dict[str, StepType] = {
    t.name: t
    for t in (
        StepType("s", send=True, reads_src=True),
        StepType("r", recv=True, store=True, writes_dst=True),
        StepType("rrc", recv=True, reduce=True, store=True, reads_src=True, writes_dst=True),
        StepType("rcs", recv=True, send=True, store=True, writes_dst=True),
        StepType("rrs", recv=True, send=True, reduce=True, reads_src=True),
        StepType(
            "rrcs", recv=True, send=True, reduce=True, store=True, reads_src=True, writes_dst=True
        ),
        StepType("cpy", local=True, store=True, reads_src=True, writes_dst=True),
        StepType("re", local=True, reduce=True, store=True, reads_src=True, writes_dst=True),
        StepType("nop"),
    )
}

BUFFER_LETTERS: dict[str, Buffer] = {"i": Buffer.INPUT, "o": Buffer.OUTPUT, "s": Buffer.SCRATCH}

RUNTIME_COLL: dict[CollectiveKind, str] = {
    CollectiveKind.ALLGATHER: "allgather",
    CollectiveKind.ALLREDUCE: "allreduce",
    CollectiveKind.REDUCE_SCATTER: "reducescatter",
    CollectiveKind.ALLTOALL: "alltoall",
    CollectiveKind.BROADCAST: "broadcast",
    CollectiveKind.REDUCE: "reduce",
    CollectiveKind.GATHER: "gather",
    CollectiveKind.SCATTER: "scatter",
}
"""The ``coll`` names msccl-executor-nccl and RCCL accept, per collective kind."""

COLL_NAMES: dict[str, CollectiveKind] = {
    **{name: kind for kind, name in RUNTIME_COLL.items()},
    "reduce_scatter": CollectiveKind.REDUCE_SCATTER,
    "custom": CollectiveKind.CUSTOM,
}
"""``coll`` names the reader understands (msccl-tools writes ``reduce_scatter``)."""

PROTOCOLS = ("Simple", "LL", "LL128")

ALGO_ATTRS = (
    "name",
    "proto",
    "nchannels",
    "nchunksperloop",
    "ngpus",
    "coll",
    "inplace",
    "outofplace",
    "minBytes",
    "maxBytes",
)
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = (
    "s",
    "type",
    "srcbuf",
    "srcoff",
    "dstbuf",
    "dstoff",
    "cnt",
    "depid",
    "deps",
    "hasdep",
)

# The runtime's limits (msccl-executor-nccl, RCCL): MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL,
# MSCCL_MAX_NUM_STEPS, MSCCL_MAX_COUNT (cnt must stay below it), MSCCL_MAX_REDUCE_FUSION and
# NCCL's MAXCHANNELS.
MAX_TBS_PER_CHANNEL = 32
MAX_STEPS_PER_TB = 64
MAX_COUNT = 71
MAX_REDUCE_FUSION = 16
MAX_CHANNELS = 32
