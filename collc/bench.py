"""``collc bench``: every applicable algorithm on one topology, side by side.

Each algorithm's program is produced, verified and simulated on the same topology under the
same cost model, for one size or an nccl-tests style sweep. Baseline programs are size-free,
so each is produced once; TACOS schedules depend on the bytes per chunk, so it is
synthesized per size. With process groups every algorithm runs in every group at once
(baselines group by group, TACOS jointly, and as ``tacos-independent`` group by group), and
the bound is the joint one. Under a sparse payload TACOS plans with its messages' sizes, and
``tacos-dense`` is TACOS as planned for dense chunks, both weighed under the payload.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backends.sim import simulate
from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import Program
from chakra_ir.verify import verify, verify_routes
from collc.pipeline import (
    ALGORITHMS,
    MAX_TRANSFERS,
    MAX_WORK,
    Request,
    bounds_for,
    check_work,
    cost_model_for,
    estimate_work,
    generate,
    make_collective,
    parse_placement,
)
from collc.request import payload_of
from topologies import Topology, parse_topology
from topologies.cost_model import DEFAULT_COMPLETION
from topologies.errors import CollcError
from topologies.groups import parse_groups
from topologies.units import parse_size_bytes

if TYPE_CHECKING:
    from payloads.describe import Payload
    from payloads.sizes import MessageSizes

INDEPENDENT = "tacos-independent"
DENSE_PLAN = "tacos-dense"
"""Under a sparse payload, TACOS as planned for dense chunks (``tacos`` plans with the
payload's message sizes, `tacos.sized`): the row that shows what planning with them gains."""
"""The bench row of TACOS synthesizing each process group alone (with --groups)."""


def parse_sizes(text: str) -> list[int]:
    """``64MiB`` or an nccl-tests sweep ``MIN:MAX:xF`` (multiply by F) -> sizes in bytes."""
    parts = text.split(":")
    if len(parts) == 1:
        return [parse_size_bytes(text)]
    if len(parts) != 3 or not parts[2].startswith("x"):
        raise CollcError(f"--sizes {text!r}: expected SIZE or MIN:MAX:xFACTOR, e.g. 1MiB:1GiB:x4")
    lo, hi = parse_size_bytes(parts[0]), parse_size_bytes(parts[1])
    try:
        factor = int(parts[2][1:])
    except ValueError:
        raise CollcError(f"--sizes {text!r}: the factor must be a whole number") from None
    if factor < 2 or lo > hi:
        raise CollcError(f"--sizes {text!r}: need MIN <= MAX and a factor of at least 2")
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s)
        s *= factor
    return sizes


@dataclass
class BenchRow:
    """One algorithm at one size. ``error`` says why it did not run (then figures are None)."""

    algorithm: str
    size_bytes: int
    time_ns: float | None = None
    busbw_gb_per_s: float | None = None
    ratio: float | None = None
    speedup: float | None = None
    """Time of the best baseline over this time (tacos and baselines alike)."""
    error: str = ""
    chunk_bytes: int | None = None
    """Bytes of the program's chunk (its smallest message): programs are compared at the
    granularity each producer chose (the bidirectional ring's ``--chunks-per-npu`` counts
    chunks per direction, so it cuts twice as fine as TACOS at the same flag)."""
    sent_bytes: int | None = None
    """With a payload: the bytes all ranks sent (the messages' wire sizes)."""
    model: str = "congestion"
    """``congestion`` (collc's simulator), or ``astra-analytical`` for an ``astra:<algorithm>``
    row: ASTRA-sim's analytical model of its own native collective (no contention)."""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BenchReport:
    topology: str
    collective: str
    ranks: int
    sizes: list[int]
    bounds_ns: dict[int, tuple[str, float]]
    rows: list[BenchRow] = field(default_factory=list)
    seconds: float = 0.0
    completion: str = DEFAULT_COMPLETION.value

    def to_json(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "collective": self.collective,
            "ranks": self.ranks,
            "completion": self.completion,
            "sizes": self.sizes,
            "lower_bounds": {str(k): {"name": n, "ns": v} for k, (n, v) in self.bounds_ns.items()},
            "rows": [r.to_json() for r in self.rows],
            "seconds": self.seconds,
        }


def run_bench(
    topology_spec: str,
    kind: CollectiveKind,
    sizes: list[int],
    *,
    algorithms: list[str] | None = None,
    chunks_per_npu: int = 1,
    placement: str = "",
    groups: str = "",
    seed: int = 0,
    seeds: int = 1,
    completion: str = DEFAULT_COMPLETION.value,
    say: Callable[[str], None] | None = None,
    astra_native: list[str] | None = None,
    max_work: int = 0,
    max_transfers: int = 0,
    payload: str | None = None,
    converter: str = "sw",
) -> BenchReport:
    """Produce, verify and simulate every applicable algorithm at every size, all under the
    send-completion rule ``completion``; TACOS keeps the best of ``seeds`` seeds from
    ``seed``. ``astra_native`` adds a row per ASTRA-sim implementation name
    (``halvingDoubling``, ``direct``, ``ring``...): the time ASTRA-sim's analytical backend
    reports for its own native collective, the same on every dimension of the topology (a stack of Ring / FullyConnected / Switch dimensions); these rows use that
    model, not collc's simulator, and never count as the best baseline. A producer whose
    work `synthesize` would refuse (``max_work``, ``max_transfers``; 0: the defaults) gets a
    row saying so instead of running. ``payload`` (a `payloads.describe` spec) weighs every
    message by its contributions under ``converter``; the bound is then the sparse one
    (`payloads.bounds`), and a tensor payload fixes the size to its tensors'."""
    start = time.perf_counter()
    sparse = None
    if payload is not None:
        sparse = payload_of(payload)
        if sparse.dense:
            sparse = None
        elif groups:
            raise CollcError("--payload does not apply to process groups yet")
        elif sparse.tensors is not None:
            sizes = [sparse.tensors.elements * sparse.tensors.itemsize]
    topology = parse_topology(topology_spec)
    npus = parse_placement(placement, topology) if placement else ()
    n = len(npus) or topology.num_npus
    if groups:
        n = len(parse_groups(groups, topology).npus)
    names = algorithms or list(ALGORITHMS)
    if groups and "tacos" in names and INDEPENDENT not in names:
        names = [
            *names[: names.index("tacos") + 1],
            INDEPENDENT,
            *names[names.index("tacos") + 1 :],
        ]
    if sparse is not None and "tacos" in names and DENSE_PLAN not in names:
        names = [
            *names[: names.index("tacos") + 1],
            DENSE_PLAN,
            *names[names.index("tacos") + 1 :],
        ]
    for name in names:
        if (name == INDEPENDENT and groups) or (name == DENSE_PLAN and sparse is not None):
            continue
        if name not in ALGORITHMS:
            raise CollcError(
                f"unknown algorithm {name!r} (expected one of {', '.join(ALGORITHMS)})"
            )
    cost = cost_model_for(completion)
    report = BenchReport(topology.spec, kind.value, n, sizes, {}, completion=completion)
    cache: dict[str, Program | str] = {}
    for size in sizes:
        req = Request(
            topology_spec,
            kind,
            size_bytes=size,
            chunks_per_npu=chunks_per_npu,
            placement=placement,
            seed=seed,
            seeds=seeds,
            completion=completion,
            groups=groups,
            max_transfers=max_transfers,
            max_work=max_work,
            payload=payload if sparse is not None and payload is not None else "",
            converter=converter,
        )
        # Programs cut the buffer differently: only bounds that hold for any chunking apply.
        report.bounds_ns[size] = bounds_for(req, topology, n, npus, any_chunking=True).best
        rows = []
        sparse_bounds: list[tuple[BenchRow, tuple[str, float]]] = []
        own_bounds: list[tuple[BenchRow, tuple[str, float]]] = []
        for name in names:
            if say:
                say(f"{name} at {size} B")
            row = BenchRow(name, size)
            program = _program(name, req, topology, npus, cache)
            if isinstance(program, str):
                row.error = program
            else:
                chunk_bytes = chunk_bytes_for(program.collective, size)
                sizes_table = None
                if sparse is not None:
                    chunk_bytes, sizes_table, bound, topk = _sparse(
                        name, program, sparse, chunk_bytes, topology, converter
                    )
                    # A top-k all-reduce's result is not the exact sum: its own bound only.
                    (own_bounds if topk else sparse_bounds).append((row, bound))
                    row.sent_bytes = int(sizes_table.sent(program).sum())
                row.chunk_bytes = chunk_bytes
                result = simulate(program, topology, chunk_bytes, cost=cost, sizes=sizes_table)
                row.time_ns = result.finish_ns
                row.busbw_gb_per_s = result.busbw_gb_per_s
                row.ratio = result.finish_ns / report.bounds_ns[size][1]
            rows.append(row)
        if sparse_bounds or own_bounds:
            report.bounds_ns[size] = min(
                (b for _, b in sparse_bounds or own_bounds), key=lambda b: b[1]
            )
            own = {id(r): b for r, b in own_bounds}
            for r in rows:
                if r.time_ns is not None and r.model == "congestion":
                    r.ratio = r.time_ns / own.get(id(r), report.bounds_ns[size])[1]
        for algo in astra_native or ():
            rows.append(_astra_row(algo, kind, topology, size, report.bounds_ns[size][1], n))
        baselines = [
            r.time_ns
            for r in rows
            if not r.algorithm.startswith("tacos") and r.model == "congestion" and r.time_ns
        ]
        best = min(baselines) if baselines else None
        for r in rows:
            if best is not None and r.time_ns:
                r.speedup = best / r.time_ns
        report.rows.extend(rows)
    report.seconds = time.perf_counter() - start
    return report


def _sparse(
    name: str,
    program: Program,
    payload: Payload,
    chunk_bytes: int,
    topology: Topology,
    converter: str,
) -> tuple[int, MessageSizes, tuple[str, float], bool]:
    """A program's chunk size (a tensor payload's own), per-message sizes, sparse bound and
    whether it re-selects its reduced chunks' top-k (`baselines.base.Baseline.topk`, Ok-Topk;
    its bound is then its own)."""
    from baselines import ALGORITHMS as BASELINES
    from payloads.bounds import sparse_bound
    from payloads.sizes import message_sizes, payload_chunk_bytes

    chunk_bytes = payload_chunk_bytes(payload, program.collective) or chunk_bytes
    base = BASELINES.get(name)
    topk = base is not None and base.topk
    if topk:
        payload = payload.with_topk()
    sizes = message_sizes(program, payload, chunk_bytes, converter=converter, topology=topology)
    return chunk_bytes, sizes, sparse_bound(program, payload, chunk_bytes, topology), topk


def _astra_row(
    algo: str, kind: CollectiveKind, topology: Topology, size: int, bound: float, n: int
) -> BenchRow:
    """ASTRA-sim's analytical time for its native ``algo`` on every dimension of ``topology``."""
    from backends.sim import SimError, busbw_factor
    from backends.sim.native import astrasim_native_time, dims_from_topology

    row = BenchRow(f"astra:{algo}", size, model="astra-analytical")
    try:
        dims = dims_from_topology(topology)
        row.time_ns = astrasim_native_time(kind, dims, size, [algo] * len(dims))
    except SimError as e:
        row.error = e.message
        return row
    row.busbw_gb_per_s = size / row.time_ns * busbw_factor(kind, n) if row.time_ns > 0 else None
    row.ratio = row.time_ns / bound if bound > 0 else None
    return row


def produce(name: str, req: Request, topology: Topology) -> Program | str:
    """The verified program of producer ``name`` for ``req`` on ``topology``, or why it
    cannot serve this case (the work limits' refusals included)."""
    producer = ALGORITHMS[name](req, None)
    if req.collective not in producer.collectives:
        return f"does not implement {req.collective.value}"
    try:
        collective = make_collective(req, producer, topology)
        check_work(
            collective,
            req.max_transfers or MAX_TRANSFERS,
            work=estimate_work(collective, topology, tacos=name == "tacos", seeds=req.seeds),
            max_work=req.max_work or MAX_WORK,
        )
        program = generate(producer, collective, topology)
    except CollcError as e:
        return e.message
    verify(program)
    verify_routes(program, topology)
    return program


def _program(
    name: str,
    req: Request,
    topology: Topology,
    npus: tuple[int, ...],
    cache: dict[str, Program | str],
) -> Program | str:
    """The verified program of one algorithm, or why it cannot serve this case."""
    size_free = not name.startswith("tacos")
    if size_free and name in cache:
        return cache[name]
    if name == INDEPENDENT:
        req = dataclasses.replace(req, groups_independent=True)
        name = "tacos"
    elif name == DENSE_PLAN:
        req = dataclasses.replace(req, payload="")
        name = "tacos"
    out = produce(name, req, topology)
    if size_free:
        cache[name] = out
    return out


def format_report(report: BenchReport) -> str:
    """Tables per size: time, bus bandwidth, ratio to the lower bound, speedup."""
    from topologies.units import format_size_bytes

    lines = [
        f"{report.collective} over {report.ranks} ranks on {report.topology} "
        f"(sends complete {report.completion})"
    ]
    for size in report.sizes:
        bname, bns = report.bounds_ns[size]
        lines.append("")
        lines.append(f"size {format_size_bytes(size)}   lower bound {bns / 1000:,.2f} us ({bname})")
        lines.append(
            f"  {'algorithm':<18}{'time us':>14}{'busbw GB/s':>12}{'x bound':>9}"
            f"{'vs best baseline':>18}{'chunk':>10}"
        )
        for r in report.rows:
            if r.size_bytes != size:
                continue
            if r.error:
                lines.append(f"  {r.algorithm:<18}{'-':>14}   ({r.error})")
                continue
            assert r.time_ns is not None and r.ratio is not None
            busbw = f"{r.busbw_gb_per_s:.2f}" if r.busbw_gb_per_s is not None else "-"
            speed = f"{r.speedup:.2f}x" if r.speedup is not None else "-"
            chunk = format_size_bytes(r.chunk_bytes) if r.chunk_bytes is not None else "-"
            lines.append(
                f"  {r.algorithm:<18}{r.time_ns / 1000:>14,.2f}{busbw:>12}{r.ratio:>9.3f}"
                f"{speed:>18}{chunk:>10}"
            )
    if report.collective == "allreduce" and any(
        r.algorithm == "fred-innetwork" and r.time_ns for r in report.rows
    ):
        lines.append("")
        lines.append(
            "busbw follows nccl-tests (algbw x 2(n-1)/n for all-reduce): an in-network "
            "all-reduce sends only algbw's worth per NPU, so its busbw may exceed the link."
        )
    if any(r.model != "congestion" for r in report.rows):
        lines.append("")
        lines.append(
            "astra:* rows: ASTRA-sim's analytical model of its own native collective (no "
            "contention), not collc's simulator; they never count as the best baseline."
        )
    lines.append("")
    lines.append(f"{report.seconds:.1f} s")
    return "\n".join(lines) + "\n"
