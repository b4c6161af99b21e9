"""Programs in which every rank has the same operation layout, built a step at a time.

`UniformBuilder` appends one operation to every rank at once: each field is a scalar or an
array over ranks (a peer per rank, a slot index per rank...), and the method returns the
operation's id, which is the same on every rank. Dependencies are given explicitly, as ids
(scalars or arrays over ranks, -1 for none). Building turns the lists into the Program's
columns with a few numpy calls, so an N-rank program with O(N) steps costs O(N) Python calls
instead of O(N^2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from chakra_ir import Buffer, Collective, OpKind, Program

Values = int | npt.NDArray[np.int64]

_FIELDS = ("kind", "peer", "src_buf", "src_index", "dst_buf", "dst_index", "count", "tag")


class UniformBuilder:
    """Appends an operation to every rank at once; see the module docstring."""

    def __init__(self, collective: Collective, *, name: str = "") -> None:
        self.collective = collective
        self.name = name
        self.n = collective.num_ranks
        self._rows: list[tuple[Values, ...]] = []
        self._deps: list[tuple[Values, ...]] = []

    def _add(self, row: tuple[Values, ...], deps: tuple[Values, ...]) -> int:
        self._rows.append(row)
        self._deps.append(deps)
        return len(self._rows) - 1

    def send(
        self, peer: Values, buf: Buffer, index: Values, count: int, *, deps: tuple[Values, ...] = ()
    ) -> int:
        return self._add((int(OpKind.SEND), peer, int(buf), index, -1, -1, count, 0), deps)

    def recv(
        self,
        peer: Values,
        buf: Buffer,
        index: Values,
        count: int,
        *,
        reduce: bool = False,
        deps: tuple[Values, ...] = (),
    ) -> int:
        kind = OpKind.RECV_REDUCE if reduce else OpKind.RECV
        return self._add((int(kind), peer, -1, -1, int(buf), index, count, 0), deps)

    def copy(
        self,
        src: tuple[Buffer, Values],
        dst: tuple[Buffer, Values],
        count: int,
        *,
        deps: tuple[Values, ...] = (),
    ) -> int:
        row = (int(OpKind.COPY), -1, int(src[0]), src[1], int(dst[0]), dst[1], count, 0)
        return self._add(row, deps)

    def reduce(
        self,
        src: tuple[Buffer, Values],
        dst: tuple[Buffer, Values],
        count: int,
        *,
        deps: tuple[Values, ...] = (),
    ) -> int:
        row = (int(OpKind.REDUCE), -1, int(src[0]), src[1], int(dst[0]), dst[1], count, 0)
        return self._add(row, deps)

    def build(self) -> Program:
        """The Program; per rank, operations in append order, dependencies sorted."""
        n, ops = self.n, len(self._rows)
        columns: dict[str, npt.NDArray[Any]] = {}
        for f, name in enumerate(_FIELDS):
            by_op = np.empty((ops, n), dtype=np.int32)
            for j, row in enumerate(self._rows):
                by_op[j] = row[f]
            columns[name] = np.ascontiguousarray(by_op.T)
        width = max((len(d) for d in self._deps), default=0)
        by_op_dep = np.full((ops, max(width, 1), n), -1, dtype=np.int32)
        for j, deps in enumerate(self._deps):
            for x, d in enumerate(deps):
                by_op_dep[j, x] = d
        dep = np.ascontiguousarray(by_op_dep.transpose(2, 0, 1))
        dep.sort(axis=2)
        dup = np.zeros(dep.shape, dtype=bool)
        dup[:, :, 1:] = dep[:, :, 1:] == dep[:, :, :-1]
        dep[dup] = -1
        valid = dep >= 0
        dep_offsets = np.zeros(n * ops + 1, dtype=np.int64)
        np.cumsum(valid.sum(axis=2).reshape(-1), out=dep_offsets[1:])
        scr = int(Buffer.SCRATCH)
        end = columns["src_index"] + columns["count"]
        scratch = np.where(columns["src_buf"] == scr, end, 0)
        end = columns["dst_index"] + columns["count"]
        scratch = np.maximum(scratch, np.where(columns["dst_buf"] == scr, end, 0))
        c = self.collective
        sizes = np.array(
            [
                (c.input_chunks(r), c.output_chunks(r), int(scratch[r].max(initial=0)))
                for r in range(n)
            ],
            dtype=np.int32,
        )
        return Program.from_columns(
            c,
            np.arange(n + 1, dtype=np.int64) * ops,
            {k: v.reshape(-1) for k, v in columns.items()},
            dep_offsets,
            dep[valid],
            sizes,
            name=self.name,
        )
