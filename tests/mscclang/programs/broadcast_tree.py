# A broadcast down a binary tree, as a custom collective: rank 0's input chunks reach every
# rank's output, each rank receiving from its parent and forwarding to its children (so every
# inner rank receives and sends the same slot: msccl-tools fuses that into rcs). Written for
# issue 27's fusion and header checks; runs unchanged under msccl-tools.
#   broadcast_tree.py RANKS CHUNKS INSTANCES [--inplace]
# ruff: noqa: F403, F405
import argparse

from msccl.language import *
from msccl.language.collectives import Collective
from msccl.topologies import *


class TreeBroadcast(Collective):
    def init_buffers(self):
        buffers = []
        for r in range(self.num_ranks):
            inp = [None] * self.chunk_factor
            if r == 0:
                inp = [Chunk(0, c, -1, c) for c in range(self.chunk_factor)]
            buffers.append({Buffer.input: inp, Buffer.output: [None] * self.chunk_factor})
        return buffers

    def check(self, prog):
        ok = True
        for r in range(1, self.num_ranks):
            out = prog.buffers[r][Buffer.output]
            for c in range(self.chunk_factor):
                if out[c] is None or out[c].origin_rank != 0 or out[c].origin_index != c:
                    print(f"Rank {r} chunk {c} is wrong: {out[c]}")
                    ok = False
        return ok


ap = argparse.ArgumentParser()
ap.add_argument("ranks", type=int)
ap.add_argument("chunks", type=int)
ap.add_argument("instances", type=int)
ap.add_argument("--inplace", action="store_true")
opts = ap.parse_args()

n = opts.ranks
with MSCCLProgram(
    "tree", fully_connected(n), TreeBroadcast(n, opts.chunks, opts.inplace), opts.instances
):
    for c in range(opts.chunks):
        for r in range(1, n):
            parent = (r - 1) // 2
            buf = Buffer.input if parent == 0 else Buffer.output
            chunk(parent, buf, c).copy(r, Buffer.output, c)
    XML()
    Check()
