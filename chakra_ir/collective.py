"""Collectives: what a program must achieve.

A `Collective` names the kind (all-gather, reduce-scatter, ...), the number of ranks, the chunks
per rank, whether it runs in place, the root of a rooted kind and where each rank sits on the
topology (the placement). From these it derives the buffer sizes, the precondition (which chunk
sits in which input slot) and the postcondition (what each output slot must hold), following
MSCCLang's definitions (msccl-tools' collectives).

Chunk contents are written compactly, because a reduced slot of a 1,024-rank all-reduce holds
1,024 contributions: `Contents` is a sorted tuple of ``(origin_index, rank_mask)`` pairs, where
bit ``r`` of ``rank_mask`` says that chunk ``(r, origin_index)`` (origin rank, slot of the
origin's input buffer) contributed. A plain chunk is ``((index, 1 << rank),)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from topologies.errors import CollcError

Contents = tuple[tuple[int, int], ...]
"""Sorted ``(origin_index, rank_mask)`` pairs; see the module docstring."""


class Buffer(IntEnum):
    """The three buffers of a rank. Values are the codes stored in the IR's columns."""

    INPUT = 0
    OUTPUT = 1
    SCRATCH = 2

    @property
    def short(self) -> str:
        """MSCCL's one-letter name: i, o, s."""
        return "ios"[self.value]

    @property
    def label(self) -> str:
        return ("input", "output", "scratch")[self.value]

    @classmethod
    def parse(cls, text: str) -> Buffer:
        for b in cls:
            if text in (b.short, b.label):
                return b
        raise ValueError(f"unknown buffer {text!r} (expected input, output or scratch)")


class CollectiveKind(StrEnum):
    """The collectives collc knows. Values are MSCCLang's ``coll`` names."""

    ALLGATHER = "allgather"
    REDUCE_SCATTER = "reduce_scatter"
    ALLREDUCE = "allreduce"
    ALLTOALL = "alltoall"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    CUSTOM = "custom"

    @property
    def rooted(self) -> bool:
        return self in (
            CollectiveKind.BROADCAST,
            CollectiveKind.REDUCE,
            CollectiveKind.GATHER,
            CollectiveKind.SCATTER,
        )

    @property
    def reducing(self) -> bool:
        return self in (
            CollectiveKind.ALLREDUCE,
            CollectiveKind.REDUCE_SCATTER,
            CollectiveKind.REDUCE,
        )


_ALIASES = {
    "all_gather": CollectiveKind.ALLGATHER,
    "all-gather": CollectiveKind.ALLGATHER,
    "reducescatter": CollectiveKind.REDUCE_SCATTER,
    "reduce-scatter": CollectiveKind.REDUCE_SCATTER,
    "all_reduce": CollectiveKind.ALLREDUCE,
    "all-reduce": CollectiveKind.ALLREDUCE,
    "all_to_all": CollectiveKind.ALLTOALL,
    "all-to-all": CollectiveKind.ALLTOALL,
}


def parse_collective_kind(text: str) -> CollectiveKind:
    """A collective name as users write it (``allreduce``, ``all-reduce``, ``reducescatter``...)."""
    key = text.strip().lower()
    if key in _ALIASES:
        return _ALIASES[key]
    try:
        return CollectiveKind(key)
    except ValueError:
        names = ", ".join(k.value for k in CollectiveKind if k is not CollectiveKind.CUSTOM)
        raise CollcError(f"unknown collective {text!r} (expected one of {names})") from None


def chunk(rank: int, index: int) -> Contents:
    """The contents of one plain chunk: input slot ``index`` of ``rank``."""
    return ((index, 1 << rank),)


def merge(a: Contents, b: Contents) -> Contents | None:
    """``a`` reduced with ``b``; None when they share a contribution (a double reduction)."""
    if len(a) == 1 and len(b) == 1 and a[0][0] == b[0][0]:
        ma, mb = a[0][1], b[0][1]
        if ma & mb:
            return None
        return ((a[0][0], ma | mb),)
    out = dict(a)
    for idx, mask in b:
        have = out.get(idx, 0)
        if have & mask:
            return None
        out[idx] = have | mask
    return tuple(sorted(out.items()))


def contributions(c: Contents) -> list[tuple[int, int]]:
    """The ``(origin_rank, origin_index)`` chunks in ``c``, sorted."""
    out = []
    for idx, mask in c:
        r = 0
        while mask:
            if mask & 1:
                out.append((r, idx))
            mask >>= 1
            r += 1
    return sorted(out)


def describe(c: Contents | None) -> str:
    """Human form: ``chunk(2,5)``, ``sum of 4 chunks at index 3 from ranks 0-3``, or ``empty``."""
    if c is None:
        return "empty"
    parts = contributions(c)
    if len(parts) == 1:
        return f"chunk({parts[0][0]},{parts[0][1]})"
    if len(c) == 1:
        ranks = [r for r, _ in parts]
        return f"sum of {len(parts)} chunks at index {c[0][0]} from ranks {_ranges(ranks)}"
    return "sum of " + " + ".join(f"chunk({r},{i})" for r, i in parts)


def _ranges(values: Sequence[int]) -> str:
    out: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


@dataclass(frozen=True)
class Collective:
    """What a program must achieve, over ``num_ranks`` ranks.

    ``chunks_per_rank`` is MSCCLang's chunk factor: all-gather has that many input chunks per
    rank and ``num_ranks`` times as many output chunks, and so on (see `input_chunks`,
    `output_chunks`). ``root`` is required for rooted kinds and must be -1 otherwise.
    ``placement[r]`` is the NPU rank ``r`` runs on; empty means identity. A ``CUSTOM``
    collective carries its pre- and postcondition explicitly in ``custom_input`` and
    ``custom_output`` (per rank, per slot, `Contents` or None).

    ``groups`` splits the ranks into process groups that each run the collective among
    themselves, at once: ``groups[g]`` lists the ranks of group ``g`` in group order (group-local
    rank ``i`` is ``groups[g][i]``). Empty means one group of every rank. Groups are disjoint,
    cover every rank, have equal sizes (one buffer shape for every rank) and at least two of
    them; rooted and custom kinds take none. Buffer sizes, aliases and the pre- and
    postcondition are those of the kind over the rank's group.
    """

    kind: CollectiveKind
    num_ranks: int
    chunks_per_rank: int = 1
    inplace: bool = False
    root: int = -1
    placement: tuple[int, ...] = ()
    name: str = ""
    custom_input: tuple[tuple[Contents | None, ...], ...] = field(default=(), compare=True)
    custom_output: tuple[tuple[Contents | None, ...], ...] = field(default=(), compare=True)
    groups: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.num_ranks < 1:
            raise CollcError(f"a collective needs at least 1 rank, got {self.num_ranks}")
        if self.chunks_per_rank < 1:
            raise CollcError(f"chunks per rank must be at least 1, got {self.chunks_per_rank}")
        if self.kind.rooted:
            if not 0 <= self.root < self.num_ranks:
                raise CollcError(
                    f"root {self.root} is outside the ranks 0..{self.num_ranks - 1} of the "
                    f"{self.kind.value}"
                )
        elif self.root != -1:
            raise CollcError(f"{self.kind.value} takes no root")
        if self.placement:
            if len(self.placement) != self.num_ranks:
                raise CollcError(
                    f"placement names {len(self.placement)} NPUs for {self.num_ranks} ranks"
                )
            if len(set(self.placement)) != len(self.placement) or min(self.placement) < 0:
                raise CollcError("placement must name distinct non-negative NPUs")
        if self.kind is CollectiveKind.CUSTOM:
            if len(self.custom_input) != self.num_ranks or len(self.custom_output) != (
                self.num_ranks
            ):
                raise CollcError("a custom collective lists its buffers for every rank")
            if self.inplace and any(
                len(i) != len(o) for i, o in zip(self.custom_input, self.custom_output, strict=True)
            ):
                raise CollcError(
                    "an in-place custom collective aliases output slot j to input slot j, so "
                    "every rank's input and output must have the same size"
                )
        if self.groups:
            self._check_groups()

    def _check_groups(self) -> None:
        if self.kind.rooted or self.kind is CollectiveKind.CUSTOM:
            raise CollcError(f"a {self.kind.value} cannot be split into process groups")
        if len(self.groups) < 2:
            raise CollcError("process groups: give at least two groups (one group is no groups)")
        size = len(self.groups[0])
        seen: dict[int, int] = {}
        for g, members in enumerate(self.groups):
            if len(members) != size:
                raise CollcError(
                    f"process groups must have equal sizes: group 0 has {size} ranks, "
                    f"group {g} has {len(members)}"
                )
            for r in members:
                if not 0 <= r < self.num_ranks:
                    raise CollcError(
                        f"group {g} names rank {r}, outside the ranks 0..{self.num_ranks - 1}"
                    )
                if r in seen:
                    raise CollcError(f"rank {r} is in groups {seen[r]} and {g}: groups overlap")
                seen[r] = g
        if len(seen) != self.num_ranks:
            missing = min(set(range(self.num_ranks)) - set(seen))
            raise CollcError(f"rank {missing} is in no group: groups must cover every rank")

    # -- groups --------------------------------------------------------------------------------
    @property
    def group_size(self) -> int:
        """Ranks per group (every rank when there are no groups)."""
        return len(self.groups[0]) if self.groups else self.num_ranks

    @property
    def num_groups(self) -> int:
        return len(self.groups) if self.groups else 1

    def group_members(self, rank: int) -> tuple[int, ...]:
        """The ranks of ``rank``'s group, in group order."""
        if not self.groups:
            return tuple(range(self.num_ranks))
        return self.groups[self._group_index()[rank][0]]

    def group_position(self, rank: int) -> int:
        """``rank``'s group-local rank."""
        return self._group_index()[rank][1] if self.groups else rank

    def group_of(self, rank: int) -> int:
        """The index of ``rank``'s group (0 without groups)."""
        return self._group_index()[rank][0] if self.groups else 0

    def _group_index(self) -> dict[int, tuple[int, int]]:
        cached: dict[int, tuple[int, int]] | None = self.__dict__.get("_gidx")
        if cached is None:
            cached = {
                r: (g, i) for g, members in enumerate(self.groups) for i, r in enumerate(members)
            }
            object.__setattr__(self, "_gidx", cached)
        return cached

    def group_collective(self, group: int) -> Collective:
        """The collective group ``group`` runs, as a collective of its own: its ranks are the
        group-local ranks, placed on the NPUs of the group's ranks."""
        members = self.groups[group] if self.groups else tuple(range(self.num_ranks))
        return Collective(
            self.kind,
            len(members),
            self.chunks_per_rank,
            self.inplace,
            self.root,
            tuple(self.npu(r) for r in members),
            self.name,
        )

    # -- sizes ---------------------------------------------------------------------------------
    def input_chunks(self, rank: int = 0) -> int:
        """Slots of the input buffer of ``rank``."""
        n, cf, k = self.group_size, self.chunks_per_rank, self.kind
        if k is CollectiveKind.CUSTOM:
            return len(self.custom_input[rank])
        if k in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLTOALL, CollectiveKind.SCATTER):
            return n * cf
        return cf

    def output_chunks(self, rank: int = 0) -> int:
        """Slots of the output buffer of ``rank`` (aliased into the input when in place)."""
        n, cf, k = self.group_size, self.chunks_per_rank, self.kind
        if k is CollectiveKind.CUSTOM:
            return len(self.custom_output[rank])
        if k in (CollectiveKind.ALLGATHER, CollectiveKind.ALLTOALL, CollectiveKind.GATHER):
            return n * cf
        return cf

    @property
    def size_chunks(self) -> int:
        """Chunks in the buffer that ``--size`` names (nccl-tests: the largest buffer)."""
        return max(self.input_chunks(0), self.output_chunks(0))

    def npu(self, rank: int) -> int:
        """The NPU that ``rank`` runs on."""
        return self.placement[rank] if self.placement else rank

    # -- aliasing ------------------------------------------------------------------------------
    def physical(self, rank: int, buffer: Buffer, index: int) -> tuple[Buffer, int]:
        """The storage slot behind ``(buffer, index)`` of ``rank``, following in-place aliases.

        In place, all-gather and gather keep their input inside the output (input ``j`` is
        output ``rank * cf + j``); reduce-scatter and scatter keep their output inside the
        input (output ``j`` is input ``rank * cf + j``); the others share one buffer slot for
        slot (output ``j`` is input ``j``).
        """
        if not self.inplace or buffer is Buffer.SCRATCH:
            return buffer, index
        k, cf = self.kind, self.chunks_per_rank
        rank = self.group_position(rank)
        if k in (CollectiveKind.ALLGATHER, CollectiveKind.GATHER):
            if buffer is Buffer.INPUT:
                return Buffer.OUTPUT, rank * cf + index
            return buffer, index
        if buffer is Buffer.OUTPUT:
            if k in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.SCATTER):
                return Buffer.INPUT, rank * cf + index
            return Buffer.INPUT, index
        return buffer, index

    # -- pre- and postcondition ----------------------------------------------------------------
    def initial_input(self, rank: int) -> list[Contents | None]:
        """Per input slot of ``rank``, the chunk it holds before the collective runs."""
        if self.kind is CollectiveKind.CUSTOM:
            return list(self.custom_input[rank])
        if self.kind is CollectiveKind.SCATTER and rank != self.root:
            return [None] * self.input_chunks(rank)
        if self.kind is CollectiveKind.BROADCAST and rank != self.root:
            # Non-roots' input is not significant; it is never read by a correct broadcast.
            return [None] * self.input_chunks(rank)
        return [chunk(rank, i) for i in range(self.input_chunks(rank))]

    def expected_output(self, rank: int) -> list[Contents | None]:
        """Per output slot of ``rank``, what it must hold after; None where anything goes."""
        n, cf, k, root = self.num_ranks, self.chunks_per_rank, self.kind, self.root
        everyone = (1 << n) - 1
        out: list[Contents | None]
        if k is CollectiveKind.CUSTOM:
            return list(self.custom_output[rank])
        members: Sequence[int] = range(n)
        pos = rank
        if self.groups:
            members = self.group_members(rank)
            pos = self.group_position(rank)
            everyone = sum(1 << r for r in members)
        if k is CollectiveKind.ALLGATHER:
            out = [chunk(i, c) for i in members for c in range(cf)]
        elif k is CollectiveKind.ALLREDUCE:
            out = [((c, everyone),) for c in range(cf)]
        elif k is CollectiveKind.REDUCE_SCATTER:
            out = [((pos * cf + c, everyone),) for c in range(cf)]
        elif k is CollectiveKind.ALLTOALL:
            out = [chunk(i, pos * cf + c) for i in members for c in range(cf)]
        elif k is CollectiveKind.BROADCAST:
            out = [chunk(root, c) for c in range(cf)]
        elif k is CollectiveKind.REDUCE:
            out = [((c, everyone),) if rank == root else None for c in range(cf)]
        elif k is CollectiveKind.GATHER:
            out = [chunk(i, c) if rank == root else None for i in range(n) for c in range(cf)]
        else:  # SCATTER
            out = [chunk(root, rank * cf + c) for c in range(cf)]
        return out

    def describe(self) -> str:
        """One line: ``allreduce over 8 ranks, 8 chunks per rank, in place``."""
        text = (
            f"{self.kind.value} over {self.num_ranks} ranks, {self.chunks_per_rank} chunks per rank"
        )
        if self.groups:
            text += f", in {len(self.groups)} groups of {self.group_size}"
        if self.inplace:
            text += ", in place"
        if self.kind.rooted:
            text += f", root {self.root}"
        return text


def custom_collective(
    num_ranks: int,
    inputs: Iterable[Sequence[Contents | None]],
    outputs: Iterable[Sequence[Contents | None]],
    name: str = "custom",
    inplace: bool = False,
) -> Collective:
    """A collective defined by explicit per-rank buffers (MSCCLang's custom collectives).

    In place, output slot j of each rank is input slot j (the sizes must agree).
    """
    return Collective(
        CollectiveKind.CUSTOM,
        num_ranks,
        inplace=inplace,
        name=name,
        custom_input=tuple(tuple(x) for x in inputs),
        custom_output=tuple(tuple(x) for x in outputs),
    )


def _contents_to_json(c: Contents | None) -> list[list[int]] | None:
    return None if c is None else [[idx, mask] for idx, mask in c]


def _contents_from_json(x: object) -> Contents | None:
    if x is None:
        return None
    if not isinstance(x, list):
        raise ValueError(f"chunk contents must be a list of [index, mask] pairs, got {x!r}")
    return tuple((int(idx), int(mask)) for idx, mask in x)


def collective_to_dict(c: Collective) -> dict[str, object]:
    """A JSON-ready description (manifest, ET metadata); `collective_from_dict` reverses it.

    Rank masks of custom collectives are written as integers; JSON readers that round large
    integers through floats would lose them, so collc's own readers are used to read them.
    """
    d: dict[str, object] = {
        "kind": c.kind.value,
        "num_ranks": c.num_ranks,
        "chunks_per_rank": c.chunks_per_rank,
        "inplace": c.inplace,
        "root": c.root,
        "placement": list(c.placement),
    }
    if c.name:
        d["name"] = c.name
    if c.groups:
        d["groups"] = [list(g) for g in c.groups]
    if c.kind is CollectiveKind.CUSTOM:
        d["custom_input"] = [[_contents_to_json(x) for x in rank] for rank in c.custom_input]
        d["custom_output"] = [[_contents_to_json(x) for x in rank] for rank in c.custom_output]
    return d


def collective_from_dict(d: dict[str, object]) -> Collective:
    """Rebuild a Collective; raises CollcError on a malformed description."""
    try:
        kind = CollectiveKind(str(d["kind"]))
        placement = d.get("placement") or []
        custom_in = d.get("custom_input") or []
        custom_out = d.get("custom_output") or []
        groups = d.get("groups") or []
        assert isinstance(placement, list) and isinstance(groups, list)
        assert all(isinstance(g, list) for g in groups)
        assert isinstance(custom_in, list) and isinstance(custom_out, list)
        return Collective(
            kind,
            int(str(d["num_ranks"])),
            int(str(d.get("chunks_per_rank", 1))),
            bool(d.get("inplace", False)),
            int(str(d.get("root", -1))),
            tuple(int(x) for x in placement),
            str(d.get("name", "")),
            tuple(tuple(_contents_from_json(x) for x in rank) for rank in custom_in),
            tuple(tuple(_contents_from_json(x) for x in rank) for rank in custom_out),
            tuple(tuple(int(x) for x in g) for g in groups),
        )
    except (KeyError, ValueError, TypeError, AssertionError) as e:
        raise CollcError(f"malformed collective description: {e}") from None
