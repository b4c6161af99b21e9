"""What a mesh/torus replay reports: the deadlock it names when the network stalls, and
the `ReplayResult` (links, buffers, postcondition, timeline) assembled from the event loop's
counters in `backends.replay.grid`."""

from __future__ import annotations

from collections import deque
from typing import Any

from backends.replay.grid_program import GridProgram
from backends.replay.types import BufferUse, LinkReport, ReplayResult
from chakra_ir.verify import VerifyError


def deadlock_report(
    prog: GridProgram,
    finish: list[int],
    bufq: list[deque[tuple[int, int, int, int]]],
    credits: list[int],
    pend: list[list[int]],
    done: int,
    now: int,
) -> dict[str, Any]:
    """The stall of a replay that stopped at cycle ``now`` with ``done`` commands completed:
    the cycle of VC buffers waiting for each other's credits (if any), the commands left and
    the packets still in the network (``ReplayResult.deadlock``)."""
    V = prog.V
    waits_for: dict[int, int] = {}
    in_network = 0
    for ch, q in enumerate(bufq):
        in_network += len(q)
        if not q:
            continue
        _r, f, _k, hop = q[0]
        nxt = prog.f_links[f][hop] * V + prog.f_vcs[f][hop]
        if credits[nxt] + len(pend[nxt]) == 0:
            waits_for[ch] = nxt
    cycle: list[int] = []
    seen: set[int] = set()
    for s in sorted(waits_for):
        if s in seen:
            continue
        path: dict[int, int] = {}
        x = s
        while x in waits_for and x not in path and x not in seen:
            path[x] = len(path)
            x = waits_for[x]
        seen.update(path)
        if x in path:
            order = sorted(path, key=path.__getitem__)
            cycle = order[path[x] :]
            break

    def name(ch: int) -> dict[str, int]:
        r, p, v = prog.buffer_name(ch)
        return {"router": r, "port": p, "vc": v, "from": prog.lsrc[ch // V]}

    named = [name(c) for c in cycle]
    text = " -> ".join(f"({d['router']}, {d['port']}, {d['vc']})" for d in named)
    left = prog.n_cmds - done
    if named:
        text += f" -> back to ({named[0]['router']}, {named[0]['port']}, {named[0]['vc']})"
    stuck = [
        f"npu {prog.cmd_npu[g]} command {prog.cmd_id[g]}"
        for g in range(prog.n_cmds)
        if finish[g] < 0
    ][:5]
    return {
        "stalled_at_cycle": now,
        "commands_left": left,
        "packets_in_network": in_network,
        "waiting_buffers": len(waits_for),
        "cycle": named,
        "description": (
            f"deadlock at cycle {now}: {left} commands never complete, {in_network} "
            f"packets stuck in the network; "
            + (
                f"buffers (router, port, vc) waiting in a cycle: {text}"
                if named
                else "no cycle of waiting buffers (the commands wait for each other)"
            )
        ),
        "first_stuck": stuck,
    }


def replay_result(
    prog: GridProgram,
    folder: str,
    start: list[int],
    finish: list[int],
    cycles: int,
    done: int,
    packets: int,
    packet_hops: int,
    busy_total: list[int],
    link_packets: list[int],
    max_occ: list[int],
    deadlock: dict[str, Any] | None,
    link_spans: list[list[tuple[int, int, int]]] | None,
) -> ReplayResult:
    """The `ReplayResult` of a replay of ``prog`` (from ``folder``): the per-link and
    per-buffer reports, the postcondition checked on the symbolic contents, and with
    ``link_spans`` the timeline (commands' ``start`` and ``finish`` cycles)."""
    h = prog.hw.header
    links = [
        LinkReport(prog.lsrc[i], prog.lport[i], prog.ldst[i], busy_total[i], link_packets[i])
        for i in range(prog.NL)
    ]
    buffers = []
    for ch, m in enumerate(max_occ):
        r, p, v = prog.buffer_name(ch)
        buffers.append(BufferUse(r, p, v, prog.lsrc[ch // prog.V], m))
    if deadlock is not None:
        post, msg = "not reached", "the program did not complete"
        if prog.symbolic_error:
            post, msg = "fails", prog.symbolic_error
    elif prog.memory is None:
        post, msg = "fails", prog.symbolic_error
    else:
        try:
            prog.memory.check_postcondition()
            post, msg = "holds", ""
        except VerifyError as e:
            post, msg = "fails", e.message
    params = {
        k: h[k]
        for k in (
            "packet_bytes",
            "buffer_depth_packets",
            "router_pipeline_cycles",
            "num_vcs",
            "link_width_bytes_per_cycle",
            "clock_ghz",
        )
    }
    coll = h["collective"]
    res = ReplayResult(
        target=h["target"],
        folder=folder,
        topology=h["topology"],
        algorithm=h["algorithm"],
        collective=str(coll.get("kind", "")),
        completion=h["completion"],
        clock_ghz=prog.clock,
        cycles=cycles,
        commands=prog.n_cmds,
        commands_done=done,
        messages=prog.n_flows,
        packets=packets,
        packet_hops=packet_hops,
        links=links,
        buffers=buffers,
        postcondition=post,
        postcondition_message=msg,
        deadlock=deadlock,
        parameters=params,
    )
    if link_spans is not None:
        res.timeline = {
            "links": link_spans,
            "start": start,
            "finish": finish,
            "op": prog.op,
            "npu": prog.cmd_npu,
            "id": prog.cmd_id,
            "flow": prog.flow_of,
        }
    return res
