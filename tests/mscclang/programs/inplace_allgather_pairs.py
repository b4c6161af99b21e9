# In-place all-gather, every pair direct: each rank copies its chunk "into Buffer.input" of
# every other rank. MSCCLang resolves that alias with the *sender's* offset, so rank s's
# chunk lands in output[s * cf + j] on the receiver.
# ruff: noqa: F403, F405
import argparse

from msccl.language import *
from msccl.language.collectives import AllGather
from msccl.topologies import *

parser = argparse.ArgumentParser()
parser.add_argument("ranks", type=int)
parser.add_argument("chunks", type=int)
args = parser.parse_args()

n, cf = args.ranks, args.chunks
with MSCCLProgram("pairs", fully_connected(n), AllGather(n, cf, True), 1):
    for src in range(n):
        for dst in range(n):
            if src != dst:
                for j in range(cf):
                    chunk(src, Buffer.input, j).copy(dst, Buffer.input, j)
    Check()
