"""Simulator speed: message-hops per second and a 512-NPU all-reduce; prints seconds and memory.

    python benchmarks/bench_sim.py [--npus 8x8x8] [--direct 8x8x4] [--size 1GiB] [--repeat 3]
                                   [--tacos 1,3] [--tacos-size 64MiB]

Workloads (programs built from columns, so building them costs little):

- ``ring``: a ring all-reduce over every NPU of a torus, ranks placed along a Hamiltonian
  cycle (every message one hop), n chunks per rank: 2n(n-1) messages. Target (issue 3): a
  512-NPU all-reduce simulated in under 10 s.
- ``direct``: a direct all-gather (every rank sends its input to every other at once, no
  dependencies): n(n-1) messages over dimension-order routes, the link-bound case. Target:
  at least 200,000 message-hops per second.

- ``tacos``: the TACOS all-reduce on the same torus (``collc synthesize --topology
  torus:8x8x8 --collective allreduce --size 64MiB``) with 1 and 3 chunks per NPU, as the
  README's example builds it. Target (issue 4): simulated in under 10 s, reproducing the
  synthesizer's estimate.

All run under the congestion model; the ring also under the analytical model.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.sim import simulate
from benchmarks.memory import peak_mib, reset_peak
from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import OpKind, Program
from tacos import chunks_for
from tacos import synthesize as tacos_synthesize
from topologies import hamiltonian_cycle, parse_topology
from topologies.units import parse_size_bytes


def ring_allreduce_program(n: int, placement: Sequence[int] = ()) -> Program:
    """An in-place ring all-reduce over ``n`` ranks (n chunks per rank), built from columns.

    Rank r sends to r+1 and receives from r-1. Per rank, reduce-scatter step s sends chunk
    r-s and reduce-receives chunk r-s-1; all-gather step s sends chunk r-s+1 and receives
    chunk r-s (mod n). Dependencies: each send waits for the receive that produced its chunk;
    an all-gather receive waits for the send that last read its slot and the receive that last
    wrote it.
    """
    if n < 2:
        raise ValueError("a ring needs at least 2 ranks")
    c = Collective(CollectiveKind.ALLREDUCE, n, n, inplace=True, placement=tuple(placement))
    steps = n - 1
    per = 4 * steps
    s = np.arange(steps, dtype=np.int64)
    # Rank-independent pattern, in program order: S_s, V_s (RS), then A_s, W_s (AG).
    kind = np.empty(per, dtype=np.int64)
    kind[0 : 2 * steps : 2] = OpKind.SEND
    kind[1 : 2 * steps : 2] = OpKind.RECV_REDUCE
    kind[2 * steps :: 2] = OpKind.SEND
    kind[2 * steps + 1 :: 2] = OpKind.RECV
    shift = np.empty(per, dtype=np.int64)  # chunk = (r + shift) mod n
    shift[0 : 2 * steps : 2] = -s
    shift[1 : 2 * steps : 2] = -s - 1
    shift[2 * steps :: 2] = -s + 1
    shift[2 * steps + 1 :: 2] = -s
    is_send = kind == OpKind.SEND
    deps_of: list[list[int]] = []
    for i in range(per):
        phase, j = divmod(i, 2 * steps)
        st, odd = divmod(j, 2)
        if phase == 0:
            deps_of.append([2 * (st - 1) + 1] if (not odd and st > 0) else [])
        elif not odd:
            deps_of.append([2 * (steps - 1) + 1] if st == 0 else [2 * steps + 2 * (st - 1) + 1])
        else:
            deps_of.append([2 * st] + ([2 * (st - 1) + 1] if st > 0 else []))
    pat_counts = np.array([len(d) for d in deps_of], dtype=np.int64)
    pat_deps = np.array([x for d in deps_of for x in d], dtype=np.int64)

    r = np.repeat(np.arange(n, dtype=np.int64), per)
    chunk = (r + np.tile(shift, n)) % n
    send = np.tile(is_send, n)
    peer = np.where(send, (r + 1) % n, (r - 1) % n)
    inp = int(Buffer.INPUT)
    columns = {
        "kind": np.tile(kind, n),
        "peer": peer,
        "src_buf": np.where(send, inp, -1),
        "src_index": np.where(send, chunk, -1),
        "dst_buf": np.where(send, -1, inp),
        "dst_index": np.where(send, -1, chunk),
        "count": np.ones(n * per, dtype=np.int64),
        "tag": np.zeros(n * per, dtype=np.int64),
    }
    counts = np.tile(pat_counts, n)
    dep_offsets = np.zeros(n * per + 1, dtype=np.int64)
    np.cumsum(counts, out=dep_offsets[1:])
    rank_offsets = np.arange(n + 1, dtype=np.int64) * per
    sizes = np.tile(np.array([n, n, 0], dtype=np.int64), (n, 1))
    return Program.from_columns(
        c, rank_offsets, columns, dep_offsets, np.tile(pat_deps, n), sizes, name="ring-columns"
    )


def direct_allgather_program(n: int, placement: Sequence[int] = ()) -> Program:
    """A direct all-gather over ``n`` ranks: each copies its input to its output slot, sends
    its input to every other rank (r+1, r+2, ...) and receives every other's; no waiting."""
    c = Collective(CollectiveKind.ALLGATHER, n, 1, placement=tuple(placement))
    per = 1 + 2 * (n - 1)
    k = np.arange(1, n, dtype=np.int64)
    r = np.repeat(np.arange(n, dtype=np.int64), per)
    pos = np.tile(np.arange(per, dtype=np.int64), n)
    kk = np.tile(np.concatenate([[0], np.repeat(k, 2)]), n)
    send = (pos % 2 == 1) & (pos > 0)
    recv = (pos % 2 == 0) & (pos > 0)
    copy = pos == 0
    inp, out = int(Buffer.INPUT), int(Buffer.OUTPUT)
    columns = {
        "kind": np.where(copy, OpKind.COPY, np.where(send, OpKind.SEND, OpKind.RECV)),
        "peer": np.where(copy, -1, np.where(send, (r + kk) % n, (r - kk) % n)),
        "src_buf": np.where(recv, -1, inp),
        "src_index": np.where(recv, -1, 0),
        "dst_buf": np.where(send, -1, out),
        "dst_index": np.where(copy, r, np.where(send, -1, (r - kk) % n)),
        "count": np.ones(n * per, dtype=np.int64),
    }
    return Program.from_columns(
        c,
        np.arange(n + 1, dtype=np.int64) * per,
        columns,
        np.zeros(n * per + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.tile(np.array([1, n, 0], dtype=np.int64), (n, 1)),
        name="direct-columns",
    )


def _run(
    label: str, program: Program, spec: str, chunk_bytes: int, model: str, repeat: int
) -> float:
    """Simulate ``repeat`` times (a fresh topology each time, so routes are computed anew);
    print messages, hops, the best wall and CPU seconds, hops per wall second, and the peak
    resident memory. The machine may be shared: the best of a few runs is the steadier
    figure."""
    wall = cpu = float("inf")
    peak = 0.0
    for _ in range(repeat):
        topology = parse_topology(spec)
        reset_peak()
        t0 = time.perf_counter()
        c0 = time.process_time()
        result = simulate(program, topology, chunk_bytes, model=model)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        peak = max(peak, peak_mib())
    rate = result.hops / wall if wall > 0 else float("nan")
    print(
        f"{label:<28} {model:<10} {program.num_ops:>9,} ops {result.messages:>9,} msgs "
        f"{result.hops:>9,} hops {wall:6.2f} s wall {cpu:6.2f} s cpu {rate:>9,.0f} hops/s "
        f"peak {peak:5.0f} MiB  finish {result.finish_ns / 1e3:,.1f} us",
        flush=True,
    )
    return result.finish_ns


def _tacos(spec: str, chunks_per_npu: int, size: int, repeat: int) -> None:
    """Synthesize the TACOS all-reduce (not timed), then simulate it like the others and
    compare with the synthesizer's estimate."""
    topology = parse_topology(spec)
    n = topology.num_npus
    coll = Collective(
        CollectiveKind.ALLREDUCE, n, chunks_for(CollectiveKind.ALLREDUCE, n, chunks_per_npu)
    )
    chunk = chunk_bytes_for(coll, size)
    t0 = time.perf_counter()
    syn = tacos_synthesize(coll, topology, chunk)
    print(
        f"synthesized the {n}-NPU TACOS all-reduce, {chunks_per_npu} chunk(s) per NPU "
        f"({syn.program.num_ops:,} ops) in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    label = f"tacos allreduce c={chunks_per_npu} {spec}"
    finish = _run(label, syn.program, spec, chunk, "congestion", repeat)
    print(
        f"{'':<28} estimate {syn.estimated_ns / 1e3:,.2f} us: simulated / estimated = "
        f"{finish / syn.estimated_ns:.4f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--npus", default="8x8x8", help="torus shape for the ring (default 8x8x8)")
    ap.add_argument("--direct", default="8x8x4", help="torus shape for the direct all-gather")
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--skip-direct", action="store_true")
    ap.add_argument(
        "--tacos", default="1,3", help="chunks per NPU of the TACOS all-reduces ('' for none)"
    )
    ap.add_argument("--tacos-size", default="64MiB")
    ap.add_argument("--repeat", type=int, default=3, help="runs per workload; the best is shown")
    args = ap.parse_args()
    spec = f"torus:{args.npus}"
    topology = parse_topology(spec)
    n = topology.num_npus
    cycle = hamiltonian_cycle(topology)
    placement = tuple(cycle) if cycle is not None else ()
    t0 = time.perf_counter()
    ring = ring_allreduce_program(n, placement)
    print(
        f"built the {n}-rank ring all-reduce ({ring.num_ops:,} ops) in "
        f"{time.perf_counter() - t0:.2f} s; times below include building the task graph, "
        "routes and matching"
    )
    size = parse_size_bytes(args.size)
    chunk = -(-size // ring.collective.size_chunks)
    _run(f"ring allreduce {spec}", ring, spec, chunk, "congestion", args.repeat)
    _run(f"ring allreduce {spec}", ring, spec, chunk, "analytical", args.repeat)
    if not args.skip_direct:
        dspec = f"torus:{args.direct}"
        m = parse_topology(dspec).num_npus
        direct = direct_allgather_program(m)
        _run(
            f"direct allgather {dspec}", direct, dspec, max(1, size // m), "congestion", args.repeat
        )
    tsize = parse_size_bytes(args.tacos_size)
    for c in [int(x) for x in args.tacos.split(",") if x.strip()]:
        _tacos(spec, c, tsize, args.repeat)


if __name__ == "__main__":
    main()
