"""Symmetric programs: one rank's plan and a translation group stand for every rank.

On a network that a group of translations maps onto itself (rings, tori, hypercubes, fully
connected: `TranslationGroup`), a schedule in which every rank does the same relative thing at
the same time is stored once, as rank 0's *template* (`SymmetricProgram`). Ranks are the
group's elements (rank ``r`` is the grid point whose coordinates, dimension 0 fastest, give
``r``); rank ``r`` runs the template translated by ``r``:

- an operation's peer is ``r + direction`` (``direction`` is a group element);
- a slot named by ``(buffer, elem, i)`` is slot ``(r - elem) * k + i`` of ``buffer`` (chunk
  ``i`` of the block that belongs to rank ``r - elem``), or slot ``i`` when ``elem`` is -1.

So a message that rank 0 sends on direction ``g`` with offset ``d`` reaches rank ``g``, and by
symmetry rank 0 receives, from rank ``-g``, the message carrying offset ``d + g`` in its own
terms. `expand` builds the full `Program` only when asked; `chakra_ir.verify_symmetric`
checks the template and proves the whole program.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chakra_ir.collective import Collective
from chakra_ir.program import OpKind, Program

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TranslationGroup:
    """The group ``Z_shape[0] x Z_shape[1] x ...``; element ``x`` has coordinates
    ``unravel(x)`` with dimension 0 fastest (the grid numbering of `topologies`)."""

    shape: tuple[int, ...]

    @property
    def order(self) -> int:
        """The number of elements (= ranks)."""
        return int(np.prod(self.shape, dtype=np.int64))

    def coords(self, x: npt.ArrayLike) -> I64:
        """Coordinates of the elements ``x``, shape ``(len(x), dims)``."""
        a = np.asarray(x, dtype=np.int64).reshape(-1)
        return np.stack(np.unravel_index(a, self.shape, order="F"), axis=1).astype(np.int64)

    def ravel(self, coords: I64) -> I64:
        """Elements of coordinates (taken modulo the shape)."""
        shape = np.asarray(self.shape, dtype=np.int64)
        c = np.mod(coords, shape)
        flat: I64 = np.ravel_multi_index(tuple(c.T), self.shape, order="F").astype(np.int64)
        return flat

    def add(self, a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
        """``a + b`` elementwise (broadcasting a scalar)."""
        ca, cb = self.coords(a), self.coords(b)
        return self.ravel(ca + cb)

    def sub(self, a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
        """``a - b`` elementwise (broadcasting a scalar)."""
        ca, cb = self.coords(a), self.coords(b)
        return self.ravel(ca - cb)

    def neg(self, a: npt.ArrayLike) -> I64:
        """``-a`` elementwise."""
        return self.ravel(-self.coords(a))


TEMPLATE_COLUMNS = (
    "kind",
    "direction",
    "src_buf",
    "src_elem",
    "src_i",
    "dst_buf",
    "dst_elem",
    "dst_i",
)


@dataclass(eq=False)
class SymmetricProgram:
    """A program given by rank 0's template and a translation group (module docstring).

    Template columns, one entry per operation of rank 0: ``kind`` (`OpKind`: SEND, RECV,
    RECV_REDUCE, COPY), ``direction`` (the peer as a group element, -1 for local ops),
    ``src_buf``/``src_elem``/``src_i`` and ``dst_buf``/``dst_elem``/``dst_i`` (the slot rule
    of the module docstring; buffer -1 when absent), ``dep_offsets``/``deps`` (template-local
    ids, CSR). Every operation moves one slot; messages use tag 0 and the one link from the
    sender to ``sender + direction`` (the route hint). ``block`` is ``k``, the slots per rank
    block. ``planned_ns`` is the producer's estimate: the replayed makespan (0 when unknown).
    """

    collective: Collective
    group: TranslationGroup
    block: int
    columns: dict[str, I32]
    dep_offsets: I64
    deps: I32
    name: str = ""
    planned_ns: float = 0.0

    @property
    def num_ranks(self) -> int:
        return self.group.order

    @property
    def template_len(self) -> int:
        """Operations per rank."""
        return len(self.columns["kind"])

    @property
    def num_ops(self) -> int:
        """Operations of the whole (expanded) program."""
        return self.template_len * self.num_ranks

    def _slots(self, rank: int, buf: I32, elem: I32, i: I32) -> I32:
        out = i.astype(np.int64).copy()
        rel = elem >= 0
        if rel.any():
            owner = self.group.sub(np.full(int(rel.sum()), rank), elem[rel])
            out[rel] = owner * self.block + i[rel]
        out[buf < 0] = -1
        return out.astype(np.int32)

    def rank_columns(self, rank: int) -> dict[str, I32]:
        """Rank ``rank``'s operations as `Program` columns (peers and slots translated)."""
        c = self.columns
        kind = c["kind"]
        peer = np.full(len(kind), -1, dtype=np.int64)
        remote = c["direction"] >= 0
        if remote.any():
            peer[remote] = self.group.add(np.full(int(remote.sum()), rank), c["direction"][remote])
        return {
            "kind": kind,
            "peer": peer.astype(np.int32),
            "src_buf": c["src_buf"],
            "src_index": self._slots(rank, c["src_buf"], c["src_elem"], c["src_i"]),
            "dst_buf": c["dst_buf"],
            "dst_index": self._slots(rank, c["dst_buf"], c["dst_elem"], c["dst_i"]),
            "count": np.ones(len(kind), dtype=np.int32),
        }

    def iter_ranks(self) -> Iterator[tuple[int, dict[str, I32]]]:
        """Each rank's columns in turn: memory for one rank at a time (streaming export)."""
        for r in range(self.num_ranks):
            yield r, self.rank_columns(r)

    def buffer_sizes(self) -> I32:
        """``(input, output, scratch)`` of every rank (the collective's, no scratch)."""
        c = self.collective
        row = np.array([c.input_chunks(0), c.output_chunks(0), 0], dtype=np.int32)
        return np.tile(row, (self.num_ranks, 1))

    def expand(self) -> Program:
        """The full `Program` (every rank's operations, deps and single-link routes). Memory
        grows with ranks x template: for small cases, tests and exports of a few ranks."""
        n, t = self.num_ranks, self.template_len
        cols: dict[str, list[I32]] = {}
        for _, rc in self.iter_ranks():
            for key, arr in rc.items():
                cols.setdefault(key, []).append(arr)
        merged: dict[str, Any] = {k: np.concatenate(v) for k, v in cols.items()}
        ndeps = len(self.deps)
        dep_offsets = np.concatenate(
            [self.dep_offsets[:-1] + r * ndeps for r in range(n)] + [np.array([n * ndeps])]
        )
        deps = np.tile(self.deps, n)
        sends = merged["kind"] == int(OpKind.SEND)
        route_len = np.where(sends, 2, 0)
        route_offsets = np.concatenate([[0], np.cumsum(route_len)])
        ranks = np.repeat(np.arange(n, dtype=np.int64), t)
        npu = np.asarray(self.collective.placement or range(n), dtype=np.int64)
        route_nodes = np.stack([npu[ranks[sends]], npu[merged["peer"][sends]]], axis=1).reshape(-1)
        return Program.from_columns(
            self.collective,
            np.arange(n + 1, dtype=np.int64) * t,
            merged,
            dep_offsets,
            deps,
            self.buffer_sizes(),
            route_offsets,
            route_nodes,
            name=self.name,
        )
