"""FRED phases of a workload (`collc workload simulate --fred-phases`, docs/fred.md): which
flows the switches are configured for together, and the iteration timed with the switches
serving those configurations by priority.

1. **Each collective** is expanded by the producer (``fred-innetwork``: in-network flows, no
   endpoint messages) into a program on its group's NPUs, and the program's phases are
   derived as for an export (`backends.fred.phases.build_phases`). Its **class** comes from
   its group's role: tensor-parallel groups are ``mp``, data-parallel groups ``dp`` (the
   generator's ``workload.json`` names them), any other group takes the ``unknown`` option.
   Point-to-point messages (pipeline activations and gradients) are ``pp``; they use the
   switches' default unicast configuration.
2. **Pass 1** runs the workload by ASTRA-sim's rules (`workloads.engine.run_workload`) with
   each collective and message timed alone. This says which collectives overlap.
3. **Configurations** (compile time). The collectives of pass 1 are taken in start order,
   and each phase of each collective gets a configuration of its class: one that already
   holds all its flows; else the first that holds a collective of the same class it
   overlaps in pass 1 and still has free ports for its flows (a switch-to-switch port, or an
   NPU's link, carries one flow per direction per configuration); else a new one. So the
   tensor-parallel all-reduces that run together in a layer share one configuration, and the
   next layer reuses it. Every configuration is routed on every switch it uses
   (`backends.fred.compile.route_with_fix`, raising m when a phase has no colouring) and each
   switch's configurations are counted against its configuration memory.
4. **Pass 2** runs the workload again with every collective's phases and every message
   served by the switches (`backends.fred.schedule.SwitchScheduler`): a switch is in one
   configuration at a time; the highest class pending goes first and, with ``preempt``,
   takes the switches from a lower class, which resumes later. A collective's phase is
   pending when the collective starts (all its members issued it), or, when it needs the
   result of an earlier phase of the collective, once that phase has delivered; the
   collective ends when all its phases have delivered; a message ends when its last byte
   has arrived.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from backends.fred.clos import LocalFlow, state_bits
from backends.fred.compile import FredOptions, route_with_fix
from backends.fred.errors import FredError
from backends.fred.fabric import Fabric, PortAllocator, switch_flows
from backends.fred.phases import PRIORITIES, Phase, build_phases
from backends.fred.schedule import (
    DEFAULT_CONFIG,
    FlowSpec,
    Job,
    PhasePlan,
    SwitchScheduler,
    message_plan,
    phase_plan,
)
from chakra_ir.ops import OpKind
from topologies.cost_model import CostModel
from topologies.topology import Topology
from workloads.engine import CollCall, CollInstance, Roofline, WorkloadRun, run_workload
from workloads.expand import ProgramFor
from workloads.model import Workload

ROLE_CLASS = {"tp": "mp", "pp": "pp", "dp": "dp"}
"""A group's role in ``workload.json`` (``metadata["groups"]``) -> its priority class."""

FlowKey = tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class FredPhaseOptions:
    """``fred``: m, the fix, the configuration memory and the colouring (its ``priority`` is
    unused: classes come from the groups); ``preempt``: a higher class takes the switches
    from a lower one; ``unknown``: the class of groups whose role the workload does not
    name."""

    fred: FredOptions = field(default_factory=lambda: FredOptions(fix="raise-m"))
    preempt: bool = True
    unknown: str = "dp"

    def check(self) -> None:
        self.fred.check()
        if self.unknown not in PRIORITIES:
            raise FredError(f"--fred-priority {self.unknown!r}: one of {', '.join(PRIORITIES)}")


@dataclass
class CallPlan:
    """One distinct collective's phases: ``flows[k]`` (input NPUs, output NPUs, bytes) and
    ``plans[k]`` of phase k, ``after[k]`` the phases whose results it needs, ``alone_ns``
    its time on idle switches."""

    flows: list[list[FlowSpec]]
    plans: list[PhasePlan]
    after: list[set[int]]
    alone_ns: float = 0.0


@dataclass
class Configuration:
    """One configuration of the switches: its ``index`` (from 1), ``priority`` class, its
    ``flows`` (input and output NPUs) and how many collective phases use it."""

    index: int
    priority: str
    flows: list[FlowKey]
    alloc: PortAllocator
    at_switch: dict[int, list[LocalFlow]] = field(default_factory=dict)
    uses: int = 0
    last_end_ns: float = -math.inf

    def fits(self, fabric: Fabric, flows: list[FlowSpec]) -> bool:
        """Whether ``flows`` all get free ports in this configuration."""
        trial = PortAllocator(fabric, dict(self.alloc.used))
        for inputs, outputs, _ in flows:
            tree = fabric.trees.tree(list(inputs), list(outputs))
            if not trial.fits(tree):
                return False
            for a, b in (*tree.up, *tree.down):
                trial.take(a, b)
        return True

    def add(self, fabric: Fabric, flows: list[FlowSpec]) -> None:
        for inputs, outputs, _ in flows:
            tree = fabric.trees.tree(list(inputs), list(outputs))
            for fs in switch_flows(fabric, tree, self.alloc, len(self.flows)):
                self.at_switch.setdefault(fs.switch, []).extend(fs.flows)
            self.flows.append((tuple(inputs), tuple(outputs)))


@dataclass(frozen=True)
class SwitchUse:
    """One switch's configurations: ``name``, ``ports`` (P of FRED_m(P)), ``configurations``
    (how many use it), ``bytes`` they take and the ``budget`` (configuration memory)."""

    name: str
    ports: int
    configurations: int
    bytes: int
    budget: int

    @property
    def fits(self) -> bool:
        return self.bytes <= self.budget


@dataclass
class FredPhasesRun:
    """What `run_fred_phases` measured: ``run`` (pass 2), ``uncontended`` (pass 1), the m
    every switch was routed with and the ``fix`` used, the ``configurations`` and per switch
    their use, the scheduler's ``preemptions`` and the distinct collectives expanded
    (``programs``)."""

    run: WorkloadRun
    uncontended: WorkloadRun
    m: int
    fix: str
    configurations: list[Configuration]
    switches: list[SwitchUse]
    preemptions: int
    programs: int
    classes: dict[str, str]


def group_classes(w: Workload, unknown: str) -> dict[str, str]:
    """Each group's priority class: from its role in ``w.metadata["groups"]`` (role ->
    group names, as `workloads.transformer` writes it), else ``unknown``."""
    out = {g: unknown for g in w.groups}
    out[""] = unknown
    roles = w.metadata.get("groups")
    if isinstance(roles, dict):
        for role, names in roles.items():
            cls = ROLE_CLASS.get(str(role))
            if cls is not None and isinstance(names, list):
                for g in names:
                    if str(g) in out:
                        out[str(g)] = cls
    return out


class _Service:
    """`workloads.engine.CommService` on FRED's switches (module docstring, pass 2)."""

    def __init__(
        self,
        fabric: Fabric,
        cost: CostModel,
        plan_of: Callable[[CollCall], CallPlan],
        config_of: Callable[[CollInstance, int], int],
        class_of: Callable[[CollInstance], str],
        preempt: bool,
    ) -> None:
        self.fabric = fabric
        self.cost = cost
        self.plan_of = plan_of
        self.config_of = config_of
        self.class_of = class_of
        self.sched = SwitchScheduler(preempt)
        self.flight: dict[int, tuple[CollInstance, CallPlan, set[int], set[int]]] = {}
        self.now_done: list[CollInstance | tuple[int, int]] = []
        self.t = 0.0

    def _add_ready(self, key: int, now: float) -> None:
        inst, plan, added, done = self.flight[key]
        for k, after in enumerate(plan.after):
            if k not in added and after <= done:
                added.add(k)
                job = Job((key, k), self.config_of(inst, k), self.class_of(inst), plan.plans[k])
                self.sched.add(job, now)
        if len(done) == len(plan.plans):
            del self.flight[key]
            self.now_done.append(inst)

    def start_collective(self, inst: CollInstance, now: float) -> None:
        self.t = now
        self.flight[id(inst)] = (inst, self.plan_of(inst.call), set(), set())
        self._add_ready(id(inst), now)

    def start_message(
        self, token: tuple[int, int], src: int, dst: int, nbytes: int, now: float
    ) -> None:
        self.t = now
        plan = message_plan(self.fabric, src, dst, nbytes)
        self.sched.add(Job(("msg", token), DEFAULT_CONFIG, "pp", plan), now)

    def next_ns(self) -> float:
        return self.t if self.now_done else self.sched.next_ns()

    def advance(self, now: float) -> list[CollInstance | tuple[int, int]]:
        self.t = now
        _, done = self.sched.advance(now)
        for job in done:
            a, b = cast(tuple[Any, Any], job.owner)
            if a == "msg":
                self.now_done.append(b)
            else:
                self.flight[a][3].add(b)
                self._add_ready(a, now)
        out, self.now_done = self.now_done, []
        return out


def call_plan(program_for: ProgramFor, call: CollCall, fabric: Fabric, cost: CostModel) -> CallPlan:
    """The phases of ``call``'s program and their times; FredError when the program has
    endpoint messages (its producer is not in-network)."""
    e = program_for(call)
    p = e.program
    if bool((p.kind == OpKind.SEND).any()):
        raise FredError(
            f"--fred-phases: the {p.collective.kind.value} of group {call.pg_name or 'all'} "
            f"({p.name or 'its producer'}) sends endpoint messages; FRED phases need in-network "
            "collectives (--algorithm fred-innetwork)"
        )
    phases, flows, _ = build_phases(p, fabric)
    specs: list[list[FlowSpec]] = [
        [(flows[f].inputs, flows[f].outputs, flows[f].slots * e.chunk_bytes) for f in ph.flows]
        for ph in phases
    ]
    plan = CallPlan(
        specs, [phase_plan(fabric, s, cost) for s in specs], [set(ph.after) for ph in phases]
    )
    # Alone: every phase its own configuration, nothing else on the switches.
    svc = _Service(fabric, cost, lambda _c: plan, lambda _i, k: k + 1, lambda _i: "dp", True)
    svc.start_collective(CollInstance(call, 0, ""), 0.0)
    t = 0.0
    while svc.flight or svc.now_done:
        t = svc.next_ns()
        if math.isinf(t):
            raise FredError(f"the phases of {p.name or 'a collective'} wait for each other")
        svc.advance(t)
    plan.alone_ns = t
    return plan


def build_configurations(
    first: WorkloadRun,
    plan_of: Callable[[CollCall], CallPlan],
    class_of: Callable[[CollInstance], str],
    fabric: Fabric,
) -> tuple[list[Configuration], dict[tuple[str, int, int], int]]:
    """Step 3 of the module docstring: the configurations and, per (group, collective
    index, phase), the configuration index it uses."""
    configs: list[Configuration] = []
    by_class: dict[str, list[Configuration]] = {}
    where: dict[tuple[str, int, int], int] = {}
    for inst in sorted(first.collectives, key=lambda c: (c.start_ns, c.call.pg_name, c.index)):
        cls = class_of(inst)
        mine = by_class.setdefault(cls, [])
        plan = plan_of(inst.call)
        for k, flows in enumerate(plan.flows):
            keys = {(tuple(i), tuple(o)) for i, o, _ in flows}
            chosen = next((c for c in mine if keys <= set(c.flows)), None)
            if chosen is None:
                chosen = next(
                    (c for c in mine if inst.start_ns < c.last_end_ns and c.fits(fabric, flows)),
                    None,
                )
                if chosen is None:
                    chosen = Configuration(len(configs) + 1, cls, [], PortAllocator(fabric))
                    configs.append(chosen)
                    mine.append(chosen)
                chosen.add(fabric, flows)
            chosen.uses += 1
            chosen.last_end_ns = max(chosen.last_end_ns, inst.end_ns)
            where[(inst.call.pg_name, inst.index, k)] = chosen.index
    return configs, where


def run_fred_phases(
    w: Workload,
    topology: Topology,
    program_for: ProgramFor,
    *,
    cost: CostModel,
    options: FredPhaseOptions | None = None,
    roofline: Roofline | None = None,
    remote_mem: tuple[float, float] | None = None,
    phase: Callable[[str], None] | None = None,
) -> FredPhasesRun:
    """Run ``w`` (checked by `workloads.model.check_workload`) on FRED's switches; see the
    module docstring. FredError (a `CollcError`) when ``topology`` has no reducing switches
    or a collective is not in-network."""
    o = options or FredPhaseOptions()
    o.check()
    say = phase or (lambda _msg: None)
    if not topology.in_network:
        raise FredError(
            f"--fred-phases: {topology.spec} has no switches that reduce and multicast, so there "
            "is nothing to configure: every message uses the default unicast configuration "
            "(FRED-A and FRED-C); FRED-B and FRED-D reduce in the switches"
        )
    fabric = Fabric.of(topology)
    classes = group_classes(w, o.unknown)
    plans: dict[CollCall, CallPlan] = {}

    def plan_of(call: CollCall) -> CallPlan:
        p = plans.get(call)
        if p is None:
            p = call_plan(program_for, call, fabric, cost)
            plans[call] = p
        return p

    def class_of(inst: CollInstance) -> str:
        return classes.get(inst.call.pg_name, o.unknown)

    def p2p_ns(src: int, dst: int, nbytes: int) -> float:
        m = message_plan(fabric, src, dst, nbytes)
        return m.stream_ns + m.tail_ns

    say("pass 1: each collective's phases timed alone")
    first = run_workload(
        w, lambda c: plan_of(c).alone_ns, p2p_ns, roofline=roofline, remote_mem=remote_mem
    )
    say(f"configurations of {len(first.collectives):,} collectives")
    configs, where = build_configurations(first, plan_of, class_of, fabric)
    phases = [Phase(c.index, c.priority, list(range(len(c.flows))), c.at_switch) for c in configs]
    m, fix, routed = route_with_fix(phases, fabric, o.fred)
    switches: list[SwitchUse] = []
    for node, sw in sorted(fabric.switches.items()):
        n = sum(1 for r in routed if node in r)
        switches.append(
            SwitchUse(
                sw.name,
                sw.ports,
                n,
                math.ceil(n * state_bits(sw.ports, m) / 8),
                o.fred.memory_bytes,
            )
        )
    say("pass 2: the switches serve the phases by priority")
    svc = _Service(
        fabric,
        cost,
        plan_of,
        lambda inst, k: where[(inst.call.pg_name, inst.index, k)],
        class_of,
        o.preempt,
    )
    run = run_workload(
        w,
        lambda c: plan_of(c).alone_ns,
        p2p_ns,
        roofline=roofline,
        remote_mem=remote_mem,
        service=svc,
    )
    return FredPhasesRun(
        run, first, m, fix, configs, switches, svc.sched.preemptions, len(plans), classes
    )


def fred_report(r: FredPhasesRun) -> dict[str, Any]:
    """The FRED part of `collc workload simulate --fred-phases --json`."""
    per_class: dict[str, int] = {}
    for c in r.configurations:
        per_class[c.priority] = per_class.get(c.priority, 0) + 1
    return {
        "m": r.m,
        "fix": r.fix,
        "preemptions": r.preemptions,
        "uncontended_iteration_ns": r.uncontended.time_ns,
        "configurations": len(r.configurations),
        "configurations_per_class": per_class,
        "group_classes": {g: c for g, c in sorted(r.classes.items()) if g},
        "phases": [
            {"index": c.index, "priority": c.priority, "flows": len(c.flows), "uses": c.uses}
            for c in r.configurations
        ],
        "switches": [
            {
                "name": s.name,
                "ports": s.ports,
                "configurations": s.configurations,
                "bytes": s.bytes,
                "budget_bytes": s.budget,
                "fits": s.fits,
            }
            for s in r.switches
        ],
    }
