"""Phases: the sets of flows a FRED fabric carries together, and their priority classes.

**Flows of a Program.** Each flow id with its FlowIns (input NPUs) and FlowOuts (output
NPUs), the slots it moves and the flows it must follow: flow G follows flow F when a FlowIn
of G waits, through its rank's dependencies, for a FlowOut of F (G then goes in a later
phase) or for a FlowIn of F (G goes in the same phase or later). Dependencies carried by
endpoint messages between ranks are not followed: a phase order that contradicts one shows
up in the replay as a stall.

**Phases.** Flows are taken in dependency order, smallest id first, and each joins the
earliest phase allowed by the flows it follows in which every link of its tree still has a
free port in its direction (`backends.fred.fabric.PortAllocator`): an NPU sends into at most
one flow and receives from at most one flow per phase. So a reduce-scatter's N flows, which
all take every NPU's port, are N phases, and MP2 groups' all-reduces are one.

**Priorities.** Every phase has a class: ``mp`` (model/tensor parallel), ``pp`` (pipeline)
or ``dp`` (data parallel), from its group's role. The model, as the paper states it: a
switch serves the highest class among its pending phases, MP > PP > DP, and a phase of a
higher class that becomes pending preempts the one it is serving (which resumes afterwards,
losing nothing); phases of one class are served in index order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from backends.fred.clos import LocalFlow
from backends.fred.errors import FredError
from backends.fred.fabric import Fabric, PortAllocator, switch_flows
from chakra_ir.program import OpKind, Program

PRIORITIES = ("mp", "pp", "dp")
"""The priority classes, highest first."""


@dataclass(frozen=True)
class ProgramFlow:
    """One flow of a Program: its id, input and output NPUs (sorted), the slots each of its
    operations moves and the global indices of its FlowIns and FlowOuts."""

    id: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    slots: int
    flow_ins: tuple[int, ...]
    flow_outs: tuple[int, ...]


@dataclass
class Phase:
    """One phase: its configuration ``index`` (1-based; 0 is the switches' default unicast
    configuration), its priority class, its program flows and, per switch node, the local
    flows the switch routes; ``after``: the positions of earlier phases one of its flows
    waits for the result of (it may start only once they have delivered)."""

    index: int
    priority: str
    flows: list[int] = field(default_factory=list)
    at_switch: dict[int, list[LocalFlow]] = field(default_factory=dict)
    after: set[int] = field(default_factory=set)


def program_flows(program: Program) -> dict[int, ProgramFlow]:
    """The flows of ``program`` by id (FredError for a flow without inputs or outputs)."""
    coll = program.collective
    rank_of = program.op_rank()
    out: dict[int, ProgramFlow] = {}
    for f, (ins, outs) in sorted(program.flows().items()):
        if not ins or not outs:
            side = "FlowIn" if not ins else "FlowOut"
            raise FredError(f"flow {f} has no {side} (verify the program first)")
        slots = {int(program.count[g]) for g in (*ins, *outs)}
        if len(slots) != 1:
            raise FredError(f"flow {f}: its operations move different slot counts {sorted(slots)}")
        out[f] = ProgramFlow(
            f,
            tuple(sorted(coll.npu(int(rank_of[g])) for g in ins)),
            tuple(sorted(coll.npu(int(rank_of[g])) for g in outs)),
            slots.pop(),
            tuple(ins),
            tuple(outs),
        )
    return out


def build_phases(
    program: Program,
    fabric: Fabric,
    priority: str = "dp",
    first_index: int = 1,
) -> tuple[list[Phase], dict[int, ProgramFlow], dict[int, int]]:
    """The phases of ``program`` on ``fabric`` (module docstring): ``(phases, flows,
    phase_of)`` with ``phase_of[flow id]`` the position of its phase in ``phases``."""
    if priority not in PRIORITIES:
        raise FredError(f"priority {priority!r}: one of {', '.join(PRIORITIES)}")
    flows = program_flows(program)
    kind = program.kind
    tag = program.tag
    rank_of = program.op_rank()
    # Per flow, the flows it follows strictly or loosely, through its FlowIns' rank deps.
    strict, loose = _waits(program, flows, kind, tag, rank_of)
    phases: list[Phase] = []
    allocs: list[PortAllocator] = []
    phase_of: dict[int, int] = {}
    pending = sorted(flows)
    while pending:
        placed_any = False
        rest: list[int] = []
        for f in pending:
            if any(g not in phase_of for g in strict[f] | loose[f]):
                rest.append(f)
                continue
            lb = max([phase_of[g] + 1 for g in strict[f]] + [phase_of[g] for g in loose[f]] + [0])
            pf = flows[f]
            tree = fabric.trees.tree(pf.inputs, pf.outputs)
            p = lb
            while p < len(phases) and not allocs[p].fits(tree):
                p += 1
            if p == len(phases):
                phases.append(Phase(first_index + p, priority))
                allocs.append(PortAllocator(fabric))
            phases[p].flows.append(f)
            phases[p].after.update(phase_of[g] for g in strict[f])
            for fs in switch_flows(fabric, tree, allocs[p], f):
                phases[p].at_switch.setdefault(fs.switch, []).extend(fs.flows)
            phase_of[f] = p
            placed_any = True
        if not placed_any:
            raise FredError(
                f"flows {', '.join(map(str, rest[:10]))} wait for each other in a circle "
                "(verify the program first)"
            )
        pending = rest
    return phases, flows, phase_of


def _waits(
    program: Program,
    flows: dict[int, ProgramFlow],
    kind: np.ndarray,
    tag: np.ndarray,
    rank_of: np.ndarray,
) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Per flow, the flows whose FlowOut (strict) or FlowIn (loose) one of its FlowIns waits
    for through its rank's dependencies."""
    memo: dict[int, tuple[frozenset[int], frozenset[int]]] = {}

    def seen(g0: int) -> tuple[frozenset[int], frozenset[int]]:
        # Iterative depth-first walk over rank-local dependencies.
        stack = [g0]
        while stack:
            g = stack[-1]
            if g in memo:
                stack.pop()
                continue
            r = int(rank_of[g])
            start = int(program.rank_offsets[r])
            deps = [start + int(d) for d in program.deps_of(g).tolist()]
            todo = [d for d in deps if d not in memo]
            if todo:
                if len(stack) > len(kind):
                    raise FredError("an operation's dependencies form a cycle (verify first)")
                stack.extend(todo)
                continue
            s: set[int] = set()
            lo: set[int] = set()
            for d in deps:
                s |= memo[d][0]
                lo |= memo[d][1]
                if kind[d] == OpKind.FLOW_OUT:
                    s.add(int(tag[d]))
                elif kind[d] == OpKind.FLOW_IN:
                    lo.add(int(tag[d]))
            memo[g] = (frozenset(s), frozenset(lo))
            stack.pop()
        return memo[g0]

    strict: dict[int, set[int]] = {}
    loose: dict[int, set[int]] = {}
    for f, pf in flows.items():
        s: set[int] = set()
        lo: set[int] = set()
        for g in pf.flow_ins:
            a, b = seen(g)
            s |= a
            lo |= b
        if f in s:
            raise FredError(f"flow {f} waits for its own result (verify the program first)")
        strict[f] = s
        loose[f] = lo - {f}
    return strict, loose
