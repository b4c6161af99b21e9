"""What every baseline shares: the `Baseline` entry, its error, and small program helpers."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice
from topologies import Topology
from topologies.errors import CollcError


class BaselineError(CollcError):
    """A baseline cannot serve this request (collective kind, rank count, chunk count...)."""


Granularity = Callable[[CollectiveKind, int], int]
PlacedGranularity = Callable[[CollectiveKind, tuple[int, ...], Topology], int]
Generator = Callable[[Collective, Topology], Program]


@dataclass(frozen=True)
class Baseline:
    """One classic algorithm as a Program generator.

    ``collectives`` lists the kinds it serves. ``chunks_per_rank(kind, n)`` is its natural
    chunk granularity (the smallest ``Collective.chunks_per_rank`` it works with); any positive
    multiple ``m`` of it is accepted too and means an ``m``-way finer split (pipelining for ring
    and tree algorithms, larger messages for direct and RHD). ``generate`` returns a Program
    that implements the collective on the ranks placed by ``collective.placement``.
    """

    name: str
    description: str
    collectives: frozenset[CollectiveKind]
    granularity: Granularity
    generator: Generator
    pipeline_default: int = 1
    """The multiple of the natural granularity that the CLI uses unless told otherwise: a
    tree needs many chunks in flight to fill its pipeline, a ring or direct exchange does not."""
    topk: bool = False
    """The algorithm keeps only the largest values of a fully reduced chunk (Ok-Topk): under a
    sparse payload such a chunk weighs one rank's density, not the fill-in
    (`payloads.describe.Payload.topk`)."""
    placed_granularity: PlacedGranularity | None = None
    """The natural granularity once the ranks' NPUs and the topology are known, for an
    algorithm whose split depends on the network's shape (Swing: two parts per torus
    dimension); ``granularity`` is then a multiple that fits any topology of that many ranks."""

    def chunks_per_rank(self, kind: CollectiveKind, num_ranks: int) -> int:
        """The natural ``chunks_per_rank`` for ``kind`` over ``num_ranks`` ranks.

        Raises `BaselineError` when the kind is not served or ``num_ranks < 1``.
        """
        self._check_kind(kind)
        if num_ranks < 1:
            raise BaselineError(f"{self.name} needs at least 1 rank, got {num_ranks}")
        return self.granularity(kind, num_ranks)

    def chunks_on(self, kind: CollectiveKind, npus: tuple[int, ...], topology: Topology) -> int:
        """The natural ``chunks_per_rank`` for ``kind`` over ranks on ``npus`` of ``topology``
        (`chunks_per_rank` unless the split depends on the network). Raises `BaselineError`
        when the kind or the placement is not served."""
        if self.placed_granularity is None:
            return self.chunks_per_rank(kind, len(npus))
        self._check_kind(kind)
        return self.placed_granularity(kind, npus, topology)

    def supports(self, kind: CollectiveKind, num_ranks: int) -> bool:
        """Whether `generate` serves ``kind`` over ``num_ranks`` ranks (at its granularity)."""
        try:
            self.chunks_per_rank(kind, num_ranks)
        except BaselineError:
            return False
        return True

    def generate(self, collective: Collective, topology: Topology) -> Program:
        """The Program of this algorithm for ``collective`` on ``topology``.

        Contract: the result satisfies ``collective`` (pre- and postcondition, in place or not)
        and passes ``chakra_ir.verify``; its ``collective`` is the one given. Raises
        `BaselineError` when the kind is not served, when ``collective.chunks_per_rank`` is
        not a multiple of `chunks_per_rank`, or when the placement names NPUs that the
        topology does not have (or that are switches).
        """
        check_placement(collective, topology)
        npus = tuple(collective.npu(r) for r in range(collective.num_ranks))
        natural = self.chunks_on(collective.kind, npus, topology)
        cf = collective.chunks_per_rank
        if cf % natural:
            raise BaselineError(
                f"{self.name} {collective.kind.value} over {collective.num_ranks} ranks needs "
                f"a multiple of {natural} chunks per rank, got {cf}"
            )
        return self.generator(collective, topology)

    def _check_kind(self, kind: CollectiveKind) -> None:
        if kind not in self.collectives:
            served = ", ".join(sorted(k.value for k in self.collectives))
            raise BaselineError(f"{self.name} does not implement {kind.value} (it serves {served})")


def check_placement(collective: Collective, topology: Topology) -> None:
    """Raise `BaselineError` unless every rank sits on a distinct NPU of ``topology``."""
    for r in range(collective.num_ranks):
        npu = collective.npu(r)
        if not 0 <= npu < topology.num_npus or topology.is_switch(npu):
            raise BaselineError(
                f"rank {r} is placed on node {npu}, which is not an NPU of the "
                f"{topology.num_npus}-NPU topology"
            )


def program_name(baseline: str, collective: Collective) -> str:
    """The name generated programs carry: ``ring-allreduce``."""
    return f"{baseline}-{collective.kind.value}"


def trivial_program(collective: Collective, name: str) -> Program:
    """The program of a one-rank collective: copy input to output unless in place."""
    b = ProgramBuilder(collective, auto_deps=True, name=name)
    if not collective.inplace:
        # With one rank, input and output have the same size for every kind.
        n = collective.output_chunks(0)
        b.copy(0, Slice(Buffer.INPUT, 0, n), Slice(Buffer.OUTPUT, 0, n))
    return b.build()


def log2_floor(n: int) -> int:
    """The largest ``k`` with ``2**k <= n`` (``n >= 1``)."""
    return n.bit_length() - 1


class _RangeDeps:
    """MSCCLang's per-slot dependencies for one rank, tracked over ranges of slots.

    The rule is `ProgramBuilder`'s with ``auto_deps``: a read depends on the slot's last
    writer; a write on the readers since that write, else on the writer. Keeping runs of slots
    with the same history as one segment makes operations on wide slices cheap.
    """

    def __init__(self) -> None:
        # Per physical buffer: segment starts (sorted) and each segment's (writer, readers).
        self._starts: dict[int, list[int]] = {}
        self._states: dict[int, list[tuple[int, tuple[int, ...]]]] = {}

    def _split(self, buf: int, x: int) -> int:
        """Index of the segment starting at ``x`` (splitting the one that covers it)."""
        starts = self._starts.setdefault(buf, [0])
        states = self._states.setdefault(buf, [(-1, ())])
        i = bisect.bisect_right(starts, x) - 1
        if starts[i] == x:
            return i
        starts.insert(i + 1, x)
        states.insert(i + 1, states[i])
        return i + 1

    def read(self, buf: int, a: int, b: int, op: int, deps: set[int]) -> None:
        i, j = self._split(buf, a), self._split(buf, b)
        states = self._states[buf]
        for x in range(i, j):
            writer, readers = states[x]
            if writer >= 0:
                deps.add(writer)
            states[x] = (writer, (*readers, op))

    def write(self, buf: int, a: int, b: int, op: int, deps: set[int]) -> None:
        i, j = self._split(buf, a), self._split(buf, b)
        starts, states = self._starts[buf], self._states[buf]
        for x in range(i, j):
            writer, readers = states[x]
            prior = [y for y in readers if y != op]
            if prior:
                deps.update(prior)
            elif writer >= 0:
                deps.add(writer)
        starts[i:j] = [a]
        states[i:j] = [(op, ())]


class TrackedBuilder:
    """A `ProgramBuilder` whose automatic dependencies are computed over slot ranges.

    Same methods and the same resulting Program as ``ProgramBuilder(auto_deps=True)``, but an
    operation on a wide slice costs about as much as one on a single slot.
    """

    def __init__(self, collective: Collective, *, name: str = "") -> None:
        self.collective = collective
        self._builder = ProgramBuilder(collective, name=name)
        self._deps = [_RangeDeps() for _ in range(collective.num_ranks)]

    def _track(self, rank: int, reads: Slice | None, writes: Slice | None) -> list[int]:
        op = self._builder.num_ops(rank)
        deps: set[int] = set()
        tracker = self._deps[rank]
        if reads is not None:
            buf, start = self.collective.physical(rank, reads.buffer, reads.index)
            tracker.read(int(buf), start, start + reads.count, op, deps)
        if writes is not None:
            buf, start = self.collective.physical(rank, writes.buffer, writes.index)
            tracker.write(int(buf), start, start + writes.count, op, deps)
        return sorted(deps)

    def send(self, rank: int, peer: int, src: Slice, *, tag: int = 0) -> int:
        return self._builder.send(rank, peer, src, tag=tag, deps=self._track(rank, src, None))

    def recv(self, rank: int, peer: int, dst: Slice, *, tag: int = 0, reduce: bool = False) -> int:
        deps = self._track(rank, dst if reduce else None, dst)
        return self._builder.recv(rank, peer, dst, tag=tag, reduce=reduce, deps=deps)

    def copy(self, rank: int, src: Slice, dst: Slice) -> int:
        return self._builder.copy(rank, src, dst, deps=self._track(rank, src, dst))

    def reduce(self, rank: int, src: Slice, dst: Slice) -> int:
        return self._builder.reduce(rank, src, dst, deps=self._track(rank, src, dst))

    def build(self) -> Program:
        return self._builder.build()


Builder = ProgramBuilder | TrackedBuilder


def new_builder(collective: Collective, name: str, tracked: bool) -> Builder:
    """`TrackedBuilder` (fast), or ``ProgramBuilder(auto_deps=True)`` (the reference)."""
    if tracked:
        return TrackedBuilder(collective, name=name)
    return ProgramBuilder(collective, auto_deps=True, name=name)
