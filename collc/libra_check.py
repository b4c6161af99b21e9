"""``collc libra --check``: the allocations of `collc libra` simulated as ``collc workload
simulate`` runs them (`collc.workload_run`), next to LIBRA's predicted times.

Each allocation becomes a `stack:` topology whose links carry its per-NPU bandwidth
(`explore.network.topology_spec`; latency 0, as LIBRA's model has none) and the workload (a
Chakra workload, or LIBRA's text workload converted by `explore.libra_chakra`) is run under
each model: ASTRA-sim's analytical mode with its native collectives (ring on every
dimension) and, up to `CONTENTION_NPUS` NPUs unless asked for, collc's collectives with
contention.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from explore.problem import LibraCase, Problem

CONTENTION_NPUS = 256
"""Above this many NPUs the contention models run only when named with --check-model."""

MIN_LINK_GBPS = 1e-3
"""A dimension without traffic and without bandwidth gets links of this many GB/s, so that
the topology is valid; its value changes no time."""


def check_allocations(
    problem: Problem,
    rows: Sequence[dict[str, Any]],
    case: LibraCase | None,
    models: Sequence[str],
    algorithm: str,
    phase: Callable[[str | None], None],
) -> dict[str, Any]:
    """Per allocation row: LIBRA's predicted time and the simulated time under each model."""
    from collc import registry
    from collc.commands.workload import native_config, parse_algorithms
    from collc.workload_run import run_on_topology
    from explore.libra_chakra import text_to_chakra
    from explore.network import topology_spec
    from topologies import parse_topology
    from workloads.model import check_workload

    notes: list[str] = []
    net = problem.net
    if case is not None:
        from explore.libra_inputs import TextLayer

        layers = [x for x in case.layers if isinstance(x, TextLayer)]
        w = text_to_chakra(net, layers, case.comm)
        notes.append("LIBRA's text workload run as a chain of Chakra nodes, compute rounded to µs")
    else:
        assert problem.shapes is not None
        w = problem.shapes.w
    chosen = list(models)
    if not chosen:
        chosen = ["analytical"]
        if net.num_npus <= CONTENTION_NPUS:
            chosen.append("congestion")
        else:
            notes.append(
                f"{net.num_npus} NPUs: the contention model is left out (name it with --check-model)"
            )
    classes = check_workload(w)
    config = native_config(None, {})
    algos = parse_algorithms(algorithm)
    used = problem.graph.used_dims()
    out = []
    for r in rows:
        bw = [b if b > 0 or used[d] else MIN_LINK_GBPS for d, b in enumerate(r["bw"])]
        sims: dict[str, Any] = {}
        if any(b <= 0 for b in bw):
            sims = {m: "no bandwidth on a used dimension" for m in chosen}
        else:
            topo = parse_topology(topology_spec(net, bw, [0.0] * net.ndims))
            for m in chosen:
                phase(f"simulating {r['name']} ({m})")
                done = run_on_topology(
                    w,
                    topo,
                    m,
                    config=config,
                    algos=algos,
                    classes=classes,
                    max_transfers=registry.MAX_TRANSFERS,
                )
                sims[m] = done.run.time_ns
        out.append(
            {
                "name": r["name"],
                "bw": list(r["bw"]),
                "predicted_ns": r["time_ns"],
                "simulated": sims,
            }
        )
    return {"models": chosen, "algorithm": algorithm, "rows": out, "notes": notes}
