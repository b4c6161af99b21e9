"""The mesh/torus replayer: a packet-level discrete-event simulation of a hardware program.

Independent of `backends.sim`; every rule below is stated in docs/hardware.md ("Replay").
Time is in integer cycles of the header's clock. This module holds the event loop; the
program's tables come from `backends.replay.grid_program`, the deadlock and the result it
reports are assembled in `backends.replay.grid_report`.

- **Packets.** A message of ``B`` bytes is cut into ``ceil(B / packet_bytes)`` packets, the
  last one short. A packet of ``b`` bytes keeps link ``e`` busy for ``s = ceil(b / W_e)``
  cycles (``W_e``: the link's width in bytes per cycle).
- **Links.** A packet whose head starts on link ``e`` at ``t`` has its head at the far router
  at ``t + L_e`` (``latency_cycles``) and its tail at ``t + L_e + s``.
- **Routers, virtual cut-through.** Every input (a VC buffer of a network input port, or the
  NPU's injection queue for one output port) is a FIFO; only its head packet may request its
  next output port, ``router_pipeline_cycles`` (``R``) after its head arrived, and not so
  early that its tail would leave before it arrived (``start >= tail + R - s_next``). An
  output port grants one packet at a time, round-robin over the requesting inputs, and only
  to a packet whose next VC buffer has a credit (room for the whole packet).
- **Credits.** Each VC input buffer holds ``buffer_depth_packets`` packets. A credit is
  taken when a packet starts on the link towards the buffer and given back ``L_e`` cycles
  after the packet's tail has left the buffer (travelling back over the link).
- **Injection.** A send issued at ``t`` queues its packets at its NPU's router, in the queue
  of its first output port (one FIFO per port, served in issue order), ready at ``t + R``.
  Sends that become ready at one cycle are queued in command-stream order.
- **Ejection** never blocks: at the destination a packet is delivered at ``tail + R`` and its
  buffer slot is free then.
- **Commands** run by their waits: a command is issued when every command it waits for has
  completed. ``copy`` and ``reduce`` complete at once. A ``recv`` is posted from the start and
  completes when its last packet has been delivered and its waits have completed. A ``send``
  completes by the header's rule: ``on-arrival`` when its last packet is delivered,
  ``on-departure`` when its last packet's tail has left the source router.
- **Contents.** A send reads its slots when issued, a recv writes (or reduces) them when it
  completes, copies and reductions when issued, all on `chakra_ir.verify.SymbolicMemory`;
  the postcondition is checked at the end.
- **Deadlock.** When nothing is left to happen but commands have not completed, the network
  has stalled: every VC buffer whose head packet waits for a credit of a full buffer points
  at it, and a cycle of such buffers is the deadlock reported.
"""

from __future__ import annotations

import heapq
from collections import deque
from pathlib import Path

from backends.hwprog.export import HwProgram
from backends.hwprog.read import read_hwprog
from backends.replay.grid_program import COPY, RECV, REDUCE, SEND, GridProgram, ceil_div
from backends.replay.grid_report import deadlock_report, replay_result
from backends.replay.types import ReplayOptions, ReplayResult

# Event kinds, in the order they are handled at one cycle (the low bits of an event key).
_DELIVER, _DEPART, _READY, _ARB = 0, 1, 2, 3
_KBITS = 2
_ABITS = 34
_AMASK = (1 << _ABITS) - 1
_TSHIFT = _ABITS + _KBITS


def replay_grid(folder: Path, options: ReplayOptions) -> ReplayResult:
    """Read ``folder`` (`read_hwprog`: every check of the format) and replay it."""
    hw = read_hwprog(folder)
    return GridReplay(hw, str(folder), options).run()


class GridReplay(GridProgram):
    """One replay of a mesh/torus hardware program (see the module's docstring)."""

    def __init__(
        self, hw: HwProgram, folder: str, options: ReplayOptions, *, trains: bool = True
    ) -> None:
        """``trains=False`` arbitrates every packet through the event queue, also on links
        that serve one message at a time (the tests compare both)."""
        self.trains = trains
        self.folder = folder
        self.options = options
        super().__init__(hw)

    # -- the event loop ----------------------------------------------------------------------------
    def run(self) -> ReplayResult:
        V, R, NL, depth = self.V, self.R, self.NL, self.depth
        lat, ser_full, width = self.lat, self.ser_full, self.width
        f_links, f_vcs, f_npk, f_last = self.f_links, self.f_vcs, self.f_npk, self.f_last
        f_send, f_recv = self.f_send, self.f_recv
        op, waits_left, children = self.op, self.waits_left, self.children
        flow_of = self.flow_of
        on_arrival = self.on_arrival
        keep = self.options.timeline
        M = 1 + NL * V  # round-robin positions at an output port

        n_cmds = self.n_cmds
        start = [-1] * n_cmds
        finish = [-1] * n_cmds
        data_in = [False] * n_cmds
        issue_t = [0] * self.n_flows

        heap: list[int] = []
        push = heapq.heappush
        pop = heapq.heappop

        # Inputs: ids 0..NL-1 are the injection queues (one per output link), NL + l*V + v the
        # VC buffer at the far end of link l.
        injq: list[deque[int]] = [deque() for _ in range(NL)]
        inj_k = [0] * NL
        bufq: list[deque[tuple[int, int, int, int]]] = [deque() for _ in range(NL * V)]
        waiting: list[list[int]] = [[] for _ in range(NL)]
        busy_until = [0] * NL
        busy_total = [0] * NL
        link_packets = [0] * NL
        last_rr = [-1] * NL
        arb_at = [-1] * NL
        credits = [depth] * (NL * V)
        pend: list[list[int]] = [[] for _ in range(NL * V)]
        max_occ = [0] * (NL * V)
        link_spans: list[list[tuple[int, int, int]]] | None = (
            [[] for _ in range(NL)] if keep else None
        )

        # Links that only one-hop flows use (all of them for TACOS on grids): their only
        # requester is the injection queue, and every credit of their buffers comes back at a
        # time known when its packet starts, so they are served a message at a time.
        solo = [self.trains] * NL
        for ls in f_links:
            if len(ls) > 1:
                for x in ls:
                    solo[x] = False

        done = 0
        packets = 0
        packet_hops = 0
        ready_sends: list[int] = []
        now = 0

        def arb(o: int, t: int) -> None:
            if busy_until[o] > t or arb_at[o] == t:
                return
            arb_at[o] = t
            push(heap, (t << _TSHIFT) | (_ARB << _ABITS) | o)

        def complete(g0: int, t: int) -> None:
            nonlocal done
            stack = [g0]
            while stack:
                g = stack.pop()
                finish[g] = t
                done += 1
                for c in children[g]:
                    waits_left[c] -= 1
                    if waits_left[c] == 0:
                        start[c] = t
                        k = op[c]
                        if k == SEND:
                            ready_sends.append(c)
                        elif k == RECV:
                            if data_in[c]:
                                f = flow_of[c]
                                self._sym_write(c, self.payload[f], bool(self.cmd_slots[c][5]))
                                self.payload[f] = None
                                stack.append(c)
                        else:
                            self._sym_write(c, self._sym_read(c), k == REDUCE)
                            stack.append(c)

        # Commands without waits start at cycle 0, in stream order.
        for g in range(n_cmds):
            if waits_left[g] == 0:
                start[g] = 0
                k = op[g]
                if k == SEND:
                    ready_sends.append(g)
                elif k in (COPY, REDUCE):
                    self._sym_write(g, self._sym_read(g), k == REDUCE)
                    complete(g, 0)

        def inject(t: int) -> None:
            ready_sends.sort()
            for g in ready_sends:
                f = flow_of[g]
                self.payload[f] = self._sym_read(g)
                issue_t[f] = t
                o = f_links[f][0]
                q = injq[o]
                q.append(f)
                if len(q) == 1:
                    push(heap, ((t + R) << _TSHIFT) | (_READY << _ABITS) | o)
            ready_sends.clear()

        while True:
            # Sends released at this cycle queue once every event of the cycle is handled.
            if ready_sends and (not heap or (heap[0] >> _TSHIFT) > now):
                inject(now)
            if not heap:
                break
            key = pop(heap)
            now = key >> _TSHIFT
            kind = (key >> _ABITS) & 3
            a = key & _AMASK
            if kind == _ARB:
                o = a
                arb_at[o] = -1
                if busy_until[o] > now:
                    continue
                cands = waiting[o]
                if not cands:
                    continue
                if solo[o]:
                    # Only injection queue o ever requests this link, and its head flow ends
                    # at the far router: serve all its packets now, each when the link and a
                    # credit are free, which is what arbitrating packet by packet would do.
                    q = injq[o]
                    f = q[0]
                    k = inj_k[o]
                    ch = o * V + f_vcs[f][0]
                    pc = pend[ch]
                    cr = credits[ch]
                    npk = f_npk[f]
                    lo = lat[o]
                    sf = ser_full[o]
                    mo = max_occ[ch]
                    t = now
                    g_last = now
                    busy = 0
                    t_del = 0
                    sp = link_spans[o] if link_spans is not None else None
                    while k < npk:
                        while pc and pc[0] <= t:
                            pop(pc)
                            cr += 1
                        if cr == 0:
                            t = pop(pc)
                            cr = 1
                        cr -= 1
                        if depth - cr > mo:
                            mo = depth - cr
                        sz = sf if k < npk - 1 else ceil_div(f_last[f], width[o])
                        end = t + sz
                        busy += sz
                        t_del = end + lo + R
                        push(pc, t_del + lo)
                        if sp is not None:
                            if sp and sp[-1][2] == f and sp[-1][1] == t:
                                sp[-1] = (sp[-1][0], end, f)
                            else:
                                sp.append((t, end, f))
                        g_last = t
                        t = end
                        k += 1
                    n_p = npk - inj_k[o]
                    credits[ch] = cr
                    max_occ[ch] = mo
                    busy_until[o] = t
                    busy_total[o] += busy
                    link_packets[o] += n_p
                    packet_hops += n_p
                    packets += n_p
                    last_rr[o] = 0
                    q.popleft()
                    inj_k[o] = 0
                    push(heap, (t_del << _TSHIFT) | (_DELIVER << _ABITS) | f)
                    if not on_arrival:
                        push(heap, (t << _TSHIFT) | (_DEPART << _ABITS) | f)
                    arb_at[o] = t
                    push(heap, (t << _TSHIFT) | (_ARB << _ABITS) | o)
                    if q:
                        t_r = issue_t[q[0]] + R
                        if t_r > g_last:
                            cands.remove(o)
                            push(heap, (t_r << _TSHIFT) | (_READY << _ABITS) | o)
                    else:
                        cands.remove(o)
                    continue
                best = -1
                best_key = M
                wake = -1
                for inp in cands:
                    if inp < NL:
                        f = injq[inp][0]
                        hop = 0
                        rr = 0
                    else:
                        _r, f, _k, hop = bufq[inp - NL][0]
                        rr = inp - NL + 1
                    ch = o * V + f_vcs[f][hop]
                    if credits[ch] == 0:
                        pc = pend[ch]
                        while pc and pc[0] <= now:
                            pop(pc)
                            credits[ch] += 1
                        if credits[ch] == 0:
                            # Wait for the earliest known credit; one not known yet wakes
                            # the port when its packet leaves the buffer downstream.
                            if pc and (wake < 0 or pc[0] < wake):
                                wake = pc[0]
                            continue
                    rk = (rr - last_rr[o] - 1) % M
                    if rk < best_key:
                        best_key = rk
                        best = inp
                if best < 0:
                    if wake >= 0:
                        arb(o, wake)
                    continue
                inp = best
                # The granted packet.
                if inp < NL:
                    q = injq[inp]
                    f = q[0]
                    k = inj_k[inp]
                    hop = 0
                    last_rr[o] = 0
                else:
                    bq = bufq[inp - NL]
                    _r, f, k, hop = bq.popleft()
                    last_rr[o] = inp - NL + 1
                vc = f_vcs[f][hop]
                ch = o * V + vc
                credits[ch] -= 1
                occ = depth - credits[ch]
                if occ > max_occ[ch]:
                    max_occ[ch] = occ
                npk = f_npk[f]
                if k == npk - 1:
                    b = f_last[f]
                    s = ceil_div(b, width[o])
                else:
                    b = self.P
                    s = ser_full[o]
                end = now + s
                busy_until[o] = end
                busy_total[o] += s
                link_packets[o] += 1
                packet_hops += 1
                if link_spans is not None:
                    sp = link_spans[o]
                    if sp and sp[-1][2] == f and sp[-1][1] == now:
                        sp[-1] = (sp[-1][0], end, f)
                    else:
                        sp.append((now, end, f))
                arb_at[o] = end
                push(heap, (end << _TSHIFT) | (_ARB << _ABITS) | o)
                # Leave the input; its next packet may request.
                if inp < NL:
                    k1 = k + 1
                    if k1 == npk:
                        q.popleft()
                        inj_k[inp] = 0
                        if not on_arrival:
                            push(heap, (end << _TSHIFT) | (_DEPART << _ABITS) | f)
                        if q:
                            t_r = issue_t[q[0]] + R
                            if t_r > now:
                                cands.remove(inp)
                                push(heap, (t_r << _TSHIFT) | (_READY << _ABITS) | inp)
                        else:
                            cands.remove(inp)
                    else:
                        inj_k[inp] = k1
                else:
                    cands.remove(inp)
                    # The buffer slot is free once the tail has left; the credit travels back.
                    lu = (inp - NL) // V
                    t_ret = end + lat[lu]
                    cu = inp - NL
                    push(pend[cu], t_ret)
                    if waiting[lu]:  # the port may be waiting for this credit
                        arb(lu, t_ret)
                    if bq:
                        r2, f2, _k2, h2 = bq[0]
                        if r2 <= now:
                            o2 = f_links[f2][h2]
                            waiting[o2].append(inp)
                            arb(o2, now)
                        else:
                            push(heap, (r2 << _TSHIFT) | (_READY << _ABITS) | inp)
                # Forward the packet.
                route = f_links[f]
                head = now + lat[o]
                if hop == len(route) - 1:
                    t_del = head + s + R
                    push(pend[ch], t_del + lat[o])  # seen by this port's next arbitration
                    packets += 1
                    if k == npk - 1:
                        push(heap, (t_del << _TSHIFT) | (_DELIVER << _ABITS) | f)
                else:
                    o2 = route[hop + 1]
                    s2 = ser_full[o2] if k < npk - 1 else ceil_div(b, width[o2])
                    ready = head + R
                    if s > s2:
                        ready += s - s2
                    bq2 = bufq[ch]
                    bq2.append((ready, f, k, hop + 1))
                    if len(bq2) == 1:
                        push(heap, (ready << _TSHIFT) | (_READY << _ABITS) | (NL + ch))
            elif kind == _READY:
                inp = a
                if inp < NL:
                    waiting[inp].append(inp)
                    arb(inp, now)
                else:
                    _r, f, _k, hop = bufq[inp - NL][0]
                    o = f_links[f][hop]
                    waiting[o].append(inp)
                    arb(o, now)
            elif kind == _DELIVER:
                f = a
                g = f_recv[f]
                data_in[g] = True
                if waits_left[g] == 0:
                    self._sym_write(g, self.payload[f], bool(self.cmd_slots[g][5]))
                    self.payload[f] = None
                    complete(g, now)
                if on_arrival:
                    complete(f_send[f], now)
            else:  # _DEPART
                complete(f_send[a], now)

        cycles = max(finish) if finish else 0
        self.start, self.finish = start, finish
        deadlock = None
        if done < n_cmds:
            cycles = max(now, cycles)
            deadlock = deadlock_report(self, finish, bufq, credits, pend, done, now)
        return replay_result(
            self,
            self.folder,
            start,
            finish,
            cycles,
            done,
            packets,
            packet_hops,
            busy_total,
            link_packets,
            max_occ,
            deadlock,
            link_spans,
        )
