"""Build, verify, encode and decode a large ring all-reduce; print seconds and peak memory.

    python benchmarks/bench_ring_chain.py [--ranks 1024] [--size 1GiB]

Targets on a 2-core machine (issue 2): verify under 30 s; the whole chain under 3 minutes
and 4 GiB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baselines import ALGORITHMS
from benchmarks.memory import peak_mib, reset_peak
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.et import decode_program, write_et_files
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.verify import verify
from topologies import parse_topology
from topologies.units import parse_size_bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--algorithm", default="ring")
    args = ap.parse_args()
    n = args.ranks
    algo = ALGORITHMS[args.algorithm]
    topology = parse_topology(f"ring:{n}")
    kind = CollectiveKind.ALLREDUCE
    collective = Collective(kind, n, algo.chunks_per_rank(kind, n))
    rows: list[tuple[str, float, float, str]] = []
    start = time.perf_counter()

    def step(name: str, t0: float, extra: str = "") -> None:
        rows.append((name, time.perf_counter() - t0, peak_mib(), extra))
        print(f"{name:<8} {rows[-1][1]:8.2f} s  peak {rows[-1][2]:8.0f} MiB  {extra}", flush=True)

    reset_peak()
    t = time.perf_counter()
    program = algo.generate(collective, topology)
    step("build", t, f"{program.num_ops:,} operations")
    reset_peak()
    t = time.perf_counter()
    verify(program)
    step("verify", t)
    with tempfile.TemporaryDirectory() as tmp:
        reset_peak()
        t = time.perf_counter()
        chunk_bytes = chunk_bytes_for(collective, parse_size_bytes(args.size))
        files = write_et_files(program, Path(tmp), "allreduce", chunk_bytes)
        size = sum(Path(f).stat().st_size for f in files)
        step("encode", t, f"{len(files)} files, {size / 2**20:.1f} MiB")
        reset_peak()
        t = time.perf_counter()
        again = decode_program(files)
        step("decode", t)
    if again != program:
        raise SystemExit("decode(encode(p)) != p")
    total = time.perf_counter() - start
    print(
        f"total    {total:8.2f} s  peak {max(r[2] for r in rows):8.0f} MiB  (round trip identical)"
    )


if __name__ == "__main__":
    main()
