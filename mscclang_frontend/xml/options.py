"""`XmlOptions`: how a Program is written as MSCCL-IR XML.

The writer (``backends.msccl_xml``) takes them; the reader returns the ones that reproduce a
file's header (name, protocol, ``coll`` spelling, byte bounds, whether the header extras were
present), so an imported algorithm is written back with the same header.
"""

from __future__ import annotations

from dataclasses import dataclass

from mscclang_frontend.xml import format as fmt
from topologies.errors import CollcError


@dataclass(frozen=True)
class XmlOptions:
    """Options of the MSCCL-IR XML writer.

    Header: ``name`` (default: the program's name, else the collective's kind), ``proto``
    (``Simple``, ``LL`` or ``LL128``), ``coll`` (overrides the ``coll`` attribute; required to
    write a custom collective, which the runtime does not know), ``header_extras`` (write
    ``outofplace``, ``minBytes`` and ``maxBytes``, which msccl-executor-nccl and RCCL require),
    ``min_bytes``/``max_bytes`` (the message sizes for which the runtime selects the algorithm;
    ``max_bytes=0`` means no upper bound), ``inplace`` (the header's ``inplace``/``outofplace``
    flags, which pick the call the runtime serves with the file; None: the program's collective
    says; a custom collective compiled or imported in place keeps its flag here, since collc
    runs it out of place as msccl-tools does).

    Compilation: ``fusion`` fuses a receive with the send that forwards it (``rcs``, ``rrcs``,
    ``rrs``) like MSCCLang's ``instr_fusion``. ``check_deadlock`` simulates the threadblock-
    serialized execution, in which every (sender, receiver, channel) connection buffers
    ``buffer_slots`` messages. The limits default to the runtime's: threadblocks per channel,
    steps per threadblock (nops included), chunks per step (``max_count``; the runtime requires
    ``cnt`` < 72), consecutive fusable ``re`` steps, channels.
    """

    name: str = ""
    proto: str = "Simple"
    coll: str = ""
    header_extras: bool = True
    min_bytes: int = 0
    max_bytes: int = 0
    inplace: bool | None = None
    fusion: bool = True
    check_deadlock: bool = True
    buffer_slots: int = 1
    max_tbs_per_channel: int = fmt.MAX_TBS_PER_CHANNEL
    max_steps_per_tb: int = fmt.MAX_STEPS_PER_TB
    max_count: int = fmt.MAX_COUNT
    max_reduce_fusion: int = fmt.MAX_REDUCE_FUSION
    max_channels: int = fmt.MAX_CHANNELS

    def __post_init__(self) -> None:
        if self.proto not in fmt.PROTOCOLS:
            raise CollcError(
                f"unknown MSCCL protocol {self.proto!r} (expected {', '.join(fmt.PROTOCOLS)})"
            )
        if self.min_bytes < 0 or self.max_bytes < 0:
            raise CollcError("minBytes and maxBytes must not be negative")
        if self.max_bytes and self.max_bytes < self.min_bytes:
            raise CollcError(f"maxBytes {self.max_bytes} is below minBytes {self.min_bytes}")
        if self.buffer_slots < 1:
            raise CollcError("buffer_slots must be at least 1")
        for limit in (
            "max_tbs_per_channel",
            "max_steps_per_tb",
            "max_count",
            "max_reduce_fusion",
            "max_channels",
        ):
            if getattr(self, limit) < 1:
                raise CollcError(f"{limit} must be at least 1")
        if any(c in self.name for c in "\n\r"):
            raise CollcError("the algorithm name must be one line")
