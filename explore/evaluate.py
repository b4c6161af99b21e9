"""One point simulated through the workload layer (docs/explore.md, section 2): the
transformer workload generated for its workload knobs (`workloads.transformer.generate`),
checked, and run in the analytical mode (`workloads.analytical.run_analytical`, ASTRA-sim's
native collectives with the collective knobs) on the `stack:` topology of its network knobs.

`evaluate` is what a worker runs: it takes a point's knob values and returns plain data, so
it runs the same in this process, a process pool or a Ray worker. A worker keeps its last
few workloads and topologies, since studies often vary only the other stacks' knobs.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from explore.space import PLAN_KNOBS
from topologies.errors import CollcError

_KEEP = 2
_WORKLOADS: OrderedDict[tuple[Any, ...], tuple[Any, list[int]]] = OrderedDict()
_TOPOLOGIES: OrderedDict[str, Any] = OrderedDict()


def _remember(cache: OrderedDict[Any, Any], key: Any, make: Any) -> Any:
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = make()
    cache[key] = value
    while len(cache) > _KEEP:
        cache.popitem(last=False)
    return value


def workload_key(v: dict[str, Any]) -> tuple[Any, ...]:
    """The knobs the generated workload depends on."""
    return (v["model"], *(v[n] for n in PLAN_KNOBS), v["peak_tflops"], v["mem_bw_gbps"])


def _workload(v: dict[str, Any]) -> tuple[Any, list[int]]:
    import dataclasses

    from workloads.model import check_workload
    from workloads.transformer import DEFAULT_NPU, GiB, generate

    hw = dataclasses.replace(
        DEFAULT_NPU,
        peak_flops=DEFAULT_NPU.peak_flops if v["peak_tflops"] is None else v["peak_tflops"] * 1e12,
        mem_bw=DEFAULT_NPU.mem_bw if v["mem_bw_gbps"] is None else v["mem_bw_gbps"] * 1e9,
        memory=int(v["memory_gib"] * GiB),
    )
    w = generate(v["model"], **{k: v[k] for k in PLAN_KNOBS}, hw=hw, check_memory=False)
    return w, check_workload(w)


def native_config(v: dict[str, Any]) -> Any:
    """The analytical mode's knobs (`workloads.analytical.NativeConfig`) of a point."""
    from workloads.analytical import NativeConfig
    from workloads.model import CollKind

    kinds = {
        "allreduce": CollKind.ALL_REDUCE,
        "allgather": CollKind.ALL_GATHER,
        "reduce_scatter": CollKind.REDUCE_SCATTER,
        "alltoall": CollKind.ALL_TO_ALL,
    }
    per_kind = {kinds[k]: tuple(v[k]) for k in kinds if v[k] is not None and None not in v[k]}
    return NativeConfig(
        implementation=tuple(v["implementation"]),
        per_kind=per_kind,
        endpoint_delay_ns=v["endpoint_delay"],
        preferred_dataset_splits=v["splits"],
        active_chunks_per_dimension=v["active_chunks"],
        local_mem_bw_gbps=float(v["local_mem_bw"]),
        collective_optimization=v["optimization"],
        scheduling_policy=v["scheduling"],
    )


def topology_spec(v: dict[str, Any]) -> str:
    """The `stack:` topology of a point's network knobs (LIBRA's per-NPU bandwidths turned
    into link bandwidths by `explore.network.topology_spec`)."""
    from explore.network import network_from_kinds
    from explore.network import topology_spec as spec

    net = network_from_kinds(v["topology"], v["size"])
    return spec(net, v["bandwidth"], v["latency"])


def evaluate(values: dict[str, Any]) -> dict[str, Any]:
    """Simulate the point with knob values ``values``. Returns ``{"ok": True, "time_ns",
    "compute_ns", "exposed_ns", "shortcut", "wall_s"}`` or, when the workload layer refuses
    the point, ``{"ok": False, "error": message, "wall_s"}``."""
    t0 = time.perf_counter()
    try:
        from topologies import parse_topology
        from workloads.analytical import run_analytical

        w, classes = _remember(_WORKLOADS, workload_key(values), lambda: _workload(values))
        spec = topology_spec(values)
        topo = _remember(_TOPOLOGIES, spec, lambda: parse_topology(spec))
        run, shortcut = run_analytical(w, topo, native_config(values), classes=classes)
    except CollcError as e:
        return {"ok": False, "error": str(e), "wall_s": time.perf_counter() - t0}
    slowest = max(range(len(run.finish_ns)), key=run.finish_ns.__getitem__)
    return {
        "ok": True,
        "time_ns": float(run.time_ns),
        "compute_ns": float(run.compute_ns[slowest]),
        "exposed_ns": float(run.exposed_ns[slowest]),
        "shortcut": shortcut,
        "wall_s": time.perf_counter() - t0,
    }
