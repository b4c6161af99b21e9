"""Process groups: joint against independent TACOS synthesis, all groups simulated together.

    python benchmarks/bench_groups.py [--quick] [--chunks-per-npu C] [--case NAME]

For each case (a topology and its groups) and each All-Reduce size from 1 MiB to 1 GiB (x4),
TACOS synthesizes every group jointly (one matching over all groups' chunks) and group by group
(each as if alone), collc's congestion model runs each program with all groups at once, and the
figures are the joint time, the independent time, the speedup (independent / joint), the best
baseline run group by group (ring, ring-bidir, direct), and the joint time over the joint lower
bound (`tacos.group_bounds`, for any chunking). Also synthesis seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.sim import simulate
from baselines import ALGORITHMS as BASELINES
from chakra_ir.collective import Collective, CollectiveKind
from chakra_ir.grouping import merge_groups
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.verify import verify
from tacos.group_bounds import group_bounds
from tacos.groups import synthesize_groups
from tacos.synthesis import chunks_for
from topologies import parse_topology
from topologies.groups import parse_groups

AR = CollectiveKind.ALLREDUCE
LINK = "bw=50GiB/s,lat=500ns"
MIB = 2**20
DIAGONALS = ";".join(",".join(str(((i + g) % 8) * 8 + i) for i in range(8)) for g in range(8))
CASES = {
    "torus8x8-rows": ("torus:8x8", "8"),
    "torus8x8-columns": ("torus:8x8", "block:1x8"),
    "torus8x8-stride8": ("torus:8x8", "stride:8"),
    "torus8x8-diagonals": ("torus:8x8", DIAGONALS),
    "torus8x8-even-odd": ("torus:8x8", "stride:2"),
    "torus4x4x4-planes": ("torus:4x4x4", "block:4x2x1"),
    "mesh8x8-2x2": ("mesh:8x8", "block:2x2"),
}
BASELINE_NAMES = ("ring", "ring-bidir", "direct")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 MiB and 16 MiB only")
    ap.add_argument("--chunks-per-npu", type=int, default=1)
    ap.add_argument("--case", action="append", choices=list(CASES))
    args = ap.parse_args()
    sizes = [MIB, 16 * MIB] if args.quick else [MIB * 4**k for k in range(6)]
    print(
        f"{'case':<20}{'size':>8}{'joint us':>12}{'indep us':>12}{'speedup':>9}"
        f"{'baseline us':>13}{'vs base':>9}{'x bound':>9}{'joint s':>9}{'indep s':>9}"
    )
    for name in args.case or list(CASES):
        spec, gspec = CASES[name]
        topo = parse_topology(f"{spec},{LINK}")
        groups = parse_groups(gspec, topo)
        groups.check_disjoint()
        npus = groups.npus
        rank_of = {x: r for r, x in enumerate(npus)}
        members = tuple(tuple(rank_of[x] for x in g) for g in groups.members)
        placement = npus if npus != tuple(range(len(npus))) else ()
        c = Collective(
            AR,
            len(npus),
            chunks_for(AR, groups.size, args.chunks_per_npu),
            placement=placement,
            groups=members,
        )
        base_programs = {}
        for b in BASELINE_NAMES:
            algo = BASELINES[b]
            bc = Collective(
                AR,
                len(npus),
                algo.chunks_per_rank(AR, groups.size) * algo.pipeline_default,
                placement=placement,
                groups=members,
            )
            p = merge_groups(
                bc, [algo.generate(bc.group_collective(g), topo) for g in range(len(members))]
            )
            verify(p)
            base_programs[b] = p
        for size in sizes:
            cb = chunk_bytes_for(c, size)
            t0 = time.perf_counter()
            joint = synthesize_groups(c, topo, cb).program
            t1 = time.perf_counter()
            indep = synthesize_groups(c, topo, cb, independent=True).program
            t2 = time.perf_counter()
            verify(joint)
            verify(indep)
            tj = simulate(joint, topo, cb).finish_ns
            ti = simulate(indep, topo, cb).finish_ns
            best = min(
                simulate(p, topo, chunk_bytes_for(p.collective, size)).finish_ns
                for p in base_programs.values()
            )
            bound = group_bounds(AR, topo, size, groups.members, any_chunking=True).best[1]
            print(
                f"{name:<20}{size // MIB:>6}Mi{tj / 1000:>12,.2f}{ti / 1000:>12,.2f}"
                f"{ti / tj:>9.3f}{best / 1000:>13,.2f}{best / tj:>9.3f}{tj / bound:>9.3f}"
                f"{t1 - t0:>9.2f}{t2 - t1:>9.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
