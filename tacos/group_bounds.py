"""Lower bounds for process groups that run one collective at the same time on one network.

Every group must finish, so every bound of every group alone (`tacos.bounds.lower_bounds` over
the group's NPUs) bounds the joint time: each named bound is the largest over the groups (over
a spread sample of at most `MAX_GROUPS` of them when there are more). Groups
that share links need more than that, and the joint cut bound says how much: for a node set
``S`` of the cut family of `tacos.bounds` (grid slabs, single nodes, switches with their NPUs),
the data that every group split by ``S`` must move out of ``S`` (and into it) crosses the same
links, so ``T >= a_min + sum_g need_g(S) / B(S)``:

- All-Gather (output ``M`` per rank, ``m = M/n`` per group member): a group with ``k`` members
  inside ``S`` and some outside sends at least ``k m`` out of ``S`` and ``(n-k) m`` into it;
- Reduce-Scatter: the same on the transposed network;
- All-Reduce: the larger of the two (as for one group; adding them would be wrong, since a
  program may overlap its phases).

All-to-All adds the joint hop-bytes bound: the hop-bytes of every group together (each block
keeps the links of its cheapest path busy), over all links.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from chakra_ir.collective import CollectiveKind
from tacos.bounds import Bounds, _hop_bytes, lower_bounds
from tacos.channels import Net
from tacos.cut_bounds import _cut_family
from tacos.errors import TacosError
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology

MAX_GROUPS = 8
"""Groups whose own bounds are computed (`group_bounds`)."""


def _sample(n: int, k: int) -> list[int]:
    """``min(n, k)`` indices of ``0..n-1``, evenly spread, first and last included."""
    if n <= k:
        return list(range(n))
    if k <= 1:
        return [0]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def group_bounds(
    kind: CollectiveKind,
    topology: Topology,
    size_bytes: float,
    groups: Sequence[Sequence[int]],
    *,
    chunks_per_npu: int = 1,
    cost: CostModel = DEFAULT_COST_MODEL,
    any_chunking: bool = False,
    max_groups: int = MAX_GROUPS,
) -> Bounds:
    """Lower bounds for every group of ``groups`` (NPU lists) running ``kind`` of
    ``size_bytes`` at once; see the module docstring. ``chunks_per_npu`` and ``any_chunking``
    mean what they mean for `lower_bounds`. The bounds of single groups are taken over at most
    ``max_groups`` groups, evenly spread (first and last included): each group's bound bounds
    the joint time, so a subset gives a valid bound, the same one on regular topologies where
    the groups are alike. Raises TacosError for kinds without group bounds
    and what `lower_bounds` refuses."""
    if kind not in (
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLREDUCE,
        CollectiveKind.ALLTOALL,
    ):
        raise TacosError(f"no group bounds for {kind.value}")
    items: dict[str, float] = {}
    desc: dict[str, str] = {}
    sample = _sample(len(groups), max_groups)
    which = (
        "the slowest group alone"
        if len(sample) == len(groups)
        else f"the slowest of {len(sample)} of the {len(groups)} groups alone"
    )
    for members in (groups[i] for i in sample):
        b = lower_bounds(
            kind,
            topology,
            size_bytes,
            placement=list(members),
            chunks_per_npu=chunks_per_npu,
            cost=cost,
            any_chunking=any_chunking,
        )
        for k, v in b.items.items():
            if v > items.get(k, -1.0):
                items[k] = v
                desc[k] = f"{which}: {b.descriptions.get(k, k)}"
    if kind is CollectiveKind.ALLTOALL and len(groups) > 1:
        # Every group's blocks keep the links of their cheapest paths busy, on shared links.
        net = Net.of(topology)
        n = max(len(g) for g in groups)
        items["joint-hop-bytes"] = sum(_hop_bytes(net, list(g), size_bytes / n) for g in groups)
        desc["joint-hop-bytes"] = (
            "every group's blocks cross the links of their cheapest paths; all links share "
            "that work"
        )
    if kind is not CollectiveKind.ALLTOALL and len(groups) > 1:
        net = Net.of(topology)
        shape = topology.layout.shape if topology.layout is not None else topology.shape
        everyone = sorted({x for g in groups for x in g})
        family = _cut_family(net, shape, everyone)
        sizes = {len(g) for g in groups}
        n = max(sizes)
        m = size_bytes / n
        joint = 0.0
        if kind in (CollectiveKind.ALLGATHER, CollectiveKind.ALLREDUCE):
            joint = max(joint, _joint_cut(net, family, groups, m))
        if kind in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALLREDUCE):
            joint = max(joint, _joint_cut(net.transpose(), family, groups, m))
        items["joint-cut"] = joint
        desc["joint-cut"] = (
            "the data every group must move across a cut, together, over the bandwidth crossing it"
        )
    return Bounds(items, desc)


def _joint_cut(
    net: Net, family: Sequence[set[int]], groups: Sequence[Sequence[int]], m: float
) -> float:
    best = 0.0
    for inside in family:
        out_need = in_need = 0.0
        for g in groups:
            k = sum(1 for x in g if x in inside)
            if 0 < k < len(g):
                out_need += k * m
                in_need += (len(g) - k) * m
        if out_need == 0.0:
            continue
        leave = [lk for lk in net.links if lk.src in inside and lk.dst not in inside]
        enter = [lk for lk in net.links if lk.dst in inside and lk.src not in inside]
        for links, need in ((leave, out_need), (enter, in_need)):
            if not links:
                return math.inf
            bw = sum(lk.bandwidth_bytes_per_ns for lk in links)
            best = max(best, min(lk.latency_ns for lk in links) + need / bw)
    return best
