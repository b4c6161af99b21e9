"""The verifier's structure check (`chakra_ir.verify`): operation kinds, peers, buffers and slot
ranges, buffer sizes against the collective, dependency ids, the shape of every in-network flow
and message matching. `StructureChecker` also names an operation in an error message."""

from __future__ import annotations

import numpy as np

from chakra_ir.collective import Buffer
from chakra_ir.program import OpKind, Program
from chakra_ir.verify_error import VerifyError

SEND, RECV, RECV_REDUCE, COPY, REDUCE, FLOW_IN, FLOW_OUT = (int(k) for k in OpKind)
_KINDS = np.array([int(k) for k in OpKind], dtype=np.int64)


class StructureChecker:
    """The structure check of one Program; `chakra_ir.verify_execution.Checker` adds the
    others."""

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
