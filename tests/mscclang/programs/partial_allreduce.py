# An "all-reduce" that only reduces onto rank 0 and never calls Check(), like msccl-tools'
# pipeline_a100_ring (whose Check() is commented out): refused by default, compiled with
# --as-custom as the custom collective it really is.
# ruff: noqa: F403, F405
from msccl.language import *
from msccl.topologies import *

n = 3
with MSCCLProgram("partial", fully_connected(n), AllReduce(n, 1, True), 1):
    for r in range(1, n):
        chunk(0, Buffer.input, 0).reduce(chunk(r, Buffer.input, 0))
    XML()
