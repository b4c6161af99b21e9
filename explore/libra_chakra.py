"""LIBRA's text workload as a Chakra workload, so that `collc libra --check` can simulate it:
every NPU runs LIBRA's no-overlap loop as one chain of nodes (compute, then the phase's
collective on the NPU's group), groups cut from the grid by the communicator's span of each
dimension (blocks of consecutive coordinates). Compute times are rounded to whole µs, the
unit of a Chakra COMP node."""

from __future__ import annotations

from itertools import product

from explore.libra_inputs import PHASES, TextLayer
from explore.network import Network
from workloads.model import CollKind, NodeKind, WNode, Workload


def _groups(net: Network, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The groups of a span: every box of ``shape`` aligned to multiples of it."""
    strides = net.strides
    out = []
    bases = [range(0, d.size, g) for d, g in zip(net.dims, shape, strict=True)]
    for rev in product(*reversed(bases)):
        base = tuple(reversed(rev))
        members = sorted(
            sum((b + o) * s for b, o, s in zip(base, off, strides, strict=True))
            for off in product(*(range(g) for g in shape))
        )
        out.append(tuple(members))
    return out


def text_to_chakra(
    net: Network, layers: list[TextLayer], comm: dict[str, tuple[int, ...]]
) -> Workload:
    """The Chakra workload of LIBRA's loop over ``layers`` on ``net`` (module docstring)."""
    groups: dict[str, tuple[int, ...]] = {}
    group_of: dict[str, list[str]] = {}
    for ph in PHASES:
        shape = comm[ph]
        names = [""] * net.num_npus
        if any(g > 1 for g in shape):
            for members in _groups(net, shape):
                name = str(len(groups) + 1)
                groups[name] = members
                for m in members:
                    names[m] = name
        group_of[ph] = names
    steps: list[tuple[str, int, float, CollKind | None, float]] = []
    for layer in layers:
        steps.append((layer.name + "_fwd", 0, *layer.phases[0]))
    for layer in reversed(layers):
        steps.append((layer.name + "_ig", 1, *layer.phases[1]))
        steps.append((layer.name + "_wg", 2, *layer.phases[2]))
    ranks = []
    for npu in range(net.num_npus):
        nodes: list[WNode] = []
        for label, k, comp, kind, size in steps:
            deps = (nodes[-1].id,) if nodes else ()
            nodes.append(
                WNode(
                    len(nodes),
                    label,
                    int(NodeKind.COMP),
                    deps,
                    duration_micros=max(0, round(comp / 1000)),
                )
            )
            pg = group_of[PHASES[k]][npu]
            if kind is not None and size > 0 and pg:
                nodes.append(
                    WNode(
                        len(nodes),
                        label + "_comm",
                        int(NodeKind.COLL),
                        (nodes[-1].id,),
                        comm_type=int(kind),
                        comm_size=round(size),
                        pg_name=pg,
                    )
                )
        ranks.append(nodes)
    return Workload(ranks, groups, [f"<libra npu {n}>" for n in range(net.num_npus)])
