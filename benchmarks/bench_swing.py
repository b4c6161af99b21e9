"""Swing against ring, ring-bidir, rhd and TACOS on tori: all-reduce time over the lower bound.

    python benchmarks/bench_swing.py [--quick] [--topology SPEC ...] [--sizes 32KiB:1GiB:x8]

For each torus (8x8, 4x4x4, 4x4x4x4 by default) and each size of the sweep, every algorithm's
program is produced, verified and simulated by `collc.bench.run_bench` (collc's congestion
model, sends complete on arrival, 50 GB/s and 500 ns links); the figures are the time in us and
its ratio to the lower bound for any program. TACOS runs at one chunk per NPU, seed 0. The
last column names the fastest. The work limit is raised, so TACOS and rhd run on 256 NPUs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chakra_ir.collective import CollectiveKind
from collc.bench import parse_sizes, run_bench
from topologies.units import format_size_bytes

ALGORITHMS = ["ring", "ring-bidir", "rhd", "tacos", "swing-latency", "swing"]
TOPOLOGIES = ["torus:8x8", "torus:4x4x4", "torus:4x4x4x4"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="32 KiB, 1 MiB, 32 MiB and 1 GiB")
    ap.add_argument("--topology", action="append", help="a torus spec (repeatable)")
    ap.add_argument("--sizes", default="32KiB:1GiB:x8")
    args = ap.parse_args()
    sizes = parse_sizes("32KiB:1GiB:x32" if args.quick else args.sizes)
    head = "".join(f"{a:>16}" for a in ALGORITHMS)
    print(f"{'topology':<16}{'size':>8}{head}   fastest   (us, x bound)")
    for spec in args.topology or TOPOLOGIES:
        report = run_bench(
            spec,
            CollectiveKind.ALLREDUCE,
            sizes,
            algorithms=ALGORITHMS,
            max_work=10**9,
        )
        for size in sizes:
            cells, best, best_t = [], "-", float("inf")
            for name in ALGORITHMS:
                row = next(r for r in report.rows if r.algorithm == name and r.size_bytes == size)
                if row.time_ns is None or row.ratio is None:
                    cells.append(f"{'(' + row.error[:12] + ')':>16}")
                    continue
                cells.append(f"{row.time_ns / 1000:>9,.1f} {row.ratio:>5.2f}x")
                if row.time_ns < best_t:
                    best, best_t = name, row.time_ns
            print(f"{spec:<16}{format_size_bytes(size):>8}{''.join(cells)}   {best}")
        print(f"  ({report.seconds:.0f} s)")


if __name__ == "__main__":
    main()
