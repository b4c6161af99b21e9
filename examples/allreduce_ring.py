"""Ring all-reduce, in place: a reduce-scatter then an all-gather around the ring.

    collc compile examples/allreduce_ring.py -o out/ring -- 8 1 --channels 2

The arguments are upstream's: the number of GPUs, then the number of instances.

Each channel owns ``size`` chunks; chunk ``r`` of a channel is summed on its way from rank
r + 1 around to rank r, which then passes the total on around the ring.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.language.collectives import AllReduce
from msccl.topologies import *


def allreduce_ring(size, channels, instances, protocol):
    topology = fully_connected(size)
    collective = AllReduce(size, size * channels, True)
    name = f"allreduce_ring_{size}x{channels}"
    with MSCCLProgram(name, topology, collective, instances, protocol=protocol):
        for ch in range(channels):
            for r in range(size):
                index = ch * size + r
                # Reduce-scatter: the partial sum travels r+1 -> r+2 -> ... -> r.
                c = chunk((r + 1) % size, Buffer.input, index)
                for step in range(1, size):
                    nxt = (r + 1 + step) % size
                    c = chunk(nxt, Buffer.input, index).reduce(c, ch=ch)
                # All-gather: rank r now holds the total of chunk `index`.
                for step in range(1, size):
                    c = c.copy((r + step) % size, Buffer.input, index, ch=ch)
        Check()
        XML()


parser = argparse.ArgumentParser(description="ring all-reduce")
parser.add_argument("num_gpus", type=int, nargs="?", default=8, help="number of gpus")
parser.add_argument("--channels", type=int, default=1, help="rings running side by side")
parser.add_argument("instances", type=int, nargs="?", default=1, help="number of instances")
parser.add_argument(
    "--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"], help="protocol"
)
args = parser.parse_args()

allreduce_ring(args.num_gpus, args.channels, args.instances, args.protocol)
