"""Verification of a `SymmetricProgram` in its own form: rank 0's template plus invariance.

The whole program is the template's orbit under the translation group, so it is invariant by
construction; what is left to prove holds for rank 0 alone:

- structure: kinds, directions and slots in range; the k-th send of the template on direction
  ``g`` matches (by translation) the k-th receive of rank ``g`` from rank 0, which is the
  template's k-th receive from direction ``-g``; so per direction the send and receive counts
  must agree.
- progress: the full dependency graph (deps plus message edges) maps onto the *quotient*
  graph on template operations (receive from ``-g`` #k after send on ``g`` #k); a cycle in the
  full graph maps to a cycle in the quotient, so an acyclic quotient means no deadlock on any
  rank.
- semantics: symbolic execution of rank 0 in a topological order of the quotient; a received
  message holds the matched send's contents translated by ``-g``. Contents are
  ``(origin, i, contributors)``, contributors a sorted array of ranks or None for all ranks.
  Reading an empty slot, reducing a contribution twice, or a wrong output is an error.
- races: two accesses of one slot of rank 0, one writing, must be ordered by rank 0's own
  dependencies (transitively). This is sufficient for every rank by symmetry; it is stricter
  than `chakra_ir.verify` (which also accepts orderings through messages), so it may refuse
  a correct program, never accept a racy one.

Raises `VerifyError` (the same type as `verify`) at the first problem.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Buffer, CollectiveKind
from chakra_ir.program import OpKind
from chakra_ir.symmetric import SymmetricProgram
from chakra_ir.verify import VerifyReport
from chakra_ir.verify_error import VerifyError

Contents = tuple[int, int, "npt.NDArray[np.int64] | None"]


def _fail(check: str, text: str, op: int = -1) -> VerifyError:
    return VerifyError(check, f"symmetric template: {text}", 0, op)


def verify_symmetric(sp: SymmetricProgram) -> VerifyReport:
    """Prove ``sp`` correct on every rank (module docstring); return what was checked."""
    c, group, k = sp.collective, sp.group, sp.block
    n, t = sp.num_ranks, sp.template_len
    if c.kind not in (CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE):
        raise _fail("structure", f"{c.kind.value} has no symmetric form")
    col = {key: v.astype(np.int64).tolist() for key, v in sp.columns.items()}
    kind, dirn = col["kind"], col["direction"]
    send_k, recv_k = int(OpKind.SEND), (int(OpKind.RECV), int(OpKind.RECV_REDUCE))
    sizes = {int(Buffer.INPUT): c.input_chunks(0), int(Buffer.OUTPUT): c.output_chunks(0)}
    sends: dict[int, list[int]] = {}
    recvs: dict[int, list[int]] = {}
    for j in range(t):
        if kind[j] not in (send_k, *recv_k, int(OpKind.COPY)):
            raise _fail("structure", f"op {j} has kind {kind[j]}", j)
        if (kind[j] == int(OpKind.COPY)) != (dirn[j] < 0) or not -1 <= dirn[j] < n:
            raise _fail("structure", f"op {j} has direction {dirn[j]}", j)
        for side in ("src", "dst"):
            buf, elem, i = col[f"{side}_buf"][j], col[f"{side}_elem"][j], col[f"{side}_i"][j]
            if buf < 0:
                continue
            limit = k if elem >= 0 else sizes.get(buf, 0)
            if buf not in sizes or not (-1 <= elem < n) or not 0 <= i < limit:
                raise _fail("structure", f"op {j} names slot {buf}/{elem}/{i} out of range", j)
        if kind[j] == send_k:
            sends.setdefault(dirn[j], []).append(j)
        elif kind[j] in recv_k:
            recvs.setdefault(dirn[j], []).append(j)
    matched: dict[int, tuple[int, int]] = {}  # receive -> (its send, direction of the send)
    for g, ss in sends.items():
        back = int(group.neg(g)[0])
        rr = recvs.get(back, [])
        if len(rr) != len(ss):
            raise _fail(
                "structure", f"{len(ss)} sends on direction {g} but {len(rr)} receives from {back}"
            )
        for s, r in zip(ss, rr, strict=True):
            matched[r] = (s, g)
    for g, rr in recvs.items():
        if int(group.neg(g)[0]) not in sends:
            raise _fail("structure", f"receive from direction {g} has no send", rr[0])
    # progress: Kahn's order on the quotient graph
    offs, deps = sp.dep_offsets.tolist(), sp.deps.tolist()
    indeg = [0] * t
    succ: list[list[int]] = [[] for _ in range(t)]
    for j in range(t):
        for d in deps[offs[j] : offs[j + 1]]:
            if not 0 <= d < t or d == j:
                raise _fail("structure", f"op {j} depends on {d}", j)
            succ[d].append(j)
            indeg[j] += 1
    for r, (s, _) in matched.items():
        succ[s].append(r)
        indeg[r] += 1
    queue = deque(j for j in range(t) if indeg[j] == 0)
    order: list[int] = []
    while queue:
        j = queue.popleft()
        order.append(j)
        for v in succ[j]:
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    if len(order) != t:
        stuck = next(j for j in range(t) if indeg[j] > 0)
        raise _fail("progress", f"deadlock: op {stuck} can never run", stuck)
    _semantics(sp, col, order, matched)
    _races(sp, col, offs, deps)
    return VerifyReport(n, sp.num_ops, len(matched) * n)


def _slot(col: dict[str, list[int]], side: str, j: int) -> tuple[int, int, int]:
    return col[f"{side}_buf"][j], col[f"{side}_elem"][j], col[f"{side}_i"][j]


def _key(sp: SymmetricProgram, slot: tuple[int, int, int]) -> tuple[int, int]:
    """The physical slot of rank 0 (in-place aliases resolved)."""
    buf, elem, i = slot
    index = i if elem < 0 else int(sp.group.neg(elem)[0]) * sp.block + i
    b, x = sp.collective.physical(0, Buffer(buf), index)
    return int(b), x


def _semantics(
    sp: SymmetricProgram,
    col: dict[str, list[int]],
    order: list[int],
    matched: dict[int, tuple[int, int]],
) -> None:
    c, group, n, k = sp.collective, sp.group, sp.num_ranks, sp.block
    reducing = c.kind is CollectiveKind.ALLREDUCE
    mem: dict[tuple[int, int], Contents] = {}
    for x in range(c.input_chunks(0)):
        origin, i = (0, x) if not reducing else divmod(x, k)
        b, p = c.physical(0, Buffer.INPUT, x)
        mem[(int(b), p)] = (origin, i, np.zeros(1, dtype=np.int64))
    sent: dict[int, Contents] = {}
    for j in order:
        kd = col["kind"][j]
        if kd in (int(OpKind.SEND), int(OpKind.COPY)):
            src = _key(sp, _slot(col, "src", j))
            if src not in mem:
                raise _fail("semantics", f"op {j} reads an empty slot", j)
            if kd == int(OpKind.SEND):
                sent[j] = mem[src]
                continue
            mem[_key(sp, _slot(col, "dst", j))] = mem[src]
            continue
        s, g = matched[j]
        origin, i, who = sent[s]
        moved: Contents = (
            int(group.sub(origin, g)[0]),
            i,
            None if who is None else group.sub(who, g),
        )
        dst = _key(sp, _slot(col, "dst", j))
        if kd == int(OpKind.RECV):
            mem[dst] = moved
            continue
        have = mem.get(dst)
        if have is None or have[:2] != moved[:2]:
            raise _fail("semantics", f"op {j} reduces into a slot that holds another chunk", j)
        mine, theirs = have[2], moved[2]
        if mine is None or theirs is None or len(np.intersect1d(mine, theirs)) > 0:
            raise _fail("semantics", f"op {j} reduces a contribution twice", j)
        both = np.union1d(mine, theirs)
        mem[dst] = (moved[0], i, None if len(both) == n else both)
    for x in range(c.output_chunks(0)):
        got = mem.get(_key(sp, (int(Buffer.OUTPUT), -1, x)))
        want_origin, i = divmod(x, k)
        ok = got is not None and got[:2] == (want_origin, i)
        if got is not None and ok:
            who = got[2]
            ok = who is None if reducing else who is not None and who.tolist() == [want_origin]
        if not ok:
            raise _fail("semantics", f"output slot {x} of rank 0 ends up wrong")


def _races(
    sp: SymmetricProgram, col: dict[str, list[int]], offs: list[int], deps: list[int]
) -> None:
    t = sp.template_len
    access: dict[tuple[int, int], list[tuple[int, bool]]] = {}
    for j in range(t):
        if col["src_buf"][j] >= 0:
            access.setdefault(_key(sp, _slot(col, "src", j)), []).append((j, False))
        if col["dst_buf"][j] >= 0:
            access.setdefault(_key(sp, _slot(col, "dst", j)), []).append((j, True))
    parents = [deps[offs[j] : offs[j + 1]] for j in range(t)]

    def before(a: int, b: int) -> bool:
        seen, stack = {b}, [b]
        while stack:
            v = stack.pop()
            for p in parents[v]:
                if p == a:
                    return True
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return False

    for accs in access.values():
        accs.sort()
        last_write = -1
        reads: list[int] = []
        for j, writes in accs:
            if writes:
                for r in [*reads, last_write]:
                    if r >= 0 and r != j and not (before(r, j) or before(j, r)):
                        raise _fail("races", f"ops {r} and {j} touch one slot unordered", j)
                last_write, reads = j, []
            else:
                if last_write >= 0 and not (before(last_write, j) or before(j, last_write)):
                    raise _fail("races", f"ops {last_write} and {j} touch one slot unordered", j)
                reads.append(j)
