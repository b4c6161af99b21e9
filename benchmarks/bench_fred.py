"""FRED against the wafer mesh, as the FRED paper (ISCA 2025) measures it, and in-network
all-reduce against the best endpoint algorithm.

    python -m benchmarks.bench_fred [--size 256MiB] [--sizes 1MiB:1GiB:x4] [--packet 64KiB]
                                    [--parts 123]

Configurations (docs/innetwork.md states the assumptions): the 5x4 mesh baseline
``mesh:4x5,bw=750GB/s`` (X-Y routing; rows of 4 NPUs, so that groups of consecutive NPUs sit
on rows as they sit under FRED's L1 switches), and ``fred:20,cfg=A..D`` (4 NPUs per L1 switch,
3 TB/s NPU links, 500 ns per hop, no I/O). Messages are simulated as packets of ``--packet``
bytes that pipeline hop by hop (both fabrics are virtual cut-through). Every algorithm is produced, verified and simulated by
collc's congestion model. Figures per configuration:

- ``inject GB/s``: the bytes an NPU sends over its links divided by the collective's time,
  averaged over the NPUs: the "all-reduce bandwidth" the paper quotes (FRED-C and FRED-D both
  at the 3 TB/s NPU link, FRED-D moving half the bytes);
- ``sent/NPU``: the bytes an NPU sends; ``algbw``: size / time.

Parts:

1. MP(20) all-reduce of ``--size``: the best endpoint algorithm of each configuration and, where
   the switches reduce, ``fred-innetwork``; next to the paper's figures.
2. MP2-DP5-PP2 (MP on consecutive NPUs, then PP, then DP: NPU = mp + 2 pp + 4 dp): every
   group of one kind at once; MP and DP all-reduce, PP an all-to-all inside each pipeline pair
   (activations one way, gradients the other); next to the paper's figures. Then the three
   kinds at once (`backends.sim.concurrent`), each with its fastest program, sharing links.
3. In-network all-reduce on FRED-D per size of ``--sizes``: bytes each NPU sends against the
   best endpoint algorithm's, time against the in-network lower bound, speedup.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from backends.sim import SimResult, simulate
from backends.sim.concurrent import Instance, simulate_instances
from chakra_ir import Program
from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from collc.bench import parse_sizes
from collc.pipeline import Request, synthesize
from topologies import Topology, parse_topology
from topologies.errors import CollcError
from topologies.units import format_size_bytes, parse_size_bytes

AR = CollectiveKind.ALLREDUCE
A2A = CollectiveKind.ALLTOALL

CONFIGS = {
    "mesh 5x4": "mesh:4x5,bw=750GB/s",
    "FRED-A": "fred:20,cfg=A",
    "FRED-B": "fred:20,cfg=B",
    "FRED-C": "fred:20,cfg=C",
    "FRED-D": "fred:20,cfg=D",
}
ENDPOINT = ("tacos", "ring", "ring-bidir", "direct", "dbt", "hierarchical", "themis")
"""Endpoint algorithms tried on every configuration (those that cannot serve it are skipped)."""
INNETWORK = "fred-innetwork"

PAPER_MP20 = {
    "mesh 5x4": "1,500 (corner-limited)",
    "FRED-A": "1,850 (4x375+375 = 1,875)",
    "FRED-B": "-",
    "FRED-C": "3,000",
    "FRED-D": "3,000, half the traffic",
}
PAPER_3D = {
    ("mesh 5x4", "MP"): "750",
    ("mesh 5x4", "PP"): "750",
    ("FRED-A", "DP"): "375 (worse than the mesh)",
    ("FRED-C", "MP"): "3,000",
    ("FRED-C", "PP"): "3,000",
    ("FRED-D", "MP"): "3,000",
    ("FRED-D", "PP"): "3,000",
}
GROUPS_3D = {
    "MP": (AR, "2"),
    "DP": (AR, "stride:4"),
    "PP": (A2A, ";".join(f"{4 * d + m},{4 * d + 2 + m}" for d in range(5) for m in range(2))),
}


@dataclass
class Run:
    """One algorithm's simulated collective on one configuration."""

    algorithm: str
    result: SimResult
    sent_per_npu: float
    inject_gbps: float
    program: Program
    chunk_bytes: int

    @property
    def time_ns(self) -> float:
        return self.result.finish_ns


PACKET = 65536
"""Every message is simulated as packets of this many bytes (`main` sets it from
``--packet``), so that endpoint messages pipeline through switches and mesh hops as in-network
pieces do (FRED's and the mesh's routers are virtual cut-through); 0: whole messages."""


def measure(
    spec: str, topology: Topology, kind: CollectiveKind, size: int, algorithm: str, groups: str
) -> Run | None:
    """Produce, verify and simulate one algorithm; None when it cannot serve the case."""
    req = Request(spec, kind, algorithm=algorithm, size_bytes=size, groups=groups)
    try:
        res = synthesize(req)
    except CollcError:
        return None
    program = res.program
    chunk_bytes = chunk_bytes_for(program.collective, size)
    sim = simulate(program, topology, chunk_bytes, packet_bytes=PACKET or None)
    ranks = program.collective.num_ranks
    npus = {program.collective.npu(r) for r in range(ranks)}
    sent = sum(
        sim.link_busy_ns[lk.index] * lk.bandwidth_bytes_per_ns
        for lk in topology.links
        if lk.src in npus
    )
    per_npu = sent / len(npus)
    return Run(algorithm, sim, per_npu, per_npu / sim.finish_ns, program, chunk_bytes)


def best_endpoint(
    spec: str, topology: Topology, kind: CollectiveKind, size: int, groups: str = ""
) -> Run | None:
    runs = [measure(spec, topology, kind, size, a, groups) for a in ENDPOINT]
    done = [r for r in runs if r is not None]
    return min(done, key=lambda r: r.time_ns) if done else None


def mib(nbytes: float) -> str:
    return f"{nbytes / (1 << 20):,.1f}MiB"


def row(label: str, run: Run | None, paper: str = "") -> str:
    if run is None:
        return f"  {label:<26} {'-':>10}"
    return (
        f"  {label:<26} {run.time_ns / 1000:>10,.1f} {run.result.algbw_gb_per_s or 0:>10,.0f} "
        f"{run.inject_gbps:>11,.0f} {mib(run.sent_per_npu):>10}  {paper}"
    )


HEADER = (
    f"  {'configuration / algorithm':<26} {'time us':>10} {'algbw GB/s':>10} "
    f"{'inject GB/s':>11} {'sent/NPU':>10}  paper (inject GB/s)"
)


def part1(size: int) -> None:
    print(f"\n== 1. MP(20) all-reduce of {format_size_bytes(size)}")
    print(HEADER)
    for name, spec in CONFIGS.items():
        topo = parse_topology(spec)
        ep = best_endpoint(spec, topo, AR, size)
        print(row(f"{name}: {ep.algorithm if ep else '-'}", ep, PAPER_MP20[name]))
        if topo.in_network:
            inn = measure(spec, topo, AR, size, INNETWORK, "")
            print(row(f"{name}: {INNETWORK}", inn, PAPER_MP20[name]))


def part2(size: int) -> None:
    print(
        f"\n== 2. MP2-DP5-PP2, {format_size_bytes(size)} per collective, every group of a kind "
        "at once; then MP, DP and PP all at once (the fastest program of each)"
    )
    print(HEADER)
    together: list[str] = []
    for name, spec in CONFIGS.items():
        topo = parse_topology(spec)
        fastest: dict[str, Run] = {}
        for par, (kind, groups) in GROUPS_3D.items():
            paper = PAPER_3D.get((name, par), "")
            ep = best_endpoint(spec, topo, kind, size, groups)
            print(row(f"{name} {par}: {ep.algorithm if ep else '-'}", ep, paper))
            runs = [ep]
            if topo.in_network and kind is AR:
                inn = measure(spec, topo, kind, size, INNETWORK, groups)
                print(row(f"{name} {par}: {INNETWORK}", inn, paper))
                runs.append(inn)
            done = [r for r in runs if r is not None]
            if done:
                fastest[par] = min(done, key=lambda r: r.time_ns)
        instances = [Instance(par, r.program, r.chunk_bytes) for par, r in fastest.items()]
        both = simulate_instances(instances, topo, packet_bytes=PACKET or None)
        alone = max(r.time_ns for r in fastest.values())
        kinds = ", ".join(
            f"{t.name} ({fastest[t.name].algorithm}) {t.finish_ns / 1000:,.1f}"
            for t in both.instances
        )
        together.append(
            f"  {name:<9} {both.finish_ns / 1000:>9,.1f} us (slowest alone "
            f"{alone / 1000:,.1f}): {kinds}"
        )
    print("  all at once: time, and each kind's finish in us")
    print("\n".join(together))


def part3(sizes: list[int]) -> None:
    from tacos.bounds import lower_bounds

    spec = CONFIGS["FRED-D"]
    topo = parse_topology(spec)
    print(f"\n== 3. in-network all-reduce on FRED-D ({spec}) against the best endpoint algorithm")
    print(
        f"  {'size':>8} {'in-net us':>10} {'bound us':>9} {'x bound':>8} {'endpoint':>11} "
        f"{'us':>10} {'speedup':>8} {'sent/NPU in':>12} {'endpoint':>10} {'ratio':>6}"
    )
    for size in sizes:
        inn = measure(spec, topo, AR, size, INNETWORK, "")
        ep = best_endpoint(spec, topo, AR, size)
        assert inn is not None and ep is not None
        bound = lower_bounds(AR, topo, size, any_chunking=True).items["in-network"]
        print(
            f"  {format_size_bytes(size):>8} {inn.time_ns / 1000:>10,.2f} {bound / 1000:>9,.2f} "
            f"{inn.time_ns / bound:>8.3f} {ep.algorithm:>11} {ep.time_ns / 1000:>10,.2f} "
            f"{ep.time_ns / inn.time_ns:>7.2f}x {mib(inn.sent_per_npu):>12} "
            f"{mib(ep.sent_per_npu):>10} {ep.sent_per_npu / inn.sent_per_npu:>6.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="256MiB", help="size of parts 1 and 2 (default 256MiB)")
    ap.add_argument("--sizes", default="1MiB:1GiB:x4", help="sizes of part 3")
    ap.add_argument("--parts", default="123", help="which parts to run (default 123)")
    ap.add_argument("--packet", default="64KiB", help="packet size of every message (0: none)")
    args = ap.parse_args()
    global PACKET
    PACKET = 0 if args.packet == "0" else parse_size_bytes(args.packet)
    t0 = time.perf_counter()
    size = parse_size_bytes(args.size)
    if "1" in args.parts:
        part1(size)
    if "2" in args.parts:
        part2(size)
    if "3" in args.parts:
        part3(parse_sizes(args.sizes))
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
