"""collc's own implementation of the MSCCLang API that programs run against.

It follows MSCCLang's semantics (as msccl-tools defines them): ``MSCCLProgram`` as a
``with`` context, the collectives, ``chunk``, ``Ref.copy``/``reduce``/``split``/``group``,
named scratch buffers, ``Check()`` (symbolic) and ``XML()``. Calls do not build MSCCL
instructions: they update the symbolic buffer contents (so ``chunk`` returns None for an
empty slot and ``Check`` can compare) and record one `RecordedOp` per copy or reduce, which
`lowering.py` turns into a `chakra_ir.Program`.

Errors are `ApiError`s; the interpreter reports them at the call with the program's line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from chakra_ir.collective import Buffer as IRBuffer
from chakra_ir.collective import Collective, CollectiveKind, Contents, describe, merge
from mscclang_frontend.errors import CompileError
from mscclang_frontend.values import (
    ApiError,
    Builtin,
    BuiltinClass,
    ContextValue,
    Namespace,
    Unavailable,
    UserInstance,
    type_name,
)
from topologies.errors import CollcError


class Runtime(Protocol):
    """What the API needs from the interpreter."""

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object: ...

    def get_attr(self, obj: object, name: str) -> object: ...

    def write(self, text: str) -> None: ...

    def call_position(self) -> tuple[int, int]: ...


@dataclass(frozen=True)
class ApiLimits:
    """Bounds on what a program may build (it is run, so it must not exhaust the machine)."""

    max_ranks: int = 1 << 16
    max_buffer_slots: int = 1 << 22
    max_instances: int = 1 << 10
    max_ops: int = 200_000
    """Operations of the lowered program (a copy between ranks is two, times the instances).
    The default stops a loop that keeps recording within seconds; --max-ops raises it."""


# ------------------------------------------------------------------------------ enums
class BufferName(Enum):
    """MSCCLang's ``Buffer``: the input, output and (default) scratch buffer."""

    input = "i"
    output = "o"
    scratch = "s"

    def __repr__(self) -> str:
        return f"Buffer.{self.name}"

    __str__ = __repr__


class ThreadblockPolicy(Enum):
    auto = "auto"
    manual = "manual"

    def __repr__(self) -> str:
        return f"ThreadblockPolicy.{self.name}"

    __str__ = __repr__


_IR_BUFFER = {BufferName.input: IRBuffer.INPUT, BufferName.output: IRBuffer.OUTPUT}
_FROM_IR = {IRBuffer.INPUT: BufferName.input, IRBuffer.OUTPUT: BufferName.output}
PROTOCOLS = ("Simple", "LL", "LL128")


# ------------------------------------------------------------------------------ chunks
@dataclass(frozen=True, slots=True)
class Chunk:
    """A plain chunk: slot ``origin_index`` of rank ``origin_rank``'s input.

    ``dst_rank``/``dst_index`` say where it must end (all-to-all routing, custom collectives).
    Equality compares all four fields, as MSCCLang's does.
    """

    origin_rank: int
    origin_index: int
    dst_rank: int = -1
    dst_index: int = -1

    @property
    def contents(self) -> Contents:
        return ((self.origin_index, 1 << self.origin_rank),)


@dataclass(frozen=True, slots=True, eq=False)
class ReduceChunk:
    """The reduction of several chunks; equal to another when the contributions are equal."""

    creation_rank: int
    chunks: tuple[Chunk, ...]
    contents: Contents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReduceChunk) and other.contents == self.contents

    def __hash__(self) -> int:
        return hash(self.contents)

    def __repr__(self) -> str:
        return f"ReduceChunk(creation_rank={self.creation_rank}, {describe(self.contents)})"


Slot = Chunk | ReduceChunk | None


def slot_contents(v: Slot) -> Contents | None:
    return None if v is None else v.contents


def _describe_slot(v: Slot) -> str:
    return describe(slot_contents(v))


# ------------------------------------------------------------------------------ helpers
def as_int(v: object, what: str, arg: int | str | None = None, minimum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ApiError(f"{what} must be an int, got {type_name(v)} {v!r}", arg)
    if minimum is not None and v < minimum:
        raise ApiError(f"{what} must be at least {minimum}, got {v}", arg)
    return v


def as_bool(v: object, what: str, arg: int | str | None = None) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ApiError(f"{what} must be True or False, got {type_name(v)} {v!r}", arg)


def _buffer_label(key: object) -> str:
    if isinstance(key, BufferName):
        return key.name
    return f"scratch buffer {key!r}"


# ------------------------------------------------------------------------------ topologies
class Topology:
    """MSCCLang's topology: only the number of nodes and the existence of links matter.

    ``link(src, dst)`` is the bandwidth of the link from ``src`` to ``dst`` (0: none);
    MSCCLang stores it as ``links[dst][src]``.
    """

    def __init__(
        self,
        name: str,
        num_nodes: int,
        link_fn: Callable[[int, int], float],
    ) -> None:
        self.name = name
        self._n = num_nodes
        self._link = link_fn

    def num_nodes(self) -> int:
        return self._n

    def link(self, src: int, dst: int) -> float:
        src = as_int(src, "src", 0)
        dst = as_int(dst, "dst", 1)
        if not (0 <= src < self._n and 0 <= dst < self._n):
            raise ApiError(f"link({src}, {dst}): the topology has nodes 0..{self._n - 1}")
        return self._link(src, dst)

    @property
    def links(self) -> list[list[float]]:
        if self._n > 4096:
            raise ApiError(f"links of a {self._n}-node topology are too many to list")
        return [[self._link(s, d) for s in range(self._n)] for d in range(self._n)]

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, {self._n} nodes)"


def _topology_size(n: object, limits: ApiLimits) -> int:
    size = as_int(n, "the number of nodes", 0, minimum=1)
    if size > limits.max_ranks:
        raise ApiError(f"topologies are limited to {limits.max_ranks} nodes, got {size}", 0)
    return size


def _user_topology(name: object, links: object, switches: object = None) -> Topology:
    if not isinstance(name, str):
        raise ApiError(f"the topology name must be a string, got {type_name(name)}", 0)
    if not isinstance(links, list | tuple) or not links:
        raise ApiError("links must be a non-empty list of lists (links[dst][src])", 1)
    n = len(links)
    table: list[list[float]] = []
    for d, row in enumerate(links):
        if not isinstance(row, list | tuple) or len(row) != n:
            raise ApiError(f"links[{d}] must be a list of {n} bandwidths", 1)
        vals: list[float] = []
        for x in row:
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise ApiError(f"links[{d}] holds {type_name(x)} {x!r}, expected a number", 1)
            vals.append(x)
        table.append(vals)
    return Topology(name, n, lambda s, d: table[d][s])


# ------------------------------------------------------------------------------ collectives
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


class Ref:
    """A reference to ``size`` consecutive slots of one buffer of one rank (physical)."""

    __slots__ = ("buffer", "index", "prog", "rank", "size")

    def __init__(self, prog: ProgramState, rank: int, buffer: object, index: int, size: int):
        self.prog = prog
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size

    def __repr__(self) -> str:
        return (
            f"Ref(rank={self.rank}, buffer={self.buffer!r}, index={self.index}, size={self.size})"
        )

    # -- reading ---------------------------------------------------------------------------------
    def _slot(self, i: object, what: str) -> Chunk:
        k = as_int(i, "the offset", 0)
        if not 0 <= k < self.size:
            raise ApiError(f"{what}({k}): the reference holds {self.size} chunks", 0)
        v = self.prog.storage(self.rank, self.buffer)[self.index + k]
        if not isinstance(v, Chunk):
            state = "is empty" if v is None else "holds a reduction"
            raise ApiError(
                f"{what}: rank {self.rank} {_buffer_label(self.buffer)}[{self.index + k}] {state}"
            )
        return v

    def get_origin_rank(self, i: object = 0) -> int:
        return self._slot(i, "get_origin_rank").origin_rank

    def get_origin_index(self, i: object = 0) -> int:
        return self._slot(i, "get_origin_index").origin_index

    def get_dst_rank(self, i: object = 0) -> int:
        return self._slot(i, "get_dst_rank").dst_rank

    def get_dst_index(self, i: object = 0) -> int:
        return self._slot(i, "get_dst_index").dst_index

    # -- shaping ---------------------------------------------------------------------------------
    def split(self, num: object) -> list[Ref]:
        n = as_int(num, "split()'s count", 0, minimum=1)
        if self.size % n:
            raise ApiError(
                f"split({n}): a reference of {self.size} chunks does not split evenly", 0
            )
        part = self.size // n
        return [
            Ref(self.prog, self.rank, self.buffer, self.index + i * part, part) for i in range(n)
        ]

    def group(self, other: object) -> Ref:
        if not isinstance(other, Ref):
            raise ApiError(f"group() needs a chunk reference, got {type_name(other)}", 0)
        if other.rank != self.rank or other.buffer != self.buffer:
            raise ApiError("group() joins references of the same rank and buffer", 0)
        first = min(self.index, other.index)
        last = max(self.index + self.size, other.index + other.size)
        if last - first != self.size + other.size:
            raise ApiError("group() joins adjacent references only", 0)
        return Ref(self.prog, self.rank, self.buffer, first, last - first)

    # -- operations ------------------------------------------------------------------------------
    def copy(
        self,
        dst: object,
        buffer: object = None,
        index: object = -1,
        sendtb: object = -1,
        recvtb: object = -1,
        ch: object = -1,
    ) -> Ref | None:
        prog = self.prog
        prog.require_active("copy()")
        d = prog.check_rank(dst, "dst")
        idx = as_int(index, "index", "index", minimum=-1)
        stb = as_int(sendtb, "sendtb", "sendtb", minimum=-1)
        rtb = as_int(recvtb, "recvtb", "recvtb", minimum=-1)
        c = as_int(ch, "ch", "ch", minimum=-1)
        size = self.size
        if buffer is None:
            key = self.buffer
            if idx == -1:
                idx = self.index
            else:
                prog.check_range(d, key, idx, size, "index")
        elif isinstance(buffer, BufferName) and buffer is not BufferName.scratch:
            if idx == -1:
                raise ApiError(f"copy() into {buffer!r} needs an index", "index")
            prog.check_range(d, buffer, idx, size, "index")
            # MSCCLang resolves the alias with the *sending* rank's offset (its copy() calls
            # collective.get_buffer_index(self.rank, ...)): in an in-place all-gather,
            # ``c.copy(r2, Buffer.input, j)`` from rank r1 lands in r2's output[r1 * cf + j].
            key, idx = prog.physical(self.rank, buffer, idx)
            prog.check_range(d, key, idx, size, "index")
        else:
            key = prog.scratch_key(buffer, "buffer")
            if idx == -1:
                idx = len(prog.buffers[d].get(key, ()))
            prog.check_range(d, key, idx, size, "index")
        if d == self.rank and key == self.buffer and idx == self.index:
            return None
        if d != self.rank:
            prog.check_link(self.rank, d)
        values = prog.read(self.rank, self.buffer, self.index, size, "copy()")
        target = prog.storage(d, key, grow_to=idx + size)
        target[idx : idx + size] = values
        prog.record(COPY, self.rank, self.buffer, self.index, d, key, idx, size, stb, rtb, c)
        return Ref(prog, d, key, idx, size)

    def reduce(
        self,
        other: object,
        sendtb: object = -1,
        recvtb: object = -1,
        ch: object = -1,
    ) -> Ref:
        prog = self.prog
        prog.require_active("reduce()")
        if not isinstance(other, Ref):
            hint = " (chunk() returns None for an empty slot)" if other is None else ""
            raise ApiError(f"reduce() needs a chunk reference, got {type_name(other)}{hint}", 0)
        if other.prog is not prog:
            raise ApiError("reduce() of a chunk of another program", 0)
        stb = as_int(sendtb, "sendtb", "sendtb", minimum=-1)
        rtb = as_int(recvtb, "recvtb", "recvtb", minimum=-1)
        c = as_int(ch, "ch", "ch", minimum=-1)
        size = self.size
        if other.size != size:
            raise ApiError(f"reduce() of {other.size} chunks into a reference of {size} chunks", 0)
        if (
            other.rank == self.rank
            and other.buffer == self.buffer
            and other.index < self.index + size
            and self.index < other.index + size
        ):
            raise ApiError("reduce() of a chunk with itself", 0)
        if other.rank != self.rank:
            prog.check_link(other.rank, self.rank)
        theirs = prog.read(other.rank, other.buffer, other.index, size, "reduce()")
        mine = prog.read(self.rank, self.buffer, self.index, size, "reduce()")
        target = prog.storage(self.rank, self.buffer)
        for k in range(size):
            a, b = mine[k], theirs[k]
            assert a is not None and b is not None
            merged = merge(a.contents, b.contents)
            if merged is None:
                raise ApiError(
                    f"reduce(): rank {self.rank} {_buffer_label(self.buffer)}[{self.index + k}] "
                    f"holds {_describe_slot(a)}, and adding {_describe_slot(b)} would count a "
                    "contribution twice",
                    0,
                )
            parts = (a,) if isinstance(a, Chunk) else a.chunks
            parts += (b,) if isinstance(b, Chunk) else b.chunks
            target[self.index + k] = ReduceChunk(self.rank, parts, merged)
        prog.record(
            REDUCE,
            other.rank,
            other.buffer,
            other.index,
            self.rank,
            self.buffer,
            self.index,
            size,
            stb,
            rtb,
            c,
        )
        return self


# ------------------------------------------------------------------------------ the program
class ProgramState(ContextValue):
    """A ``MSCCLProgram``: its options, the symbolic buffers and the recorded operations."""

    def __init__(
        self,
        api: MscclApi,
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
                f"{what} out of range: rank {rank}'s {_buffer_label(key)} buffer has {n} chunks",
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
                    f"{what} reads rank {rank} {_buffer_label(key)}[{index + k}], which holds no chunk"
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

    # -- Check -----------------------------------------------------------------------------------
    def check(self) -> bool:
        rt = self.api.runtime
        self.check_called = True
        if self.expected is not None:
            return self._check_expected(self.expected)
        if self.base is None:
            assert isinstance(self.collective, UserInstance)
            result = rt.call(rt.get_attr(self.collective, "check"), [self], {})
            if not result:
                raise ApiError("Check() failed: the custom collective's check() returned False")
            self.check_snapshot = [
                list(self.logical_slots(r, BufferName.output)) for r in range(self.num_ranks)
            ]
            return True
        wrong: list[str] = []
        for r in range(self.num_ranks):
            expected = self.base.expected_output(r)
            outputs = self.logical_slots(r, BufferName.output)
            for j, want in enumerate(expected):
                if want is None:
                    continue
                have = slot_contents(outputs[j])
                if have != want:
                    line = (
                        f"Rank {r} chunk {j} is incorrect: expected {describe(want)}, "
                        f"found {describe(have)}"
                    )
                    rt.write(line + "\n")
                    wrong.append(line)
        if wrong:
            raise ApiError(
                f"Check() failed: {len(wrong)} output chunk{'s' if len(wrong) > 1 else ''} "
                f"wrong; first: {wrong[0][0].lower()}{wrong[0][1:]}"
            )
        return True

    def _check_expected(self, expected: list[list[Slot]]) -> bool:
        rt = self.api.runtime
        wrong: list[str] = []
        for r in range(self.num_ranks):
            outputs = self.logical_slots(r, BufferName.output)
            for j, want in enumerate(expected[r]):
                have = slot_contents(outputs[j])
                if want is not None and have != want.contents:
                    line = (
                        f"Rank {r} chunk {j} is incorrect: expected {_describe_slot(want)}, "
                        f"found {describe(have)}"
                    )
                    rt.write(line + "\n")
                    wrong.append(line)
        if wrong:
            raise ApiError(
                f"Check() failed: {len(wrong)} output chunk{'s' if len(wrong) > 1 else ''} "
                f"wrong; first: {wrong[0][0].lower()}{wrong[0][1:]}"
            )
        return True


# ------------------------------------------------------------------------------ the API object
class MscclApi:
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

    def _active(self, what: str) -> ProgramState:
        if self.current is None:
            raise ApiError(f"{what} called outside a `with MSCCLProgram(...)` block")
        return self.current

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
            return None
        return Ref(prog, r, key, pi, n)

    def check(self) -> bool:
        return self._active("Check()").check()

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

    def topology_builder(self, kind: str) -> Callable[..., Topology]:
        limits = self.limits

        def make(num_nodes: object, non_blocking: object = True) -> Topology:
            n = _topology_size(num_nodes, limits)
            if kind in ("fully_connected", "hub_and_spoke"):
                return Topology(kind, n, lambda s, d: 1.0 if s != d else 0.0)
            if kind == "ring":
                return Topology(
                    kind, n, lambda s, d: 1.0 if s != d and (s - d) % n in (1, n - 1) else 0.0
                )
            if kind == "line":
                return Topology(kind, n, lambda s, d: 1.0 if abs(s - d) == 1 else 0.0)
            return Topology(kind, n, lambda s, d: 1.0 if s != d and (s == 0 or d == 0) else 0.0)

        return make

    def modules(self) -> dict[str, Namespace]:
        """The importable ``msccl`` modules, by dotted name.

        Names msccl-tools defines but collc does not provide are `Unavailable`: importing them
        works, using them is an error at the use.
        """
        from mscclang_frontend.msccl_topologies import topology_modules

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
            "Chunk": Builtin("Chunk", _make_chunk),
            "ReduceChunk": Builtin("ReduceChunk", _make_reduce_chunk),
        }
        generic = {
            "Topology": Builtin("Topology", _user_topology),
            **{
                k: Builtin(k, self.topology_builder(k))
                for k in ("fully_connected", "ring", "line", "star", "hub_and_spoke")
            },
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
            **topology_modules(generic, self.limits),
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


def _make_chunk(
    origin_rank: object, origin_index: object, dst_rank: object = -1, dst_index: object = -1
) -> Chunk:
    return Chunk(
        as_int(origin_rank, "origin_rank", 0, minimum=0),
        as_int(origin_index, "origin_index", 1, minimum=0),
        as_int(dst_rank, "dst_rank", 2, minimum=-1),
        as_int(dst_index, "dst_index", 3, minimum=-1),
    )


def _make_reduce_chunk(creation_rank: object, chunks: object) -> ReduceChunk:
    r = as_int(creation_rank, "creation_rank", 0, minimum=0)
    if not isinstance(chunks, list | tuple) or not chunks:
        raise ApiError("ReduceChunk needs a non-empty list of chunks", 1)
    contents: Contents | None = None
    parts: list[Chunk] = []
    for c in chunks:
        if not isinstance(c, Chunk):
            raise ApiError(f"ReduceChunk lists Chunks, got {type_name(c)}", 1)
        parts.append(c)
        contents = c.contents if contents is None else merge(contents, c.contents)
        if contents is None:
            raise ApiError("ReduceChunk lists a chunk twice", 1)
    assert contents is not None
    return ReduceChunk(r, tuple(parts), contents)


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
