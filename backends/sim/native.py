"""ASTRA-sim's analytical (congestion-unaware) time for its built-in collective algorithms.

`astrasim_native_time` predicts what ``AstraSim_Analytical_Congestion_Unaware`` reports for
one collective of a given size on a stack of Ring / FullyConnected / Switch dimensions with
native algorithms per dimension, as ASTRA-sim's system layer and analytical backend run them.
The structure:

1. **Size and chunks.** ASTRA-sim's all-gather size is the per-rank input; with
   ``size_convention="nccl"`` (the default) ``size_bytes`` is nccl-tests' (the largest
   buffer) and an all-gather's is divided by the number of NPUs here. The collective is cut
   into chunks of ``size // preferred_dataset_splits`` bytes; except for all-gather, a chunk
   smaller than the total number of NPUs is raised to that number and the size inflated to
   ``splits x chunk``. There are ``ceil(size / chunk)`` chunks, each of the full chunk size.
2. **Phases per chunk.** All-reduce ``localBWAware``: reduce-scatter on every active
   dimension but the last (ascending), all-reduce on the last, all-gather back (descending);
   ``baseline``: a full all-reduce on every dimension. Reduce-scatter: ascending;
   all-gather: descending; all-to-all: ascending, full buffer each time. Dimensions of one
   NPU are skipped. The ``one*`` variants (first entry of the list) run one phase over all
   NPUs in id order.
3. **Steps per phase** (p NPUs, D bytes entering the phase, m the message of a step). Ring:
   RS p-1 steps of m = D/p; AG p-1 steps of m = D; AR 2(p-1) steps of D/p; A2A p(p-1)/2 steps
   of D/p, all to the ring neighbour. Direct (window w, all p-1 peers by default): rounds of w
   peers at ring distances 1, 2, ... each costing the slowest message of the round; AR = RS +
   AG of D/p. HalvingDoubling (p a power of 2): RS step k sends D/2^k to distance 2^(k-1);
   AG mirrors it; AR = RS + AG.
4. **Step cost** = message delay + ``endpoint_delay``, plus three memory passes of
   ``m / local_mem_bw`` (decimal GB/s), each truncated to whole ns, on each step that reduces
   (every RS step; the RS half of an AR); each phase adds one ``endpoint_delay`` before its
   first step (the packet a ring releases when its stream starts). The message delay
   is the congestion-unaware one: ``hops x latency + m / bandwidth`` with bandwidth in GiB/s,
   truncated to whole ns (`backends.sim.analytical.astra_delay_ns`); hops: Ring min distance
   either way, FullyConnected 1, Switch 2. For the ``one*`` variants each pair is charged in
   the lowest dimension where its NPUs differ, and a step costs its slowest pair.
   Direct rounds charge one reduction time (the reductions
   of a round overlap: ASTRA-sim's memory bus is not shared by default).
5. **Scheduling.** One queue per dimension, running at most ``active_chunks_per_dimension``
   chunks at once (FIFO); a new chunk enters its first phase only while fewer than
   ``active_chunks_per_dimension`` chunks are in their first phase. With 1, chunks of a
   one-dimensional collective run one after another and multi-dimensional ones pipeline
   across dimensions. Chunks do not slow each other down (no contention).

6. **Communicator groups** (``group``): a group smaller than the cluster runs as one logical
   ring of its NPUs in ascending order, whatever the list names, message by message with 10 ns
   per release whatever ``endpoint_delay`` is (`backends.sim.native_ring`); the time is the
   last member's end with every member starting at 0. ``involved_dim`` (the workload node's)
   drops dimensions of a whole-cluster collective.

Not modelled: ``doubleBinaryTree``, halving-doubling all-to-all,
``--num-queues-per-dim`` other than 1, Themis scheduling (ASTRA-sim 2.x hard-wires
FIFO + ascending).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from backends.sim.analytical import astra_delay_ns, astra_hops, is_astra_stack
from backends.sim.errors import SimError
from backends.sim.native_ring import GROUP_RELEASE_NS, group_ring_ends, ring_steps
from chakra_ir.collective import CollectiveKind, parse_collective_kind
from topologies.errors import CollcError
from topologies.topology import Topology

GIB = 1 << 30

_DIM_NAMES = {
    "ring": "ring",
    "fullyconnected": "fc",
    "fc": "fc",
    "switch": "switch",
}
_ASTRA_NAMES = {"ring": "Ring", "fc": "FullyConnected", "switch": "Switch"}

SUPPORTED = (
    CollectiveKind.ALLREDUCE,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALLGATHER,
    CollectiveKind.ALLTOALL,
)

_ALGO = re.compile(r"^(one)?(ring|direct(\d*)|halvingdoubling|doublebinarytree)$")


@dataclass(frozen=True)
class AstraDim:
    """One dimension of an ASTRA-sim analytical network YAML.

    ``topology`` is ``Ring``, ``FullyConnected`` or ``Switch``; ``bandwidth_gbps`` is in
    ASTRA-sim's GB/s (2^30 bytes per second), per link and direction; ``latency_ns`` per hop.
    """

    topology: str
    npus: int
    bandwidth_gbps: float
    latency_ns: float

    @property
    def kind(self) -> str:
        """``ring``, ``fc`` or ``switch``."""
        k = _DIM_NAMES.get(self.topology.replace("_", "").replace("-", "").lower())
        if k is None:
            raise SimError(
                f"unknown ASTRA-sim dimension {self.topology!r} (expected Ring, "
                "FullyConnected or Switch)"
            )
        return k

    @property
    def bandwidth_bytes_per_ns(self) -> float:
        """The bandwidth as ASTRA-sim converts it: GB/s x 2^30 / 10^9."""
        return self.bandwidth_gbps * GIB / 1e9

    def check(self, index: int) -> None:
        self.kind  # noqa: B018  (validates the name)
        if self.npus < 1:
            raise SimError(f"dimension {index} has {self.npus} NPUs (at least 1)")
        if not self.bandwidth_gbps > 0:
            raise SimError(f"dimension {index} has bandwidth {self.bandwidth_gbps} (must be > 0)")
        if not self.latency_ns >= 0:
            raise SimError(f"dimension {index} has latency {self.latency_ns} (must be >= 0)")


DimLike = AstraDim | tuple[str, int, float, float]


@dataclass(frozen=True)
class Algorithm:
    """A parsed implementation name: ``ring``, ``direct`` (``window`` peers at a time, -1 for
    all), ``halvingDoubling`` or ``doubleBinaryTree``; ``flat`` for the ``one*`` variants."""

    name: str
    window: int = -1
    flat: bool = False


def parse_algorithm(text: str) -> Algorithm:
    """An ASTRA-sim implementation name (``ring``, ``direct``, ``direct4``, ``oneRing``,
    ``halvingDoubling``, ...), case-insensitive."""
    m = _ALGO.match(text.strip().lower())
    if m is None:
        raise SimError(
            f"unknown ASTRA-sim algorithm {text!r} (expected ring, direct, directN, "
            "halvingDoubling, doubleBinaryTree or a one* variant)"
        )
    flat = m.group(1) is not None
    body = m.group(2)
    if body.startswith("direct"):
        digits = m.group(3)
        window = int(digits) if digits else -1
        if digits and window < 1:
            raise SimError(f"{text!r}: the direct window must be at least 1")
        return Algorithm("direct", window, flat)
    name = {"halvingdoubling": "halvingDoubling", "doublebinarytree": "doubleBinaryTree"}.get(
        body, body
    )
    return Algorithm(name, -1, flat)


@dataclass(frozen=True)
class PhaseCost:
    """One phase of a chunk: ``comm`` (allreduce, reduce_scatter, allgather, alltoall) with
    ``algorithm`` on dimension ``dim`` (-1: all NPUs, a ``one*`` variant), ``bytes_in``
    entering, ``steps`` steps, ``duration_ns`` in all."""

    dim: int
    comm: str
    algorithm: str
    bytes_in: int
    steps: int
    duration_ns: float


@dataclass(frozen=True)
class NativeEstimate:
    """`astrasim_native_time`'s answer with its workings.

    ``time_ns``: when the last chunk finishes. ``comm_size_bytes``: ASTRA-sim's size after the
    minimum-chunk rule; ``chunks`` of ``chunk_bytes``; ``phases``: one chunk's phases.
    """

    time_ns: float
    comm_size_bytes: int
    chunks: int
    chunk_bytes: int
    phases: tuple[PhaseCost, ...]
    notes: tuple[str, ...] = field(default=())


class _Span:
    """A set of NPUs an algorithm runs over: one dimension, or all NPUs (``one*``)."""

    def __init__(self, dims: Sequence[AstraDim], dim: int) -> None:
        self.dims = dims
        self.dim = dim
        if dim >= 0:
            self.p = dims[dim].npus
        else:
            self.p = int(np.prod([d.npus for d in dims]))
        self._cache: dict[tuple[int, int], int] = {}

    def delay(self, distance: int, nbytes: int) -> int:
        """ASTRA-sim's delay of an ``nbytes`` message to the NPU ``distance`` ahead (ring
        order); for all NPUs, the slowest such pair."""
        key = (distance, nbytes)
        v = self._cache.get(key)
        if v is not None:
            return v
        if self.dim >= 0:
            d = self.dims[self.dim]
            h = astra_hops(d.kind, d.npus, 0, distance % d.npus)
            v = astra_delay_ns(h, d.latency_ns, d.bandwidth_bytes_per_ns, nbytes)
        else:
            v = self._flat_delay(distance, nbytes)
        self._cache[key] = v
        return v

    def _flat_delay(self, distance: int, nbytes: int) -> int:
        a = np.arange(self.p, dtype=np.int64)
        return _pairs_delay(self.dims, a, (a + distance) % self.p, nbytes)


def _pairs_delay(
    dims: Sequence[AstraDim], a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], nbytes: int
) -> int:
    """The slowest of the messages ``a[i] -> b[i]`` (congestion-unaware delays)."""
    worst = 0
    stride = 1
    undecided = a != b
    for dim in dims:
        p = dim.npus
        ca = (a // stride) % p
        cb = (b // stride) % p
        here = undecided & (ca != cb)
        if here.any():
            delta = np.abs(cb[here] - ca[here])
            if dim.kind == "ring":
                hops = np.minimum(delta, p - delta)
            elif dim.kind == "fc":
                hops = np.ones_like(delta)
            else:
                hops = np.full_like(delta, 2)
            h = int(hops.max())
            worst = max(
                worst, astra_delay_ns(h, dim.latency_ns, dim.bandwidth_bytes_per_ns, nbytes)
            )
        undecided &= ~here
        stride *= p
    return worst


def astrasim_p2p_ns(dims: Sequence[DimLike], src: int, dst: int, nbytes: int) -> int:
    """ASTRA-sim's congestion-unaware delay of one message from NPU ``src`` to ``dst``: charged
    in the lowest dimension where they differ (0 for ``src == dst``)."""
    stride = 1
    for dim in _dims(dims):
        p = dim.npus
        ca, cb = (src // stride) % p, (dst // stride) % p
        if ca != cb:
            hops = astra_hops(dim.kind, p, ca, cb)
            return astra_delay_ns(hops, dim.latency_ns, dim.bandwidth_bytes_per_ns, nbytes)
        stride *= p
    return 0


def reduction_ns(nbytes: int, local_mem_bw: float) -> float:
    """ASTRA-sim's time to reduce ``nbytes`` (one write, two reads at ``local_mem_bw``
    decimal GB/s, each truncated to whole ns as ``PacketBundle::call`` does; 0 when it is 0,
    reductions being free)."""
    if local_mem_bw <= 0:
        return 0.0
    return 3.0 * int(float(nbytes) / (local_mem_bw * 1e9) * 1e9)


def _phase(
    comm: CollectiveKind,
    algo: Algorithm,
    span: _Span,
    D: int,
    endpoint_delay: float,
    local_mem_bw: float,
) -> tuple[int, float, int]:
    """``(steps, duration_ns, bytes out)`` of one phase."""
    p = span.p
    ed = endpoint_delay

    def step(distance: int, m: int, reduce: bool) -> float:
        return span.delay(distance, m) + ed + (reduction_ns(m, local_mem_bw) if reduce else 0.0)

    AR, RS, AG = (
        CollectiveKind.ALLREDUCE,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLGATHER,
    )
    if algo.name == "ring":
        if comm is RS:
            m = D // p
            return p - 1, (p - 1) * step(1, m, True), m
        if comm is AG:
            return p - 1, (p - 1) * step(1, D, False), D * p
        if comm is AR:
            m = D // p
            return 2 * (p - 1), (p - 1) * (step(1, m, True) + step(1, m, False)), D
        n = p * (p - 1) // 2
        return n, n * step(1, D // p, False), D
    if algo.name == "direct":
        w = p - 1 if algo.window < 1 or algo.window > p - 1 else algo.window
        rounds = [list(range(s, min(s + w, p))) for s in range(1, p, w)]

        def sweep(m: int, reduce: bool) -> float:
            return sum(max(step(k, m, reduce) for k in peers) for peers in rounds)

        if comm is RS:
            m = D // p
            return len(rounds), sweep(m, True), m
        if comm is AG:
            return len(rounds), sweep(D, False), D * p
        if comm is AR:
            m = D // p
            return 2 * len(rounds), sweep(m, True) + sweep(m, False), D
        return len(rounds), sweep(D // p, False), D
    if algo.name == "halvingDoubling":
        L = p.bit_length() - 1
        if p < 2 or p != 1 << L:
            raise SimError(f"halvingDoubling needs a power-of-2 number of NPUs, got {p}")
        rs = [(1 << (k - 1), D >> k) for k in range(1, L + 1)]
        if comm is RS:
            return L, sum(step(d, m, True) for d, m in rs), D // p
        if comm is AR:
            back = sum(step(d, m, False) for d, m in reversed(rs))
            return 2 * L, sum(step(d, m, True) for d, m in rs) + back, D
        if comm is AG:
            ag = [(1 << (L - j), D << (j - 1)) for j in range(1, L + 1)]
            return L, sum(step(d, m, False) for d, m in ag), D * p
        raise SimError("halvingDoubling does not implement all-to-all in ASTRA-sim")
    raise SimError(f"{algo.name} is not modelled (supported: ring, direct, halvingDoubling)")


def _dims(dims: Sequence[DimLike]) -> list[AstraDim]:
    out = []
    for i, d in enumerate(dims):
        dim = (
            d
            if isinstance(d, AstraDim)
            else AstraDim(str(d[0]), int(d[1]), float(d[2]), float(d[3]))
        )
        dim.check(i)
        out.append(dim)
    if not out:
        raise SimError("an ASTRA-sim network needs at least one dimension")
    return out


def astrasim_native_estimate(
    kind: CollectiveKind | str,
    dims: Sequence[DimLike],
    size_bytes: int,
    algorithms: Sequence[str] | str,
    *,
    endpoint_delay: float = 10,
    preferred_dataset_splits: int = 1,
    active_chunks_per_dimension: int = 1,
    local_mem_bw: float = 0.0,
    collective_optimization: str = "baseline",
    size_convention: str = "nccl",
    group: Sequence[int] | None = None,
    involved_dim: Sequence[bool] | None = None,
) -> NativeEstimate:
    """ASTRA-sim's analytical time for a native collective, with its workings; see the module
    docstring and `astrasim_native_time` for the arguments."""
    try:
        k = kind if isinstance(kind, CollectiveKind) else parse_collective_kind(kind)
    except CollcError as e:
        raise SimError(e.message) from None
    if k not in SUPPORTED:
        raise SimError(
            f"ASTRA-sim simulates all-reduce, reduce-scatter, all-gather and all-to-all "
            f"natively, not {k.value}"
        )
    ds = _dims(dims)
    names = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    algos = [parse_algorithm(a) for a in names]
    if not algos:
        raise SimError("name one algorithm per dimension")
    flat = algos[0].flat
    if not flat:
        if any(a.flat for a in algos):
            raise SimError("a one* algorithm must be the first entry of the list")
        if len(algos) != len(ds):
            raise SimError(
                f"{len(algos)} algorithms for {len(ds)} dimensions (name one per dimension)"
            )
    opt = collective_optimization.strip().lower()
    if opt not in ("baseline", "localbwaware"):
        raise SimError(
            f"unknown collective optimization {collective_optimization!r} (expected baseline "
            "or localBWAware)"
        )
    if size_convention not in ("nccl", "astrasim"):
        raise SimError(f"unknown size convention {size_convention!r} (expected nccl or astrasim)")
    if size_bytes <= 0:
        raise SimError(f"the size must be positive, got {size_bytes} bytes")
    if preferred_dataset_splits < 1:
        raise SimError("preferred-dataset-splits must be at least 1 (ASTRA-sim divides by it)")
    if active_chunks_per_dimension < 1:
        raise SimError("active-chunks-per-dimension must be at least 1")
    total = int(np.prod([d.npus for d in ds]))
    notes: list[str] = []

    size = int(size_bytes)
    if k is CollectiveKind.ALLGATHER and size_convention == "nccl":
        size = size // total
        notes.append(f"all-gather: ASTRA-sim's size is the per-rank input, {size} B")
        if size <= 0:
            raise SimError(f"an all-gather of {size_bytes} B over {total} NPUs has an empty input")
    chunk = size // preferred_dataset_splits
    if k is not CollectiveKind.ALLGATHER and total > chunk:
        chunk = total
        size = preferred_dataset_splits * chunk
        notes.append(f"chunk raised to {total} B (one per NPU); size inflated to {size} B")
    if chunk <= 0:
        raise SimError(f"{size} B split {preferred_dataset_splits} ways leaves empty chunks")
    chunks = math.ceil(size / chunk)

    # One chunk's phases: (span key, comm, algorithm).
    plan: list[tuple[int, CollectiveKind, Algorithm]] = []
    spans: dict[int, _Span] = {}
    if group is not None and len(set(group)) < total:
        members = sorted(set(group))
        if len(members) < 2 or members[0] < 0 or members[-1] >= total:
            raise SimError(f"a communicator group of NPUs {members} does not fit {total} NPUs")
        # ASTRA-sim's CommunicatorGroup: one logical ring of the group, whatever the list.
        ends = group_ring_ends(
            k,
            members,
            chunk,
            chunks,
            lambda a, b, m: astrasim_p2p_ns(ds, a, b, m),
            active_chunks=active_chunks_per_dimension,
            reduce_ns=lambda m: reduction_ns(m, local_mem_bw),
        )
        steps = ring_steps(k, len(members), chunk)[0]
        one = group_ring_ends(
            k,
            members,
            chunk,
            1,
            lambda a, b, m: astrasim_p2p_ns(ds, a, b, m),
            reduce_ns=lambda m: reduction_ns(m, local_mem_bw),
        )
        notes.append(
            f"communicator group of {len(members)} NPUs: one logical ring, "
            f"{GROUP_RELEASE_NS} ns per release whatever the endpoint delay"
        )
        phase = PhaseCost(-2, k.value, "ring", chunk, steps, max(one))
        return NativeEstimate(max(ends), size, chunks, chunk, (phase,), tuple(notes))
    elif flat:
        plan.append((-1, k, algos[0]))
        if len(algos) > 1:
            notes.append(f"{names[0]} runs over all {total} NPUs; the other entries are ignored")
    else:
        if involved_dim is not None and len(involved_dim) < len(ds):
            raise SimError(f"involved_dim has {len(involved_dim)} entries for {len(ds)} dimensions")
        active = [
            i for i, d in enumerate(ds) if d.npus > 1 and (involved_dim is None or involved_dim[i])
        ]
        if k is CollectiveKind.ALLREDUCE and opt == "localbwaware" and active:
            plan += [(i, CollectiveKind.REDUCE_SCATTER, algos[i]) for i in active[:-1]]
            plan.append((active[-1], CollectiveKind.ALLREDUCE, algos[active[-1]]))
            plan += [(i, CollectiveKind.ALLGATHER, algos[i]) for i in reversed(active[:-1])]
        elif k is CollectiveKind.ALLGATHER:
            plan += [(i, k, algos[i]) for i in reversed(active)]
        else:
            plan += [(i, k, algos[i]) for i in active]
    phases: list[PhaseCost] = []
    D = chunk
    for key, comm, algo in plan:
        span = spans.setdefault(key, _Span(ds, key))
        steps, dur, out = _phase(comm, algo, span, D, endpoint_delay, local_mem_bw)
        # The packet the stream releases before its first message (Ring::insert_packet's
        # zero-latency packet) crosses the memory bus too: one more endpoint delay.
        dur += endpoint_delay
        label = ("one" + algo.name[0].upper() + algo.name[1:]) if algo.flat else algo.name
        if algo.name == "direct" and algo.window > 0:
            label += str(algo.window)
        phases.append(PhaseCost(key, comm.value, label, D, steps, dur))
        D = out
    time_ns = _schedule(
        [(p.dim, p.duration_ns) for p in phases], chunks, active_chunks_per_dimension
    )
    return NativeEstimate(time_ns, size, chunks, chunk, tuple(phases), tuple(notes))


def _schedule(phases: list[tuple[int, float]], chunks: int, active: int) -> float:
    """When the last of ``chunks`` identical chunks finishes its ``phases`` (queue, duration),
    with per-queue concurrency and first-phase admission both limited to ``active``."""
    if not phases or chunks == 0:
        return 0.0
    waiting: dict[int, deque[int]] = {}
    running: dict[int, int] = {}
    stage = [0] * chunks
    ready = deque(range(chunks))
    heap: list[tuple[float, int, int]] = []
    seq = 0
    first_phase = 0
    last = 0.0

    def start(q: int, now: float) -> None:
        nonlocal seq
        wq = waiting.setdefault(q, deque())
        while wq and running.get(q, 0) < active:
            s = wq.popleft()
            running[q] = running.get(q, 0) + 1
            heapq.heappush(heap, (now + phases[stage[s]][1], seq, s))
            seq += 1

    def enqueue(s: int, now: float) -> None:
        q = phases[stage[s]][0]
        waiting.setdefault(q, deque()).append(s)
        start(q, now)

    def admit(now: float) -> None:
        nonlocal first_phase
        while ready and first_phase < active:
            s = ready.popleft()
            first_phase += 1
            enqueue(s, now)

    admit(0.0)
    while heap:
        now, _, s = heapq.heappop(heap)
        q = phases[stage[s]][0]
        running[q] -= 1
        if stage[s] == 0:
            first_phase -= 1
        if stage[s] + 1 < len(phases):
            stage[s] += 1
            enqueue(s, now)
        else:
            last = max(last, now)
        start(q, now)
        admit(now)
    return last


def astrasim_native_time(
    kind: CollectiveKind | str,
    dims: Sequence[DimLike],
    size_bytes: int,
    algorithms: Sequence[str] | str,
    *,
    endpoint_delay: float = 10,
    preferred_dataset_splits: int = 1,
    active_chunks_per_dimension: int = 1,
    local_mem_bw: float = 0.0,
    collective_optimization: str = "baseline",
    size_convention: str = "nccl",
    group: Sequence[int] | None = None,
    involved_dim: Sequence[bool] | None = None,
) -> float:
    """The time in ns ASTRA-sim's congestion-unaware backend reports for one native collective.

    ``kind``: allreduce, reduce_scatter, allgather or alltoall. ``dims``: `AstraDim`s or
    ``(topology, npus, bandwidth GB/s (2^30), latency ns)`` tuples, dimension 0 first.
    ``algorithms``: one implementation name per dimension (``ring``, ``direct``, ``directN``,
    ``halvingDoubling``; or a ``one*`` variant first). The keyword arguments are the system
    JSON's ``endpoint-delay`` (ns), ``preferred-dataset-splits``,
    ``active-chunks-per-dimension``, ``local-mem-bw`` (decimal GB/s; 0 = free reductions) and
    ``collective-optimization`` (baseline or localBWAware). ``size_convention``: ``nccl``
    (largest buffer, collc's ``--size``) or ``astrasim`` (the workload's ``comm_size``; they
    differ for all-gather only). ``group``: the NPUs of a communicator group (None: every
    NPU); ``involved_dim``: per dimension, whether a whole-cluster collective uses it. Raises
    SimError for anything not modelled; see the module docstring for the rules.
    """
    return astrasim_native_estimate(
        kind,
        dims,
        size_bytes,
        algorithms,
        endpoint_delay=endpoint_delay,
        preferred_dataset_splits=preferred_dataset_splits,
        active_chunks_per_dimension=active_chunks_per_dimension,
        local_mem_bw=local_mem_bw,
        collective_optimization=collective_optimization,
        size_convention=size_convention,
        group=group,
        involved_dim=involved_dim,
    ).time_ns


def dims_from_topology(topology: Topology) -> list[AstraDim]:
    """The ASTRA-sim dimensions of a stack topology (ring, fc, switch, torus, ...), with
    bandwidth in ASTRA-sim's GB/s (2^30 B/s) and latency of each dimension's first link.

    Raises SimError for topologies that are not such stacks (meshes, one-way rings,
    hypercubes, FRED, graphs, failed links).
    """
    lay = topology.layout
    if not is_astra_stack(topology) or lay is None or "uniring" in lay.kinds:
        raise SimError(
            f"{topology.spec} is not a stack of Ring, FullyConnected and Switch dimensions"
        )
    out = []
    for d, (size, kind) in enumerate(zip(lay.shape, lay.kinds, strict=True)):
        stride = lay.strides[d]
        if size < 2:
            out.append(AstraDim(_ASTRA_NAMES[kind], 1, 1.0, 0.0))
            continue
        link = topology.links[topology.route_links(0, stride)[0]]
        out.append(
            AstraDim(
                _ASTRA_NAMES[kind],
                size,
                link.bandwidth_bytes_per_ns * 1e9 / GIB,
                link.latency_ns,
            )
        )
    return out
