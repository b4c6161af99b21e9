"""``collc replay`` against BookSim2 on microbenchmarks both can express (issue 13, part 4).

    COLLC_BOOKSIM=/path/to/booksim python -m benchmarks.bench_booksim [--booksim PATH]

(run from the repository: it builds its programs with the replay tests' helpers)

BookSim2 (public sources, built outside this repository) is configured, and collc's hardware
program exported, for the same network:

- k-ary n-cube tori with dimension-order routing and dateline VCs (BookSim ``dim_order``;
  collc's exporter), ``use_noc_latency = 0``: every channel takes 1 cycle, so collc's links
  have ``lat=1ns`` at a 1 GHz clock;
- a flit of ``W`` = 16 bytes per cycle (``bw=16GB/s``), packets of 4 flits (64 bytes),
  virtual cut-through (``vct = 1``), ``vc_buf_size`` = 2 packets (collc
  ``--buffer-depth 2``), 2 VCs;
- BookSim's input-queued router with its default pipeline (routing, VC allocation, switch
  allocation, switch traversal: 1 cycle each), so collc runs with ``R`` = 4 router cycles
  (``--router-cycles``). A zero-load hop then costs ``L + R`` = 5 cycles in both tools;
  BookSim adds its injection and ejection channels (1 cycle each) between a node and its
  router, which collc's model does not have (the NPU sits on its router): `CHANNELS`.

Cases (BookSim's figures are cycles from a packet's creation to its tail's ejection):

1. zero-load latency of one packet over 1, 2 and 3 hops (BookSim: ``neighbor`` traffic on an
   8-ring, ``tornado`` on a 5-ring and a 7-ring at an injection rate of 0.0005 packets per
   cycle; collc: one message of one packet);
2. batches: every node sends 16 packets at once (BookSim ``sim_type = batch``,
   ``injection_rate = 1``; collc: one 16-packet message per node), with one flow through every
   port (``neighbor`` on an 8-ring) and two flows through every port (``tornado`` on a
   5-ring, every link carrying two nodes' packets): the batch's duration, with buffers of 2
   and 16 packets, and BookSim with 2 VCs (one per dateline class, like collc) and with 4
   (two per class, which hides BookSim's per-packet VC allocation);
3. uniform traffic on a 4x4 torus: BookSim's average latency at a few loads, against collc's
   zero-load latency averaged over every source and destination (collc replays dataflow
   programs, not open-loop random injection); and a batch of 15 packets per node (BookSim:
   uniform random destinations; collc: a direct all-to-all, one packet to every other node);
4. a 1-VC torus ring under wrap-around traffic (``tornado`` on an 8-ring): collc's exporter
   refuses, naming the channel cycle, and the forced program's replay reports the deadlock;
   BookSim is run the same way and its outcome reported.

BookSim2 cannot replay a trace: its traffic comes from synthetic patterns and injection
processes (``traffic``, ``injection_process``), so no collc program can be run in it beyond
the patterns above, which are the collc programs of cases 2 and 3.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from backends.hwprog import HwOptions
from backends.replay import ReplayResult, replay
from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.program import Program, ProgramBuilder, Slice
from tests.replay.helpers import write
from tests.replay.shift import shift_program
from topologies.errors import CollcError

FLIT = 16
PACKET_FLITS = 4
DEPTH = 2
ROUTER = 4
CHANNELS = 2
"""BookSim's injection and ejection channels (1 cycle each) between a node and its router;
collc's NPU sits on its router, so its latencies are this much shorter."""
LINK = f"bw={FLIT}GB/s,lat=1ns"

BASE = f"""
routing_function = dim_order;
use_noc_latency = 0;
num_vcs = 2;
vc_buf_size = {DEPTH * PACKET_FLITS};
vct = 1;
packet_size = {PACKET_FLITS};
"""


def hw(vcs: int = 2, force: bool = False, depth: int = DEPTH) -> HwOptions:
    return HwOptions(
        vcs=vcs,
        packet_bytes=FLIT * PACKET_FLITS,
        buffer_depth=depth,
        link_width=FLIT,
        router_cycles=ROUTER,
        force=force,
    )


# -- BookSim ----------------------------------------------------------------------------------


def booksim(binary: str, config: str, work: Path, name: str) -> str:
    path = work / f"{name}.cfg"
    path.write_text(BASE + config)
    done = subprocess.run([binary, str(path)], capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def figure(text: str, label: str) -> float | None:
    m = re.findall(rf"{label} = ([0-9.]+)", text)
    return float(m[-1]) if m else None


def ring(k: int, traffic: str, extra: str) -> str:
    return f"topology = torus;\nk = {k};\nn = 1;\ntraffic = {traffic};\n{extra}"


LOW = "sim_type = latency;\ninjection_rate = 0.0005;\nsample_period = 20000;\n"
BATCH = "sim_type = batch;\nbatch_size = {b};\nbatch_count = 1;\ninjection_rate = 1.0;\n"


# -- collc -----------------------------------------------------------------------------------


def pair(src: int, dst: int) -> Program:
    """One message from NPU ``src`` to NPU ``dst``."""
    c = Collective(CollectiveKind.BROADCAST, 2, root=0, placement=(src, dst))
    b = ProgramBuilder(c)
    b.copy(0, Slice(Buffer.INPUT, 0), Slice(Buffer.OUTPUT, 0))
    b.send(0, 1, Slice(Buffer.INPUT, 0))
    b.recv(1, 0, Slice(Buffer.OUTPUT, 0))
    return b.build()


def all_to_all(n: int) -> Program:
    """Direct all-to-all: one packet from every node to every other one."""
    c = Collective(CollectiveKind.ALLTOALL, n, 1)
    b = ProgramBuilder(c)
    for r in range(n):
        b.copy(r, Slice(Buffer.INPUT, r), Slice(Buffer.OUTPUT, r))
        for k in range(1, n):
            b.send(r, (r + k) % n, Slice(Buffer.INPUT, (r + k) % n))
    for r in range(n):
        for k in range(1, n):
            src = (r - k) % n
            b.recv(r, src, Slice(Buffer.OUTPUT, src))
    return b.build()


def run_collc(
    program: Program, spec: str, work: Path, name: str, options: HwOptions
) -> ReplayResult:
    """Verify, export (torus) and replay ``program`` with one packet per chunk."""
    return replay(write(program, spec, work / name, FLIT * PACKET_FLITS, options, target="torus"))


# -- the cases -------------------------------------------------------------------------------


def zero_load(binary: str, work: Path) -> None:
    print("\n== 1. zero-load latency of one 4-flit packet (cycles)")
    print(f"  {'hops':>4} {'BookSim':>9} {'collc':>7} {'collc+2':>8}  BookSim case")
    cases = ((1, 8, "neighbor"), (2, 5, "tornado"), (3, 7, "tornado"))
    for hops, k, traffic in cases:
        text = booksim(binary, ring(k, traffic, LOW), work, f"zero{hops}")
        b = figure(text, "Packet latency average")
        res = run_collc(pair(0, hops), f"torus:{k},{LINK}", work, f"zero{hops}", hw())
        print(
            f"  {hops:>4} {b if b is not None else '-':>9} {res.cycles:>7} "
            f"{res.cycles + CHANNELS:>8}  {traffic} on a {k}-ring"
        )


def batches(binary: str, work: Path) -> None:
    print("\n== 2. a batch of 16 packets per node, every node at once (cycles to deliver all)")
    print(f"  {'case':<38} {'depth':>5} {'BookSim 2 VCs':>14} {'BookSim 4 VCs':>14} {'collc+2':>8}")
    for k, traffic, shift, what in (
        (8, "neighbor", 1, "one flow per port (neighbor, 8-ring)"),
        (5, "tornado", 2, "two flows per port (tornado, 5-ring)"),
    ):
        for depth in (2, 16):
            figures = []
            for vcs in (2, 4):
                cfg = ring(k, traffic, BATCH.format(b=16)) + (
                    f"num_vcs = {vcs};\nvc_buf_size = {depth * PACKET_FLITS};\n"
                )
                text = booksim(binary, cfg, work, f"batch{k}-{depth}-{vcs}")
                figures.append(figure(text, "Overall min batch duration"))
            res = run_collc(
                shift_program(k, shift, 16),
                f"torus:{k},{LINK}",
                work,
                f"batch{k}-{depth}",
                hw(depth=depth),
            )
            shown = [f"{x:.0f}" if x is not None else "-" for x in figures]
            print(
                f"  {what:<38} {depth:>5} {shown[0]:>14} {shown[1]:>14} {res.cycles + CHANNELS:>8}"
            )


def uniform(binary: str, work: Path) -> None:
    print("\n== 3. uniform traffic on a 4x4 torus")
    torus = "topology = torus;\nk = 4;\nn = 2;\ntraffic = uniform;\n"
    spec = f"torus:4x4,{LINK}"
    lat: list[float] = []
    for dst in range(1, 16):
        lat.append(run_collc(pair(0, dst), spec, work, f"pair{dst}", hw()).cycles)
    # BookSim's uniform destinations include the source itself (0 network hops, the router
    # pass and the serialization: R + S cycles in collc's model).
    lat.append(ROUTER + PACKET_FLITS)
    mean = sum(lat) / len(lat) + CHANNELS
    print(
        f"  collc zero-load latency + {CHANNELS}, mean over the 16 destinations BookSim draws "
        f"from: {mean:.2f} cycles"
    )
    print(f"  {'load (packets/node/cycle)':>26} {'BookSim latency':>16} {'network hops':>13}")
    for load in (0.01, 0.05, 0.1, 0.15):
        cfg = torus + f"sim_type = latency;\ninjection_rate = {load};\n"
        text = booksim(binary, cfg, work, f"uniform{load}")
        b = figure(text, "Packet latency average")
        hops = figure(text, "Hops average")
        shown = "unstable" if b is None else f"{b:.2f}"
        print(f"  {load:>26} {shown:>16} {(hops or 1.0) - 1:>13.3f}")
    text = booksim(binary, torus + BATCH.format(b=15), work, "uniform-batch")
    b = figure(text, "Overall min batch duration")
    res = run_collc(all_to_all(16), spec, work, "a2a", hw())
    print(
        f"  batch of 15 packets per node: BookSim (uniform random) {b}, "
        f"collc (direct all-to-all) {res.cycles} (+{CHANNELS}: {res.cycles + CHANNELS})"
    )


def wraparound(binary: str, work: Path) -> None:
    print("\n== 4. a 1-VC 8-ring under wrap-around traffic (tornado: every node to +3)")
    spec = f"torus:8,{LINK}"
    program = shift_program(8, 3, 16)
    try:
        run_collc(program, spec, work, "vc1", hw(vcs=1))
        print("  collc export: accepted (unexpected)")
    except CollcError as e:
        print(f"  collc export: {e.message}")
    res = run_collc(program, spec, work, "vc1f", hw(vcs=1, force=True))
    told = res.deadlock["description"] if res.deadlock else "completed"
    print(f"  collc replay of the forced program: {told}")
    text = booksim(
        binary,
        ring(8, "tornado", BATCH.format(b=16)) + "num_vcs = 1;\nvc_buf_size = 8;\n",
        work,
        "vc1",
    )
    tail = [ln for ln in text.splitlines() if ln.strip()][-3:]
    print("  BookSim, num_vcs = 1: " + " | ".join(tail)[:300])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--booksim", default=os.environ.get("COLLC_BOOKSIM", ""))
    args = ap.parse_args(argv)
    if not args.booksim:
        raise SystemExit("name the BookSim2 binary: --booksim PATH or COLLC_BOOKSIM")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        zero_load(args.booksim, work)
        batches(args.booksim, work)
        uniform(args.booksim, work)
        wraparound(args.booksim, work)


if __name__ == "__main__":
    main()
