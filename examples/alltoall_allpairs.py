"""All-pairs all-to-all: every input chunk goes straight to where the collective wants it."""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def alltoall_allpairs(size, chunks, protocol):
    collective = AllToAll(size, chunks, False)
    with MSCCLProgram("alltoall_allpairs", fully_connected(size), collective, 1, protocol):
        for r in range(size):
            for index in range(size * chunks):
                c = chunk(r, Buffer.input, index)
                c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4)
parser.add_argument("--chunks", type=int, default=1)
parser.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()

alltoall_allpairs(args.num_gpus, args.chunks, args.protocol)
