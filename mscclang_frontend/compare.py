"""Chunk-level comparison of two Programs: what each GPU transfers, and which pairs match.

Used to hold that a compiled MSCCLang program is equivalent to the MSCCL-IR XML another
compiler (msccl-tools) made of it: read the XML with `mscclang_frontend.xml.read_xml` (which
splits fused steps into their sends, receives and local operations) and compare it with the
compiled Program. Two programs are equivalent at chunk level when

- every rank performs the same multiset of operations (kind, peer, source and destination
  slots, count), whatever their order, threadblocks, channels or tags; and
- the same sends meet the same receives: the multiset of matched pairs (sender and its
  source slots, receiver and its destination slots, whether the receive reduces) is the same,
  each program's pairs formed by its own matching rule (the k-th send from a to b with tag t
  meets the k-th receive on b from a with tag t).

Dependencies are not compared: two compilers may order the same transfers differently and
both be right, which `chakra_ir.verify.verify` decides for each program on its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from chakra_ir.program import Copy, Program, Recv, Reduce, Send, Slice

Transfer = tuple[str, int, str, str]
"""(kind, peer or -1, source slots or "", destination slots or "")."""

Pair = tuple[int, str, int, str, bool]
"""(sender, its source slots, receiver, its destination slots, the receive reduces)."""


def _fmt(s: Slice | None, scratch_offsets: bool = True) -> str:
    if s is None:
        return ""
    if not scratch_offsets and s.buffer.short == "s":
        return f"s[?:+{s.count}]"
    return f"{s.buffer.short}[{s.index}:{s.index + s.count}]"


def transfers(program: Program, scratch_offsets: bool = True) -> list[Counter[Transfer]]:
    """Per rank, the multiset of its operations without order, hints, tags or dependencies
    (and without the offsets of scratch slots unless ``scratch_offsets``)."""

    def _slots(s: Slice | None) -> str:
        return _fmt(s, scratch_offsets)

    out: list[Counter[Transfer]] = []
    for rank in range(program.num_ranks):
        counts: Counter[Transfer] = Counter()
        for op in program.ops(rank):
            if isinstance(op, Send):
                counts[("send", op.peer, _slots(op.src), "")] += 1
            elif isinstance(op, Recv):
                kind = "recv-reduce" if op.reduce else "recv"
                counts[(kind, op.peer, "", _slots(op.dst))] += 1
            elif isinstance(op, Copy):
                counts[("copy", -1, _slots(op.src), _slots(op.dst))] += 1
            else:
                assert isinstance(op, Reduce)
                counts[("reduce", -1, _slots(op.src), _slots(op.dst))] += 1
        out.append(counts)
    return out


def matched_pairs(program: Program, scratch_offsets: bool = True) -> Counter[Pair]:
    """The multiset of (send, receive) pairs under the program's own matching rule.

    Unmatched sends or receives appear with the other side as rank -1.
    """

    def _slots(s: Slice | None) -> str:
        return _fmt(s, scratch_offsets)

    sends: dict[tuple[int, int, int], list[Slice]] = {}
    recvs: dict[tuple[int, int, int], list[tuple[Slice, bool]]] = {}
    for rank in range(program.num_ranks):
        for op in program.ops(rank):
            if isinstance(op, Send):
                sends.setdefault((rank, op.peer, op.tag), []).append(op.src)
            elif isinstance(op, Recv):
                recvs.setdefault((op.peer, rank, op.tag), []).append((op.dst, op.reduce))
    pairs: Counter[Pair] = Counter()
    for key in sends.keys() | recvs.keys():
        a, b, _ = key
        ss = sends.get(key, [])
        rr = recvs.get(key, [])
        for k in range(max(len(ss), len(rr))):
            src = _slots(ss[k]) if k < len(ss) else ""
            dst, red = (_slots(rr[k][0]), rr[k][1]) if k < len(rr) else ("", False)
            pairs[(a if k < len(ss) else -1, src, b if k < len(rr) else -1, dst, red)] += 1
    return pairs


@dataclass(frozen=True)
class Difference:
    """How two programs differ at chunk level; empty lists mean equivalent."""

    ranks: list[str]
    pairs: list[str]

    @property
    def equivalent(self) -> bool:
        return not self.ranks and not self.pairs

    def summary(self, limit: int = 5) -> str:
        lines = (self.ranks + self.pairs)[:limit]
        more = len(self.ranks) + len(self.pairs) - len(lines)
        return "; ".join(lines) + (f"; ... {more} more" if more > 0 else "")


def compare(ours: Program, theirs: Program, *, scratch_offsets: bool = True) -> Difference:
    """The chunk-level differences between ``ours`` and ``theirs`` (see the module doc).

    With ``scratch_offsets=False`` scratch slots compare by count only, which tells apart
    programs that differ only in where they keep temporaries.
    """
    ranks: list[str] = []
    if ours.num_ranks != theirs.num_ranks:
        ranks.append(f"{ours.num_ranks} ranks against {theirs.num_ranks}")
    else:
        ta, tb = transfers(ours, scratch_offsets), transfers(theirs, scratch_offsets)
        for r, (a, b) in enumerate(zip(ta, tb, strict=True)):
            for t, n in sorted((a - b).items()):
                ranks.append(f"rank {r}: {n}x {_show(t)} only in ours")
            for t, n in sorted((b - a).items()):
                ranks.append(f"rank {r}: {n}x {_show(t)} only in theirs")
    pa, pb = matched_pairs(ours, scratch_offsets), matched_pairs(theirs, scratch_offsets)
    pairs = [f"{n}x pair {p} only in ours" for p, n in sorted((pa - pb).items())]
    pairs += [f"{n}x pair {p} only in theirs" for p, n in sorted((pb - pa).items())]
    return Difference(ranks, pairs)


def _show(t: Transfer) -> str:
    kind, peer, src, dst = t
    parts = [kind]
    if peer >= 0:
        parts.append(f"peer={peer}")
    if src:
        parts.append(f"src={src}")
    if dst:
        parts.append(f"dst={dst}")
    return " ".join(parts)
