"""Direct reduce-scatter through named scratch buffers.

Every rank sends the chunks another rank owns into a scratch buffer named after the sender
(``("from", r)``, appended without an index), and each owner adds them up in its output.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def reduce_scatter(size, chunks):
    collective = ReduceScatter(size, chunks, False)
    with MSCCLProgram("reduce_scatter_scratch", fully_connected(size), collective, 1):
        for r in range(size):
            for owner in range(size):
                if owner != r:
                    mine = chunk(r, Buffer.input, owner * chunks, size=chunks)
                    mine.copy(owner, ("from", r))
        for r in range(size):
            out = chunk(r, Buffer.input, r * chunks, size=chunks).copy(r, Buffer.output, 0)
            for sender in range(size):
                if sender != r:
                    out.reduce(chunk(r, ("from", sender), 0, size=chunks))
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, nargs="?", default=4)
parser.add_argument("--chunks", type=int, default=2)
args = parser.parse_args()

reduce_scatter(args.num_gpus, args.chunks)
