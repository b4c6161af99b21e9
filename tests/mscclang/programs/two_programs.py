# Two MSCCLPrograms in one file (msccl-tools' simple/custom_collective.py does this): each
# becomes its own output.
# ruff: noqa: F403, F405
from msccl.language import *
from msccl.topologies import *

for name, hops in [("direct", 1), ("relay", 2)]:
    with MSCCLProgram(name, fully_connected(3), AllGather(3, 1, False), 1):
        for r in range(3):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
        pairs = [(s, d) for s in range(3) for d in range(3) if s != d]
        direct = [(s, d) for s, d in pairs if hops == 1 or (d - s) % 3 == 1]
        for s, d in direct:
            chunk(s, Buffer.input, 0).copy(d, Buffer.output, s)
        for s, d in pairs:
            if (s, d) not in direct:
                chunk((s + 1) % 3, Buffer.output, s).copy(d, Buffer.output, s)
        Check()
