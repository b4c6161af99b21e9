"""``Ref``: what ``chunk()`` returns, a reference to consecutive slots of one buffer of one rank,
with ``copy``, ``reduce``, ``split``, ``group`` and the ``get_origin_*``/``get_dst_*`` readers;
``copy`` and ``reduce`` update the symbolic buffers and record the operation.
"""

from __future__ import annotations

from chakra_ir.collective import merge
from mscclang_frontend.msccl_program import COPY, REDUCE, ProgramState
from mscclang_frontend.msccl_types import (
    HINT_MAX,
    BufferName,
    Chunk,
    ReduceChunk,
    as_int,
    buffer_label,
    describe_slot,
)
from mscclang_frontend.values import ApiError, type_name


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
                f"{what}: rank {self.rank} {buffer_label(self.buffer)}[{self.index + k}] {state}"
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
        stb = as_int(sendtb, "sendtb", "sendtb", minimum=-1, maximum=HINT_MAX)
        rtb = as_int(recvtb, "recvtb", "recvtb", minimum=-1, maximum=HINT_MAX)
        c = as_int(ch, "ch", "ch", minimum=-1, maximum=HINT_MAX)
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
        stb = as_int(sendtb, "sendtb", "sendtb", minimum=-1, maximum=HINT_MAX)
        rtb = as_int(recvtb, "recvtb", "recvtb", minimum=-1, maximum=HINT_MAX)
        c = as_int(ch, "ch", "ch", minimum=-1, maximum=HINT_MAX)
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
                    f"reduce(): rank {self.rank} {buffer_label(self.buffer)}[{self.index + k}] "
                    f"holds {describe_slot(a)}, and adding {describe_slot(b)} would count a "
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
