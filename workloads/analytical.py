"""The analytical mode: a workload timed as ASTRA-sim's congestion-unaware analytical backend
times it, with its native collectives.

Collectives take `backends.sim.native`'s time for the group (whole cluster: the per-dimension
implementations over the involved dimensions; a smaller communicator group: one logical ring
of its NPUs, timed per member from each member's issue time when the ring is uneven,
`member_timer`); point-to-point messages take the congestion-unaware delay (hops x latency +
bytes / bandwidth in the lowest dimension where the NPUs differ, truncated to whole ns). There
is no contention, so every distinct collective is computed once and cached.

The knobs are ASTRA-sim's system JSON keys (`NativeConfig`); `system_json` writes the file
that makes ASTRA-sim use the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from backends.sim.errors import SimError
from backends.sim.native import (
    AstraDim,
    astrasim_native_estimate,
    astrasim_native_time,
    astrasim_p2p_ns,
    dims_from_topology,
    reduction_ns,
)
from backends.sim.native_ring import group_is_even, group_ring_ends
from chakra_ir.collective import parse_collective_kind
from topologies.topology import Topology
from workloads.engine import (
    CollCall,
    CollectiveTimer,
    MemberTimer,
    P2pTimer,
    Roofline,
    WorkloadRun,
)
from workloads.model import COLL_NAMES, CollKind, Workload, WorkloadError

_JSON_KEYS = {
    CollKind.ALL_REDUCE: "all-reduce-implementation",
    CollKind.ALL_GATHER: "all-gather-implementation",
    CollKind.REDUCE_SCATTER: "reduce-scatter-implementation",
    CollKind.ALL_TO_ALL: "all-to-all-implementation",
}


NATIVE_LIMITS: dict[str, tuple[str, type | tuple[type, ...], float, float]] = {
    "endpoint_delay_ns": ("endpoint-delay", int, 0, 1e12),
    "preferred_dataset_splits": ("preferred-dataset-splits", int, 1, 4096),
    "active_chunks_per_dimension": ("active-chunks-per-dimension", int, 1, 4096),
    "local_mem_bw_gbps": ("local-mem-bw", (int, float), 1e-6, 1e9),
    "peak_perf_tflops": ("peak-perf", (int, float), 1e-6, 1e9),
}
"""Per numeric knob: its name in ASTRA-sim's system JSON, its type and its range (ASTRA-sim's
own configurations use 1-64 splits and chunks), 0 being allowed for the two rates (unset):
beyond it a run would take hours or a time would not be exact."""


@dataclass(frozen=True)
class NativeConfig:
    """ASTRA-sim's system-layer knobs for native collectives (its system JSON):
    ``implementation`` per dimension (one name, or one per dimension, for every collective;
    ``per_kind`` overrides it for some), ``endpoint_delay_ns``, ``preferred_dataset_splits``,
    ``active_chunks_per_dimension``, ``local_mem_bw_gbps`` (decimal GB/s; also the roofline's
    memory bandwidth), ``peak_perf_tflops`` (roofline), ``roofline`` on or off,
    ``collective_optimization`` (baseline or localBWAware) and ``scheduling_policy`` (written to
    the JSON; with one communication op in flight per NPU it does not change the time)."""

    implementation: tuple[str, ...] = ("ring",)
    per_kind: dict[CollKind, tuple[str, ...]] = field(default_factory=dict)
    endpoint_delay_ns: int = 10
    preferred_dataset_splits: int = 1
    active_chunks_per_dimension: int = 1
    local_mem_bw_gbps: float = 0.0
    peak_perf_tflops: float = 0.0
    roofline: bool = False
    collective_optimization: str = "baseline"
    scheduling_policy: str = "FIFO"

    def __post_init__(self) -> None:
        """Refuse values outside `NATIVE_LIMITS` (WorkloadError naming the knob)."""
        for name, (key, kind, lo, hi) in NATIVE_LIMITS.items():
            v: object = getattr(self, name)
            ok = (
                isinstance(v, kind)
                and isinstance(v, int | float)
                and not isinstance(v, bool)
                and (lo <= v <= hi or (v == 0 and kind is not int))
            )
            if not ok:  # NaN fails the comparison too
                shown = repr(v) if len(repr(v)) <= 30 else repr(v)[:27] + "..."
                zero = "" if kind is int else "0 or "
                raise WorkloadError(f"{key} {shown} is not {zero}between {lo:g} and {hi:g}")

    def algorithms(self, kind: CollKind, ndims: int) -> list[str]:
        names = list(self.per_kind.get(kind, self.implementation))
        if len(names) == 1 and ndims > 1:
            names = names * ndims
        return names


def system_json(config: NativeConfig, ndims: int) -> dict[str, object]:
    """The ASTRA-sim system JSON that runs a workload with ``config``'s knobs."""
    out: dict[str, object] = {
        "scheduling-policy": config.scheduling_policy,
        "endpoint-delay": config.endpoint_delay_ns,
        "active-chunks-per-dimension": config.active_chunks_per_dimension,
        "preferred-dataset-splits": config.preferred_dataset_splits,
        "collective-optimization": config.collective_optimization,
        "local-mem-bw": config.local_mem_bw_gbps,
        "peak-perf": config.peak_perf_tflops,
        "roofline-enabled": int(config.roofline),
    }
    for kind, key in _JSON_KEYS.items():
        out[key] = config.algorithms(kind, ndims)
    return out


def native_timers(
    topology: Topology, config: NativeConfig
) -> tuple[CollectiveTimer, P2pTimer, list[AstraDim]]:
    """The collective and message timers of the analytical mode on ``topology`` (a stack of
    Ring, FullyConnected and Switch dimensions), and its ASTRA-sim dimensions."""
    try:
        dims = dims_from_topology(topology)
    except SimError as e:
        raise WorkloadError(
            f"the analytical mode needs an ASTRA-sim network: {e.message}"
        ) from None
    cache: dict[CollCall, float] = {}

    def coll(call: CollCall) -> float:
        t = cache.get(call)
        if t is None:
            try:
                t = astrasim_native_time(
                    COLL_NAMES[call.kind],
                    dims,
                    call.comm_size,
                    config.algorithms(call.kind, len(dims)),
                    endpoint_delay=config.endpoint_delay_ns,
                    preferred_dataset_splits=config.preferred_dataset_splits,
                    active_chunks_per_dimension=config.active_chunks_per_dimension,
                    local_mem_bw=config.local_mem_bw_gbps,
                    collective_optimization=config.collective_optimization,
                    size_convention="astrasim",
                    group=call.members if call.pg_name else None,
                    involved_dim=call.involved_dim,
                )
            except SimError as e:
                raise WorkloadError(
                    f"{call.kind.name} of {call.comm_size} B on {len(call.members)} NPUs: "
                    f"{e.message}"
                ) from None
            cache[call] = t
        return t

    p2p_cache: dict[tuple[int, int, int], float] = {}

    def p2p(src: int, dst: int, nbytes: int) -> float:
        key = (src, dst, nbytes)
        t = p2p_cache.get(key)
        if t is None:
            t = float(astrasim_p2p_ns(dims, src, dst, nbytes))
            p2p_cache[key] = t
        return t

    return coll, p2p, dims


def member_timer(dims: list[AstraDim], config: NativeConfig) -> MemberTimer:
    """The analytical mode's per-member timer: a collective on a communicator group whose
    ring is uneven (`backends.sim.native_ring.group_is_even`) ends on each member when
    ASTRA-sim's ring, started on each member at its issue time, ends there; None otherwise."""
    even: dict[tuple[int, ...], bool] = {}
    cache: dict[tuple[CollCall, tuple[float, ...]], list[float]] = {}

    def delay(a: int, b: int, m: int) -> float:
        return float(astrasim_p2p_ns(dims, a, b, m))

    def each(call: CollCall, issued: tuple[float, ...]) -> list[float] | None:
        if not call.pg_name or len(call.members) == _npus(dims):
            return None
        ok = even.get(call.members)
        if ok is None:
            ok = even[call.members] = group_is_even(call.members, delay)
        if ok:
            return None
        t0 = min(issued)
        rel = tuple(t - t0 for t in issued)
        ends = cache.get((call, rel))
        if ends is None:
            est = astrasim_native_estimate(
                COLL_NAMES[call.kind],
                dims,
                call.comm_size,
                config.algorithms(call.kind, len(dims)),
                endpoint_delay=config.endpoint_delay_ns,
                preferred_dataset_splits=config.preferred_dataset_splits,
                size_convention="astrasim",
                group=call.members,
            )
            ends = group_ring_ends(
                parse_collective_kind(COLL_NAMES[call.kind]),
                call.members,
                est.chunk_bytes,
                est.chunks,
                delay,
                active_chunks=config.active_chunks_per_dimension,
                reduce_ns=lambda m: reduction_ns(m, config.local_mem_bw_gbps),
                starts=rel,
            )
            cache[(call, rel)] = ends
        return [t0 + e for e in ends]

    return each


def _npus(dims: list[AstraDim]) -> int:
    n = 1
    for d in dims:
        n *= d.npus
    return n


def has_uneven_groups(w: Workload, dims: list[AstraDim]) -> bool:
    """Whether a group that ``w``'s collectives use runs as an uneven ring (its members then
    end at different times, and the symmetry shortcut does not apply)."""

    def delay(a: int, b: int, m: int) -> float:
        return float(astrasim_p2p_ns(dims, a, b, m))

    n = _npus(dims)
    return any(
        1 < len(set(m)) < n and not group_is_even(sorted(set(m)), delay) for m in w.groups.values()
    )


def run_analytical(
    w: Workload,
    topology: Topology,
    config: NativeConfig,
    *,
    classes: list[int],
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    full: bool = False,
) -> tuple[WorkloadRun, str]:
    """Run ``w`` (checked, ``classes`` from `workloads.model.check_workload`) in the
    analytical mode on ``topology``: one NPU per class of identical NPUs when that is exact
    (`workloads.symmetry`), else (or with ``full``) every NPU. Returns the run and the
    shortcut taken ("N classes of identical NPUs" or "none")."""
    from workloads.engine import run_workload
    from workloads.symmetry import run_by_classes

    coll, p2p, dims = native_timers(topology, config)
    quick = None
    if not full and not has_uneven_groups(w, dims):
        quick = run_by_classes(
            w, coll, p2p, roofline=roofline, remote_mem=remote_mem, classes=classes
        )
    if quick is not None:
        return quick, f"{max(classes) + 1} classes of identical NPUs"
    each = member_timer(dims, config)
    run = run_workload(w, coll, p2p, roofline=roofline, remote_mem=remote_mem, member_time=each)
    return run, "none"
