"""Export of the 512-NPU TACOS all-reduce on torus:8x8x8 as a hardware program (issue 13).

Run by hand from the repository: ``PYTHONPATH=. python3 benchmarks/bench_hwprog.py [OUT]``. Synthesizes the program first
(3 chunks per NPU, 64 MiB; about a minute), then times `backends.hwprog.export` alone and
reports the process's peak RSS before and after it. Target: under 60 s.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from backends.hwprog import export, read_hwprog
from chakra_ir.collective import CollectiveKind
from collc import pipeline
from topologies import parse_topology

T512 = "torus:8x8x8"


def synthesize_t512() -> pipeline.Result:
    """The issue's 512-NPU TACOS all-reduce on `T512`: 3 chunks per NPU, 64 MiB, seed 1."""
    req = pipeline.Request(
        T512, CollectiveKind.ALLREDUCE, "tacos", 64 << 20, chunks_per_npu=3, seed=1,
        max_work=100_000_000,
    )  # fmt: skip
    return pipeline.synthesize(req)


def main() -> None:
    spec = T512
    t0 = time.perf_counter()
    res = synthesize_t512()
    print(f"synthesize   {time.perf_counter() - t0:8.1f} s   {res.program.num_ops:,} operations")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "hw"
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    files = export(res.program, parse_topology(spec), res.manifest, out, "torus")
    seconds = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = sum(f.stat().st_size for f in files)
    print(
        f"export       {seconds:8.1f} s   peak RSS {rss0 / 2**10:,.0f} -> {rss1 / 2**10:,.0f} MiB"
    )
    print(f"             {len(files)} files, {size / 2**20:,.0f} MiB on disk, into {out}")
    t0 = time.perf_counter()
    hw = read_hwprog(out)
    c = hw.header["counts"]
    print(f"read_hwprog  {time.perf_counter() - t0:8.1f} s   (schema on header and routers)")
    print(f"             {c['messages']:,} messages, {c['packets']:,} packets, "
          f"{c['packet_hops']:,} packet-hops, {hw.header['num_vcs']} VCs")  # fmt: skip
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS     {rss / 2**10:,.0f} MiB (whole process)")


if __name__ == "__main__":
    main()
