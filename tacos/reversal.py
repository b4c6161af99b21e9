"""Reversal: a schedule synthesized on the transposed topology, run backwards.

A transfer of chunk ``X`` from ``u`` to ``v`` over a transposed channel during ``[a, b]`` becomes
a transfer from ``v`` to ``u`` over the same links in the real topology (the path reversed)
during ``[T - b, T - a]``, where ``T`` is the makespan. Broadcast trees become reduction trees:
a rank sends its partial sum of ``X`` once, after every partial it receives for ``X``. Because
the schedule was synthesized on the transpose, each reversed transfer uses links that exist,
with the very cost they were charged, and two transfers of one link stay apart: each link's
busy intervals are the mirror image of the original ones shifted by that link's latency.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tacos.channels import Channel, Timed
from tacos.matching import Plan
from tacos.routes import Routes

I64 = npt.NDArray[np.int64]


def forward_phase(plan: Plan, channels: list[Channel], routes: Routes) -> dict[str, I64]:
    """The transfers of a forward plan: chunk, src, dst, route, start, tdep (plan-local)."""
    rid = routes.add_all(channels)
    src = np.array([c.src for c in channels], dtype=np.int64)
    dst = np.array([c.dst for c in channels], dtype=np.int64)
    ch = plan.chan.astype(np.int64)
    return {
        "chunk": plan.chunk.astype(np.int64),
        "src": src[ch],
        "dst": dst[ch],
        "route": rid[ch],
        "start": plan.start.copy(),
        "tdep": plan.tdep.copy(),
    }


def reverse_phase(
    plan: Plan, channels: list[Channel], timing: list[Timed], routes: Routes
) -> dict[str, I64]:
    """The transfers of ``plan`` (synthesized on the transpose with ``channels``) reversed in
    time and direction; see the module docstring. Sorted by start time."""
    rid = routes.add_all(channels, reverse=True)
    src = np.array([c.dst for c in channels], dtype=np.int64)
    dst = np.array([c.src for c in channels], dtype=np.int64)
    dur_t = np.array([tm.dur for tm in timing], dtype=np.int64)
    ch = plan.chan.astype(np.int64)
    start = plan.makespan - (plan.start + dur_t[ch])
    order = np.argsort(start, kind="stable")
    return {
        "chunk": plan.chunk.astype(np.int64)[order],
        "src": src[ch][order],
        "dst": dst[ch][order],
        "route": rid[ch][order],
        "start": start[order],
        "tdep": np.full(len(order), -1, dtype=np.int64),
    }
