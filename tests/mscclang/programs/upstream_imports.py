# Every import line msccl-tools' examples use, including modules the program never uses.
# ruff: noqa: F401, F403, F405
import argparse
import math

from msccl.collectives import *
from msccl.language import *
from msccl.language.collectives import AllReduce, SendRecv
from msccl.language.types import ThreadblockPolicy
from msccl.topologies import *
from msccl.topologies.distributed import *
from msccl.topologies.nvidia import *

local = dgx1()
assert local.num_nodes() == 8
assert local.link(0, 1) == 2 and local.link(0, 5) == 0
two = distributed_fully_connected(local, 2, 1)
assert two.num_nodes() == 16 and two.link(0, 9) == 1 and two.link(8, 13) == 0
assert reverse_topology(amd4()).num_nodes() == 4

# A ring all-reduce along dgx1's high-bandwidth cycle 0-1-3-2-6-7-5-4.
cycle = [0, 1, 3, 2, 6, 7, 5, 4]
n = len(cycle)
with MSCCLProgram("dgx1_ring", local, AllReduce(n, n, True), 1):
    for step in range(n - 1):
        for k in range(n):
            src, dst = cycle[(k + step) % n], cycle[(k + step + 1) % n]
            chunk(dst, Buffer.input, k).reduce(chunk(src, Buffer.input, k))
    for step in range(n - 1):
        for k in range(n):
            src, dst = cycle[(k + step - 1) % n], cycle[(k + step) % n]
            chunk(src, Buffer.input, k).copy(dst, Buffer.input, k)
    Check()
