"""Which collective an MSCCL-IR XML file implements.

The header names it (``coll``), with the number of GPUs (``ngpus``), the chunks of the largest
buffer (``nchunksperloop``) and whether it runs in place; the chunk factor follows from
``nchunksperloop``: all-gather, reduce-scatter, all-to-all, gather and scatter have
``ngpus x cf`` chunks in their largest buffer, all-reduce, broadcast and reduce ``cf``. The XML
has no root: a broadcast's or scatter's root is the one GPU that never receives, a reduce's or
gather's the one that never sends (or the ``root`` the caller gives).

When the named collective does not fit (an unknown or ``custom`` name, ``nchunksperloop`` not a
multiple of ``ngpus``, steps touching slots outside the collective's buffers), a CUSTOM
collective is derived where that is possible: every input slot starts with its own chunk and
the postcondition is what symbolic execution of the program leaves in the output buffer. An
in-place custom collective keeps its input and output apart, as msccl-tools models custom
collectives (its ``Collective.get_buffer_index`` aliases nothing).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from chakra_ir.collective import (
    Buffer,
    Collective,
    CollectiveKind,
    Contents,
    chunk,
    custom_collective,
    merge,
)
from chakra_ir.program import OpKind, Program
from mscclang_frontend.xml import format as fmt
from mscclang_frontend.xml.errors import XmlError
from topologies.errors import CollcError

if TYPE_CHECKING:  # the XML parser only for XML (`collc compile` lowers through this module)
    from mscclang_frontend.xml.parse import AlgoEl

SlotUse = tuple[int, Buffer, int]
"""(gpu, logical buffer, one past the highest slot used)."""


def named_kind(algo: AlgoEl) -> CollectiveKind | None:
    """The kind ``coll`` names, or None for a name collc does not know."""
    return fmt.COLL_NAMES.get(algo.coll.lower())


def fit_standard(
    algo: AlgoEl,
    kind: CollectiveKind,
    uses: Sequence[SlotUse],
    senders: set[int],
    receivers: set[int],
    root: int | None,
) -> tuple[Collective | None, str]:
    """The standard collective the header describes, or (None, why it does not fit)."""
    n, nchunks = algo.ngpus, algo.nchunksperloop
    per_rank = kind in (
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLTOALL,
        CollectiveKind.GATHER,
        CollectiveKind.SCATTER,
    )
    if per_rank and nchunks % n:
        return None, f"nchunksperloop={nchunks} is not a multiple of ngpus={n}"
    cf = nchunks // n if per_rank else nchunks
    r = -1
    if kind.rooted:
        r = _root(algo, kind, senders, receivers, root)
    try:
        c = Collective(kind, n, cf, inplace=algo.inplace, root=r)
    except CollcError as e:
        return None, e.message
    for gpu, buf, end in uses:
        size = c.input_chunks(gpu) if buf is Buffer.INPUT else c.output_chunks(gpu)
        if buf is not Buffer.SCRATCH and end > size:
            return None, (
                f"gpu {gpu} uses {buf.short}[{end - 1}], but the {c.describe()} has "
                f"{size} {buf.label} chunks"
            )
    return c, ""


def _root(
    algo: AlgoEl, kind: CollectiveKind, senders: set[int], receivers: set[int], root: int | None
) -> int:
    n = algo.ngpus
    if root is not None:
        if not 0 <= root < n:
            raise XmlError(f"root {root} is not a gpu of this algorithm (0..{n - 1})", algo.pos)
        return root
    if n == 1:
        return 0
    if kind in (CollectiveKind.BROADCAST, CollectiveKind.SCATTER):
        cands = [g for g in range(n) if g not in receivers]
        role = "never receives"
    else:
        cands = [g for g in range(n) if g not in senders]
        role = "never sends"
    if len(cands) == 1:
        return cands[0]
    listed = ", ".join(str(g) for g in cands) or "none"
    raise XmlError(
        f"cannot tell the root of the {kind.value}: the root is the gpu that {role}, and that is "
        f"true of {listed}; pass the root explicitly",
        algo.pos,
    )


def derive_custom(
    algo: AlgoEl, build: Callable[[Collective], Program], why: str
) -> tuple[Collective, str]:
    """A CUSTOM collective whose postcondition is what the program computes; raises if none."""
    sizes = [(g.i_chunks, g.o_chunks) for g in algo.gpus]
    inputs = [[chunk(r, i) for i in range(i_n)] for r, (i_n, _) in enumerate(sizes)]
    blank = custom_collective(
        algo.ngpus, inputs, [[None] * o_n for _, o_n in sizes], name=algo.coll or "custom"
    )
    try:
        outputs = run_symbolically(build(blank))
    except CollcError as e:
        raise XmlError(
            f"the XML does not describe a collective collc knows ({why}), and no custom "
            f"collective can be derived: {e.message}",
            algo.pos,
        ) from None
    derived = custom_collective(algo.ngpus, inputs, outputs, name=algo.coll or "custom")
    apart = (
        "; in place, its input and output stay apart, as msccl-tools compiles custom collectives"
        if algo.inplace
        else ""
    )
    return derived, (
        f"{why}: read as a custom collective whose postcondition is what the program computes "
        f"(every input slot starts with its own chunk){apart}"
    )


def run_symbolically(p: Program) -> list[list[Contents | None]]:
    """Execute ``p`` on chunk contents; return each rank's output buffer afterwards.

    Raises `CollcError` when a slot is read empty, a contribution is reduced twice, the
    dependencies or messages deadlock, or sends and receives do not pair up.
    """
    c = p.collective
    n = p.num_ops
    rank_of = p.op_rank().tolist()
    base = p.rank_offsets.tolist()
    queues: dict[tuple[int, int, int], deque[int]] = defaultdict(deque)
    match = [-1] * n
    kinds = p.kind.tolist()
    for g in range(n):
        if kinds[g] == OpKind.SEND:
            queues[(rank_of[g], int(p.peer[g]), int(p.tag[g]))].append(g)
    for g in range(n):
        if kinds[g] in (OpKind.RECV, OpKind.RECV_REDUCE):
            q = queues.get((int(p.peer[g]), rank_of[g], int(p.tag[g])))
            if not q:
                raise CollcError(f"{p.describe_op(g)} has no matching send")
            match[g] = q.popleft()
    if any(queues.values()):
        g = next(q[0] for q in queues.values() if q)
        raise CollcError(f"{p.describe_op(g)} has no matching receive")
    children: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for g in range(n):
        for d in p.deps_of(g).tolist():
            children[base[rank_of[g]] + d].append(g)
            indeg[g] += 1
        if match[g] >= 0:
            children[match[g]].append(g)
            indeg[g] += 1
    mem: list[dict[tuple[int, int], Contents]] = [{} for _ in range(p.num_ranks)]
    for r in range(p.num_ranks):
        for i, x in enumerate(c.initial_input(r)):
            if x is not None:
                mem[r][c.physical(r, Buffer.INPUT, i)] = x
    inflight: dict[int, list[Contents]] = {}
    ready = deque(g for g in range(n) if indeg[g] == 0)
    done = 0
    while ready:
        g = ready.popleft()
        done += 1
        r, k, cnt = rank_of[g], kinds[g], int(p.count[g])

        def slot(buf: int, idx: int, r: int = r) -> tuple[Buffer, int]:
            return c.physical(r, Buffer(buf), idx)

        payload: list[Contents] = []
        if k in (OpKind.SEND, OpKind.COPY, OpKind.REDUCE):
            for i in range(cnt):
                key = slot(int(p.src_buf[g]), int(p.src_index[g]) + i)
                if key not in mem[r]:
                    raise CollcError(
                        f"{p.describe_op(g)} reads {key[0].label}[{key[1]}], which is empty"
                    )
                payload.append(mem[r][key])
        if k == OpKind.SEND:
            inflight[g] = payload
        else:
            if k in (OpKind.RECV, OpKind.RECV_REDUCE):
                payload = inflight.pop(match[g])
            for i in range(cnt):
                key = slot(int(p.dst_buf[g]), int(p.dst_index[g]) + i)
                if k in (OpKind.RECV, OpKind.COPY):
                    mem[r][key] = payload[i]
                    continue
                have = mem[r].get(key)
                if have is None:
                    raise CollcError(f"{p.describe_op(g)} reduces into an empty slot")
                merged = merge(have, payload[i])
                if merged is None:
                    raise CollcError(f"{p.describe_op(g)} reduces a contribution twice")
                mem[r][key] = merged
        for ch in children[g]:
            indeg[ch] -= 1
            if indeg[ch] == 0:
                ready.append(ch)
    if done < n:
        raise CollcError(f"the program deadlocks ({n - done} operations never run)")
    return [
        [mem[r].get(c.physical(r, Buffer.OUTPUT, j)) for j in range(c.output_chunks(r))]
        for r in range(p.num_ranks)
    ]


def derive_as_custom(
    algo: AlgoEl, standard: Collective, build: Callable[[Collective], Program]
) -> tuple[Collective, str]:
    """The custom collective a file computes from ``standard``'s input (``--as-custom``): its
    precondition is the standard collective's, its postcondition what the steps leave in the
    outputs. In place only when the alias is slot for slot (an all-reduce), which a custom
    collective can express."""
    n = algo.ngpus
    sizes = [(standard.input_chunks(r), standard.output_chunks(r)) for r in range(n)]
    if standard.inplace and (
        standard.kind is not CollectiveKind.ALLREDUCE or any(i != o for i, o in sizes)
    ):
        raise XmlError(
            f"--as-custom: an in-place {standard.kind.value} aliases slots at per-rank offsets, "
            "which a custom collective cannot express; it takes out-of-place files and in-place "
            "all-reduces",
            algo.pos,
        )
    pre = [standard.initial_input(r) for r in range(n)]
    blank = custom_collective(
        n, pre, [[None] * o for _, o in sizes], name="custom", inplace=standard.inplace
    )
    try:
        post = run_symbolically(build(blank))
    except CollcError as e:
        raise XmlError(
            f"--as-custom: the file's result cannot be computed: {e.message}", algo.pos
        ) from None
    derived = custom_collective(
        n, pre, post, name=f"{algo.coll}-as-custom", inplace=standard.inplace
    )
    return derived, (
        f"read --as-custom: a custom collective whose input is the {standard.describe()}'s and "
        "whose postcondition is what the file computes"
    )
