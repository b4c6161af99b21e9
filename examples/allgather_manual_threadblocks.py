"""Bidirectional ring all-gather with hand-placed threadblocks and channels.

Each rank has two chunks: the first goes clockwise on channel 0 (threadblock 0), the
second counter-clockwise on channel 1 (threadblock 1); the local copies use threadblock 2.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def allgather_bidirectional(size):
    collective = AllGather(size, 2, False)
    with MSCCLProgram(
        "allgather_bidirectional",
        ring(size),
        collective,
        1,
        threadblock_policy=ThreadblockPolicy.manual,
    ):
        for r in range(size):
            for half, direction in enumerate((1, -1)):
                dst_index = r * 2 + half
                c = chunk(r, Buffer.input, half).copy(r, Buffer.output, dst_index, sendtb=2)
                for step in range(1, size):
                    nxt = (r + direction * step) % size
                    c = c.copy(nxt, Buffer.output, dst_index, sendtb=half, recvtb=half, ch=half)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4)
args = parser.parse_args()

allgather_bidirectional(args.num_gpus)
