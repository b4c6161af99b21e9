"""A mesh/torus hardware program lowered to the flat tables the replay's event loop reads.

`GridProgram` numbers links, commands (globally, NPU after NPU, in stream order) and flows
(messages), and holds per link its ends, ports, latency, width and packet serialization, per
command its op, waits, slots and flow, per flow its route, VCs, bytes and packets, and the
`chakra_ir.verify.SymbolicMemory` the commands act on. `backends.replay.grid.GridReplay` runs
it; the rules are in that module's docstring.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from backends.hwprog.export import HwProgram
from chakra_ir.collective import Buffer, collective_from_dict
from chakra_ir.verify import SymbolicMemory, VerifyError

_BUF = {"input": int(Buffer.INPUT), "output": int(Buffer.OUTPUT), "scratch": int(Buffer.SCRATCH)}
_SCRATCH = int(Buffer.SCRATCH)
SEND, RECV, COPY, REDUCE = 0, 1, 2, 3
"""Command ops, as `GridProgram.op` holds them."""
_OPS = {"send": SEND, "recv": RECV, "copy": COPY, "reduce": REDUCE}


def ceil_div(b: int, w: float) -> int:
    """Cycles ``b`` bytes keep a link of ``w`` bytes per cycle busy: ``ceil(b / w)``."""
    if float(w).is_integer():
        wi = int(w)
        return -(-b // wi)
    return max(1, math.ceil(b / w))


class GridProgram:
    """The tables of one hardware program (see the module's docstring), with the symbolic
    contents its commands read and write."""

    def __init__(self, hw: HwProgram) -> None:
        """Lower ``hw`` (already checked by `read_hwprog`) into the tables."""
        h = hw.header
        self.hw = hw
        self.V = V = int(h["num_vcs"])
        self.R = int(h["router_pipeline_cycles"])
        self.depth = int(h["buffer_depth_packets"])
        self.P = int(h["packet_bytes"])
        self.clock = float(h["clock_ghz"])
        links = h["links"]
        self.NL = NL = len(links)
        self.lid = {(lk["src"], lk["port"]): i for i, lk in enumerate(links)}
        self.lsrc = [int(lk["src"]) for lk in links]
        self.lport = [int(lk["port"]) for lk in links]
        self.ldst = [int(lk["dst"]) for lk in links]
        self.lat = [int(lk["latency_cycles"]) for lk in links]
        self.width = [float(lk["width_bytes_per_cycle"]) for lk in links]
        self.ser_full = [ceil_div(self.P, w) for w in self.width]
        # The input port a link arrives on: the port of the reverse link, else the opposite.
        self.in_port: list[int] = []
        for i, lk in enumerate(links):
            p = int(lk["port"])
            opposite = p + 1 if p % 2 == 1 else p - 1
            src, dst = int(lk["src"]), int(lk["dst"])
            rev = self.lid.get((dst, opposite))
            if rev is None or self.ldst[rev] != src:
                same = self.lid.get((dst, p))
                if same is not None and self.ldst[same] == src and same != i:
                    opposite = p  # a ring of two: one link each way, both "+"
            self.in_port.append(opposite)

        # Commands, numbered globally NPU after NPU, in stream order.
        n_npus = int(h["num_npus"])
        self.npu_base = [0] * (n_npus + 1)
        op: list[int] = []
        waits_left: list[int] = []
        children: list[list[int]] = []
        flow_of: list[int] = []
        cmd_npu: list[int] = []
        cmd_slots: list[tuple[int, int, int, int, int, int]] = []
        cmd_id: list[int] = []
        n_flows = int(h["counts"]["messages"])
        self.n_flows = n_flows
        f_links: list[list[int]] = [[] for _ in range(n_flows)]
        f_vcs: list[list[int]] = [[] for _ in range(n_flows)]
        f_bytes = [0] * n_flows
        f_send = [-1] * n_flows
        f_recv = [-1] * n_flows
        g = 0
        for n, doc in enumerate(hw.npus):
            self.npu_base[n] = g
            pos: dict[int, int] = {}
            for c in doc["commands"]:
                pos[c["id"]] = g
                o = _OPS[c["op"]]
                op.append(o)
                ws = c["waits"]
                waits_left.append(len(ws))
                children.append([])
                for w in ws:
                    children[pos[w]].append(g)
                cmd_npu.append(n)
                cmd_id.append(int(c["id"]))
                if o == SEND:
                    f = c["flow"]
                    flow_of.append(f)
                    f_send[f] = g
                    f_bytes[f] = c["bytes"]
                    cur = n
                    ls: list[int] = []
                    for pt in c["ports"]:
                        li = self.lid[(cur, pt)]
                        ls.append(li)
                        cur = self.ldst[li]
                    f_links[f] = ls
                    f_vcs[f] = list(c["vcs"])
                    s = c["src"]
                    cmd_slots.append((_BUF[s[0]], s[1], s[2], -1, -1, -1))
                elif o == RECV:
                    f = c["flow"]
                    flow_of.append(f)
                    f_recv[f] = g
                    d = c["dst"]
                    cmd_slots.append((-1, -1, -1, _BUF[d[0]], d[1], int(bool(c["reduce"]))))
                else:
                    flow_of.append(-1)
                    s, d = c["src"], c["dst"]
                    cmd_slots.append((_BUF[s[0]], s[1], s[2], _BUF[d[0]], d[1], 0))
                g += 1
        self.npu_base[n_npus] = g
        self.n_cmds = g
        self.op = op
        self.waits_left = waits_left
        self.children = children
        self.flow_of = flow_of
        self.cmd_npu = cmd_npu
        self.cmd_slots = cmd_slots
        self.cmd_id = cmd_id
        self.f_links = f_links
        self.f_vcs = f_vcs
        self.f_bytes = f_bytes
        self.f_send = f_send
        self.f_recv = f_recv
        P = self.P
        self.f_npk = [-(-b // P) for b in f_bytes]
        self.f_last = [b - (k - 1) * P for b, k in zip(f_bytes, self.f_npk, strict=True)]
        self.on_arrival = h["completion"] == "on-arrival"

        # Symbolic contents.
        self.collective = collective_from_dict(h["collective"])
        placement = h["placement"]
        sizes = np.zeros((len(placement), 3), dtype=np.int64)
        self.rank_of_npu = [-1] * n_npus
        # Scratch slots no command touches hold nothing: the memory holds those up to the
        # last one used, however large the declared scratch.
        scratch_end = [0] * n_npus
        chunk = int(h["chunk_bytes"])
        for g, (sb, si, sc, db, di, _red) in enumerate(cmd_slots):
            n = cmd_npu[g]
            if sb == _SCRATCH and si + sc > scratch_end[n]:
                scratch_end[n] = si + sc
            if db == _SCRATCH:
                count = sc if sc >= 0 else f_bytes[flow_of[g]] // chunk
                if di + count > scratch_end[n]:
                    scratch_end[n] = di + count
        for r, npu in enumerate(placement):
            b = hw.npus[npu]["buffers"]
            sizes[r] = (b["input"], b["output"], min(b["scratch"], scratch_end[npu]))
            self.rank_of_npu[npu] = r
        self.memory: SymbolicMemory | None = SymbolicMemory(self.collective, sizes)
        self.symbolic_error = ""
        self.payload: list[Any] = [None] * n_flows
        self.NI = NL + NL * V

    # -- symbolic contents -----------------------------------------------------------------------
    def _sym_fail(self, g: int, e: VerifyError) -> None:
        n = self.cmd_npu[g]
        self.symbolic_error = f"npu {n} command {self.cmd_id[g]}: {e.message}"
        self.memory = None

    def _sym_read(self, g: int) -> Any:
        mem = self.memory
        if mem is None:
            return None
        sb, si, cnt, _db, _di, _red = self.cmd_slots[g]
        try:
            return mem.read(self.rank_of_npu[self.cmd_npu[g]], sb, si, cnt)
        except VerifyError as e:
            self._sym_fail(g, e)
            return None

    def _sym_write(self, g: int, payload: Any, reduce: bool) -> None:
        mem = self.memory
        if mem is None or payload is None:
            return
        _sb, _si, _cnt, db, di, _red = self.cmd_slots[g]
        try:
            mem.write(self.rank_of_npu[self.cmd_npu[g]], db, di, payload, reduce)
        except VerifyError as e:
            self._sym_fail(g, e)

    def buffer_name(self, ch: int) -> tuple[int, int, int]:
        """(router, input port, vc) of the VC buffer at the far end of channel ``ch``."""
        lnk, vc = divmod(ch, self.V)
        return self.ldst[lnk], self.in_port[lnk], vc
