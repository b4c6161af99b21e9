# A ring all-reduce in the shape of msccl-tools' A100 ring example: a reduce pass around the
# ring, then a pass that hands the sums on. It prints XML() before Check(), as every upstream
# example does. --short drops the hand-on pass's last step (the mutation issue 27 describes:
# the upstream loop's bound lowered by one), so the program is wrong.
# ruff: noqa: F403, F405
import argparse

from msccl.language import *
from msccl.language.collectives import AllReduce
from msccl.topologies import *

ap = argparse.ArgumentParser()
ap.add_argument("ranks", type=int)
ap.add_argument("channels", type=int)
ap.add_argument("instances", type=int)
ap.add_argument("--short", action="store_true")
opts = ap.parse_args()

n = opts.ranks
last = n - 3 if opts.short else n - 2
with MSCCLProgram(
    "ring",
    fully_connected(n),
    AllReduce(n, n, True),
    opts.instances,
    protocol="LL128",
    threadblock_policy=ThreadblockPolicy.manual,
):
    for step in range(n - 1):
        for idx in range(n):
            here = (idx + step) % n
            there = (here + 1) % n
            lane = idx % opts.channels
            acc = chunk(there, Buffer.input, idx)
            acc.reduce(chunk(here, Buffer.input, idx), ch=lane, sendtb=lane, recvtb=lane)
    for step in range(-1, last):
        for idx in range(n):
            here = (idx + step) % n
            lane = idx % opts.channels
            chunk(here, Buffer.input, idx).copy(
                (here + 1) % n, Buffer.input, idx, ch=lane, sendtb=lane, recvtb=lane
            )
    XML()
    Check()
