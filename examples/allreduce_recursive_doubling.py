"""Recursive-doubling all-reduce on a power-of-two number of ranks, in place.

In step k every rank exchanges its partial sum with the rank 2**k away (r ^ 2**k): it
sends the whole buffer into the peer's scratch buffer for that step, then adds what the
peer sent into its own.
"""
# ruff: noqa: F403, F405

import argparse
import math

from msccl.language import *
from msccl.topologies import *


def allreduce_recursive_doubling(size, chunks):
    assert size > 1 and size & (size - 1) == 0, "the number of ranks must be a power of two"
    steps = int(math.log2(size))
    collective = AllReduce(size, chunks, True)
    with MSCCLProgram("allreduce_recursive_doubling", fully_connected(size), collective, 1):
        k = 0
        while 2**k < size:
            distance = 1 << k
            step_buffer = f"step{k}"
            for r in range(size):
                peer = r ^ distance
                chunk(r, Buffer.input, 0, size=chunks).copy(peer, step_buffer, 0)
            for r in range(size):
                mine = chunk(r, Buffer.input, 0, size=chunks)
                mine.reduce(chunk(r, step_buffer, 0, size=chunks))
            k += 1
        assert k == steps
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=8)
parser.add_argument("--chunks", type=int, default=2, help="chunks per rank")
args = parser.parse_args()

allreduce_recursive_doubling(args.num_gpus, args.chunks)
