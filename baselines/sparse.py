"""Sparse all-reduce algorithms (SparCML, Ok-Topk) as Program generators.

Their programs are ordinary Programs; what makes them sparse is the payload they run under
(`payloads`): every message weighs the union support of the contributions it carries, in the
format chosen for it. The payload model's ``auto`` format is SparCML's switch to dense: a
message goes dense exactly when dense is the smaller encoding.

- ``sparcml-rd`` (SparCML's SSAR_Recursive_double): log2 N steps; at step ``s`` rank ``r``
  exchanges its whole partial sum with ``r xor 2^s`` and adds what it receives, so a message
  of step ``s`` carries ``2^s`` contributions. The receive lands in scratch and is reduced into
  the output, so it need not wait for the rank's own send.
- ``sparcml-split`` (SSAR_Split_allgather): a direct reduce-scatter (rank ``r`` sends region
  ``j`` of its tensor to rank ``j``, each region a single contribution), then a
  recursive-doubling all-gather of the reduced regions (each carrying all N contributions).
- ``oktopk`` (Ok-Topk): split-and-reduce (the direct reduce-scatter) and a balanced direct
  all-gather; after the reduction each region keeps only its largest values (the global
  top-k), which the payload model applies to fully reduced chunks
  (`baselines.base.Baseline.topk`), so the all-gather moves one rank's density, not the fill-in.

For a number of ranks that is not a power of two, ``sparcml-rd`` folds the ``N - 2^m`` extra
ranks into partners first (each sends its tensor to rank ``r - 2^m``, which adds it, and gets
the result back at the end), and ``sparcml-split`` gathers with a direct all-gather.
"""

from __future__ import annotations

from baselines.base import BaselineError, trivial_program
from baselines.direct import direct_program
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice

SPARSE_KINDS = frozenset({CollectiveKind.ALLREDUCE})
IN, OUT, SCR = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def rd_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank of ``sparcml-rd``: 1 (every message carries the whole buffer)."""
    if kind not in SPARSE_KINDS:
        raise BaselineError(f"sparcml-rd does not implement {kind.value}")
    return 1


def split_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank of ``sparcml-split``: N (one region per rank)."""
    if kind not in SPARSE_KINDS:
        raise BaselineError(f"sparcml-split does not implement {kind.value}")
    return num_ranks


def oktopk_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """Natural chunks per rank of ``oktopk``: N (one region per rank)."""
    if kind not in SPARSE_KINDS:
        raise BaselineError(f"oktopk does not implement {kind.value}")
    return num_ranks


def rd_program(collective: Collective, *, name: str = "") -> Program:
    """SparCML's sparse recursive doubling all-reduce (see the module docstring)."""
    c = collective
    n, cf = c.num_ranks, c.chunks_per_rank
    if n == 1:
        return trivial_program(c, name)
    b = ProgramBuilder(c, auto_deps=True, name=name)
    whole = Slice(OUT, 0, cf)
    core = 1 << (n.bit_length() - 1)
    for r in range(n):
        if not c.inplace:
            b.copy(r, Slice(IN, 0, cf), whole)
    tag = 0
    for e in range(core, n):  # fold the extra ranks in
        b.send(e, e - core, whole, tag=tag)
        b.recv(e - core, e, Slice(SCR, 0, cf), tag=tag)
        b.reduce(e - core, Slice(SCR, 0, cf), whole)
    step = 0
    while (1 << step) < core:
        tag += 1
        for r in range(core):
            peer = r ^ (1 << step)
            b.send(r, peer, whole, tag=tag)
            b.recv(r, peer, Slice(SCR, 0, cf), tag=tag)
            b.reduce(r, Slice(SCR, 0, cf), whole)
        step += 1
    tag += 1
    for e in range(core, n):  # and hand them the result
        b.send(e - core, e, whole, tag=tag)
        b.recv(e, e - core, whole, tag=tag)
    return b.build()


def split_program(collective: Collective, *, name: str = "") -> Program:
    """SparCML's split all-gather all-reduce (see the module docstring)."""
    c = collective
    n, cf = c.num_ranks, c.chunks_per_rank
    if n == 1:
        return trivial_program(c, name)
    if cf % n:
        raise BaselineError(f"sparcml-split needs a multiple of {n} chunks per rank, got {cf}")
    m = cf // n
    b = ProgramBuilder(c, auto_deps=True, name=name)
    for r in range(n):
        own = Slice(OUT, r * m, m)
        if not c.inplace:
            b.copy(r, Slice(IN, r * m, m), own)
        for s in range(1, n):
            dst, src = (r + s) % n, (r - s) % n
            b.send(r, dst, Slice(IN, dst * m, m), tag=0)
            b.recv(r, src, Slice(SCR, (s - 1) * m, m), tag=0)
            b.reduce(r, Slice(SCR, (s - 1) * m, m), own)
    if n & (n - 1):
        for r in range(n):
            for s in range(1, n):
                dst, src = (r + s) % n, (r - s) % n
                b.send(r, dst, Slice(OUT, r * m, m), tag=1)
                b.recv(r, src, Slice(OUT, src * m, m), tag=1)
        return b.build()
    step = 0
    while (1 << step) < n:
        for r in range(n):
            peer = r ^ (1 << step)
            width = (1 << step) * m
            mine = (r >> step << step) * m
            theirs = (peer >> step << step) * m
            b.send(r, peer, Slice(OUT, mine, width), tag=1 + step)
            b.recv(r, peer, Slice(OUT, theirs, width), tag=1 + step)
        step += 1
    return b.build()


def oktopk_program(collective: Collective, *, name: str = "") -> Program:
    """Ok-Topk's communication: split-and-reduce, then a balanced all-gather (the direct
    all-reduce's pattern); its top-k re-selection lives in the payload model."""
    if collective.kind not in SPARSE_KINDS:
        raise BaselineError(f"oktopk does not implement {collective.kind.value}")
    return direct_program(collective, name=name)
