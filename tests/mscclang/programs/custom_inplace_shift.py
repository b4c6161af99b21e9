# A custom collective run in place, as msccl-tools' alltonext does: every rank but the last
# passes its chunks to the next rank through a named scratch buffer. msccl-tools keeps a
# custom collective's input and output apart (Collective.get_buffer_index aliases nothing).
# ruff: noqa: F403, F405
from msccl.language import *
from msccl.language.collectives import Collective
from msccl.topologies import *


class Shift(Collective):
    def init_buffers(self):
        out = []
        for r in range(self.num_ranks):
            last = r == self.num_ranks - 1
            inp = [None if last else Chunk(r, c, r + 1, c) for c in range(self.chunk_factor)]
            out.append({Buffer.input: inp, Buffer.output: [None] * self.chunk_factor})
        return out

    def check(self, prog):
        ok = True
        for r in range(1, self.num_ranks):
            for c in range(self.chunk_factor):
                got = prog.buffers[r][Buffer.output][c]
                if got is None or got.origin_rank != r - 1 or got.origin_index != c:
                    print(f"rank {r} chunk {c}: {got}")
                    ok = False
        return ok


n, cf = 3, 2
with MSCCLProgram("shift", fully_connected(n), Shift(n, cf, True), 1):
    for r in range(n - 1):
        staged = chunk(r, Buffer.input, 0, cf).copy(r + 1, f"from{r}", 0)
        staged.copy(r + 1, Buffer.output, 0)
    Check()
