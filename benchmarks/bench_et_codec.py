"""Benchmark of the Chakra ET codec on a synthetic ring all-reduce.

    python benchmarks/bench_et_codec.py [--ranks 1024] [--chunk-bytes 1024] [--out DIR]
        [--reference-ranks 2] [--keep]

Builds a ring all-reduce of ``ranks`` ranks and ``ranks`` chunks per rank directly as columns
(`Program.from_columns`, not verified: the codec does not care), writes it with
`write_et_files`, reads it back with `decode_program`, checks the round trip, and prints
wall and CPU seconds, nodes per second, µs per node, file sizes and peak memory (the
process's maximum resident set after each phase; the machine may be shared, so compare CPU
seconds too). It also times the generated-bindings reference paths
(`pbwrite`, `pbread`) on the first ``--reference-ranks`` ranks for comparison.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import decode_program, write_et_files
from chakra_ir.et import layout as lay
from chakra_ir.et.fastwrite import serialize_nodes
from chakra_ir.et.framing import split_frames
from chakra_ir.et.pbread import read_nodes_pb
from chakra_ir.et.pbwrite import serialize_nodes_pb
from chakra_ir.et.reader import parse_et
from chakra_ir.program import OpKind, Program


def ring_allreduce(n: int) -> Program:
    """Reduce-scatter then all-gather around the ring, one chunk a step; op j depends on j-1."""
    per_rank = 4 * (n - 1)
    j = np.tile(np.arange(per_rank, dtype=np.int64), n)
    r = np.repeat(np.arange(n, dtype=np.int64), per_rank)
    gather = j >= 2 * (n - 1)
    step = (j % (2 * (n - 1))) // 2
    send = j % 2 == 0
    kind = np.where(send, OpKind.SEND, np.where(gather, OpKind.RECV, OpKind.RECV_REDUCE))
    peer = np.where(send, (r + 1) % n, (r - 1) % n)
    send_idx = np.where(gather, (r + 1 - step) % n, (r - step) % n)
    recv_idx = np.where(gather, (r - step) % n, (r - step - 1) % n)
    total = n * per_rank
    has_dep = j > 0
    dep_offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(has_dep, out=dep_offsets[1:])
    return Program.from_columns(
        Collective(CollectiveKind.ALLREDUCE, n, n, inplace=True),
        np.arange(n + 1, dtype=np.int64) * per_rank,
        {
            "kind": kind,
            "peer": peer,
            "src_buf": np.where(send, 0, -1),
            "src_index": np.where(send, send_idx, -1),
            "dst_buf": np.where(send, -1, 0),
            "dst_index": np.where(send, -1, recv_idx),
            "count": np.ones(total, dtype=np.int32),
        },
        dep_offsets,
        (j[has_dep] - 1),
        np.tile(np.array([n, n, 0]), (n, 1)),
        name=f"ring-allreduce-{n}",
    )


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--chunk-bytes", type=int, default=1024)
    ap.add_argument(
        "--out", type=Path, default=None, help="folder for the ET files (default: a temporary one)"
    )
    ap.add_argument(
        "--reference-ranks", type=int, default=2, help="ranks timed with the generated bindings"
    )
    ap.add_argument("--keep", action="store_true", help="keep the ET files")
    args = ap.parse_args()

    t0 = time.perf_counter()
    p = ring_allreduce(args.ranks)
    t_build = time.perf_counter() - t0
    ops = p.num_ops
    nodes = ops + int((p.kind == OpKind.RECV_REDUCE).sum())
    print(
        f"program: {args.ranks} ranks, {ops:,} ops, {nodes:,} ET nodes; built in {t_build:.2f} s; peak RSS {peak_mib():.0f} MiB"
    )

    out = args.out or Path(tempfile.mkdtemp(prefix="bench_et_"))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        paths = write_et_files(p, out, "ring", args.chunk_bytes)
        t_enc, c_enc = time.perf_counter() - t0, time.process_time() - c0
        size = sum(x.stat().st_size for x in paths)
        print(
            f"encode (fast): {t_enc:.2f} s wall, {c_enc:.2f} s CPU, {nodes / t_enc:,.0f} nodes/s, "
            f"{t_enc / nodes * 1e6:.2f} µs/node; {len(paths)} files, {size / 2**20:.1f} MiB "
            f"({size / nodes:.0f} B/node); peak RSS {peak_mib():.0f} MiB"
        )
        t0, c0 = time.perf_counter(), time.process_time()
        q = decode_program(paths)
        t_dec, c_dec = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"decode (fast): {t_dec:.2f} s wall, {c_dec:.2f} s CPU, {nodes / t_dec:,.0f} nodes/s, "
            f"{t_dec / nodes * 1e6:.2f} µs/node; peak RSS {peak_mib():.0f} MiB"
        )
        t0 = time.perf_counter()
        same = q == p
        print(f"round trip equal: {same} ({time.perf_counter() - t0:.2f} s to compare)")
        del q

        k = max(1, min(args.reference_ranks, args.ranks))
        table, _ = lay.node_table(
            lay.ProgramLayout.of(p, args.chunk_bytes, 0), 0, int(p.rank_offsets[k])
        )
        t0 = time.perf_counter()
        data, bounds = serialize_nodes(table)
        t_fast = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = serialize_nodes_pb(table)
        t_pb = time.perf_counter() - t0
        identical = all(data[bounds[i] : bounds[i + 1]].tobytes() == ref[i] for i in range(k))
        m = table.num_nodes
        print(
            f"serialize {m:,} nodes: fast {t_fast / m * 1e6:.2f} µs/node, generated bindings "
            f"{t_pb / m * 1e6:.2f} µs/node; identical bytes: {identical}"
        )
        blob = paths[0].read_bytes()
        starts, ends = split_frames(blob, str(paths[0]))
        frames = np.zeros(len(starts), dtype=np.int64)
        frames[1:] = ends[:-1]
        t0 = time.perf_counter()
        fast_trace = parse_et(blob, str(paths[0]))
        t_fr = time.perf_counter() - t0
        t0 = time.perf_counter()
        read_nodes_pb(blob, starts[1:], ends[1:], str(paths[0]), frames[1:])
        t_pr = time.perf_counter() - t0
        m = len(fast_trace)
        print(
            f"read one file of {m:,} nodes: fast {t_fr / m * 1e6:.2f} µs/node ({fast_trace.decoder}), "
            f"generated bindings {t_pr / m * 1e6:.2f} µs/node"
        )
        return 0 if same and identical else 1
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
