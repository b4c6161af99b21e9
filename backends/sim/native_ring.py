"""ASTRA-sim's ring on a communicator group, message by message.

A communicator group smaller than the cluster runs, in ASTRA-sim's system layer, as one
logical ring of its NPUs in ascending order (``CommunicatorGroup::get_collective_plan`` builds a
``RingTopology`` of dimension ``Local`` over the group and a single ``Ring`` implementation).
The ring runs on each NPU on its own (``Ring::run``, ``Ring::insert_packet``, ``Ring::ready``):

- when the stream starts, and after each message received, the NPU releases one packet
  through its memory bus, which takes the endpoint delay (plus the reduction, ``3 m /
  local-mem-bw``, on a packet that reduces); when it comes back the NPU sends its next
  message to its ring successor and posts the receive of the next one from its predecessor;
- the ring is over after the packet released on the last message received.

On a ``Local`` ring the memory bus transfer is ``MemBus::Transmition::Fast``, which
``MemBus::send_from_NPU_to_MA`` and ``send_from_MA_to_NPU`` charge a fixed 10 ns whatever
the system JSON's ``endpoint-delay`` says: a group collective ignores that knob.

So a message of step k from NPU a to its successor b arrives ``delay(a, b, m)`` (the
congestion-unaware delay) after a sent it, b's receive completes at that arrival or when b
posted it (when b sent its own step k), whichever is later, and b sends step k+1 one release
later. On a group whose NPUs are evenly spaced every NPU finishes at the same time; on an
uneven one each NPU's finish is the longest chain of steps ending at it, not steps x the
slowest pair. Chunks (``preferred-dataset-splits``) are independent rings; a chunk starts on an
NPU when the chunk ``active-chunks-per-dimension`` places before it has ended there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from backends.sim.errors import SimError
from chakra_ir.collective import CollectiveKind

GROUP_RELEASE_NS = 10
"""The memory-bus time of one packet on a communicator group's ring (``Transmition::Fast``)."""


def ring_steps(kind: CollectiveKind, p: int, chunk: int) -> tuple[int, int, int]:
    """``(messages, message bytes, reducing releases)`` of one chunk of ``chunk`` bytes on a
    ring of ``p`` NPUs: the first ``reducing`` releases after a receive reduce."""
    if kind is CollectiveKind.REDUCE_SCATTER:
        return p - 1, chunk // p, p - 1
    if kind is CollectiveKind.ALLGATHER:
        return p - 1, chunk, 0
    if kind is CollectiveKind.ALLREDUCE:
        return 2 * (p - 1), chunk // p, p - 1
    if kind is CollectiveKind.ALLTOALL:
        return p * (p - 1) // 2, chunk // p, 0
    raise SimError(f"ASTRA-sim's ring does not run {kind.value}")


def group_ring_ends(
    kind: CollectiveKind,
    members: Sequence[int],
    chunk: int,
    chunks: int,
    delay: Callable[[int, int, int], float],
    *,
    active_chunks: int = 1,
    release_ns: float = GROUP_RELEASE_NS,
    reduce_ns: Callable[[int], float] = lambda m: 0.0,
    starts: Sequence[float] | None = None,
) -> list[float]:
    """When each member of the group (ascending ``members``) finishes ``chunks`` chunks of
    ``chunk`` bytes, member i having started at ``starts[i]`` (0 by default). ``delay(src,
    dst, bytes)``: a message's delivery time; ``reduce_ns(bytes)``: one reduction's time."""
    ring = sorted(members)
    p = len(ring)
    if p < 2:
        raise SimError("a ring needs at least 2 NPUs")
    steps, m, reducing = ring_steps(kind, p, chunk)
    # d[i]: from member i-1 (ring order) to member i.
    d = np.array([float(delay(ring[i - 1], ring[i], m)) for i in range(p)])
    red = reduce_ns(m)
    t0 = np.zeros(p) if starts is None else np.asarray(starts, dtype=float)
    ends: list[np.ndarray] = []
    for c in range(chunks):
        start = t0 if c < active_chunks else np.maximum(t0, ends[c - active_chunks])
        release = start + release_ns
        for k in range(steps):
            arrive = np.roll(release, 1) + d
            release = np.maximum(arrive, release) + release_ns + (red if k < reducing else 0.0)
        ends.append(release)
    last = np.max(np.stack(ends), axis=0)
    return [float(x) for x in last]


def group_is_even(members: Sequence[int], delay: Callable[[int, int, int], float]) -> bool:
    """Whether every pair of ring neighbours of the group has the same delay (for 1 byte and
    for 1 MiB): then every member finishes a collective at the same time."""
    ring = sorted(members)
    return all(
        len({float(delay(ring[i - 1], ring[i], m)) for i in range(len(ring))}) == 1
        for m in (1, 1 << 20)
    )
