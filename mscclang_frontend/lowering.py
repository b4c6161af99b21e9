"""Lowering: the operations a MSCCLang program recorded become a verified `chakra_ir.Program`.

MSCCLang's semantics carry over (as msccl-tools defines them):

- a copy between ranks is a Send and its Recv, on one rank a Copy; a reduce between ranks is
  a Send and a reducing Recv on the accumulating rank, on one rank a Reduce; a reference of
  ``size`` chunks is one operation moving ``size`` slots;
- per-slot dependencies (`ProgramBuilder` with ``auto_deps``), on physical slots: in-place
  programs use the collective's aliases;
- named scratch buffers are laid out one after another in each rank's scratch buffer, in the
  order the rank first used them, each taking its size times the instances;
- ``instances`` N replicates every operation: clone ``i`` moves input/output slot
  ``idx * N + i * size`` (interleaved, the default) or ``len(buffer) * i + idx``, scratch slot
  ``size(name) * i + idx``; channel ``max_channels * i + ch`` (operations without a channel
  get channel ``max_channels * i`` when N > 1); threadblock ``tb * N + i``;
- the manual threadblock (``sendtb`` on the send or local operation, ``recvtb`` on the
  receive; only under ``ThreadblockPolicy.manual``) and the channel travel as `Hints`.

The program is verified; a failure is a `CompileError` at the line of the call that recorded
the failing operation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chakra_ir.collective import Buffer as IRBuffer
from chakra_ir.collective import (
    Collective,
    CollectiveKind,
    Contents,
    custom_collective,
    merge,
)
from chakra_ir.program import NO_HINTS, Hints, Program, ProgramBuilder, Slice
from chakra_ir.verify import VerifyError, verify
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.msccl_check import more_wrong, wrong_outputs
from mscclang_frontend.msccl_program import COPY, ProgramState, RecordedOp
from mscclang_frontend.msccl_types import BufferName, Chunk, ThreadblockPolicy, slot_contents
from mscclang_frontend.xml.collective import run_symbolically
from topologies.errors import CollcError, SourcePos


@dataclass
class CompiledProgram:
    """The result of compiling a MSCCLang program.

    ``program`` is the verified Program; ``name`` the MSCCLProgram's name; ``options`` its
    settings (``protocol``, ``instances``, ``threadblock_policy`` as "auto"/"manual",
    ``instr_fusion``, ``interleaved_replication``, ``check_xml``, ``dependence_nop``) and
    facts about it (``collective`` as MSCCLang names it, ``chunk_factor``, ``inplace``,
    ``num_ranks``, ``topology``, ``as_custom`` when compiled ``--as-custom``); ``stdout`` what the program printed (print, Check, XML);
    ``xml_requested`` whether it called ``XML()``; ``recorded_ops`` how many copy/reduce calls
    it made (before replication).
    """

    program: Program
    name: str
    options: dict[str, object]
    stdout: str
    xml_requested: bool
    recorded_ops: int = 0
    _source: Source | None = field(default=None, repr=False, compare=False)
    _sites: list[list[tuple[int, int]]] = field(default_factory=list, repr=False, compare=False)

    def position_of(self, rank: int, op: int) -> SourcePos | None:
        """The program line that recorded operation ``op`` of ``rank``, if known."""
        if self._source is None or not 0 <= rank < len(self._sites):
            return None
        sites = self._sites[rank]
        if not 0 <= op < len(sites):
            return None
        line, col = sites[op]
        return self._source.pos(line, col)


def _options(state: ProgramState) -> dict[str, object]:
    return {
        "protocol": state.protocol,
        "instances": state.instances,
        "threadblock_policy": state.threadblock_policy.value,
        "interleaved_replication": state.interleaved_replication,
        "instr_fusion": state.instr_fusion,
        "check_xml": state.check_xml,
        "dependence_nop": state.dependence_nop,
        "collective": state.coll_name,
        "chunk_factor": state.chunk_factor,
        "inplace": state.inplace,
        "num_ranks": state.num_ranks,
        "topology": state.topo.name,
    }


class _Layout:
    """Where the slots of every instance of every buffer go."""

    def __init__(self, state: ProgramState) -> None:
        self.instances = state.instances
        self.interleaved = state.interleaved_replication
        self.in_sizes = state.in_sizes
        self.out_sizes = state.out_sizes
        self.scratch: list[dict[object, tuple[int, int]]] = []
        for bufs in state.buffers:
            offsets: dict[object, tuple[int, int]] = {}
            off = 0
            for key, slots in bufs.items():
                if key is BufferName.input or key is BufferName.output:
                    continue
                offsets[key] = (off, len(slots))
                off += len(slots) * self.instances
            self.scratch.append(offsets)

    def slice(self, rank: int, key: object, index: int, size: int, i: int) -> Slice:
        n = self.instances
        if key is BufferName.input or key is BufferName.output:
            buf = IRBuffer.INPUT if key is BufferName.input else IRBuffer.OUTPUT
            if n > 1:
                if self.interleaved:
                    index = index * n + i * size
                else:
                    length = (self.in_sizes if key is BufferName.input else self.out_sizes)[rank]
                    index = length * i + index
            return Slice(buf, index, size)
        off, length = self.scratch[rank][key]
        return Slice(IRBuffer.SCRATCH, off + length * i + index, size)

    def in_index(self, rank: int, index: int, i: int) -> int:
        """Input slot ``index`` of ``rank`` in clone ``i`` (one slot at a time)."""
        n = self.instances
        if n == 1:
            return index
        if self.interleaved:
            return index * n + i
        return self.in_sizes[rank] * i + index

    def out_index(self, rank: int, index: int, i: int) -> int:
        n = self.instances
        if n == 1:
            return index
        if self.interleaved:
            return index * n + i
        return self.out_sizes[rank] * i + index


def _map_contents(c: Contents | None, layout: _Layout, i: int) -> Contents | None:
    """Contents of clone ``i``: each contribution's origin slot moves with its instance."""
    if c is None:
        return None
    out: Contents | None = None
    for idx, mask in c:
        r = 0
        m = mask
        while m:
            if m & 1:
                part: Contents = ((layout.in_index(r, idx, i), 1 << r),)
                out = part if out is None else merge(out, part)
                assert out is not None
            m >>= 1
            r += 1
    return out


def _replicate(
    pre: list[list[Contents | None]], post: list[list[Contents | None]], layout: _Layout
) -> tuple[list[list[Contents | None]], list[list[Contents | None]]]:
    n = layout.instances
    pre2: list[list[Contents | None]] = []
    post2: list[list[Contents | None]] = []
    for r in range(len(pre)):
        p: list[Contents | None] = [None] * (len(pre[r]) * n)
        q: list[Contents | None] = [None] * (len(post[r]) * n)
        for i in range(n):
            for j, c in enumerate(pre[r]):
                p[layout.in_index(r, j, i)] = _map_contents(c, layout, i)
            for j, c in enumerate(post[r]):
                q[layout.out_index(r, j, i)] = _map_contents(c, layout, i)
        pre2.append(p)
        post2.append(q)
    return pre2, post2


def _name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text) or "custom"


def _custom_conditions(
    state: ProgramState,
) -> tuple[list[list[Contents | None]], list[list[Contents | None]]]:
    """Pre- and postcondition of a custom collective (before replication).

    The precondition is init_buffers' input. The postcondition of an output slot is, in
    this order: the chunks whose ``dst_rank``/``dst_index`` name it (reduced together when
    several do); the chunk init_buffers put in the output slot; the slot's content when the
    program's own ``check()`` last passed in ``Check()``; else unchecked.
    """
    n = state.num_ranks
    pre = [[slot_contents(v) for v in slots] for slots in state.initial_input]
    post: list[list[Contents | None]] = [[None] * state.out_sizes[r] for r in range(n)]
    declared: set[tuple[int, int]] = set()
    for slots in state.initial_input:
        for v in slots:
            if (
                isinstance(v, Chunk)
                and 0 <= v.dst_rank < n
                and 0 <= v.dst_index < state.out_sizes[v.dst_rank]
            ):
                d, j = v.dst_rank, v.dst_index
                have = post[d][j]
                post[d][j] = v.contents if have is None else (merge(have, v.contents) or have)
                declared.add((d, j))
    assert state.custom_output is not None
    for r in range(n):
        for j, v in enumerate(state.custom_output[r]):
            if v is not None and (r, j) not in declared:
                post[r][j] = v.contents
                declared.add((r, j))
    if state.check_snapshot is not None:
        for r in range(n):
            for j, v in enumerate(state.check_snapshot[r]):
                if v is not None and (r, j) not in declared:
                    post[r][j] = v.contents
    return pre, post


def _collective(state: ProgramState, layout: _Layout, source: Source) -> Collective:
    n = state.instances
    base = state.base
    if base is None:
        pre, post = _custom_conditions(state)
        if n > 1:
            pre, post = _replicate(pre, post, layout)
        return custom_collective(
            state.num_ranks, pre, post, name=_name(state.coll_name), inplace=state.alias_output
        )
    if n == 1:
        return base
    candidate = Collective(base.kind, base.num_ranks, base.chunks_per_rank * n, base.inplace)
    if state.interleaved_replication or base.kind is CollectiveKind.ALLREDUCE:
        return candidate
    pre = [base.initial_input(r) for r in range(base.num_ranks)]
    post = [base.expected_output(r) for r in range(base.num_ranks)]
    pre, post = _replicate(pre, post, layout)
    same = all(
        pre[r] == candidate.initial_input(r) and post[r] == candidate.expected_output(r)
        for r in range(base.num_ranks)
    )
    if same:
        return candidate
    if base.inplace:
        line, col = state.position
        raise source.error(
            f"interleaved_replication=False with {n} instances changes the {state.coll_name} "
            "data layout, which an in-place collective cannot express; use interleaved "
            "replication",
            line,
            col,
        )
    return custom_collective(base.num_ranks, pre, post, name=f"{state.coll_name}-blocked")


def _build(
    state: ProgramState, collective: Collective, layout: _Layout, source: Source
) -> tuple[Program, list[list[tuple[int, int]]]]:
    """The Program of the recorded operations (replicated) for ``collective``."""
    n = state.instances
    builder = ProgramBuilder(collective, auto_deps=True, name=state.name)
    manual = state.threadblock_policy is ThreadblockPolicy.manual
    max_channels = max((op.ch for op in state.ops), default=-1) + 1
    max_channels = max(max_channels, 1)
    sites: list[list[tuple[int, int]]] = [[] for _ in range(state.num_ranks)]

    def hints(op: RecordedOp, tb: int, i: int) -> Hints:
        ch = op.ch
        if n > 1:
            ch = max_channels * i + max(ch, 0)
        thread = tb * n + i if manual and tb >= 0 else -1
        if ch == -1 and thread == -1:
            return NO_HINTS
        return Hints(channel=ch, threadblock=thread)

    try:
        for op in state.ops:
            site = (op.line, op.col)
            for i in range(n):
                src = layout.slice(op.src_rank, op.src_buf, op.src_index, op.size, i)
                dst = layout.slice(op.dst_rank, op.dst_buf, op.dst_index, op.size, i)
                if op.src_rank == op.dst_rank:
                    h = hints(op, op.sendtb, i)
                    if op.kind == COPY:
                        builder.copy(op.src_rank, src, dst, hints=h)
                    else:
                        builder.reduce(op.src_rank, src, dst, hints=h)
                    sites[op.src_rank].append(site)
                    continue
                builder.send(op.src_rank, op.dst_rank, src, hints=hints(op, op.sendtb, i))
                sites[op.src_rank].append(site)
                builder.recv(
                    op.dst_rank,
                    op.src_rank,
                    dst,
                    reduce=op.kind != COPY,
                    hints=hints(op, op.recvtb, i),
                )
                sites[op.dst_rank].append(site)
        return builder.build(), sites
    except CollcError as e:
        line, col = state.position
        raise source.error(e.message, line, col) from None


def _as_custom(
    state: ProgramState, standard: Collective, layout: _Layout, source: Source
) -> Collective:
    """The custom collective whose postcondition is what the program computes from the
    standard collective's input (``--as-custom``)."""
    line, col = state.position
    inplace = standard.inplace
    sizes = [(standard.input_chunks(r), standard.output_chunks(r)) for r in range(state.num_ranks)]
    if inplace and (standard.kind is not CollectiveKind.ALLREDUCE or any(i != o for i, o in sizes)):
        raise source.error(
            f"an in-place {state.coll_name} aliases slots at per-rank offsets, which a custom "
            "collective cannot express; --as-custom takes out-of-place programs and in-place "
            "all-reduces",
            line,
            col,
        )
    pre = [standard.initial_input(r) for r in range(state.num_ranks)]
    blank = custom_collective(
        state.num_ranks, pre, [[None] * o for _, o in sizes], name="custom", inplace=inplace
    )
    program, _ = _build(state, blank, layout, source)
    try:
        post = run_symbolically(program)
    except CollcError as e:
        raise source.error(
            f"--as-custom: the program's result cannot be computed: {e.message}", line, col
        ) from None
    return custom_collective(
        state.num_ranks, pre, post, name=_name(f"{state.coll_name}-as-custom"), inplace=inplace
    )


def lower(
    state: ProgramState,
    source: Source,
    stdout: str = "",
    xml_requested: bool = False,
    *,
    as_custom: bool = False,
) -> CompiledProgram:
    """The verified Program of a finished (or, for ``XML()``, running) MSCCLProgram.

    With ``as_custom`` a program over a standard collective becomes a custom collective
    whose postcondition is what the program computes (for programs that compute something
    else, whose ``Check()`` would fail). Raises `CompileError` at the recording call's line
    when the program does not verify; a program that never called ``Check()`` and computes
    something else is told about ``--as-custom``.
    """
    layout = _Layout(state)
    collective = _collective(state, layout, source)
    options = _options(state)
    if as_custom and collective.kind is not CollectiveKind.CUSTOM:
        collective = _as_custom(state, collective, layout, source)
        options["as_custom"] = True
    program, sites = _build(state, collective, layout, source)
    compiled = CompiledProgram(
        program,
        state.name,
        options,
        stdout,
        xml_requested,
        len(state.ops),
        source,
        sites,
    )
    try:
        verify(program)
    except VerifyError as e:
        pos = compiled.position_of(e.rank, e.op) if e.rank >= 0 and e.op >= 0 else None
        if pos is None:
            line, col = state.position
            pos = source.pos(line, col)
        if e.check == "semantics" and not as_custom:
            raise _wrong_result(state, source, pos, e.message, layout) from None
        message = _logical_indices(e.message, state, layout)
        raise CompileError(f"the compiled program does not verify: {message}", pos) from None
    return compiled


def _wrong_result(
    state: ProgramState, source: Source, pos: SourcePos, message: str, layout: _Layout
) -> CompileError:
    """The error of a program whose result is not its collective's: the first wrong output
    slot as the program's own indices name it, at the call that last wrote it.

    Only a program that ran to its end without calling ``Check()`` is pointed at
    ``--as-custom`` (msccl-tools' pipeline examples comment their ``Check()`` out on purpose);
    one that calls it, even after ``XML()``, is simply wrong.
    """
    wrong = wrong_outputs(state)
    if wrong:
        first = wrong[0]
        more = more_wrong(len(wrong) - 1)
        text = f"the program does not compute {state.coll_name}: {first.describe()}{more}"
        if first.writer is not None:
            pos = source.pos(first.writer.line, first.writer.col)
    else:
        text = f"the compiled program does not verify: {_logical_indices(message, state, layout)}"
    if not state.check_called and state.finished and state.base is not None:
        text += (
            f" (the program never calls Check(); if it is meant to compute something other "
            f"than {state.coll_name}, --as-custom compiles it as a custom collective whose "
            "postcondition is what it computes)"
        )
    return CompileError(text, pos)


_SLOT = re.compile(r"\b(input|output)\[(\d+)\]")
_CHUNK = re.compile(r"\bchunk\((\d+),(\d+)\)")


def _logical_indices(message: str, state: ProgramState, layout: _Layout) -> str:
    """``message`` with replicated input/output indices named as the program wrote them:
    with 4 instances, ``output[9]`` is the program's ``output[2]`` in instance 1."""
    n = state.instances
    if n == 1:
        return message

    def name(m: re.Match[str]) -> str:
        index = int(m.group(2))
        if layout.interleaved:
            slot, inst = divmod(index, n)
        else:
            sizes = state.in_sizes if m.group(1) == "input" else state.out_sizes
            length = max(sizes, default=0) or 1
            inst, slot = divmod(index, length)
        return f"{m.group(1)}[{slot}] (instance {inst} of {n})"

    def chunk(m: re.Match[str]) -> str:
        rank, index = int(m.group(1)), int(m.group(2))
        if layout.interleaved:
            index //= n
        else:
            index %= max(state.in_sizes[rank] if rank < len(state.in_sizes) else 1, 1)
        return f"chunk({rank},{index})"

    return _CHUNK.sub(chunk, _SLOT.sub(name, message))
