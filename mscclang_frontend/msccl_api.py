"""collc's own implementation of the MSCCLang API that programs run against.

It follows MSCCLang's semantics (as msccl-tools defines them): ``MSCCLProgram`` as a
``with`` context, the collectives, ``chunk``, ``Ref.copy``/``reduce``/``split``/``group``,
named scratch buffers, ``Check()`` (symbolic) and ``XML()``. Calls do not build MSCCL
instructions: they update the symbolic buffer contents (so ``chunk`` returns None for an
empty slot and ``Check`` can compare) and record one `RecordedOp` per copy or reduce, which
`lowering.py` turns into a `chakra_ir.Program`.

This module holds `MscclApi`, the functions programs call and the ``msccl`` modules they
import, and what programs may see of API objects (`EXPOSED`); the parts live beside it:
`msccl_types` (buffers, chunks, argument checks), `msccl_collectives`, `msccl_topologies`,
`msccl_program` (a program's state and buffers), `msccl_refs` (``Ref``) and `msccl_check`
(``Check()``). Their names are importable from here too.

Errors are `ApiError`s; the interpreter reports them at the call with the program's line.
"""

from __future__ import annotations

from collections.abc import Callable

from chakra_ir.collective import CollectiveKind
from mscclang_frontend import msccl_check
from mscclang_frontend.errors import CompileError
from mscclang_frontend.limits import ApiLimits
from mscclang_frontend.msccl_collectives import (
    COLLECTIVE_BASE,
    BuiltinCollective,
    SendRecvCollective,
)
from mscclang_frontend.msccl_program import (
    COPY,
    REDUCE,
    ApiState,
    BuffersView,
    ProgramState,
    RankBuffersView,
    RecordedOp,
    Runtime,
    SlotsView,
)
from mscclang_frontend.msccl_refs import Ref
from mscclang_frontend.msccl_topologies import Topology, topology_modules
from mscclang_frontend.msccl_types import (
    PROTOCOLS,
    BufferName,
    Chunk,
    ReduceChunk,
    Slot,
    ThreadblockPolicy,
    as_bool,
    as_int,
    buffer_label,
    make_chunk,
    make_reduce_chunk,
    slot_contents,
)
from mscclang_frontend.values import (
    ApiError,
    Builtin,
    Namespace,
    Unavailable,
    UserInstance,
    type_name,
)
from topologies.errors import CollcError

__all__ = [
    "ATTRIBUTE_ALIASES",
    "COLLECTIVE_BASE",
    "COPY",
    "EXPOSED",
    "ITERABLE_TYPES",
    "PROTOCOLS",
    "REDUCE",
    "SUBSCRIPTABLE_TYPES",
    "ApiLimits",
    "BufferName",
    "BuffersView",
    "BuiltinCollective",
    "Chunk",
    "MscclApi",
    "ProgramState",
    "RankBuffersView",
    "RecordedOp",
    "ReduceChunk",
    "Ref",
    "Runtime",
    "SendRecvCollective",
    "Slot",
    "SlotsView",
    "ThreadblockPolicy",
    "Topology",
    "as_bool",
    "as_int",
    "slot_contents",
]


class MscclApi(ApiState):
    """One compilation's MSCCLang state (`ApiState`) and the functions programs call on it."""

    # -- functions offered to programs -----------------------------------------------------------
    def msccl_program(
        self,
        name: object,
        topo: object,
        collective: object,
        instances: object,
        protocol: object = "Simple",
        threadblock_policy: object = ThreadblockPolicy.auto,
        interleaved_replication: object = True,
        instr_fusion: object = True,
        check_xml: object = True,
        dependence_nop: object = False,
    ) -> ProgramState:
        if not isinstance(name, str):
            raise ApiError(f"the program name must be a string, got {type_name(name)}", 0)
        if not isinstance(topo, Topology):
            raise ApiError(f"expected a topology, got {type_name(topo)}", 1)
        if not isinstance(collective, BuiltinCollective | SendRecvCollective) and not (
            isinstance(collective, UserInstance) and collective.cls.derives_from(COLLECTIVE_BASE)
        ):
            raise ApiError(
                f"expected a collective (AllReduce(...), a Collective subclass ...), got "
                f"{type_name(collective)}",
                2,
            )
        inst = as_int(instances, "instances", 3, minimum=1)
        if inst > self.limits.max_instances:
            raise ApiError(f"instances is limited to {self.limits.max_instances}", 3)
        if protocol not in PROTOCOLS:
            raise ApiError(
                f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}", "protocol"
            )
        if not isinstance(threadblock_policy, ThreadblockPolicy):
            raise ApiError(
                "threadblock_policy must be ThreadblockPolicy.auto or ThreadblockPolicy.manual",
                "threadblock_policy",
            )
        assert isinstance(protocol, str)
        return ProgramState(
            self,
            name,
            topo,
            collective,
            inst,
            protocol,
            threadblock_policy,
            as_bool(interleaved_replication, "interleaved_replication", "interleaved_replication"),
            as_bool(instr_fusion, "instr_fusion", "instr_fusion"),
            as_bool(check_xml, "check_xml", "check_xml"),
            as_bool(dependence_nop, "dependence_nop", "dependence_nop"),
        )

    def chunk(self, rank: object, buffer: object, index: object, size: object = 1) -> Ref | None:
        prog = self._active("chunk()")
        r = prog.check_rank(rank, 0)
        i = as_int(index, "the chunk index", 2)
        n = as_int(size, "the chunk size", 3, minimum=1)
        if isinstance(buffer, BufferName) and buffer is not BufferName.scratch:
            prog.check_range(r, buffer, i, n, 2)
            key, pi = prog.physical(r, buffer, i)
        else:
            key = prog.scratch_key(buffer, 1)
            if buffer is None:
                raise ApiError("chunk() needs a buffer (Buffer.input, Buffer.output, ...)", 1)
            prog.check_range(r, key, i, n, 2)
            pi = i
        lst = prog.buffers[r].get(key)
        if lst is None or pi >= len(lst) or lst[pi] is None:
            line, _ = self.runtime.call_position()
            self.last_empty = (line, f"rank {r}'s {buffer_label(key)}[{i}]")
            return None
        return Ref(prog, r, key, pi, n)

    def none_hint(self, attribute: str) -> str:
        """Why a program holds None where it calls a chunk reference's method: the last
        ``chunk()`` that returned None ("" when the attribute is not a reference's or no
        ``chunk()`` returned None)."""
        if self.last_empty is None or attribute not in EXPOSED[Ref]:
            return ""
        line, what = self.last_empty
        return (
            f"; chunk() returns None for a slot that holds no chunk, and the last one that did "
            f"(line {line}) asked for {what}, which no copy or reduce has written yet"
        )

    def check(self) -> bool:
        return msccl_check.check(self._active("Check()"))

    def xml(self) -> None:
        prog = self._active("XML()")
        self.xml_requested = True
        self.xml_position = self.runtime.call_position()
        if self.on_xml is not None:
            try:
                text = self.on_xml(prog)
            except CompileError:
                raise
            except CollcError as e:
                raise ApiError(f"XML(): {e}") from None
            if text:
                self.runtime.write(text if text.endswith("\n") else text + "\n")

    def builtin_collective(self, kind: CollectiveKind) -> Callable[..., BuiltinCollective]:
        def make(num_ranks: object, chunk_factor: object, inplace: object) -> BuiltinCollective:
            n = as_int(num_ranks, "num_ranks", 0, minimum=1)
            if n > self.limits.max_ranks:
                raise ApiError(f"collectives are limited to {self.limits.max_ranks} ranks", 0)
            cf = as_int(chunk_factor, "chunk_factor", 1, minimum=1)
            if cf > self.limits.max_buffer_slots:
                raise ApiError("chunk_factor is too large", 1)
            return BuiltinCollective(kind, n, cf, as_bool(inplace, "inplace", 2))

        return make

    def modules(self) -> dict[str, Namespace]:
        """The importable ``msccl`` modules, by dotted name.

        Names msccl-tools defines but collc does not provide are `Unavailable`: importing them
        works, using them is an error at the use.
        """
        buffer = Namespace("Buffer", {b.name: b for b in BufferName}, "enum")
        policy = Namespace("ThreadblockPolicy", {p.name: p for p in ThreadblockPolicy}, "enum")
        colls: dict[str, object] = {
            "AllReduce": Builtin("AllReduce", self.builtin_collective(CollectiveKind.ALLREDUCE)),
            "AllGather": Builtin("AllGather", self.builtin_collective(CollectiveKind.ALLGATHER)),
            "ReduceScatter": Builtin(
                "ReduceScatter", self.builtin_collective(CollectiveKind.REDUCE_SCATTER)
            ),
            "AllToAll": Builtin("AllToAll", self.builtin_collective(CollectiveKind.ALLTOALL)),
            "SendRecv": Builtin("SendRecv", self.send_recv),
            "Broadcast": Unavailable(
                "Broadcast",
                "msccl.language.collectives",
                "msccl-tools' Broadcast fills every rank's input with the root's chunks and "
                "checks rank 0 only",
            ),
            "Collective": COLLECTIVE_BASE,
        }
        chunks = {
            "Chunk": Builtin("Chunk", make_chunk),
            "ReduceChunk": Builtin("ReduceChunk", make_reduce_chunk),
        }
        language: dict[str, object] = {
            "MSCCLProgram": Builtin("MSCCLProgram", self.msccl_program),
            "chunk": Builtin("chunk", self.chunk),
            "Check": Builtin("Check", self.check),
            "XML": Builtin("XML", self.xml),
            "Buffer": buffer,
            "ThreadblockPolicy": policy,
            **colls,
            **chunks,
        }
        for name in _LANGUAGE_UNAVAILABLE:
            language.setdefault(name, Unavailable(name, "msccl.language"))
        tables: dict[str, dict[str, object]] = {
            "msccl.language": language,
            "msccl.language.collectives": {**colls, **chunks, "Buffer": buffer},
            "msccl.language.types": {"Buffer": buffer, "ThreadblockPolicy": policy, **chunks},
            "msccl.language.chunk": dict(chunks),
            "msccl.language.buffer": {"Buffer": buffer},
            "msccl.language.ir": {"Buffer": buffer},
            "msccl.collectives": {
                n: Unavailable(n, "msccl.collectives", "it belongs to msccl-tools' synthesizer")
                for n in _SCCL_COLLECTIVES
            },
            **topology_modules(self.limits),
        }
        return {k: Namespace(k, v) for k, v in tables.items()}

    def send_recv(
        self, num_ranks: object, chunk_factor: object, inplace: object
    ) -> SendRecvCollective:
        """msccl-tools' ``SendRecv``: two ranks swap their ``chunk_factor`` input chunks."""
        n = as_int(num_ranks, "num_ranks", 0, minimum=1)
        if n != 2:
            raise ApiError(f"SendRecv has exactly 2 ranks, got {n}", 0)
        cf = as_int(chunk_factor, "chunk_factor", 1, minimum=1)
        if cf > self.limits.max_buffer_slots:
            raise ApiError("chunk_factor is too large", 1)
        return SendRecvCollective(cf, as_bool(inplace, "inplace", 2))


_LANGUAGE_UNAVAILABLE = (
    "Print",
    "create_scratch",
    "rank",
    "ReplicationPolicy",
    "MSCCLPPProgram",
    "ChannelType",
    "Instruction",
    "ChunkInstruction",
)
"""msccl-tools' ``msccl.language`` names that collc does not provide."""

_SCCL_COLLECTIVES = (
    "Chunk",
    "Collective",
    "build_collective",
    "broadcast",
    "scatter",
    "gather",
    "allgather",
    "alltoall",
    "reduce",
    "allreduce",
    "reduce_scatter",
    "scan",
    "multiroot_broadcast",
    "multiroot_scatter",
    "multiroot_gather",
)
"""What ``from msccl.collectives import *`` binds in msccl-tools (its synthesizer's
collectives, unrelated to MSCCLang's)."""

EXPOSED: dict[type, frozenset[str]] = {
    Ref: frozenset(
        {
            "rank",
            "buffer",
            "index",
            "size",
            "copy",
            "reduce",
            "split",
            "group",
            "get_origin_rank",
            "get_origin_index",
            "get_dst_rank",
            "get_dst_index",
        }
    ),
    Chunk: frozenset({"origin_rank", "origin_index", "dst_rank", "dst_index"}),
    ReduceChunk: frozenset({"creation_rank", "chunks"}),
    Topology: frozenset({"name", "num_nodes", "link", "links"}),
    BuiltinCollective: frozenset({"num_ranks", "chunk_factor", "inplace", "name"}),
    SendRecvCollective: frozenset({"num_ranks", "chunk_factor", "inplace", "name"}),
    ProgramState: frozenset(
        {
            "name",
            "topo",
            "collective",
            "instances",
            "protocol",
            "threadblock_policy",
            "interleaved_replication",
            "instr_fusion",
            "check_xml",
            "dependence_nop",
            "num_ranks",
            "buffers",
        }
    ),
    BufferName: frozenset({"name", "value"}),
    ThreadblockPolicy: frozenset({"name", "value"}),
    RankBuffersView: frozenset({"keys"}),
}
"""Attributes of API objects that programs may read (everything else is hidden)."""

ATTRIBUTE_ALIASES: dict[tuple[type, str], str] = {(ProgramState, "buffers"): "buffers_view"}
"""Exposed names that map to a differently named Python attribute."""

ITERABLE_TYPES: tuple[type, ...] = (BuffersView, RankBuffersView, SlotsView)
SUBSCRIPTABLE_TYPES: tuple[type, ...] = (BuffersView, RankBuffersView, SlotsView)
