# msccl-tools' SendRecv: two ranks swap their chunks, through a scratch buffer when in place.
# ruff: noqa: F403, F405
import argparse

from msccl.language import *
from msccl.language.collectives import SendRecv
from msccl.topologies import *

parser = argparse.ArgumentParser()
parser.add_argument("--inplace", action="store_true")
args = parser.parse_args()

with MSCCLProgram("swap", fully_connected(2), SendRecv(2, 2, args.inplace), 1):
    for r in range(2):
        chunk(r, Buffer.input, 0, 2).copy(1 - r, "landing", 0)
    for r in range(2):
        chunk(r, "landing", 0, 2).copy(r, Buffer.output, 0)
    Check()
