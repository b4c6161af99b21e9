"""Ring all-gather on a ring topology, out of place or (``--inplace``) in place.

Every rank's chunk walks once around the ring: r -> r+1 -> ... -> r-1.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def allgather_ring(size, inplace):
    collective = AllGather(size, 1, inplace)
    with MSCCLProgram("allgather_ring", ring(size), collective, 1):
        for r in range(size):
            c = chunk(r, Buffer.input, 0)
            if not inplace:
                # Out of place, a rank copies its own chunk into its output first.
                c = c.copy(r, Buffer.output, r)
            for step in range(1, size):
                c = c.copy((r + step) % size, Buffer.output, r)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4, help="number of gpus")
parser.add_argument("--inplace", action="store_true", help="run in place")
args = parser.parse_args()

allgather_ring(args.num_gpus, args.inplace)
