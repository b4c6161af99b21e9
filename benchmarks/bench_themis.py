"""Themis vs the default hierarchical all-reduce on an asymmetric three-dimensional stack.

    python benchmarks/bench_themis.py [--size 64MiB] [--splits 4,8,16,32] [--active 1]

The network (ASTRA-sim style): Ring 4 at 200 GB/s x FullyConnected 4 at 100 GB/s x Switch 8 at
50 GB/s per link, 500 ns per hop, 128 NPUs. Both programs come from ``baselines.hierarchical``
with the same streams (``--splits``, ASTRA-sim's preferred-dataset-splits) and the same
per-dimension queues (``--active`` phases at once per dimension, 0 = unlimited); they differ
only in each stream's dimension order: the default (reduce-scatter 0, 1, 2, all-gather back)
or Themis' ``offlineGreedy``. Themis weighs the dimensions by the rate each dimension's
algorithm moves an NPU's data (ring 200, direct over 3 fc links 300, switch up link 50 GB/s);
the row ``themis/link`` weighs them by the bare per-link figures 200/100/50 (ASTRA-sim's
per-dimension bandwidth), for comparison.

Each row: the simulated time (``backends.sim``, congestion model: links as FIFO servers,
store-and-forward), the nccl-tests bus bandwidth, the speedup over the default order, the
per-dimension load model's time (``max_d`` of the bytes each dimension moves per NPU over its
rate; no latency, perfect overlap), and each dimension's link utilisation in the simulation
(busy time over the finish time, averaged over the dimension's links). Every program is
verified first (``--no-verify`` skips it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.sim import simulate
from baselines.hierarchical import Plan, Scheduler, hierarchical_program, make_plan
from chakra_ir import Collective, CollectiveKind
from chakra_ir.verify import verify
from topologies import Topology, parse_topology
from topologies.units import parse_size_bytes

SPEC = "stack:ring4*fc4*switch8,bw=[200GB/s,100GB/s,50GB/s],lat=500ns"

VARIANTS: list[tuple[str, Scheduler, bool]] = [
    ("default", Scheduler.BASELINE, False),
    ("themis", Scheduler.THEMIS, False),
    ("themis/link", Scheduler.THEMIS, True),
]


def model_time_ns(plan: Plan, size_bytes: int) -> float:
    """The per-dimension load model: the busiest dimension's total phase time (ns)."""
    stream_bytes = size_bytes / plan.streams
    busy: dict[int, float] = {}
    for ph in plan.phases:
        busy[ph.dim] = busy.get(ph.dim, 0.0) + ph.duration * stream_bytes
    return max(busy.values())


def dim_utilisation(topology: Topology, link_busy_ns: np.ndarray, finish_ns: float) -> list[float]:
    """Per dimension, the mean busy fraction of its links."""
    dims = sorted({link.dim for link in topology.links})
    out = []
    for d in dims:
        idx = [link.index for link in topology.links if link.dim == d]
        out.append(float(np.mean(link_busy_ns[idx])) / finish_ns)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", default="64MiB", help="all-reduce size (default 64MiB)")
    ap.add_argument("--splits", default="4,8,16,32", help="stream counts (default 4,8,16,32)")
    ap.add_argument("--active", type=int, default=1, help="active phases per dimension (1)")
    ap.add_argument("--topology", default=SPEC, help="a grid topology spec")
    ap.add_argument("--no-verify", action="store_true", help="skip chakra_ir.verify")
    args = ap.parse_args()
    topology = parse_topology(args.topology)
    n = topology.num_npus
    size = parse_size_bytes(args.size)
    print(f"all-reduce of {args.size} over {n} NPUs on {topology.spec}")
    print(f"per-dimension queues: {args.active or 'unlimited'} active phase(s) per dimension")
    header = (
        f"{'splits':>6} {'order':<12}{'time us':>10}{'busbw GB/s':>12}{'speedup':>9}"
        f"{'model us':>10}   link utilisation per dim   build s"
    )
    print(header)
    for splits in (int(x) for x in args.splits.split(",")):
        cf = n * splits
        chunk_bytes = size // cf
        if chunk_bytes * cf != size:
            print(f"{splits:>6} skipped: {size} bytes do not split into {cf} chunks per rank")
            continue
        c = Collective(CollectiveKind.ALLREDUCE, n, cf)
        base_ns = None
        for label, scheduler, link_bw in VARIANTS:
            t0 = time.perf_counter()
            program = hierarchical_program(
                c, topology, scheduler, active_per_dim=args.active, link_bandwidths=link_bw
            )
            built = time.perf_counter() - t0
            if not args.no_verify:
                verify(program)
            plan = make_plan(
                c, topology, scheduler, active_per_dim=args.active, link_bandwidths=link_bw
            )
            result = simulate(program, topology, chunk_bytes)
            if base_ns is None:
                base_ns = result.finish_ns
            util = dim_utilisation(topology, result.link_busy_ns, result.finish_ns)
            busbw = result.busbw_gb_per_s or 0.0
            print(
                f"{splits:>6} {label:<12}{result.finish_ns / 1e3:>10,.1f}{busbw:>12.1f}"
                f"{base_ns / result.finish_ns:>8.2f}x"
                f"{model_time_ns(plan, size) / 1e3:>10,.1f}   "
                + " ".join(f"{u:5.2f}" for u in util).ljust(27)
                + f"{built:6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
