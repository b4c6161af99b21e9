"""Recursive-doubling all-gather, in place: the input of rank r is slot r of its output.

In step k every rank holds the 2**k chunks of its aligned block and swaps the whole block
with the rank 2**k away, so the blocks double until every rank holds all chunks.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def allgather_recursive_doubling(size):
    collective = AllGather(size, 1, True)
    with MSCCLProgram("allgather_recursive_doubling", fully_connected(size), collective, 1):
        # In place, the input chunk already sits in the output: no copy is needed.
        for r in range(size):
            assert chunk(r, Buffer.input, 0).index == r
        block = 1
        while block < size:
            for r in range(size):
                start = r // block * block
                mine = chunk(r, Buffer.output, start, size=block)
                mine.copy(r ^ block, Buffer.output, start)
            block *= 2
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=8, help="a power of two")
args = parser.parse_args()

allgather_recursive_doubling(args.num_gpus)
