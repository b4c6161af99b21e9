"""Lowering MSCCL-IR XML into a collc Program.

Every step becomes one or more operations of its GPU, by what the runtime executes:

==========  ==============================================================================
``s``       Send(src) to the threadblock's send peer
``r``       Recv(dst) from the threadblock's recv peer
``rrc``     Recv(dst, reduce); the runtime computes dst <- recv (+) src, so when ``src`` is
            not ``dst`` a Copy(src -> dst) comes first
``rrcs``    as ``rrc``, then Send(dst)
``rcs``     Recv(dst), Send(dst)
``rrs``     Recv(src, reduce), Send(src): the runtime forwards recv (+) src without storing
            it; collc stores the sum in ``src``, which MSCCLang and ForestColl only do when
            the slot is overwritten before it is read again (a note is recorded)
``cpy``     Copy(src -> dst)
``re``      Reduce(src -> dst), dst <- dst (+) src
``nop``     no operation: its dependency moves to the next step of its threadblock
==========  ==============================================================================

With ``srcbuf_trap=True`` the reducing receives ``rrc``/``rrcs`` take ``dst`` as their local
operand and ignore ``srcbuf``/``srcoff``, which msccl-tools fills with the *sender's* slot
(the MSCCL runtime's executor); by default the XML means what the runtime does.

Dependencies: the operations of a threadblock run in order (each depends on the one before);
a step's ``depid``/``deps`` (and those of the ``nop`` steps before it) become dependencies of
its first operation on the last operation of the step waited for. Cross-threadblock waits are
then reduced to the minimal set (`mscclang_frontend.xml.depgraph`), and operations are
numbered in a canonical topological order. Messages: the runtime pairs the k-th send to a peer
on a channel with the k-th receive from it; the Program's tag is the channel, so its matching
(per sender, receiver and tag, in program order) is the same pairing. Each operation keeps its
threadblock and channel as hints. In place, slots are named by their physical buffer
(`Collective.physical`, MSCCLang's convention), so ``o`` in an in-place all-reduce reads as
``i``.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from pathlib import Path

from chakra_ir.collective import Buffer, Collective
from chakra_ir.program import (
    NO_HINTS,
    Copy,
    FlowIn,
    FlowOut,
    Hints,
    Op,
    OpKind,
    Program,
    ProgramBuilder,
    Recv,
    Send,
    Slice,
)
from mscclang_frontend.xml import collective as coll_mod
from mscclang_frontend.xml import format as fmt
from mscclang_frontend.xml.depgraph import DepCycle, Item, schedule
from mscclang_frontend.xml.errors import XmlError
from mscclang_frontend.xml.imported import ImportedProgram
from mscclang_frontend.xml.limits import XmlLimits
from mscclang_frontend.xml.options import XmlOptions
from mscclang_frontend.xml.parse import AlgoEl, GpuEl, StepEl, check_local_operands, parse_algo
from topologies.errors import CollcError, SourcePos


@dataclass
class _Op:
    kind: OpKind
    peer: int
    src: Slice | None
    dst: Slice | None
    chan: int
    tb: int
    step: StepEl
    cross: set[Item] = field(default_factory=set)


def read_xml(
    source: str | os.PathLike[str],
    filename: str | None = None,
    *,
    root: int | None = None,
    srcbuf_trap: bool = False,
    limits: XmlLimits | None = None,
    as_custom: bool = False,
) -> ImportedProgram:
    """Read MSCCL-IR XML (msccl-tools, TACCL, ForestColl, collc) into a Program.

    ``source`` is a path, or the XML text itself when it is a `str` starting with ``<``;
    ``filename`` names it in errors. ``root`` gives the root of a rooted collective when the
    XML does not tell it. ``limits`` bound the file and its buffer sizes (`XmlLimits`).
    ``as_custom`` reads a file whose header names a standard collective as the custom
    collective it computes from that collective's input (`collective.derive_as_custom`), for
    files that run something else under a standard name (msccl-tools' pipeline examples).
    Raises `XmlError` (with file, line and column) for malformed or
    inconsistent XML: unknown step types, bad attributes, offsets outside the buffers, a send
    without its receive (per peer and channel), a dependency on a missing step or a cycle, two
    threadblocks sharing a peer and channel. The Program is not verified here: pass it to
    `chakra_ir.verify.verify`.
    """
    if isinstance(source, str) and source.lstrip().startswith("<"):
        text, name = source, filename or "<xml>"
    else:
        path = Path(source)
        name = filename or str(path)
        lim = limits or XmlLimits()
        try:
            size = path.stat().st_size
            if size > lim.max_file_bytes:
                raise XmlError(
                    f"the file has {size:,} bytes, more than the limit of "
                    f"{lim.max_file_bytes:,} (raise it with --max-xml-bytes)",
                    SourcePos(name),
                )
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise XmlError(f"cannot read {path}: {e.strerror or e}", SourcePos(name)) from None
        except UnicodeDecodeError as e:
            raise XmlError(f"{path} is not UTF-8 text: {e.reason}", SourcePos(name)) from None
    algo = parse_algo(text, name, limits)
    return _Lowering(algo, srcbuf_trap, root, as_custom).run()


class _Lowering:
    def __init__(
        self, algo: AlgoEl, srcbuf_trap: bool, root: int | None, as_custom: bool = False
    ) -> None:
        self.algo = algo
        self.trap = srcbuf_trap
        self.root = root
        self.as_custom = as_custom
        self.notes: list[str] = []
        # per gpu: per threadblock, its operations; a trailing extra list holds TACCL copies
        self.ops: list[list[list[_Op]]] = []
        self.order: list[list[Item]] = []
        self.reduced: list[dict[Item, list[Item]]] = []
        # (gpu, tb, step) of the rrs steps modelled with a temporary slot, and per gpu the
        # next free temporary scratch slot.
        self.exact_rrs: set[tuple[int, int, int]] = set()
        self.temp_next: dict[int, int] = {}
        self.sites: list[list[_Op]] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- steps -> operations -------------------------------------------------------------------
    def run(self) -> ImportedProgram:
        self.check_connections()
        program = self.lower_once()
        # An rrs step forwards recv (+) src and leaves src as it was. Storing the sum in src
        # (the compact form) is exact when the next access to src overwrites it; where it
        # does not, the step is modelled exactly with a temporary slot and lowered again.
        inexact = self.inexact_rrs(program)
        if inexact:
            self.exact_rrs = inexact
            self.ops, self.order, self.reduced, self.notes = [], [], [], []
            self.note(
                f"{len(inexact)} rrs step{'s' if len(inexact) > 1 else ''} whose src is read "
                "again (or is the result) forward recv (+) src through a temporary scratch "
                "slot, leaving src unchanged as the runtime does"
            )
            program = self.lower_once()
        opts = self.options()
        sites = tuple(tuple((o.tb, o.step.index, o.step.pos) for o in ops) for ops in self.sites)
        return ImportedProgram(program, opts, tuple(self.notes), sites, runtime_warnings(self.algo))

    def lower_once(self) -> Program:
        algo = self.algo
        self.temp_next = {g.id: g.s_chunks for g in algo.gpus}
        for gpu in algo.gpus:
            self.ops.append(self.expand(gpu))
        self.check_matching()
        # In place a standard collective is known before the dependencies, so copies onto
        # their own physical slot can be dropped first.
        collective = self.standard() if algo.inplace else None
        if collective is not None:
            self.drop_self_copies(collective)
        for gpu, tbs in zip(algo.gpus, self.ops, strict=True):
            self.dependencies(gpu, tbs)
        if self.as_custom:
            standard = collective or self.standard_or_refuse()
            collective, note = coll_mod.derive_as_custom(algo, standard, self.build)
            self.note(note)
        elif collective is None:
            collective = self.collective()
        return self.build(collective)

    def inexact_rrs(self, program: Program) -> set[tuple[int, int, int]]:
        """The rrs steps after which src is read or reduced into before it is overwritten,
        or left unwritten in the input or output (the result), in the canonical order (which
        a race-free program's accesses to one slot follow)."""
        out: set[tuple[int, int, int]] = set()
        for rank, origin in enumerate(self.sites):
            if not any(o.step.type.name == "rrs" for o in origin):
                continue
            access = _slot_accesses(program.ops(rank))
            for i, o in enumerate(origin):
                if o.step.type.name != "rrs" or o.kind is not OpKind.RECV_REDUCE:
                    continue
                assert o.dst is not None  # an rrs's reducing receive goes into its src
                for k in range(o.dst.count):
                    slot = self._canon(program, rank, o.dst, k)
                    seq = access[slot]
                    at = bisect.bisect_right(seq, (i, 2))
                    nxt = next((a for a in seq[at:] if origin[a[0]].step is not o.step), None)
                    if (nxt is None and slot[0] is not Buffer.SCRATCH) or (
                        nxt is not None and nxt[1] != _WRITE
                    ):
                        out.add((rank, o.tb, o.step.index))
                        break
        return out

    @staticmethod
    def _canon(program: Program, rank: int, s: Slice, k: int) -> tuple[Buffer, int]:
        c = program.collective
        if not c.inplace:
            return s.buffer, s.index + k
        return c.physical(rank, s.buffer, s.index + k)

    def check_connections(self) -> None:
        for gpu in self.algo.gpus:
            for role in ("send", "recv"):
                owner: dict[tuple[int, int], int] = {}
                for tb in gpu.tbs:
                    peer = tb.send if role == "send" else tb.recv
                    if peer < 0:
                        continue
                    key = (peer, tb.chan)
                    if key in owner:
                        verb = "send to" if role == "send" else "receive from"
                        raise XmlError(
                            f"threadblocks {owner[key]} and {tb.id} of gpu {gpu.id} both {verb} "
                            f"gpu {peer} on channel {tb.chan} (the runtime pairs sends and "
                            "receives per peer and channel)",
                            tb.pos,
                        )
                    owner[key] = tb.id

    def expand(self, gpu: GpuEl) -> list[list[_Op]]:
        tbs: list[list[_Op]] = []
        for tb in gpu.tbs:
            ops: list[_Op] = []
            for step in tb.steps:
                ops.extend(self.step_ops(gpu, tb.id, tb.send, tb.recv, tb.chan, step))
            tbs.append(ops)
        pre: list[_Op] = []
        for c in gpu.copies:
            if self.algo.inplace:
                # TACCL marks the rank's own chunks; in place they already sit there.
                continue
            step = StepEl(
                0,
                fmt.STEP_TYPES["cpy"],
                Buffer.INPUT,
                c.i_off,
                Buffer.OUTPUT,
                c.o_off,
                1,
                -1,
                -1,
                False,
                c.pos,
            )
            pre.append(
                _Op(
                    OpKind.COPY,
                    -1,
                    Slice(Buffer.INPUT, c.i_off),
                    Slice(Buffer.OUTPUT, c.o_off),
                    -1,
                    -1,
                    step,
                )
            )
        if pre:
            self.note("<copy> elements run before every threadblock, without threadblock hints")
        tbs.append(pre)
        return tbs

    def step_ops(
        self, gpu: GpuEl, tb: int, send: int, recv: int, chan: int, step: StepEl
    ) -> list[_Op]:
        t = step.type
        if t.name == "nop":
            return []
        assert step.srcbuf is not None and step.dstbuf is not None
        src = Slice(step.srcbuf, step.srcoff, step.cnt)
        dst = Slice(step.dstbuf, step.dstoff, step.cnt)
        reduce_from_dst = self.trap and t.name in ("rrc", "rrcs")
        check_local_operands(
            step,
            gpu,
            src=t.reads_src and not reduce_from_dst,
            dst=t.writes_dst or t.name == "rrc",
        )

        def op(kind: OpKind, peer: int, s: Slice | None, d: Slice | None) -> _Op:
            return _Op(kind, peer, s, d, chan, tb, step)

        name = t.name
        if name == "s":
            return [op(OpKind.SEND, send, src, None)]
        if name == "r":
            return [op(OpKind.RECV, recv, None, dst)]
        if name == "rcs":
            return [op(OpKind.RECV, recv, None, dst), op(OpKind.SEND, send, dst, None)]
        if name == "rrs":
            if (gpu.id, tb, step.index) in self.exact_rrs:
                tmp = Slice(Buffer.SCRATCH, self.temp_next[gpu.id], step.cnt)
                self.temp_next[gpu.id] += step.cnt
                return [
                    op(OpKind.COPY, -1, src, tmp),
                    op(OpKind.RECV_REDUCE, recv, None, tmp),
                    op(OpKind.SEND, send, tmp, None),
                ]
            self.note(
                "rrs steps forward recv (+) src; collc stores the sum in src, which is exact "
                "because src is overwritten before it is read again"
            )
            return [op(OpKind.RECV_REDUCE, recv, None, src), op(OpKind.SEND, send, src, None)]
        if name in ("rrc", "rrcs"):
            out = []
            if not reduce_from_dst and src != dst:
                self.note(
                    f"{step.pos}: {name} reduces the local {src} into {dst} (the runtime's "
                    "reading); msccl-tools writes the sender's slot in srcbuf/srcoff, read with "
                    "srcbuf_trap=True if that is what this file means"
                )
                out.append(op(OpKind.COPY, -1, src, dst))
            out.append(op(OpKind.RECV_REDUCE, recv, None, dst))
            if name == "rrcs":
                out.append(op(OpKind.SEND, send, dst, None))
            return out
        if name == "cpy":
            return [op(OpKind.COPY, -1, src, dst)]
        return [op(OpKind.REDUCE, -1, src, dst)]

    # -- matching ------------------------------------------------------------------------------
    def check_matching(self) -> None:
        algo = self.algo
        sends: dict[tuple[int, int, int], list[tuple[int, _Op]]] = {}
        recvs: dict[tuple[int, int, int], list[tuple[int, _Op]]] = {}
        for gpu, tbs in zip(algo.gpus, self.ops, strict=True):
            for ops in tbs:
                for o in ops:
                    if o.kind is OpKind.SEND:
                        sends.setdefault((gpu.id, o.peer, o.chan), []).append((gpu.id, o))
                    elif o.kind in (OpKind.RECV, OpKind.RECV_REDUCE):
                        recvs.setdefault((o.peer, gpu.id, o.chan), []).append((gpu.id, o))
        for key in sorted(set(sends) | set(recvs)):
            s_list, r_list = sends.get(key, []), recvs.get(key, [])
            a, b, chan = key
            for (_, s), (_, r) in zip(s_list, r_list, strict=False):
                cnt_s = s.src.count if s.src else 0
                cnt_r = r.dst.count if r.dst else 0
                if cnt_s != cnt_r:
                    raise XmlError(
                        f"receives {cnt_r} chunks from gpu {a} on channel {chan}, but the matching "
                        f"send ({_where(a, s)}) sends {cnt_s}",
                        r.step.pos,
                    )
            if len(s_list) > len(r_list):
                s = s_list[len(r_list)][1]
                raise XmlError(
                    f"send to gpu {b} on channel {chan} has no matching receive (gpu {a} sends "
                    f"{len(s_list)} times, gpu {b} receives {len(r_list)} times)",
                    s.step.pos,
                )
            if len(r_list) > len(s_list):
                r = r_list[len(s_list)][1]
                raise XmlError(
                    f"receive from gpu {a} on channel {chan} has no matching send (gpu {a} "
                    f"sends {len(s_list)} times, gpu {b} receives {len(r_list)} times)",
                    r.step.pos,
                )

    def drop_self_copies(self, c: Collective) -> None:
        for gpu, tbs in zip(self.algo.gpus, self.ops, strict=True):
            for t, ops in enumerate(tbs):
                tbs[t] = [
                    o
                    for o in ops
                    if not (
                        o.kind is OpKind.COPY
                        and o.src is not None
                        and o.dst is not None
                        and c.physical(gpu.id, o.src.buffer, o.src.index)
                        == c.physical(gpu.id, o.dst.buffer, o.dst.index)
                    )
                ]

    # -- dependencies --------------------------------------------------------------------------
    def dependencies(self, gpu: GpuEl, tbs: list[list[_Op]]) -> None:
        # Where each step's operations ended: (tb, index of its last operation) or -1.
        last_op: list[list[int]] = []
        for tb, ops in zip(gpu.tbs, tbs, strict=False):
            ends = [-1] * len(tb.steps)
            for i, o in enumerate(ops):
                ends[o.step.index] = i
            last_op.append(ends)
        first_op: dict[tuple[int, int], int] = {}
        for t, ops in enumerate(tbs[: len(gpu.tbs)]):
            for i, o in enumerate(ops):
                first_op.setdefault((t, o.step.index), i)

        def resolve(step: StepEl, t: int, k: int, seen: frozenset[tuple[int, int]]) -> set[Item]:
            if t >= len(gpu.tbs):
                raise XmlError(
                    f"depends on threadblock {t}, which gpu {gpu.id} does not have", step.pos
                )
            target_tb = gpu.tbs[t]
            if k >= len(target_tb.steps):
                raise XmlError(
                    f"depends on step {k} of threadblock {t} of gpu {gpu.id}, which has only "
                    f"{len(target_tb.steps)} steps",
                    step.pos,
                )
            target = target_tb.steps[k]
            if not target.hasdep:
                raise XmlError(
                    f"depends on gpu {gpu.id} threadblock {t} step {k} (line {target.pos.line}), "
                    'which does not set hasdep="1", so the runtime never signals it',
                    step.pos,
                )
            if last_op[t][k] >= 0:
                return {(t, last_op[t][k])}
            if (t, k) in seen:
                raise XmlError("nop steps depend on each other in a cycle", step.pos)
            out: set[Item] = set()
            earlier = [j for j in last_op[t][:k] if j >= 0]
            if earlier:
                out.add((t, earlier[-1]))
            if target.depid >= 0:
                out |= resolve(target, target.depid, target.deps, seen | {(t, k)})
            return out

        cross: dict[Item, set[Item]] = {}
        for t, tb in enumerate(gpu.tbs):
            pending: set[Item] = set()
            for step in tb.steps:
                waits: set[Item] = set()
                if step.depid == t and step.deps >= step.index:
                    raise XmlError(
                        f"depends on step {step.deps} of its own threadblock, which does not "
                        "run before it",
                        step.pos,
                    )
                if step.depid >= 0 and step.depid != t:
                    # (A wait on an earlier step of the same threadblock is implied.)
                    waits = resolve(step, step.depid, step.deps, frozenset())
                if (t, step.index) not in first_op:  # a nop, or a copy onto itself
                    pending |= waits
                    continue
                cross[(t, first_op[(t, step.index)])] = pending | waits
                pending = set()
            if pending:
                self.note(f"trailing nop steps of gpu {gpu.id} threadblock {t} were dropped")
        pre = len(gpu.tbs)
        if tbs[pre]:
            last_pre = (pre, len(tbs[pre]) - 1)
            for t in range(pre):
                if tbs[t]:
                    cross.setdefault((t, 0), set()).add(last_pre)
        try:
            order, reduced = schedule([len(ops) for ops in tbs], cross)
        except DepCycle as e:
            steps = []
            for t, i in e.cycle:
                o = tbs[t][i]
                steps.append(f"threadblock {t} step {o.step.index}" if t < pre else "a <copy>")
            first = tbs[e.cycle[0][0]][e.cycle[0][1]].step
            raise XmlError(
                f"dependency cycle on gpu {gpu.id}: " + " waits for ".join([*steps, steps[0]]),
                first.pos,
            ) from None
        self.order.append(order)
        self.reduced.append(reduced)

    # -- the collective ------------------------------------------------------------------------
    def standard(self) -> Collective | None:
        """The standard collective the header names, when it fits (else None)."""
        kind = coll_mod.named_kind(self.algo)
        if kind is None or kind.value == "custom":
            return None
        uses, senders, receivers = self.slot_uses()
        c, _ = coll_mod.fit_standard(self.algo, kind, uses, senders, receivers, self.root)
        return c

    def standard_or_refuse(self) -> Collective:
        """The standard collective the header names (``as_custom``); XmlError when there is
        none or it does not fit the file."""
        kind = coll_mod.named_kind(self.algo)
        if kind is None or kind.value == "custom":
            raise XmlError(
                f"--as-custom reads a file whose coll names a standard collective, to take its "
                f"input; coll={self.algo.coll!r} names none (the file is read as a custom "
                "collective without --as-custom)",
                self.algo.pos,
            )
        uses, senders, receivers = self.slot_uses()
        c, why = coll_mod.fit_standard(self.algo, kind, uses, senders, receivers, self.root)
        if c is None:
            raise XmlError(f"--as-custom: the {self.algo.coll} does not fit: {why}", self.algo.pos)
        return c

    def slot_uses(self) -> tuple[list[coll_mod.SlotUse], set[int], set[int]]:
        uses: list[coll_mod.SlotUse] = []
        senders: set[int] = set()
        receivers: set[int] = set()
        for gpu, tbs in zip(self.algo.gpus, self.ops, strict=True):
            end = {b: 0 for b in Buffer}
            for ops in tbs:
                for o in ops:
                    for s in (o.src, o.dst):
                        if s is not None:
                            end[s.buffer] = max(end[s.buffer], s.index + s.count)
                    if o.kind is OpKind.SEND:
                        senders.add(gpu.id)
                    elif o.kind is not OpKind.COPY and o.kind is not OpKind.REDUCE:
                        receivers.add(gpu.id)
            uses.extend((gpu.id, b, e) for b, e in end.items() if e)
        return uses, senders, receivers

    def collective(self) -> Collective:
        algo = self.algo
        uses, senders, receivers = self.slot_uses()
        kind = coll_mod.named_kind(algo)
        why = f"coll={algo.coll!r} is not a collective collc knows"
        if kind is not None and kind.value != "custom":
            c, why = coll_mod.fit_standard(algo, kind, uses, senders, receivers, self.root)
            if c is not None:
                return c
            why = f"the {algo.coll} does not fit: {why}"
        derived, note = coll_mod.derive_custom(algo, self.build, why)
        self.note(note)
        return derived

    # -- the Program ---------------------------------------------------------------------------
    def build(self, collective: Collective) -> Program:
        algo = self.algo
        b = ProgramBuilder(collective, name=algo.name)
        self.sites = [[] for _ in algo.gpus]

        def canon(s: Slice | None, rank: int) -> Slice | None:
            if s is None or not collective.inplace:
                return s
            buf, idx = collective.physical(rank, s.buffer, s.index)
            return Slice(buf, idx, s.count)

        for gpu, tbs, order, reduced in zip(
            algo.gpus, self.ops, self.order, self.reduced, strict=True
        ):
            ids: dict[Item, int] = {}
            for item in order:
                t, i = item
                o = tbs[t][i]
                deps = {ids[w] for w in reduced.get(item, [])}
                if i > 0:
                    deps.add(ids[(t, i - 1)])
                self.sites[gpu.id].append(o)
                hints = NO_HINTS if o.tb < 0 else Hints((), o.chan, o.tb)
                src, dst = canon(o.src, gpu.id), canon(o.dst, gpu.id)
                dep_list = sorted(deps)
                if o.kind is OpKind.SEND:
                    assert src is not None
                    ids[item] = b.send(gpu.id, o.peer, src, tag=o.chan, deps=dep_list, hints=hints)
                elif o.kind in (OpKind.RECV, OpKind.RECV_REDUCE):
                    assert dst is not None
                    ids[item] = b.recv(
                        gpu.id,
                        o.peer,
                        dst,
                        tag=o.chan,
                        reduce=o.kind is OpKind.RECV_REDUCE,
                        deps=dep_list,
                        hints=hints,
                    )
                else:
                    assert src is not None and dst is not None
                    local = b.copy if o.kind is OpKind.COPY else b.reduce
                    try:
                        ids[item] = local(gpu.id, src, dst, deps=dep_list, hints=hints)
                    except CollcError as e:
                        raise XmlError(e.message, o.step.pos) from None
        program = b.build()
        for gpu in algo.gpus:
            program.buffer_sizes[gpu.id, 2] = max(
                gpu.s_chunks, int(program.buffer_sizes[gpu.id, 2])
            )
        return program

    def options(self) -> XmlOptions:
        algo = self.algo
        try:
            return XmlOptions(
                name=algo.name,
                proto=algo.proto,
                coll=algo.coll,
                header_extras=algo.extras_present,
                min_bytes=algo.min_bytes,
                max_bytes=algo.max_bytes,
                inplace=algo.inplace,
            )
        except CollcError as e:
            raise XmlError(e.message, algo.pos) from None


_READ, _WRITE = 0, 1


def _slot_accesses(ops: list[Op]) -> dict[tuple[Buffer, int], list[tuple[int, int]]]:
    """Per slot, its accesses ``(op index, _READ or _WRITE)`` in order; a reduction reads."""
    out: dict[tuple[Buffer, int], list[tuple[int, int]]] = {}

    def add(i: int, sl: Slice, how: int) -> None:
        for k in range(sl.count):
            out.setdefault((sl.buffer, sl.index + k), []).append((i, how))

    for i, op in enumerate(ops):
        if isinstance(op, Send):
            add(i, op.src, _READ)
        elif isinstance(op, Recv):
            add(i, op.dst, _READ if op.reduce else _WRITE)
        elif isinstance(op, Copy):
            add(i, op.src, _READ)
            add(i, op.dst, _WRITE)
        elif isinstance(op, FlowIn):
            add(i, op.src, _READ)
        elif isinstance(op, FlowOut):
            add(i, op.dst, _WRITE)
        else:
            add(i, op.src, _READ)
            add(i, op.dst, _READ)
    return out


def runtime_warnings(algo: AlgoEl) -> tuple[str, ...]:
    """What the MSCCL runtime would refuse to load in ``algo`` (collc reads it anyway)."""
    out: list[str] = []
    if algo.nchannels > fmt.MAX_CHANNELS:
        out.append(
            f"the XML uses {algo.nchannels} channels; the MSCCL runtime accepts at most "
            f"{fmt.MAX_CHANNELS}"
        )
    for gpu in algo.gpus:
        per_channel: dict[int, int] = {}
        for tb in gpu.tbs:
            per_channel[tb.chan] = per_channel.get(tb.chan, 0) + 1
        busiest = max(per_channel.items(), key=lambda kv: kv[1], default=(0, 0))
        if busiest[1] > fmt.MAX_TBS_PER_CHANNEL:
            out.append(
                f"gpu {gpu.id} has {busiest[1]} threadblocks on channel {busiest[0]}; the "
                f"MSCCL runtime accepts at most {fmt.MAX_TBS_PER_CHANNEL}"
            )
            break
    longest = max(
        ((len(tb.steps), g.id, tb.id) for g in algo.gpus for tb in g.tbs), default=(0, 0, 0)
    )
    if longest[0] > fmt.MAX_STEPS_PER_TB:
        out.append(
            f"gpu {longest[1]} threadblock {longest[2]} has {longest[0]} steps; the MSCCL "
            f"runtime accepts at most {fmt.MAX_STEPS_PER_TB}"
        )
    return tuple(out)


def _where(gpu: int, o: _Op) -> str:
    return f"gpu {gpu} threadblock {o.tb} step {o.step.index}, line {o.step.pos.line}"
