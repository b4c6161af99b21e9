# Recursive-doubling all-gather in place whose references grow to 2, 4, ... chunks, run with
# several instances and manual threadblocks, the shape of msccl-tools'
# allgather_recursive_doubling.py. With instances > 1 the interleaved replica of a reference
# of k chunks covers slots of the other instances too, so the dependencies must be found on
# the replicated slots (collc) rather than per instance (msccl-tools, whose XML races).
#   doubling_instances.py RANKS INSTANCES
# ruff: noqa: F403, F405
import argparse

from msccl.language import *
from msccl.language.collectives import AllGather
from msccl.topologies import *

ap = argparse.ArgumentParser()
ap.add_argument("ranks", type=int)
ap.add_argument("instances", type=int)
opts = ap.parse_args()

n = opts.ranks
with MSCCLProgram(
    "doubling",
    fully_connected(n),
    AllGather(n, 1, True),
    opts.instances,
    threadblock_policy=ThreadblockPolicy.manual,
):
    width = 1
    while width < n:
        for r in range(n):
            start = r // width * width
            mine = chunk(r, Buffer.output, start, size=width)
            mine.copy(r ^ width, Buffer.output, start, sendtb=r ^ width, recvtb=r)
        width *= 2
    XML()
    Check()
