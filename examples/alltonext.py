"""A custom collective: every rank but the last hands its buffer to the next rank.

Inside a node the buffer moves in one piece. Between nodes it is split into one piece per
GPU: piece j hops to GPU j of the sending node, crosses to GPU j of the next node, and is
gathered from there into the receiver's output, so every GPU's link to the next node helps.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.language.collectives import Collective
from msccl.topologies import *


class AllToNext(Collective):
    def __init__(self, num_ranks, chunk_factor, gpus_per_node):
        super().__init__(num_ranks, chunk_factor, False)
        self.gpus_per_node = gpus_per_node

    def init_buffers(self):
        buffers = []
        for r in range(self.num_ranks):
            inputs = [None] * self.chunk_factor
            if r + 1 < self.num_ranks:
                for c in range(self.chunk_factor):
                    # Chunk c of rank r must end in output slot c of rank r + 1.
                    inputs[c] = Chunk(r, c, r + 1, c)
            buffers.append({Buffer.input: inputs, Buffer.output: [None] * self.chunk_factor})
        return buffers

    def check(self, prog):
        wrong = 0
        for r in range(1, self.num_ranks):
            for c, got in enumerate(prog.buffers[r][Buffer.output]):
                if got is None or (got.origin_rank, got.origin_index) != (r - 1, c):
                    print(f"Rank {r} chunk {c} is incorrect: {got}")
                    wrong += 1
        return wrong == 0


def alltonext(num_nodes, gpus_per_node):
    size = num_nodes * gpus_per_node
    chunks = gpus_per_node
    collective = AllToNext(size, chunks, gpus_per_node)
    with MSCCLProgram("alltonext", fully_connected(size), collective, 1):
        for r in range(size - 1):
            node, nxt = r // gpus_per_node, (r + 1) // gpus_per_node
            whole = chunk(r, Buffer.input, 0, size=chunks)
            if node == nxt:
                whole.copy(r + 1, Buffer.output, 0)
                continue
            for j, piece in enumerate(whole.split(gpus_per_node)):
                relay = node * gpus_per_node + j
                remote = nxt * gpus_per_node + j
                # Relay on the sending node (unless the piece is already there) ...
                if relay != r:
                    piece = piece.copy(relay, "relay")
                # ... across to the next node (unless the receiver is the remote GPU) ...
                if remote != r + 1:
                    piece = piece.copy(remote, "cross")
                piece.copy(r + 1, Buffer.output, j)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_nodes", type=int, nargs="?", default=2)
parser.add_argument("gpus_per_node", type=int, nargs="?", default=4)
args = parser.parse_args()

alltonext(args.num_nodes, args.gpus_per_node)
