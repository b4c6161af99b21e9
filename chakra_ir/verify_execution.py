"""The verifier's one pass over a Program in a topological order (`chakra_ir.verify`): progress
(the order exists, else the deadlock or dependency cycle is named), semantics (symbolic
execution of chunk contents on `SymbolicMemory`) and races (happens-before between every two
accesses to a slot, of which one writes)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from chakra_ir.collective import Contents, describe, merge
from chakra_ir.verify_error import Race, VerifyError
from chakra_ir.verify_memory import SymbolicMemory, _slot_name
from chakra_ir.verify_structure import (
    COPY,
    FLOW_IN,
    FLOW_OUT,
    RECV,
    RECV_REDUCE,
    REDUCE,
    SEND,
    StructureChecker,
)


@dataclass
class MessageTrace:
    """What the symbolic execution saw, by global op index: ``carried`` holds the contents of
    every Send's message and every FlowIn's slots, ``held`` the contents of a reducing Recv's
    destination just before it reduces, ``match`` the Send each Recv pairs with (-1 for other
    operations)."""

    match: np.ndarray
    carried: dict[int, list[Contents]] = field(default_factory=dict)
    held: dict[int, list[Contents]] = field(default_factory=dict)


class Checker(StructureChecker):
    """Every check of one Program: the structure check, then `run`."""

    # -- addresses -----------------------------------------------------------------------------
    def addresses(self) -> tuple[list[int], list[int], list[int], int]:
        """Flat physical slot addresses of every op's source and destination (-1 if unused)."""
        p = self.p
        lay = SymbolicMemory.layout(p.collective, p.buffer_sizes)
        rank_base, bases, target, shift = lay
        out = []
        rank = self.rank_of
        kind = p.kind
        # By kind, as the structure check ranged them: a field an operation does not use may
        # hold anything (a hand-edited file) and is never read.
        uses_src = (kind == SEND) | (kind == COPY) | (kind == REDUCE) | (kind == FLOW_IN)
        uses_dst = (kind != SEND) & (kind != FLOW_IN)
        for buf, idx, used in (
            (p.src_buf, p.src_index, uses_src),
            (p.dst_buf, p.dst_index, uses_dst),
        ):
            logical = np.where(used, buf, 0).astype(np.int64)
            phys = target[rank, logical]
            addr = rank_base[rank] + bases[rank, phys] + shift[rank, logical] + idx
            out.append(np.where(used, addr, -1).tolist())
        return out[0], out[1], rank_base.tolist(), int(rank_base[-1])

    # -- progress, semantics and races in one pass ---------------------------------------------
    def order(self, match: np.ndarray) -> np.ndarray:
        """A topological order of all operations (Kahn, FIFO), or a progress error.

        Edges are the dependencies and each send -> its matched receive: with unbounded
        bandwidth and buffering, a send never waits, so this order exists iff nothing deadlocks.
        """
        p, n = self.p, self.n
        owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(p.dep_offsets))
        parent = p.deps.astype(np.int64) + p.rank_offsets[self.rank_of[owner]]
        children = owner[np.argsort(parent, kind="stable")].tolist()
        child_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(parent, minlength=n), out=child_off[1:])
        child_off_l = child_off.tolist()
        indeg = np.diff(p.dep_offsets).astype(np.int64)
        is_recv = match >= 0
        indeg[is_recv] += 1
        # A FlowOut waits for every FlowIn of its flow.
        flow_next: dict[int, list[int]] = {}
        for f, fo in self.flow_outs.items():
            fi = self.flow_ins[f]
            indeg[fo] += len(fi)
            for g in fi:
                flow_next[g] = fo
        recv_of = np.full(n, -1, dtype=np.int64)
        recv_of[match[is_recv]] = np.flatnonzero(is_recv)
        recv_of_l = recv_of.tolist()
        indeg_l = indeg.tolist()
        queue = deque(i for i in range(n) if indeg_l[i] == 0)
        popleft, push = queue.popleft, queue.append
        out: list[int] = []
        emit = out.append
        while queue:
            g = popleft()
            emit(g)
            rv = recv_of_l[g]
            if rv >= 0:
                indeg_l[rv] -= 1
                if indeg_l[rv] == 0:
                    push(rv)
            if flow_next:
                for rv in flow_next.get(g, ()):
                    indeg_l[rv] -= 1
                    if indeg_l[rv] == 0:
                        push(rv)
            for j in range(child_off_l[g], child_off_l[g + 1]):
                ch = children[j]
                indeg_l[ch] -= 1
                if indeg_l[ch] == 0:
                    push(ch)
        if len(out) < n:
            ran = np.zeros(n, dtype=np.bool_)
            ran[out] = True
            raise self.deadlock(ran, match)
        return np.array(out, dtype=np.int64)

    def run(
        self, match: np.ndarray, trace: MessageTrace | None = None, *, semantics: bool = True
    ) -> None:
        """Symbolic execution and race checks, over the operations in execution order.

        With ``trace``, the contents every Send and FlowIn carries, and the contents every
        reducing Recv finds in its slots before it reduces, are recorded there (by global op
        index) for cost models that weigh a message by what it carries (``payloads``). With
        ``semantics=False`` only the races are checked (no chunk contents, no postcondition):
        an executor that checks contents in its own order (``backends.hwprog``) needs every
        race found, whatever the contents.

        Operations are renumbered by their position in `order` so that the loop walks its
        arrays front to back (millions of operations scattered over ranks would otherwise
        cost a cache miss per field). ``perm[i]`` is the global index of position ``i``.
        """
        p, n = self.p, self.n
        src_addr, dst_addr, rank_base, total = self.addresses()
        c = p.collective
        perm = self.order(match)
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n, dtype=np.int64)
        dep_count = np.diff(p.dep_offsets)[perm]
        dep_off_e = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(dep_count, out=dep_off_e[1:])
        gather = np.repeat(p.dep_offsets[:-1][perm] - dep_off_e[:-1], dep_count) + np.arange(
            int(dep_off_e[-1]), dtype=np.int64
        )
        dep_owner = np.repeat(perm, dep_count)
        dep_global = p.deps[gather].astype(np.int64) + p.rank_offsets[self.rank_of[dep_owner]]
        deps = inv[dep_global].tolist()
        dep_off = dep_off_e.tolist()
        kind = p.kind[perm].tolist()
        count = p.count[perm].tolist()
        src = np.asarray(src_addr, dtype=np.int64)[perm].tolist()
        dst = np.asarray(dst_addr, dtype=np.int64)[perm].tolist()
        m = match[perm]
        sent_by = np.where(m >= 0, inv[np.maximum(m, 0)], -1).tolist()
        perm_l = perm.tolist()
        flow_of = p.tag[perm].tolist() if self.flow_ins else []
        # Per FlowOut position: the positions of its flow's FlowIns (its message sources).
        flow_preds: dict[int, list[int]] = {
            int(inv[g]): [int(inv[x]) for x in self.flow_ins[f]]
            for f, fo in self.flow_outs.items()
            for g in fo
        }
        flow_sum: dict[int, list[Contents]] = {}
        del src_addr, dst_addr, m, gather, dep_owner, dep_global

        memory = SymbolicMemory(c, p.buffer_sizes)
        mem = memory.mem
        last_w = [-1] * total
        readers: list[list[int] | None] = [None] * total
        inflight: dict[int, list[Contents | None]] = {}

        def reaches(a: int, b: int) -> bool:
            """Whether position a happens before position b, searching b's ancestors.

            Only ancestors after a in the execution order can lie on a path from a, so the
            search stops at earlier positions.
            """
            seen = {b}
            stack = [b]
            while stack:
                x = stack.pop()
                preds = deps[dep_off[x] : dep_off[x + 1]]
                s = sent_by[x]
                if s >= 0:
                    # Popped last: local dependencies are searched first.
                    preds = [s, *preds]
                elif flow_preds and x in flow_preds:
                    preds = [*flow_preds[x], *preds]
                for y in preds:
                    if y == a:
                        return True
                    if y > a and y not in seen:
                        seen.add(y)
                        stack.append(y)
            return False

        def fail(check: str, i: int, message: str) -> VerifyError:
            return self.fail(check, perm_l[i], message)

        def race(a: int, b: int, addr: int, what: str) -> VerifyError:
            ga, gb = perm_l[a], perm_l[b]
            _, ra, la = self.where(ga)
            _, rb, lb = self.where(gb)
            reads = what == "read-after-write"
            buf = int((p.src_buf if reads else p.dst_buf)[gb])
            start = src[b] if reads else dst[b]
            index = int((p.src_index if reads else p.dst_index)[gb]) + addr - start
            err = fail(
                "race",
                b,
                f"{self.slot_name(addr, rank_base)} is also accessed by "
                f"{self.where(ga)[0]} and the two are not ordered by dependencies",
            )
            err.race = Race((ra, la), (rb, lb), buf, index, what)
            return err

        for i in range(n):
            k = kind[i]
            cnt = count[i]
            # Direct dependencies answer almost every ordering question; big lists become sets.
            direct: list[int] | set[int] = deps[dep_off[i] : dep_off[i + 1]]
            if len(direct) > 8:
                direct = set(direct)
            if k != RECV and k != RECV_REDUCE and k != FLOW_OUT:
                a = src[i]
                for addr in range(a, a + cnt):
                    if semantics and mem[addr] is None:
                        raise fail(
                            "semantics",
                            i,
                            f"reads {self.slot_name(addr, rank_base)}, which holds no chunk",
                        )
                    w = last_w[addr]
                    if w >= 0 and w not in direct and not reaches(w, i):
                        raise race(w, i, addr, "read-after-write")
                    rs = readers[addr]
                    if rs is None:
                        readers[addr] = [i]
                    else:
                        rs.append(i)
                if k == SEND:
                    if semantics:
                        inflight[i] = mem[a : a + cnt]
                        if trace is not None:
                            trace.carried[perm_l[i]] = inflight[i]  # type: ignore[assignment]
                    continue
                if k == FLOW_IN:
                    if semantics:
                        if trace is not None:
                            trace.carried[perm_l[i]] = mem[a : a + cnt]  # type: ignore[assignment]
                        self.contribute(flow_sum, flow_of[i], mem[a : a + cnt], perm_l[i])
                    continue
                payload = mem[a : a + cnt]
            elif not semantics:
                payload = []
            elif k == FLOW_OUT:
                payload = flow_sum[flow_of[i]]  # type: ignore[assignment]
            else:
                payload = inflight.pop(sent_by[i])
            d = dst[i]
            plain = k in (RECV, COPY, FLOW_OUT)
            if trace is not None and k == RECV_REDUCE:
                trace.held[perm_l[i]] = mem[d : d + cnt]  # type: ignore[assignment]
            for j in range(cnt):
                addr = d + j
                rs = readers[addr]
                if rs is not None:
                    # Each reader was ordered after the last writer when it read, so
                    # ordering every reader before i orders the writer too.
                    for x in rs:
                        if x != i and x not in direct and not reaches(x, i):
                            raise race(x, i, addr, "write-after-read")
                    readers[addr] = None
                else:
                    w = last_w[addr]
                    if w >= 0 and w != i and w not in direct and not reaches(w, i):
                        raise race(w, i, addr, "write-after-write")
                last_w[addr] = i
                if not semantics:
                    continue
                if plain:
                    mem[addr] = payload[j]
                else:
                    have = mem[addr]
                    val = payload[j]
                    if have is None:
                        raise fail(
                            "semantics",
                            i,
                            f"reduces into {self.slot_name(addr, rank_base)}, which holds no chunk",
                        )
                    assert val is not None
                    merged = merge(have, val)
                    if merged is None:
                        raise fail(
                            "semantics",
                            i,
                            f"reduces {describe(val)} into {self.slot_name(addr, rank_base)}, "
                            f"which already holds {describe(have)}: a contribution would count twice",
                        )
                    mem[addr] = merged
        if semantics:
            memory.check_postcondition()

    def slot_name(self, addr: int, rank_base: list[int]) -> str:
        return _slot_name(self.p.buffer_sizes, addr, rank_base)

    def contribute(
        self,
        flow_sum: dict[int, list[Contents]],
        flow: int,
        payload: list[Contents | None],
        g: int,
    ) -> None:
        """Add one FlowIn's slots to its flow's sum (the reduction inside the network)."""
        have = flow_sum.get(flow)
        if have is None:
            flow_sum[flow] = payload  # type: ignore[assignment]
            return
        for j, val in enumerate(payload):
            assert val is not None
            merged = merge(have[j], val)
            if merged is None:
                raise self.fail(
                    "semantics",
                    g,
                    f"contributes {describe(val)} to flow {flow}, which already sums "
                    f"{describe(have[j])}: a contribution would count twice",
                )
            have[j] = merged

    def deadlock(self, ran: np.ndarray, match: np.ndarray) -> VerifyError:
        p = self.p
        stuck = np.flatnonzero(~ran).tolist()
        stuck_set = set(stuck)
        # A cycle of local dependencies is reported as such.
        for g in stuck:
            r = int(self.rank_of[g])
            base = int(p.rank_offsets[r])
            seen: dict[int, int] = {}
            x = g
            while x in stuck_set and x not in seen:
                seen[x] = len(seen)
                parents = [base + int(d) for d in p.deps_of(x) if base + int(d) in stuck_set]
                if not parents:
                    break
                x = parents[0]
            if x in seen and x in stuck_set and p.deps_of(x).size:
                cycle = [y for y, i in sorted(seen.items(), key=lambda t: t[1]) if i >= seen[x]]
                ids = " -> ".join(str(y - base) for y in reversed(cycle))
                return self.fail(
                    "progress", x, f"dependency cycle on rank {r}: operations {ids} -> {x - base}"
                )
        for g in stuck:
            m = int(match[g])
            if m >= 0 and m in stuck_set:
                return self.fail(
                    "progress",
                    g,
                    f"deadlock: waits for {self.where(m)[0]}, which can never be issued "
                    f"({len(stuck)} operations never run)",
                )
        return self.fail("progress", stuck[0], f"deadlock: {len(stuck)} operations never run")
