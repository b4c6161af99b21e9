"""`SymbolicMemory`: the chunk contents of every physical slot of every rank (in-place aliases
resolved), on which `chakra_ir.verify` executes a program symbolically and executors that run a
program in their own order (``backends.replay``) apply its operations."""

from __future__ import annotations

import numpy as np

from chakra_ir.collective import Buffer, Collective, CollectiveKind, Contents, describe, merge
from chakra_ir.verify_error import VerifyError


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
