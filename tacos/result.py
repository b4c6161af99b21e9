"""What every TACOS synthesizer shares: the `Synthesis` it returns, the `Progress` callback it
takes and `check_arguments`, the check of the arguments they all take (`tacos.synthesis`,
`tacos.alltoall`, `tacos.groups`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from chakra_ir.program import Program
from tacos.errors import TacosError

Progress = Callable[[float], None]
"""Called with the fraction of the work done (0..1)."""


def check_arguments(chunk_bytes: float, seeds: int) -> None:
    """Raise TacosError unless ``chunk_bytes`` is a positive finite number and ``seeds`` is
    at least 1 (every synthesizer's common arguments)."""
    if not (
        isinstance(chunk_bytes, int | float) and math.isfinite(chunk_bytes) and chunk_bytes > 0
    ):
        raise TacosError(f"chunk size must be a positive number of bytes, got {chunk_bytes!r}")
    if seeds < 1:
        raise TacosError(f"seeds must be at least 1, got {seeds}")


@dataclass
class Synthesis:
    """A synthesized program and its schedule's facts.

    ``estimated_ns``: the cost-model time of ``program`` (the replay of its schedule);
    ``seconds``: wall time of synthesis and lowering (not verification); ``seed``: the seed of
    the kept schedule; ``phases_ns``: the makespan of each synthesized phase as planned;
    ``transfers``: messages in the program; ``plan_exact``: whether the program runs exactly
    as planned (every send starts at its planned time), so ``estimated_ns`` is the planned
    makespan; when not, ``estimated_ns`` is still the program's replayed time; ``rule``: the
    matching rule that ran (`tacos.matching.RULES`; empty where the matching has no choice).
    """

    program: Program
    estimated_ns: float
    seconds: float
    seed: int
    chunk_bytes: float
    phases_ns: dict[str, float] = field(default_factory=dict)
    transfers: int = 0
    plan_exact: bool = True
    rule: str = ""
