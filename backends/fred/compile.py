"""The FRED switch compiler: a Program on an in-network tree -> per phase, per switch, the
routed FRED_m(P) states (docs/fred.md).

`compile_fred` derives the phases (`backends.fred.phases`), routes every switch's local
flows of every phase (`backends.fred.clos.route`: greedy colouring, then CP-SAT), applies the
fix the options allow when a phase does not route (raise m), and checks each switch's
configurations against its configuration memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from backends.fred.clos import LocalFlow, Routed, route, state_bits
from backends.fred.errors import FredError, FredUncolourable
from backends.fred.fabric import Fabric, describe_ports
from backends.fred.phases import PRIORITIES, Phase, ProgramFlow, build_phases
from chakra_ir.program import Program
from topologies.topology import Topology

FIXES = ("none", "raise-m")
MAX_M = 8
DEFAULT_MEMORY_BYTES = 1536
"""The paper's configuration SRAM per switch: 1.5 KB."""


@dataclass(frozen=True)
class FredOptions:
    """``m``: middle sub-switches per level (FRED_m); ``fix``: what to do when a phase has no
    m-colouring (``none``: refuse, naming the level and the flows; ``raise-m``: the paper's
    fix, the smallest m up to `MAX_M` that routes every phase); ``exact``: try CP-SAT when
    the greedy colouring fails, with ``time_limit_s`` per conflict graph; ``memory_bytes``:
    configuration memory per switch; ``priority``: the class of the program's phases."""

    m: int = 3
    fix: str = "none"
    exact: bool = True
    time_limit_s: float = 1.0
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    priority: str = "dp"

    def check(self) -> None:
        if not 2 <= self.m <= MAX_M:
            raise FredError(f"--fred-m {self.m}: between 2 and {MAX_M}")
        if self.fix not in FIXES:
            raise FredError(f"--fred-fix {self.fix!r}: one of {', '.join(FIXES)}")
        if not (math.isfinite(self.time_limit_s) and 0 < self.time_limit_s <= 3600):
            raise FredError(f"CP-SAT time limit {self.time_limit_s}: seconds, above 0")
        if not 1 <= self.memory_bytes <= 1 << 30:
            raise FredError(f"--config-memory {self.memory_bytes}: between 1 B and 1 GiB")
        if self.priority not in PRIORITIES:
            raise FredError(f"--priority {self.priority!r}: one of {', '.join(PRIORITIES)}")


@dataclass
class FredConfig:
    """A compiled program: the fabric, the m every switch was built with, the fix applied
    (``""`` when none was needed), the phases and flows, ``routed[i][switch node]`` for phase
    ``phases[i]``, and per switch the bits its configurations take."""

    fabric: Fabric
    m: int
    fix: str
    phases: list[Phase]
    flows: dict[int, ProgramFlow]
    routed: list[dict[int, Routed]]
    bits: dict[int, int] = field(default_factory=dict)
    methods: dict[str, int] = field(default_factory=dict)

    def switch_phases(self, node: int) -> list[int]:
        """Positions of the phases that configure switch ``node``."""
        return [i for i, r in enumerate(self.routed) if node in r]


def route_phases(
    phases: list[Phase], fabric: Fabric, m: int, o: FredOptions
) -> list[dict[int, Routed]]:
    """Route every switch of every phase at ``m`` (raises `FredUncolourable`). The local
    flows of a switch are routed under their position in ``Phase.at_switch[node]``, which
    ``Routed.colours`` is keyed by."""
    out: list[dict[int, Routed]] = []
    for ph in phases:
        per: dict[int, Routed] = {}
        for node, local in sorted(ph.at_switch.items()):
            sw = fabric.switches[node]
            numbered = [LocalFlow(k, lf.inputs, lf.outputs) for k, lf in enumerate(local)]

            def label(k: int, local: list[LocalFlow] = local, node: int = node) -> str:
                lf = local[k]
                return f"{lf.id} ({describe_ports(fabric.switches[node], lf.inputs, fabric)} -> {describe_ports(fabric.switches[node], lf.outputs, fabric)})"

            try:
                per[node] = route(numbered, sw.ports, m, o.exact, o.time_limit_s, label)
            except FredUncolourable as e:
                raise FredUncolourable(
                    f"phase {ph.index}, switch {sw.name}: {e.message}", e.level, e.flows
                ) from None
        out.append(per)
    return out


def route_with_fix(
    phases: list[Phase], fabric: Fabric, o: FredOptions
) -> tuple[int, str, list[dict[int, Routed]]]:
    """Route ``phases`` at ``o.m``, raising m when ``o.fix`` is ``raise-m``: ``(m, fix used
    or "", routed)``. Raises `FredUncolourable` naming the phase, switch, level and flows."""
    m = o.m
    fix = ""
    while True:
        try:
            return m, fix, route_phases(phases, fabric, m, o)
        except FredUncolourable as e:
            if o.fix != "raise-m" or m >= MAX_M:
                hint = "" if o.fix == "raise-m" else " (--fred-fix raise-m raises m)"
                raise FredUncolourable(
                    f"uncolourable at m={m}: {e.message}{hint}", e.level, e.flows
                ) from None
            m += 1
            fix = f"raise-m to {m}"


def compile_fred(
    program: Program, topology: Topology, options: FredOptions | None = None
) -> FredConfig:
    """Compile ``program`` for FRED's switches (see the module docstring)."""
    o = options or FredOptions()
    o.check()
    fabric = Fabric.of(topology)
    for r in range(program.num_ranks):
        n = program.collective.npu(r)
        if not 0 <= n < topology.num_npus:
            raise FredError(f"rank {r} is placed on NPU {n}, which {topology.spec!r} lacks")
    phases, flows, _ = build_phases(program, fabric, o.priority)
    m, fix, routed = route_with_fix(phases, fabric, o)
    cfg = FredConfig(fabric, m, fix, phases, flows, routed)
    for per in routed:
        for rt in per.values():
            for k, v in rt.methods.items():
                cfg.methods[k] = cfg.methods.get(k, 0) + v
    budget = o.memory_bytes * 8
    for node, sw in sorted(fabric.switches.items()):
        n = len(cfg.switch_phases(node))
        cfg.bits[node] = n * state_bits(sw.ports, m)
        if cfg.bits[node] > budget:
            raise FredError(
                f"switch {sw.name} (FRED_{m}({sw.ports})) needs {n} configurations of "
                f"{state_bits(sw.ports, m)} bits = {math.ceil(cfg.bits[node] / 8)} B, over its "
                f"{o.memory_bytes} B of configuration memory (--config-memory)"
            )
    return cfg
