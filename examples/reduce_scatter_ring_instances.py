"""Ring reduce-scatter replicated into several instances (default 4) over two channels.

Chunk i starts at rank i + 1, collects every rank's contribution around the ring and ends
at rank i, which copies it to its output. Even chunks use channel 0, odd ones channel 1;
the instances multiply the chunks and the channels.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def reduce_scatter_ring(size, instances):
    collective = ReduceScatter(size, 1, False)
    with MSCCLProgram(
        "reduce_scatter_ring", ring(size), collective, instances, interleaved_replication=True
    ):
        for i in range(size):
            ch = i % 2
            c = chunk((i + 1) % size, Buffer.input, i)
            for step in range(2, size + 1):
                c = chunk((i + step) % size, Buffer.input, i).reduce(c, ch=ch)
            c.copy(i, Buffer.output, 0)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4)
parser.add_argument("instances", type=int, nargs="?", default=4)
args = parser.parse_args()

reduce_scatter_ring(args.num_gpus, args.instances)
