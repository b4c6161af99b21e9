"""What a study optimises (docs/explore.md, section 2): the iteration time (ns), LIBRA's
network cost ($, `explore.cost`), their product (time in s x cost), the largest per-NPU
memory footprint (GiB), and COSMIC's reward ``1/sqrt(1 + sum((o - 1)^2))`` over objectives
normalised by the PSA's targets (``o = value / target``; 1 at the targets, less elsewhere,
better or worse). Every objective is minimised but the reward, which is maximised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from explore.network import ExploreError
from explore.psa_schema import OBJECTIVES

UNITS = {"time": "ns", "cost": "$", "time_x_cost": "s x $", "memory": "GiB", "reward": ""}
"""The unit of each objective's value."""


def parse_objectives(text: str | Sequence[str]) -> tuple[str, ...]:
    """``time,cost`` (or a list) checked against `OBJECTIVES`."""
    names = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text)
    names = [n for n in names if n]
    for n in names:
        if n not in OBJECTIVES:
            raise ExploreError(f"unknown objective {n!r} (known: {', '.join(OBJECTIVES)})")
    if not names or len(set(names)) != len(names):
        raise ExploreError(f"objectives must be distinct and at least one, got {text!r}")
    return tuple(names)


def directions(objectives: Sequence[str]) -> list[Literal["minimize", "maximize"]]:
    """Optuna's direction of each objective."""
    return ["maximize" if o == "reward" else "minimize" for o in objectives]


def metrics(time_ns: float, cost: float, memory_gib: float) -> dict[str, float]:
    """The value of every objective but the reward for one simulated point."""
    return {
        "time": time_ns,
        "cost": cost,
        "time_x_cost": time_ns * 1e-9 * cost,
        "memory": memory_gib,
    }


def reward(m: Mapping[str, float], targets: Mapping[str, float]) -> float:
    """COSMIC's reward over the objectives that have targets."""
    s = sum((m[name] / t - 1.0) ** 2 for name, t in targets.items())
    return 1.0 / math.sqrt(1.0 + s)


def values(
    objectives: Sequence[str], m: Mapping[str, float], targets: Mapping[str, float]
) -> list[float]:
    """The study's objective values for metrics ``m``."""
    out = []
    for o in objectives:
        if o == "reward":
            if not targets:
                raise ExploreError("the reward objective needs reward.targets in the PSA")
            out.append(reward(m, targets))
        else:
            out.append(float(m[o]))
    return out
