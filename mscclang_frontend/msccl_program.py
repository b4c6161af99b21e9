"""The state of one MSCCLang compilation: the ``MSCCLProgram`` being run (`ProgramState`: its
options, its symbolic buffers and the copies and reduces it recorded), the views of its
buffers that ``prog.buffers`` gives programs, and `ApiState`, which holds the active program
and the finished ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from chakra_ir.collective import Buffer as IRBuffer
from chakra_ir.collective import Collective, CollectiveKind
from mscclang_frontend.limits import ApiLimits
from mscclang_frontend.msccl_collectives import BuiltinCollective, SendRecvCollective
from mscclang_frontend.msccl_topologies import Topology
from mscclang_frontend.msccl_types import (
    BufferName,
    Chunk,
    ReduceChunk,
    Slot,
    ThreadblockPolicy,
    as_int,
    buffer_label,
)
from mscclang_frontend.values import ApiError, ContextValue, UserInstance, type_name
from topologies.errors import CollcError


class Runtime(Protocol):
    """What the API needs from the interpreter."""

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object: ...

    def get_attr(self, obj: object, name: str) -> object: ...

    def write(self, text: str) -> None: ...

    def call_position(self) -> tuple[int, int]: ...


class ApiState:
    """One compilation's MSCCLang state: the active program and the finished ones."""

    def __init__(
        self,
        runtime: Runtime,
        limits: ApiLimits | None = None,
        on_xml: Callable[[ProgramState], str | None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.limits = limits or ApiLimits()
        self.on_xml = on_xml
        self.current: ProgramState | None = None
        self.programs: list[ProgramState] = []
        self.xml_requested = False
        self.xml_position: tuple[int, int] | None = None
        # The last chunk() that found its slot empty and returned None: its line and what
        # it asked for, to explain a later "'NoneType' object has no attribute 'copy'".
        self.last_empty: tuple[int, str] | None = None

    def _active(self, what: str) -> ProgramState:
        if self.current is None:
            raise ApiError(f"{what} called outside a `with MSCCLProgram(...)` block")
        return self.current


_IR_BUFFER = {BufferName.input: IRBuffer.INPUT, BufferName.output: IRBuffer.OUTPUT}
_FROM_IR = {IRBuffer.INPUT: BufferName.input, IRBuffer.OUTPUT: BufferName.output}


# ------------------------------------------------------------------------------ operations
COPY = 0
REDUCE = 1


@dataclass(slots=True)
class RecordedOp:
    """One ``copy`` or ``reduce`` call, on physical slots (in-place aliases resolved)."""

    kind: int
    src_rank: int
    src_buf: object
    src_index: int
    dst_rank: int
    dst_buf: object
    dst_index: int
    size: int
    sendtb: int
    recvtb: int
    ch: int
    line: int
    col: int


class BuffersView:
    """``prog.buffers``: ``prog.buffers[rank][Buffer.output]`` is a tuple of the slots."""

    def __init__(self, prog: ProgramState) -> None:
        self._prog = prog

    def __len__(self) -> int:
        return self._prog.num_ranks

    def __getitem__(self, rank: object) -> RankBuffersView:
        r = as_int(rank, "rank")
        if not 0 <= r < self._prog.num_ranks:
            raise ApiError(
                f"rank {r} does not exist (the program has {self._prog.num_ranks} ranks)"
            )
        return RankBuffersView(self._prog, r)

    def __iter__(self) -> Iterator[RankBuffersView]:
        for r in range(self._prog.num_ranks):
            yield RankBuffersView(self._prog, r)

    def __repr__(self) -> str:
        return f"<buffers of {self._prog.num_ranks} ranks>"


class RankBuffersView:
    def __init__(self, prog: ProgramState, rank: int) -> None:
        self._prog = prog
        self._rank = rank

    def __getitem__(self, key: object) -> SlotsView:
        return SlotsView(self._prog, self._rank, key)

    def __contains__(self, key: object) -> bool:
        try:
            hash(key)
        except TypeError:
            return False
        return key in self._prog.buffers[self._rank]

    def __iter__(self) -> Iterator[object]:
        return iter(list(self._prog.buffers[self._rank]))

    def keys(self) -> list[object]:
        return list(self._prog.buffers[self._rank])

    def __repr__(self) -> str:
        return f"<buffers of rank {self._rank}>"


class SlotsView:
    """``prog.buffers[rank][buffer]``: one buffer as the program sees it (in-place aliases
    resolved), read slot by slot, so a ``check`` that indexes it in a loop costs one step per
    slot rather than a copy of the buffer per access."""

    def __init__(self, prog: ProgramState, rank: int, key: object) -> None:
        self._prog = prog
        self._rank = rank
        n = prog.logical_size(rank, key)
        self._key = key if n is not None else prog.scratch_key(key, 0)
        self._len = n if n is not None else len(prog.buffers[rank].get(self._key, ()))

    def __len__(self) -> int:
        return self._len

    def _slot(self, i: int) -> Slot:
        prog = self._prog
        if prog.logical_size(self._rank, self._key) is None:
            return prog.buffers[self._rank][self._key][i]
        pk, pi = prog.physical(self._rank, self._key, i)
        lst = prog.buffers[self._rank].get(pk, [])
        return lst[pi] if pi < len(lst) else None

    def __getitem__(self, index: object) -> Slot | tuple[Slot, ...]:
        if isinstance(index, slice):
            return tuple(self._slot(i) for i in range(*index.indices(self._len)))
        i = as_int(index, "a buffer index")
        if not -self._len <= i < self._len:
            raise ApiError(f"buffer index {i} out of range (the buffer has {self._len} slots)")
        return self._slot(i % self._len)

    def __iter__(self) -> Iterator[Slot]:
        for i in range(self._len):
            yield self._slot(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SlotsView):
            return tuple(self) == tuple(other)
        if isinstance(other, list | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


# ------------------------------------------------------------------------------ the program
class ProgramState(ContextValue):
    """A ``MSCCLProgram``: its options, the symbolic buffers and the recorded operations."""

    def __init__(
        self,
        api: ApiState,
        name: str,
        topo: Topology,
        collective: BuiltinCollective | SendRecvCollective | UserInstance,
        instances: int,
        protocol: str,
        threadblock_policy: ThreadblockPolicy,
        interleaved_replication: bool,
        instr_fusion: bool,
        check_xml: bool,
        dependence_nop: bool,
    ) -> None:
        self.api = api
        self.name = name
        self.topo = topo
        self.collective = collective
        self.instances = instances
        self.protocol = protocol
        self.threadblock_policy = threadblock_policy
        self.interleaved_replication = interleaved_replication
        self.instr_fusion = instr_fusion
        self.check_xml = check_xml
        self.dependence_nop = dependence_nop
        self.num_ranks = topo.num_nodes()
        self.ops: list[RecordedOp] = []
        self.active = False
        self.finished = False
        self.check_snapshot: list[list[Slot]] | None = None
        self.position = api.runtime.call_position()
        self.base: Collective | None = None
        self.custom_output: list[list[Slot]] | None = None
        self.expected: list[list[Slot]] | None = None
        self.alias_output = False
        self.check_called = False
        self.initial_input: list[list[Slot]] = []
        self.buffers: list[dict[object, list[Slot]]] = []
        if isinstance(collective, BuiltinCollective):
            self._init_builtin(collective)
        elif isinstance(collective, SendRecvCollective):
            self._init_send_recv(collective)
        else:
            self._init_custom(collective)

    # -- construction ----------------------------------------------------------------------------
    def _init_builtin(self, c: BuiltinCollective) -> None:
        n = c.num_ranks
        if n != self.num_ranks:
            raise ApiError(
                f"the collective has {n} ranks but the topology has {self.num_ranks} nodes", 2
            )
        self.kind = c.kind
        self.chunk_factor = c.chunk_factor
        self.inplace = c.inplace
        self.coll_name = c.name
        try:
            base = Collective(c.kind, n, c.chunk_factor, c.inplace)
        except CollcError as e:
            raise ApiError(e.message, 2) from None
        total = n * (base.input_chunks(0) + base.output_chunks(0))
        if total > self.api.limits.max_buffer_slots:
            raise ApiError(
                f"the collective needs {total} buffer slots, more than the limit of "
                f"{self.api.limits.max_buffer_slots}",
                2,
            )
        self.base = base
        self.in_sizes = [base.input_chunks(r) for r in range(n)]
        self.out_sizes = [base.output_chunks(r) for r in range(n)]
        cf = c.chunk_factor
        for r in range(n):
            inp: list[Slot] = []
            for i in range(self.in_sizes[r]):
                if c.kind is CollectiveKind.ALLTOALL:
                    inp.append(Chunk(r, i, i // cf, r * cf + i % cf))
                else:
                    inp.append(Chunk(r, i))
            out: list[Slot] = [None] * self.out_sizes[r]
            bufs: dict[object, list[Slot]] = {BufferName.input: inp, BufferName.output: out}
            if c.inplace:
                # The aliased buffer lives in its partner: place the input where it belongs.
                pb, shift = base.physical(r, IRBuffer.INPUT, 0)
                if pb is IRBuffer.OUTPUT:
                    out[shift : shift + len(inp)] = inp
                    bufs[BufferName.input] = []
            self.buffers.append(bufs)

    def _init_send_recv(self, c: SendRecvCollective) -> None:
        if self.num_ranks != 2:
            raise ApiError(f"SendRecv has 2 ranks but the topology has {self.num_ranks} nodes", 2)
        cf = c.chunk_factor
        self.kind = CollectiveKind.CUSTOM
        self.chunk_factor = cf
        # In place, msccl-tools' SendRecv aliases output slot j to input slot j.
        self.inplace = c.inplace
        self.alias_output = c.inplace
        self.coll_name = c.name
        self.in_sizes = [cf, cf]
        self.out_sizes = [cf, cf]
        pre: list[list[Slot]] = [[Chunk(r, i) for i in range(cf)] for r in range(2)]
        post: list[list[Slot]] = [[Chunk(1 - r, i) for i in range(cf)] for r in range(2)]
        self.initial_input = pre
        self.custom_output = post
        self.expected = [list(o) for o in post]
        self.buffers = [
            {
                BufferName.input: list(self.initial_input[r]),
                BufferName.output: [] if c.inplace else [None] * cf,
            }
            for r in range(2)
        ]

    def _init_custom(self, inst: UserInstance) -> None:
        rt = self.api.runtime
        attrs = inst.attrs
        n = attrs.get("num_ranks")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ApiError(
                f"the custom collective {inst.cls.name} has no num_ranks (call "
                "Collective.__init__(self, num_ranks, chunk_factor, inplace))",
                2,
            )
        if n != self.num_ranks:
            raise ApiError(
                f"the collective has {n} ranks but the topology has {self.num_ranks} nodes", 2
            )
        if attrs.get("inplace") and inst.cls.overrides("get_buffer_index"):
            raise ApiError(
                f"{inst.cls.name} defines get_buffer_index: collc runs custom collectives in "
                "place with msccl-tools' default (the input and output stay apart) only",
                2,
            )
        self.kind = CollectiveKind.CUSTOM
        cf = attrs.get("chunk_factor", 1)
        self.chunk_factor = cf if isinstance(cf, int) and not isinstance(cf, bool) else 1
        # msccl-tools runs a custom collective in place with the aliases its class's
        # get_buffer_index defines; Collective's default defines none, so the input and the
        # output stay apart exactly as out of place (the flag only marks the XML header).
        self.inplace = bool(attrs.get("inplace"))
        name = attrs.get("name", "custom")
        self.coll_name = name if isinstance(name, str) and name else "custom"
        result = rt.call(rt.get_attr(inst, "init_buffers"), [], {})
        if not isinstance(result, list | tuple) or len(result) != n:
            raise ApiError(
                f"{inst.cls.name}.init_buffers() must return a list of {n} dicts "
                "({Buffer.input: [...], Buffer.output: [...]})",
                2,
            )
        self.in_sizes = []
        self.out_sizes = []
        self.custom_output = []
        self.initial_input = []
        total = 0
        for r, bufs in enumerate(result):
            if not isinstance(bufs, dict):
                raise ApiError(f"init_buffers()[{r}] must be a dict, got {type_name(bufs)}", 2)
            lists: dict[object, list[Slot]] = {}
            for key in (BufferName.input, BufferName.output):
                vals = bufs.get(key, [])
                if not isinstance(vals, list | tuple):
                    raise ApiError(f"init_buffers()[{r}][{key!r}] must be a list", 2)
                total += len(vals)
                if total > self.api.limits.max_buffer_slots:
                    raise ApiError("init_buffers() returns too many slots", 2)
                out: list[Slot] = []
                for v in vals:
                    if v is not None and not isinstance(v, Chunk | ReduceChunk):
                        raise ApiError(
                            f"init_buffers()[{r}][{key!r}] holds {type_name(v)}, expected Chunk or None",
                            2,
                        )
                    if isinstance(v, Chunk) and not 0 <= v.origin_rank < n:
                        raise ApiError(f"init_buffers(): {v!r} names a rank that does not exist", 2)
                    out.append(v)
                lists[key] = out
            for key in bufs:
                if key not in (BufferName.input, BufferName.output):
                    raise ApiError(f"init_buffers()[{r}] has an unknown buffer {key!r}", 2)
            self.in_sizes.append(len(lists[BufferName.input]))
            self.out_sizes.append(len(lists[BufferName.output]))
            self.custom_output.append(list(lists[BufferName.output]))
            self.initial_input.append(list(lists[BufferName.input]))
            self.buffers.append(lists)

    # -- context ---------------------------------------------------------------------------------
    def enter(self) -> object:
        api = self.api
        if api.current is not None:
            raise ApiError("MSCCLProgram blocks cannot be nested")
        if self.finished:
            raise ApiError("this MSCCLProgram was already used in a with block")
        api.current = self
        self.active = True
        return self

    def exit(self, failed: bool) -> None:
        self.active = False
        self.finished = True
        if self.api.current is self:
            self.api.current = None
        if not failed:
            self.api.programs.append(self)

    def require_active(self, what: str) -> None:
        if not self.active:
            raise ApiError(f"{what} outside the `with MSCCLProgram(...)` block of its program")

    @property
    def buffers_view(self) -> BuffersView:
        return BuffersView(self)

    def __repr__(self) -> str:
        return f"MSCCLProgram({self.name!r})"

    # -- slots -----------------------------------------------------------------------------------
    def check_rank(self, rank: object, arg: int | str) -> int:
        r = as_int(rank, "the rank", arg)
        if not 0 <= r < self.num_ranks:
            raise ApiError(
                f"rank {r} does not exist (the program has ranks 0..{self.num_ranks - 1})", arg
            )
        return r

    def scratch_key(self, buffer: object, arg: int | str) -> object:
        if isinstance(buffer, BufferName):
            return buffer
        if isinstance(buffer, list | dict):
            raise ApiError(f"a scratch buffer name must be hashable, got {type_name(buffer)}", arg)
        try:
            hash(buffer)
        except TypeError:
            raise ApiError(
                f"a scratch buffer name must be hashable, got {type_name(buffer)}", arg
            ) from None
        return buffer

    def logical_size(self, rank: int, key: object) -> int | None:
        if key is BufferName.input:
            return self.in_sizes[rank]
        if key is BufferName.output:
            return self.out_sizes[rank]
        return None

    def check_range(self, rank: int, key: object, index: int, size: int, arg: int | str) -> None:
        n = self.logical_size(rank, key)
        if n is None:
            limit = self.api.limits.max_buffer_slots
            if index < 0 or index + size > limit:
                raise ApiError(
                    f"index {index} is out of range for a scratch buffer (at most {limit} chunks)",
                    arg,
                )
            return
        if index < 0 or index + size > n:
            what = f"index {index}" if size == 1 else f"chunks {index}..{index + size - 1}"
            raise ApiError(
                f"{what} out of range: rank {rank}'s {buffer_label(key)} buffer has {n} chunks",
                arg,
            )

    def physical(self, rank: int, key: object, index: int) -> tuple[object, int]:
        """The storage slot behind a logical input/output slot (in-place aliasing)."""
        if self.alias_output and key is BufferName.output:
            return BufferName.input, index
        if self.base is None or not self.inplace or not isinstance(key, BufferName):
            return key, index
        if key is BufferName.scratch:
            return key, index
        pb, pi = self.base.physical(rank, _IR_BUFFER[key], index)
        return _FROM_IR[pb], pi

    def storage(self, rank: int, key: object, grow_to: int = 0) -> list[Slot]:
        bufs = self.buffers[rank]
        lst = bufs.get(key)
        if lst is None:
            lst = bufs[key] = []
        if grow_to > len(lst):
            lst.extend([None] * (grow_to - len(lst)))
        return lst

    def read(self, rank: int, key: object, index: int, size: int, what: str) -> list[Slot]:
        lst = self.buffers[rank].get(key, [])
        values = lst[index : index + size]
        for k in range(size):
            if k >= len(values) or values[k] is None:
                raise ApiError(
                    f"{what} reads rank {rank} {buffer_label(key)}[{index + k}], which holds no chunk"
                )
        return values

    def logical_slots(self, rank: int, key: object) -> tuple[Slot, ...]:
        """A rank's buffer as the program sees it (in-place aliases resolved)."""
        n = self.logical_size(rank, key)
        if n is None:
            k = self.scratch_key(key, 0)
            return tuple(self.buffers[rank].get(k, ()))
        out: list[Slot] = []
        for i in range(n):
            pk, pi = self.physical(rank, key, i)
            lst = self.buffers[rank].get(pk, [])
            out.append(lst[pi] if pi < len(lst) else None)
        return tuple(out)

    def check_link(self, src: int, dst: int) -> None:
        if not self.topo.link(src, dst):
            raise ApiError(f"no link from rank {src} to rank {dst} in topology {self.topo.name!r}")

    def record(
        self,
        kind: int,
        src_rank: int,
        src_buf: object,
        src_index: int,
        dst_rank: int,
        dst_buf: object,
        dst_index: int,
        size: int,
        sendtb: int,
        recvtb: int,
        ch: int,
    ) -> None:
        limit = self.api.limits.max_ops
        if (len(self.ops) + 1) * self.instances * 2 > limit:
            raise ApiError(
                f"the program records more than {limit:,} operations ({len(self.ops) + 1:,} "
                f"copy/reduce calls x {self.instances} instance"
                f"{'s' if self.instances > 1 else ''} x send and receive); a loop that never "
                "ends? (raise the limit with --max-ops)"
            )
        line, col = self.api.runtime.call_position()
        self.ops.append(
            RecordedOp(
                kind,
                src_rank,
                src_buf,
                src_index,
                dst_rank,
                dst_buf,
                dst_index,
                size,
                sendtb,
                recvtb,
                ch,
                line,
                col,
            )
        )
