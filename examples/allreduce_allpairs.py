"""All-pairs all-reduce: every rank owns one chunk, gathers it from all peers into scratch,
reduces it locally and sends the result to every rank's output.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def allreduce_allpairs(size, instances):
    collective = AllReduce(size, size, False)
    with MSCCLProgram("allreduce_allpairs", fully_connected(size), collective, instances):
        # 1. Rank r collects chunk r of every peer in its scratch buffer, at the peer's index.
        for r in range(size):
            for peer in range(size):
                if peer != r:
                    chunk(peer, Buffer.input, r).copy(r, Buffer.scratch, peer)
        # 2. Rank r adds them to its own chunk r.
        for r in range(size):
            total = chunk(r, Buffer.input, r)
            for peer in range(size):
                if peer == r:
                    continue
                total = total.reduce(chunk(r, Buffer.scratch, peer))
        # 3. The total goes to the output of every rank, rank r's own included.
        for r in range(size):
            c = chunk(r, Buffer.input, r)
            for peer in range(size):
                c.copy(peer, Buffer.output, r)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4)
parser.add_argument("instances", type=int, nargs="?", default=1)
args = parser.parse_args()

allreduce_allpairs(args.num_gpus, args.instances)
