"""`collc simulate` (the alpha-beta cost model) against `collc replay` (packets), issue 13.

Run by hand from the repository: ``PYTHONPATH=. python3 benchmarks/bench_replay.py [--big
[HWDIR]]``.

The table: for TACOS, ring, direct and rhd all-reduces of 1 MiB on ``mesh:8x8``,
``torus:8x8`` and ``torus:4x4x4``: the cost model's time (store-and-forward, whole messages),
the same under cut-through switching with the router's one-cycle delay (``collc simulate
--cut-through 1ns``: the formula of docs/hardware.md applied to every message), and the
replay's time with the exporter's defaults (the fewest VCs; ``credit_depth`` buffers, enough
for one stream at full rate), with buffers that never fill (the cost model's own assumption:
its nodes buffer without limit), with such buffers and 16 VCs (lanes against head-of-line
blocking), and with all that and packets as large as the largest message (the simulator's
granularity: what is left is round robin against first come, first served); each replay
over the cut-through time.

``--big`` also times the 512-NPU TACOS all-reduce on ``torus:8x8x8`` (3 chunks per NPU,
64 MiB): synthesis (about a minute or more), export, then the replay alone with its peak
RSS. Given HWDIR holding that exported program, it replays HWDIR directly. Target: replay
under 5 minutes and 8 GiB.
"""

from __future__ import annotations

import dataclasses
import resource
import sys
import tempfile
import time
from pathlib import Path

from backends.hwprog import HwOptions, export
from backends.replay import replay
from backends.sim import simulate
from benchmarks.bench_hwprog import T512, synthesize_t512
from chakra_ir.collective import CollectiveKind
from collc import pipeline
from topologies import parse_topology
from topologies.cost_model import Completion, CostModel

TOPOLOGIES = ("mesh:8x8", "torus:8x8", "torus:4x4x4")
ALGORITHMS = ("tacos", "ring", "direct", "rhd")
SIZE = 1 << 20


UNBOUNDED = 1 << 16
"""A VC buffer depth that never fills in these runs: the cost model's nodes buffer without
limit, so this is the replay under the cost model's own assumption."""


def table() -> None:
    tmp = Path(tempfile.mkdtemp())
    print(
        f"all-reduce of {SIZE >> 20} MiB; default links (50 GB/s, 500 ns, 1 GHz), 4 KiB "
        f"packets. cut-thr: simulate --cut-through 1ns; replay: the exporter's defaults "
        f"(fewest VCs, credit_depth buffers); unbounded: {UNBOUNDED:,}-packet buffers; lanes: "
        f"unbounded and 16 VCs (lanes); messages: lanes and one packet per message; ratios "
        f"over cut-thr"
    )
    print(
        f"{'topology':<12} {'algorithm':<8} {'messages':>8} {'simulate':>9} {'cut-thr':>9} "
        f"{'replay':>9} {'ratio':>6} {'unbounded':>10} {'ratio':>6} {'lanes':>9} {'ratio':>6} "
        f"{'messages':>9} {'ratio':>6} {'wall s':>7}"
    )
    runs = (
        HwOptions(),
        HwOptions(buffer_depth=UNBOUNDED),
        HwOptions(buffer_depth=UNBOUNDED, vcs=16),
        HwOptions(buffer_depth=UNBOUNDED, vcs=16, packet_bytes=SIZE),
    )
    for spec in TOPOLOGIES:
        topo = parse_topology(spec)
        target = "mesh" if spec.startswith("mesh") else "torus"
        for algo in ALGORITHMS:
            req = pipeline.Request(spec, CollectiveKind.ALLREDUCE, algo, SIZE)
            res = pipeline.synthesize(req)
            cost = CostModel(completion=Completion(res.manifest.completion))
            chunk = res.manifest.chunk_bytes
            sim = simulate(res.program, topo, chunk, cost=cost).finish_ns
            ct_cost = dataclasses.replace(cost, cut_through_router_ns=1.0)
            ct = simulate(res.program, topo, chunk, cost=ct_cost).finish_ns
            times = []
            wall = 0.0
            for k, options in enumerate(runs):
                out = tmp / f"{spec}-{algo}-{k}".replace(":", "_")
                export(res.program, topo, res.manifest, out, target, options)
                t0 = time.perf_counter()
                rep = replay(out)
                wall += time.perf_counter() - t0
                assert rep.postcondition == "holds", rep.postcondition_message
                times.append(rep.time_ns)
            print(
                f"{spec:<12} {algo:<8} {rep.messages:>8,} {sim / 1e3:>9.2f} {ct / 1e3:>9.2f} "
                f"{times[0] / 1e3:>9.2f} {times[0] / ct:>6.3f} "
                f"{times[1] / 1e3:>10.2f} {times[1] / ct:>6.3f} {times[2] / 1e3:>9.2f} "
                f"{times[2] / ct:>6.3f} {times[3] / 1e3:>9.2f} {times[3] / ct:>6.3f} {wall:>7.1f}"
            )


def big(hwdir: Path | None) -> None:
    spec = T512
    if hwdir is None:
        t0 = time.perf_counter()
        res = synthesize_t512()
        print(f"synthesize {time.perf_counter() - t0:8.1f} s  {res.program.num_ops:,} operations")
        hwdir = Path(tempfile.mkdtemp()) / "hw"
        t0 = time.perf_counter()
        export(res.program, parse_topology(spec), res.manifest, hwdir, "torus")
        print(f"export     {time.perf_counter() - t0:8.1f} s  into {hwdir}")
        del res
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    rep = replay(hwdir)
    seconds = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"replay     {seconds:8.1f} s  peak RSS {rss0 / 2**10:,.0f} -> {rss1 / 2**10:,.0f} MiB; "
        f"{rep.messages:,} messages, {rep.packets:,} packets, {rep.packet_hops:,} packet-hops; "
        f"{rep.cycles:,} cycles ({rep.time_ns / 1e3:,.1f} us), postcondition {rep.postcondition}"
    )


def main() -> None:
    if "--big" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--big"]
        big(Path(rest[0]) if rest else None)
    else:
        table()


if __name__ == "__main__":
    main()
