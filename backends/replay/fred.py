"""The FRED replayer: a ``collc export --target fred`` folder executed phase by phase.

**Data.** Every NPU's commands run in dependency order on symbolic memory
(`chakra_ir.verify.SymbolicMemory`, as `verify` tracks it). When a phase runs, each of its
flows' FlowIns puts its slots on its NPU's up-link; every physical switch then runs that
phase's µSwitch states (`backends.fred.execute.run_network`) on the values at its input
ports, switch after switch until the values settle, and a last pass runs every switch again
on everything that arrived, strictly. Two flows meeting in one µSwitch, an element summing an
input that carries nothing, a contribution summed twice, or a flow output that does not hold
exactly the sum of the flow's inputs is a `ReplayError` naming the switch, the phase and the
µSwitch (a wrong configuration is bad input); the collective's postcondition is checked at
the end, and a wrong result is reported, not raised.

**Time** (flow level, in ns; cycles are ns at a 1 GHz clock), by
`backends.fred.schedule`: a phase is pending once every FlowIn of its flows has been issued;
each phase is its own configuration, so a switch serves one phase at a time, the highest
class first (MP > PP > DP), then the earliest pending, and a higher class preempts a lower
one (which resumes where it stopped). A phase streams for its slowest flow's ``bytes /
rate`` and its last byte arrives a tail (path latency plus the piece pipeline's fill) later,
as `collc simulate` models a flow (packets carry their phase's index, so the next phase may
enter while this one drains). A FlowIn completes when it is issued (its data is read then),
a FlowOut when its phase's last byte has arrived. Endpoint messages use the default unicast
configuration: ``bytes / rate + latency`` along their path, with no contention. Local copies
and reductions take no time.
"""

from __future__ import annotations

import heapq
import itertools
from pathlib import Path
from typing import Any

import numpy as np

from backends.fred.errors import FredError
from backends.fred.execute import ElementError, run_network
from backends.fred.fabric import Fabric
from backends.fred.read import FredFolder, read_fred
from backends.fred.schedule import Job, PhasePlan, SwitchScheduler, message_plan, phase_plan
from backends.replay.errors import ReplayError
from backends.replay.types import LinkReport, ReplayOptions, ReplayResult
from chakra_ir.collective import Contents, collective_from_dict, describe, merge
from chakra_ir.verify import VerifyError
from chakra_ir.verify_memory import SymbolicMemory
from topologies import parse_topology
from topologies.cost_model import CostModel
from topologies.errors import CollcError

_BUF = {"input": 0, "output": 1, "scratch": 2}
_OPCODE = {"send": 0, "recv": 1, "copy": 2, "reduce": 3, "flow-in": 4, "flow-out": 5}
Value = tuple[int, tuple[Contents, ...]]


class _Replay:
    def __init__(self, ff: FredFolder, options: ReplayOptions) -> None:
        h = ff.header
        self.ff = ff
        self.h = h
        self.options = options
        try:
            topo = parse_topology(h["topology"])
            self.fabric = Fabric.of(topo)
        except (CollcError, FredError) as e:
            raise ReplayError(f"{ff.folder}: $.topology: {e}") from None
        for sw in self.fabric.switches.values():
            doc = ff.switches.get(sw.name)
            if doc is None or doc["ports"] != sw.ports or doc["node"] != sw.node:
                raise ReplayError(
                    f"{ff.folder}: switch {sw.name} of {h['topology']} ({sw.ports} ports) has no "
                    "matching switch file"
                )
        self.coll = collective_from_dict(h["collective"])
        placement = h["placement"]
        npus = ff.program["npus"]
        sizes = np.zeros((len(placement), 3), dtype=np.int64)
        self.rank_of = [-1] * h["num_npus"]
        for r, n in enumerate(placement):
            if not 0 <= n < h["num_npus"] or npus[n]["rank"] != r:
                raise ReplayError(f"{ff.folder}: rank {r} is placed on NPU {n}, whose rank differs")
            b = npus[n]["buffers"]
            sizes[r] = (b["input"], b["output"], b["scratch"])
            self.rank_of[n] = r
        try:
            self.memory = SymbolicMemory(self.coll, sizes)
        except VerifyError as e:
            raise ReplayError(f"{ff.folder}: {e}") from None
        self.flows = {f["flow"]: f for f in h["flows"]}
        self.phases = {ph["index"]: ph for ph in h["phases"]}
        self.chunk = h["chunk_bytes"]
        self.cost = CostModel()
        # Per flow: its issued FlowIns (NPU -> payload) and FlowOuts waiting (NPU, command).
        self.fin: dict[int, list[tuple[int, int]]] = {f: [] for f in self.flows}
        self.fout: dict[int, list[tuple[int, int]]] = {f: [] for f in self.flows}
        for n, npu in enumerate(npus):
            for c in npu["commands"]:
                if c["op"] == "flow-in":
                    self.fin[c["flow"]].append((n, c["id"]))
                elif c["op"] == "flow-out":
                    self.fout[c["flow"]].append((n, c["id"]))
        for f, fl in self.flows.items():
            if (
                sorted(n for n, _ in self.fin[f]) != fl["inputs"]
                or sorted(n for n, _ in self.fout[f]) != fl["outputs"]
            ):
                raise ReplayError(
                    f"{ff.folder}: flow {f}: the program's flow commands do not match the "
                    f"header's inputs {fl['inputs']} and outputs {fl['outputs']}"
                )
        self.link_busy: dict[tuple[int, int], float] = {}
        self.link_spans: dict[tuple[int, int], list[tuple[int, int, int]]] = {}

    # -- data ----------------------------------------------------------------------------------
    def _read(self, npu: int, slots: list[Any]) -> tuple[Contents, ...]:
        buf, idx, count = slots
        return tuple(self.memory.read(self.rank_of[npu], _BUF[buf], idx, count))

    def _write(
        self, npu: int, slots: list[Any], payload: tuple[Contents, ...], reduce: bool
    ) -> None:
        buf, idx, _ = slots
        self.memory.write(self.rank_of[npu], _BUF[buf], idx, list(payload), reduce)

    def run_phase_data(
        self, index: int, payloads: dict[int, dict[int, tuple[Contents, ...]]]
    ) -> dict[int, dict[int, Value]]:
        """Push the phase's inputs through every switch; per flow, per output NPU, its value."""
        fab = self.fabric
        sw_of = fab.switches
        links: dict[tuple[int, int, int], Value] = {}
        for f, per in payloads.items():
            for n, payload in per.items():
                links[(n, fab.trees.parent[n], 0)] = (f, payload)
        where = [""]

        def add(element: str, a: Value, b: Value) -> Value:
            if a[0] != b[0]:
                raise ElementError(element, f"flows {a[0]} and {b[0]} meet on one port")
            merged = []
            for x, y in zip(a[1], b[1], strict=True):
                z = merge(x, y)
                if z is None:
                    raise ElementError(
                        element, f"sums {describe(y)} into {describe(x)}: a contribution twice"
                    )
                merged.append(z)
            return a[0], tuple(merged)

        def run(node: int, strict: bool) -> bool:
            sw = sw_of[node]
            states, _ = self.ff.states(sw.name, index)
            if not states:
                return False
            inputs: dict[int, Value] = {}
            for n, base in sw.base.items():
                for k in range(fab.width[(n, node)]):
                    v = links.get((n, node, k))
                    if v is not None:
                        inputs[base + k] = v
            where[0] = sw.name
            try:
                outs = run_network(
                    states, sw.ports, self.ff.header["m"], inputs, add, strict=strict
                )
            except ElementError as e:
                raise ReplayError(
                    f"{self.ff.folder}: switch {sw.name}, phase {index}, µSwitch {e.element}: {e}"
                ) from None
            changed = False
            for n, base in sw.base.items():
                for k in range(fab.width[(node, n)]):
                    v = outs.get(base + k)
                    if v is not None and links.get((node, n, k)) != v:
                        links[(node, n, k)] = v
                        changed = True
            return changed

        nodes = sorted(sw_of)
        for _ in range(2 * len(nodes) + 1):
            if not any([run(s, False) for s in nodes]):
                break
        for s in nodes:
            run(s, True)
        out: dict[int, dict[int, Value]] = {}
        for f in payloads:
            got = out.setdefault(f, {})
            for n in self.flows[f]["outputs"]:
                v = links.get((fab.trees.parent[n], n, 0))
                if v is not None:
                    got[n] = v
        return out

    # -- time ----------------------------------------------------------------------------------
    def phase_plan(self, index: int) -> PhasePlan:
        """The time of phase ``index`` (`backends.fred.schedule.phase_plan`)."""
        flows = [self.flows[f] for f in self.phases[index]["flows"]]
        return phase_plan(
            self.fabric, [(f["inputs"], f["outputs"], f["bytes"]) for f in flows], self.cost
        )


def replay_fred(folder: Path, options: ReplayOptions) -> ReplayResult:
    """Replay the FRED configuration folder ``folder`` (see the module docstring)."""
    ff = read_fred(folder)
    rp = _Replay(ff, options)
    h = ff.header
    npus = ff.program["npus"]
    n_cmds = sum(len(n["commands"]) for n in npus)
    done_at: dict[tuple[int, int], float] = {}
    start_at: dict[tuple[int, int], float] = {}
    waiting: dict[tuple[int, int], int] = {}
    users: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for n, npu in enumerate(npus):
        for c in npu["commands"]:
            key = (n, c["id"])
            waits = set(c["waits"])
            waiting[key] = len(waits)
            for w in waits:
                users.setdefault((n, w), []).append(key)
    events: list[tuple[float, int, str, Any]] = []
    seq = itertools.count()

    def push(t: float, kind: str, what: Any) -> None:
        heapq.heappush(events, (t, next(seq), kind, what))

    cmd = {(n, c["id"]): c for n, npu in enumerate(npus) for c in npu["commands"]}
    for key, k in waiting.items():
        if k == 0:
            push(0.0, "issue", key)
    fin_left = {f: len(rp.fin[f]) for f in rp.flows}
    payloads: dict[int, dict[int, tuple[Contents, ...]]] = {f: {} for f in rp.flows}
    phase_left = {i: len(ph["flows"]) for i, ph in rp.phases.items()}
    plans = {i: rp.phase_plan(i) for i in rp.phases}
    finished_phase: dict[int, float] = {}
    flow_out: dict[int, dict[int, Value]] = {}
    sends: dict[tuple[int, int, int], list[tuple[float, tuple[Contents, ...], int]]] = {}
    recvs: dict[tuple[int, int, int], list[tuple[float, tuple[int, int]]]] = {}
    symbolic_error = ""

    def complete(key: tuple[int, int], t: float) -> None:
        done_at[key] = t
        for u in users.get(key, []):
            waiting[u] -= 1
            if waiting[u] == 0:
                push(t, "issue", u)

    def message_time(src: int, dst: int, nbytes: int) -> float:
        plan = message_plan(rp.fabric, src, dst, nbytes)
        return plan.stream_ns + plan.tail_ns

    def try_match(key3: tuple[int, int, int]) -> None:
        while sends.get(key3) and recvs.get(key3):
            ts, payload, sid = sends[key3].pop(0)
            tr, rkey = recvs[key3].pop(0)
            src, dst, _ = key3
            t = max(ts, tr) + message_time(src, dst, len(payload) * rp.chunk)
            push(t, "recv-done", (rkey, payload, (src, sid)))

    now = 0.0
    sched = SwitchScheduler()
    while events or sched.busy():
        t_next = events[0][0] if events else float("inf")
        t_sched = sched.next_ns()
        if t_sched <= t_next:
            now = t_sched
            streamed, finished = sched.advance(now)
            for job in streamed:
                i = job.config
                for a, b, busy in job.plan.links:
                    rp.link_busy[(a, b)] = rp.link_busy.get((a, b), 0.0) + busy
                    rp.link_spans.setdefault((a, b), []).append(
                        (round(now - job.plan.stream_ns), round(now), i)
                    )
            for job in finished:
                push(now, "phase-done", job.config)
        else:
            now = t_next
        while events and events[0][0] <= now:
            _, _, kind, what = heapq.heappop(events)
            if kind == "phase-done":
                i = what
                finished_phase[i] = now
                flow_out.update(
                    rp.run_phase_data(i, {f: payloads[f] for f in rp.phases[i]["flows"]})
                )
                for f in rp.phases[i]["flows"]:
                    fl = rp.flows[f]
                    want: tuple[Contents, ...] | None = None
                    for n in fl["inputs"]:
                        p = payloads[f][n]
                        if want is None:
                            want = p
                        else:
                            merged = [merge(x, y) for x, y in zip(want, p, strict=True)]
                            if any(z is None for z in merged):
                                raise ReplayError(f"flow {f}: its inputs overlap")
                            want = tuple(z for z in merged if z is not None)
                    for n in fl["outputs"]:
                        got = flow_out.get(f, {}).get(n)
                        if got is None or got != (f, want):
                            shown = (
                                "nothing"
                                if got is None
                                else f"flow {got[0]}'s {describe(got[1][0])}"
                            )
                            raise ReplayError(
                                f"{ff.folder}: phase {i}: flow {f} delivers {shown} to NPU {n}, "
                                f"expected the sum of NPUs {fl['inputs']}"
                            )
                    for n, cid in rp.fout[f]:
                        if (n, cid) in start_at:
                            push(now, "flow-out", (n, cid))
            elif kind == "issue":
                key = what
                n, cid = key
                c = cmd[key]
                start_at[key] = now
                op = c["op"]
                try:
                    if op in ("copy", "reduce"):
                        rp._write(n, c["dst"], rp._read(n, c["src"]), op == "reduce")
                        complete(key, now)
                    elif op == "flow-in":
                        f = c["flow"]
                        payloads[f][n] = rp._read(n, c["src"])
                        complete(key, now)
                        fin_left[f] -= 1
                        if fin_left[f] == 0:
                            ph = rp.flows[f]["phase"]
                            phase_left[ph] -= 1
                            if phase_left[ph] == 0:
                                prio = rp.phases[ph]["priority"]
                                sched.add(Job(ph, ph, prio, plans[ph]), now)
                    elif op == "flow-out":
                        f = c["flow"]
                        if rp.flows[f]["phase"] in finished_phase:
                            push(now, "flow-out", key)
                    elif op == "send":
                        k3 = (n, c["to"], c["tag"])
                        sends.setdefault(k3, []).append((now, rp._read(n, c["src"]), cid))
                        try_match(k3)
                    else:
                        k3 = (c["from"], n, c["tag"])
                        recvs.setdefault(k3, []).append((now, key))
                        try_match(k3)
                except VerifyError as e:
                    symbolic_error = symbolic_error or f"NPU {n} command {cid} ({op}): {e}"
                    complete(key, now)
            elif kind == "flow-out":
                n, cid = what
                if (n, cid) in done_at:
                    continue
                c = cmd[what]
                val = flow_out[c["flow"]][n]
                try:
                    rp._write(n, c["dst"], val[1], False)
                except VerifyError as e:
                    symbolic_error = symbolic_error or f"NPU {n} command {cid}: {e}"
                complete(what, now)
            elif kind == "recv-done":
                rkey, payload, skey = what
                try:
                    rp._write(rkey[0], cmd[rkey]["dst"], payload, cmd[rkey]["reduce"])
                except VerifyError as e:
                    symbolic_error = symbolic_error or f"NPU {rkey[0]} command {rkey[1]}: {e}"
                complete(rkey, now)
                complete(skey, now)
    done = len(done_at)
    if symbolic_error:
        post, msg = "fails", symbolic_error
    elif done < n_cmds:
        post, msg = (
            "not reached",
            f"{n_cmds - done} commands never completed (the phases wait in a circle)",
        )
    else:
        try:
            rp.memory.check_postcondition()
            post, msg = "holds", ""
        except VerifyError as e:
            post, msg = "fails", str(e)
    finish = max(done_at.values(), default=0.0)
    links = []
    topo = rp.fabric.topology
    for lk in topo.links:
        busy = rp.link_busy.get((lk.src, lk.dst), 0.0)
        links.append(
            LinkReport(lk.src, 0, lk.dst, round(busy), len(rp.link_spans.get((lk.src, lk.dst), [])))
        )
    n_msgs = sum(1 for c in cmd.values() if c["op"] == "send")
    result = ReplayResult(
        target="fred",
        folder=str(folder),
        topology=h["topology"],
        algorithm=h["algorithm"],
        collective=str(h["collective"].get("kind", "")),
        completion=h["completion"],
        clock_ghz=1.0,
        cycles=round(finish),
        commands=n_cmds,
        commands_done=done,
        messages=n_msgs,
        packets=len(rp.flows) + n_msgs,
        packet_hops=sum(len(v) for v in rp.link_spans.values()),
        links=links,
        buffers=[],
        postcondition=post,
        postcondition_message=msg,
        deadlock=None
        if done == n_cmds
        else {"description": f"{n_cmds - done} commands wait for phases that never run"},
        parameters={
            "m": h["m"],
            "fix": h["fix"],
            "phases": len(rp.phases),
            "flows": len(rp.flows),
            "preemptions": sched.preemptions,
            "phase_finish_ns": {str(i): t for i, t in sorted(finished_phase.items())},
            "switches": {s["name"]: s["config_bytes"] for s in h["switches"]},
            "memory_bytes": h["memory_bytes"],
        },
    )
    if options.timeline:
        order = sorted(cmd)
        result.timeline = {
            "links": [
                [(a, b, f) for a, b, f in rp.link_spans.get((lk.src, lk.dst), [])]
                for lk in topo.links
            ],
            "start": [round(start_at.get(k, -1)) for k in order],
            "finish": [round(done_at.get(k, -1)) for k in order],
            "op": [_OPCODE[cmd[k]["op"]] for k in order],
            "npu": [k[0] for k in order],
            "id": [k[1] for k in order],
            "flow": [cmd[k].get("flow", -1) for k in order],
        }
    return result
