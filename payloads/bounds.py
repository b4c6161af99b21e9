"""The lower bound of a collective's time under a sparse payload.

Every rank must receive at least one value for every position of its output where another
rank contributed a non-zero it does not hold: the union of the others' supports over the
regions of its output. Whatever the format, a message carries each of those values at least
once (Dense and Bitmap carry more, the index formats add indices), so ``value bytes x
positions`` is a lower bound of the bytes it receives. For a statistical payload the positions
are ``E x (1-(1-rho)^k)`` per output slot that needs ``k`` other ranks' contributions; for real
tensors they are counted. With Ok-Topk's re-selection (``topk``) a fully reduced chunk keeps
one rank's density and the others supply a share ``(k)/(k+1)`` of it.

The time bound is the largest over ranks of those bytes over the rank's ingress bandwidth (all
links into its NPU at once), plus the cheapest in-link latency: the dense ``ingress`` bound's
reasoning on sparse volumes.
"""

from __future__ import annotations

import numpy as np

from chakra_ir.program import Program
from payloads.describe import Payload
from payloads.formats import fill_in
from payloads.sizes import elements_per_chunk
from topologies.topology import Topology


def needed_values(program: Program, payload: Payload, chunk_bytes: int) -> list[int]:
    """Per rank, the values it must receive at least (see the module docstring)."""
    c = program.collective
    E = elements_per_chunk(payload, program.collective, chunk_bytes)
    positions: list[np.ndarray] = []
    if payload.tensors is not None:
        positions = [np.flatnonzero(a.ravel()) for a in payload.tensors.arrays]
    out = []
    for r in range(c.num_ranks):
        own: dict[int, int] = {}
        for slot in c.initial_input(r):
            for idx, mask in slot or ():
                own[idx] = own.get(idx, 0) | mask
        total = 0
        for want in c.expected_output(r):
            for idx, mask in want or ():
                need = mask & ~own.get(idx, 0)
                k = need.bit_count()
                if not k:
                    continue
                if payload.tensors is None:
                    if payload.topk and mask.bit_count() == c.group_size:
                        total += round(E * payload.density * k / (k + 1))
                    else:
                        total += round(E * fill_in(payload.density, k))
                    continue
                start = idx * E
                parts = []
                for q in range(c.num_ranks):
                    if need >> q & 1:
                        pos = positions[q]
                        a, b = np.searchsorted(pos, [start, start + E])
                        parts.append(pos[a:b])
                union = int(np.unique(np.concatenate(parts)).size)
                if payload.topk and mask.bit_count() == c.group_size:
                    union = min(union, round(E * payload.density * k / (k + 1)))
                total += union
        out.append(total)
    return out


def sparse_bound(
    program: Program, payload: Payload, chunk_bytes: int, topology: Topology
) -> tuple[str, float]:
    """``("sparse-ingress", ns)``: the lower bound of the module docstring."""
    c = program.collective
    best = 0.0
    for r, values in enumerate(needed_values(program, payload, chunk_bytes)):
        if not values:
            continue
        links = topology.in_links(c.npu(r))
        bw = sum(lk.bandwidth_bytes_per_ns for lk in links)
        lat = min(lk.latency_ns for lk in links)
        best = max(best, lat + values * payload.value_bytes / bw)
    return "sparse-ingress", best
