"""The verifier: a Program is checked after every producer and before every backend.

`verify` runs four checks and raises `VerifyError` at the first failure, naming the rank, the
operation and, where one is involved, the chunk:

- structure: operation kinds, peers, buffers and slot ranges, buffer sizes against the
  collective, dependency ids, and message matching (the k-th send from a to b with tag t pairs
  with the k-th receive on b from a with tag t; both move the same number of slots); every
  in-network flow has inputs and outputs, on at least two ranks of one group, each rank at
  most once on each side, all moving the same number of slots;
- progress: with unbounded bandwidth and buffering every operation eventually runs (a
  dependency cycle, or a receive waiting on a send that can never be issued, is a deadlock);
- semantics: symbolic execution of chunk contents on physical slots (in-place aliases
  resolved), in a topological order of the program: reading an empty slot, reducing a
  contribution twice (in a rank or inside the network, where a flow sums its inputs), or an
  output that ends up wrong is an error;
- races: any two accesses to one slot, of which at least one writes or reduces, must be
  ordered by dependencies and message matching (happens-before); otherwise the result would
  depend on timing.
"""

from __future__ import annotations

import gc
import itertools
from collections import deque
from dataclasses import dataclass

import numpy as np

from chakra_ir.collective import Buffer, Collective, CollectiveKind, Contents, describe, merge
from chakra_ir.program import OpKind, Program
from topologies.errors import CollcError
from topologies.topology import Topology

SEND, RECV, RECV_REDUCE, COPY, REDUCE, FLOW_IN, FLOW_OUT = (int(k) for k in OpKind)
_KINDS = np.array([int(k) for k in OpKind], dtype=np.int64)


class VerifyError(CollcError):
    """A program that is wrong. ``check`` is one of structure, progress, semantics, race."""

    def __init__(self, check: str, message: str, rank: int = -1, op: int = -1) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check
        self.rank = rank
        self.op = op


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` checked, for summaries."""

    ranks: int
    operations: int
    messages: int
    checks: tuple[str, ...] = ("structure", "progress", "semantics", "races")
    flows: int = 0
    """In-network flows."""


class _Checker:
    def __init__(self, p: Program) -> None:
        self.p = p
        self.n = p.num_ops
        self.rank_of = p.op_rank()
        # Per flow id: the global indices of its FlowIns and FlowOuts (set by `flows`).
        self.flow_ins: dict[int, list[int]] = {}
        self.flow_outs: dict[int, list[int]] = {}

    def where(self, g: int) -> tuple[str, int, int]:
        r = int(self.rank_of[g])
        local = g - int(self.p.rank_offsets[r])
        try:
            desc = self.p.describe_op(g)
        except (ValueError, IndexError, KeyError):
            # The operation is too broken to print as text (a buffer or kind code that does
            # not exist: the very thing being reported); name it by its raw columns instead.
            p = self.p
            desc = (
                f"rank {r} op {local} (kind={int(p.kind[g])} peer={int(p.peer[g])} "
                f"src={int(p.src_buf[g])}[{int(p.src_index[g])}] "
                f"dst={int(p.dst_buf[g])}[{int(p.dst_index[g])}] count={int(p.count[g])})"
            )
        return desc, r, local

    def fail(self, check: str, g: int, message: str) -> VerifyError:
        if g < 0:
            return VerifyError(check, message)
        desc, r, local = self.where(g)
        return VerifyError(check, f"{desc}: {message}", r, local)

    # -- structure -----------------------------------------------------------------------------
    def structure(self) -> np.ndarray:
        p, n = self.p, self.n
        c = p.collective
        R = p.num_ranks
        if c.num_ranks != R:
            raise VerifyError("structure", f"program has {R} ranks, collective {c.num_ranks}")
        if p.buffer_sizes.shape != (R, 3):
            raise VerifyError("structure", "buffer sizes must list input, output, scratch per rank")
        for r in range(R):
            want = (c.input_chunks(r), c.output_chunks(r))
            have = (int(p.buffer_sizes[r, 0]), int(p.buffer_sizes[r, 1]))
            if have != want:
                raise VerifyError(
                    "structure",
                    f"rank {r} has input/output of {have[0]}/{have[1]} chunks, the "
                    f"{c.kind.value} needs {want[0]}/{want[1]}",
                    r,
                )
            if p.buffer_sizes[r, 2] < 0:
                raise VerifyError("structure", f"rank {r} has a negative scratch size", r)
        kind = p.kind
        bad = np.flatnonzero(~np.isin(kind, _KINDS))
        if bad.size:
            raise self.fail("structure", int(bad[0]), f"unknown operation kind {int(kind[bad[0]])}")
        bad = np.flatnonzero(p.count < 1)
        if bad.size:
            raise self.fail("structure", int(bad[0]), "moves no slots (count < 1)")
        is_comm = kind <= RECV_REDUCE
        peer = p.peer
        bad = np.flatnonzero(is_comm & ((peer < 0) | (peer >= R)))
        if bad.size:
            raise self.fail("structure", int(bad[0]), f"peer {int(peer[bad[0]])} does not exist")
        bad = np.flatnonzero(is_comm & (peer == self.rank_of))
        if bad.size:
            raise self.fail("structure", int(bad[0]), "sends to or receives from its own rank")
        uses_src = (kind == SEND) | (kind == COPY) | (kind == REDUCE) | (kind == FLOW_IN)
        uses_dst = (kind != SEND) & (kind != FLOW_IN)
        sizes = p.buffer_sizes[self.rank_of]
        for uses, buf, idx, what in (
            (uses_src, p.src_buf, p.src_index, "source"),
            (uses_dst, p.dst_buf, p.dst_index, "destination"),
        ):
            bad = np.flatnonzero(uses & ((buf < 0) | (buf > 2)))
            if bad.size:
                raise self.fail("structure", int(bad[0]), f"{what} names no buffer")
            b = np.where(uses, buf, 0).astype(np.int64)
            limit = sizes[np.arange(n), b]
            bad = np.flatnonzero(uses & ((idx < 0) | (idx.astype(np.int64) + p.count > limit)))
            if bad.size:
                g = int(bad[0])
                raise self.fail(
                    "structure",
                    g,
                    f"{what} slots {int(idx[g])}..{int(idx[g]) + int(p.count[g]) - 1} are "
                    f"outside {Buffer(int(buf[g])).label} of {int(limit[g])} chunks",
                )
        lens = np.diff(p.rank_offsets)
        dep_owner = np.repeat(np.arange(n), np.diff(p.dep_offsets))
        dep_limit = lens[self.rank_of[dep_owner]] if n else np.zeros(0, dtype=np.int64)
        bad = np.flatnonzero((p.deps < 0) | (p.deps >= dep_limit))
        if bad.size:
            g = int(dep_owner[bad[0]])
            raise self.fail(
                "structure", g, f"depends on operation {int(p.deps[bad[0]])}, which does not exist"
            )
        self.flows()
        return self.match()

    def flows(self) -> None:
        """Group the flow operations by flow id and check each flow's shape."""
        p = self.p
        members = np.flatnonzero(p.kind >= FLOW_IN)
        if not members.size:
            return
        bad = members[p.tag[members] < 0]
        if bad.size:
            raise self.fail("structure", int(bad[0]), "names a negative flow id")
        c = p.collective
        for f, (fi, fo) in sorted(p.flows().items()):
            if not fi or not fo:
                g = (fi or fo)[0]
                what = "no input (flow-in)" if not fi else "no output (flow-out)"
                raise self.fail("structure", g, f"flow {f} has {what}")
            self.flow_ins[f], self.flow_outs[f] = fi, fo
            counts = {int(p.count[g]) for g in fi + fo}
            if len(counts) > 1:
                g = next(g for g in fi + fo if int(p.count[g]) != int(p.count[fi[0]]))
                raise self.fail(
                    "structure",
                    g,
                    f"moves {int(p.count[g])} slots, but flow {f} moves {int(p.count[fi[0]])} "
                    "at its first input",
                )
            for side_ops, what in ((fi, "contributes to"), (fo, "receives from")):
                seen: set[int] = set()
                for g in side_ops:
                    r = int(self.rank_of[g])
                    if r in seen:
                        raise self.fail("structure", g, f"rank {r} {what} flow {f} twice")
                    seen.add(r)
            ranks = sorted({int(self.rank_of[g]) for g in fi + fo})
            if len(ranks) < 2:
                raise self.fail(
                    "structure",
                    fi[0],
                    f"flow {f} involves rank {ranks[0]} only: a flow crosses the network "
                    "between at least two ranks (use a copy)",
                )
            if c.groups:
                gr = {c.group_of(r) for r in ranks}
                if len(gr) > 1:
                    raise self.fail(
                        "structure",
                        fi[0],
                        f"flow {f} spans ranks of groups {', '.join(map(str, sorted(gr)))}; "
                        "groups exchange nothing",
                    )

    def match(self) -> np.ndarray:
        """For every receive, the global index of its send (-1 elsewhere)."""
        p = self.p
        R = p.num_ranks
        kind = p.kind
        sends = np.flatnonzero(kind == SEND)
        recvs = np.flatnonzero((kind == RECV) | (kind == RECV_REDUCE))
        s_pair = self.rank_of[sends].astype(np.int64) * R + p.peer[sends]
        r_pair = p.peer[recvs].astype(np.int64) * R + self.rank_of[recvs]
        s_order = np.lexsort((sends, p.tag[sends], s_pair))
        r_order = np.lexsort((recvs, p.tag[recvs], r_pair))
        s_keys = np.stack([s_pair[s_order], p.tag[sends][s_order]], axis=1)
        r_keys = np.stack([r_pair[r_order], p.tag[recvs][r_order]], axis=1)
        m = min(len(s_keys), len(r_keys))
        diff = np.flatnonzero(np.any(s_keys[:m] != r_keys[:m], axis=1))
        if diff.size or len(s_keys) != len(r_keys):
            i = int(diff[0]) if diff.size else m
            # The smaller key at the first difference has no partner.
            cand: list[tuple[tuple[int, int], int, str]] = []
            if i < len(s_keys):
                cand.append(
                    ((int(s_keys[i, 0]), int(s_keys[i, 1])), int(sends[s_order[i]]), "send")
                )
            if i < len(r_keys):
                cand.append(
                    ((int(r_keys[i, 0]), int(r_keys[i, 1])), int(recvs[r_order[i]]), "recv")
                )
            key, g, what = min(cand)
            src, dst = divmod(key[0], R)
            if what == "send":
                msg = f"no matching receive on rank {dst} from rank {src} with tag {key[1]}"
            else:
                msg = f"no matching send on rank {src} to rank {dst} with tag {key[1]}"
            raise self.fail("structure", g, msg)
        match = np.full(self.n, -1, dtype=np.int64)
        s_sorted = sends[s_order]
        r_sorted = recvs[r_order]
        match[r_sorted] = s_sorted
        bad = np.flatnonzero(p.count[s_sorted] != p.count[r_sorted])
        if bad.size:
            g = int(r_sorted[bad[0]])
            raise self.fail(
                "structure",
                g,
                f"receives {int(p.count[g])} slots but its send "
                f"({self.where(int(s_sorted[bad[0]]))[0]}) sends {int(p.count[s_sorted[bad[0]]])}",
            )
        return match

    # -- addresses -----------------------------------------------------------------------------
    def addresses(self) -> tuple[list[int], list[int], list[int], int]:
        """Flat physical slot addresses of every op's source and destination (-1 if unused)."""
        p = self.p
        lay = SymbolicMemory.layout(p.collective, p.buffer_sizes)
        rank_base, bases, target, shift = lay
        out = []
        rank = self.rank_of
        for buf, idx, used in (
            (p.src_buf, p.src_index, p.src_buf >= 0),
            (p.dst_buf, p.dst_index, p.dst_buf >= 0),
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

    def run(self, match: np.ndarray) -> None:
        """Symbolic execution and race checks, over the operations in execution order.

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

        def race(a: int, b: int, addr: int) -> VerifyError:
            return fail(
                "race",
                b,
                f"{self.slot_name(addr, rank_base)} is also accessed by "
                f"{self.where(perm_l[a])[0]} and the two are not ordered by dependencies",
            )

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
                    if mem[addr] is None:
                        raise fail(
                            "semantics",
                            i,
                            f"reads {self.slot_name(addr, rank_base)}, which holds no chunk",
                        )
                    w = last_w[addr]
                    if w >= 0 and w not in direct and not reaches(w, i):
                        raise race(w, i, addr)
                    rs = readers[addr]
                    if rs is None:
                        readers[addr] = [i]
                    else:
                        rs.append(i)
                if k == SEND:
                    inflight[i] = mem[a : a + cnt]
                    continue
                if k == FLOW_IN:
                    self.contribute(flow_sum, flow_of[i], mem[a : a + cnt], perm_l[i])
                    continue
                payload = mem[a : a + cnt]
            elif k == FLOW_OUT:
                payload = flow_sum[flow_of[i]]  # type: ignore[assignment]
            else:
                payload = inflight.pop(sent_by[i])
            d = dst[i]
            plain = k in (RECV, COPY, FLOW_OUT)
            for j in range(cnt):
                addr = d + j
                rs = readers[addr]
                if rs is not None:
                    # Each reader was ordered after the last writer when it read, so
                    # ordering every reader before i orders the writer too.
                    for x in rs:
                        if x != i and x not in direct and not reaches(x, i):
                            raise race(x, i, addr)
                    readers[addr] = None
                else:
                    w = last_w[addr]
                    if w >= 0 and w != i and w not in direct and not reaches(w, i):
                        raise race(w, i, addr)
                last_w[addr] = i
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


def _slot_name(buffer_sizes: np.ndarray, addr: int, rank_base: list[int]) -> str:
    r = int(np.searchsorted(rank_base, addr, side="right") - 1)
    off = addr - rank_base[r]
    i, o = int(buffer_sizes[r, 0]), int(buffer_sizes[r, 1])
    if off < i:
        return f"rank {r} input[{off}]"
    if off < i + o:
        return f"rank {r} output[{off - i}]"
    return f"rank {r} scratch[{off - i - o}]"


class SymbolicMemory:
    """The chunk contents of every physical slot of every rank (in-place aliases resolved),
    starting from the collective's precondition: the state `verify`'s symbolic execution runs
    on, public for executors that run a program in their own order (``backends.replay``
    applies each operation when its hardware completes it).

    ``read`` / ``write`` raise `VerifyError` ("semantics") for reading an empty slot or a
    reduction that would count a contribution twice; `check_postcondition` for a wrong
    output. Buffers are `Buffer` codes (0 input, 1 output, 2 scratch).
    """

    @staticmethod
    def layout(
        collective: Collective, buffer_sizes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rank_base, bases, target, shift)``: slot ``(r, b, i)`` lives at
        ``rank_base[r] + bases[r, target[r, b]] + shift[r, b] + i``. Each rank's buffers lie
        input, output, scratch one after another; in place, an aliased buffer maps to its
        partner with a per-rank shift."""
        c = collective
        R = len(buffer_sizes)
        sizes = np.asarray(buffer_sizes, dtype=np.int64).reshape(R, 3)
        bases = np.zeros((R, 3), dtype=np.int64)
        bases[:, 1] = sizes[:, 0]
        bases[:, 2] = sizes[:, 0] + sizes[:, 1]
        rank_base = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(sizes.sum(axis=1), out=rank_base[1:])
        shift = np.zeros((R, 3), dtype=np.int64)
        target = np.tile(np.arange(3, dtype=np.int64), (R, 1))
        if c.inplace:
            for r in range(R):
                for b in (Buffer.INPUT, Buffer.OUTPUT):
                    pb, pi = c.physical(r, b, 0)
                    target[r, b] = pb
                    shift[r, b] = pi
        return rank_base, bases, target, shift

    def __init__(self, collective: Collective, buffer_sizes: np.ndarray) -> None:
        self.collective = collective
        self.buffer_sizes = np.asarray(buffer_sizes, dtype=np.int64).reshape(-1, 3)
        rank_base, bases, target, shift = self.layout(collective, self.buffer_sizes)
        self.rank_base: list[int] = rank_base.tolist()
        # Per rank and logical buffer: the physical offset of its slot 0.
        self._origin: list[list[int]] = [
            [self.rank_base[r] + int(bases[r, target[r, b]]) + int(shift[r, b]) for b in range(3)]
            for r in range(len(self.buffer_sizes))
        ]
        self.mem: list[Contents | None] = [None] * self.rank_base[-1]
        for r in range(len(self.buffer_sizes)):
            init = collective.initial_input(r)
            start = self._origin[r][Buffer.INPUT]
            self.mem[start : start + len(init)] = init

    def address(self, rank: int, buffer: int, index: int) -> int:
        """The physical address of slot ``index`` of ``buffer`` of ``rank``."""
        return self._origin[rank][buffer] + index

    def slot_name(self, addr: int) -> str:
        return _slot_name(self.buffer_sizes, addr, self.rank_base)

    def read(self, rank: int, buffer: int, index: int, count: int) -> list[Contents]:
        """The contents of ``count`` slots; an empty one is a semantics error."""
        a = self.address(rank, buffer, index)
        out = self.mem[a : a + count]
        for j, v in enumerate(out):
            if v is None:
                raise VerifyError(
                    "semantics", f"reads {self.slot_name(a + j)}, which holds no chunk", rank
                )
        return out  # type: ignore[return-value]

    def write(
        self, rank: int, buffer: int, index: int, payload: list[Contents], reduce: bool
    ) -> None:
        """Overwrite the slots with ``payload``, or reduce it into them."""
        a = self.address(rank, buffer, index)
        mem = self.mem
        if not reduce:
            mem[a : a + len(payload)] = payload
            return
        for j, val in enumerate(payload):
            have = mem[a + j]
            if have is None:
                raise VerifyError(
                    "semantics",
                    f"reduces into {self.slot_name(a + j)}, which holds no chunk",
                    rank,
                )
            merged = merge(have, val)
            if merged is None:
                raise VerifyError(
                    "semantics",
                    f"reduces {describe(val)} into {self.slot_name(a + j)}, which already "
                    f"holds {describe(have)}: a contribution would count twice",
                    rank,
                )
            mem[a + j] = merged

    def check_postcondition(self) -> None:
        """Raise `VerifyError` ("semantics") at the first output slot that differs from the
        collective's postcondition."""
        c = self.collective
        for r in range(len(self.buffer_sizes)):
            expected = c.expected_output(r)
            for j, want in enumerate(expected):
                if want is None:
                    continue
                have = self.mem[self.address(r, Buffer.OUTPUT, j)]
                if have != want:
                    extra = ""
                    if have is not None and c.kind in (
                        CollectiveKind.ALLREDUCE,
                        CollectiveKind.REDUCE_SCATTER,
                        CollectiveKind.REDUCE,
                    ):
                        extra = _missing(have, want)
                    raise VerifyError(
                        "semantics",
                        f"rank {r} output[{j}] ends with {describe(have)}, expected "
                        f"{describe(want)}{extra}",
                        r,
                    )


def _missing(have: Contents, want: Contents) -> str:
    h = dict(have)
    for idx, mask in want:
        lack = mask & ~h.get(idx, 0)
        if lack:
            r = (lack & -lack).bit_length() - 1
            return f" (chunk({r},{idx}) is missing)"
    return ""


def verify(program: Program) -> VerifyReport:
    """Check ``program`` completely; raise `VerifyError` at the first problem.

    Returns a `VerifyReport` of what was checked. Runs in time roughly linear in the number of
    operations (about a few microseconds each).
    """
    checker = _Checker(program)
    match = checker.structure()
    # The symbolic state is millions of small tuples and lists that never form cycles; the
    # cyclic collector would rescan them over and over and make the run quadratic.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        checker.run(match)
    finally:
        if was_enabled:
            gc.enable()
    messages = int(np.count_nonzero(program.kind == SEND))
    return VerifyReport(program.num_ranks, program.num_ops, messages, flows=len(checker.flow_ins))


def verify_routes(program: Program, topology: Topology) -> None:
    """Check the placement and every Send's route hint against ``topology``.

    Each placed rank must be an NPU of the topology; a route must start at the sender's NPU,
    end at the receiver's and follow existing links; in-network flows need a topology whose
    switches reduce and multicast (`Topology.in_network`). Raises `VerifyError` (check "structure").
    """
    c = program.collective
    for r in range(program.num_ranks):
        if not 0 <= c.npu(r) < topology.num_npus:
            raise VerifyError(
                "structure",
                f"rank {r} is placed on NPU {c.npu(r)}, but the topology has {topology.num_npus} NPUs",
                r,
            )
    if program.has_flows and not topology.in_network:
        g = int(np.flatnonzero(program.kind >= FLOW_IN)[0])
        r = int(program.op_rank()[g])
        raise VerifyError(
            "structure",
            f"{program.describe_op(g)}: an in-network flow needs switches that reduce and "
            f"multicast, and {topology.spec} has none (FRED: fred:N; a reducing switch: "
            "switch:N,innet=yes)",
            r,
            g - int(program.rank_offsets[r]),
        )
    if not program.has_routes:
        return
    offsets = program.route_offsets
    nodes = program.route_nodes.tolist()
    rank_of = program.op_rank()
    for g in np.flatnonzero(np.diff(offsets) > 0).tolist():
        route = nodes[offsets[g] : offsets[g + 1]]
        r = int(rank_of[g])
        problem = ""
        if int(program.kind[g]) != SEND:
            problem = "carries a route but is not a send"
        elif route[0] != c.npu(r) or route[-1] != c.npu(int(program.peer[g])):
            problem = (
                f"route {'>'.join(map(str, route))} does not run from NPU {c.npu(r)} "
                f"to NPU {c.npu(int(program.peer[g]))}"
            )
        else:
            for u, v in itertools.pairwise(route):
                if not (0 <= u < topology.num_nodes and 0 <= v < topology.num_nodes) or not (
                    topology.links_between(u, v)
                ):
                    problem = f"route uses {u}>{v}, which is not a link of the topology"
                    break
        if problem:
            local = g - int(program.rank_offsets[r])
            raise VerifyError("structure", f"{program.describe_op(g)}: {problem}", r, local)
