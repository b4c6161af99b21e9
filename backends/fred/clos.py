"""FRED_m(P): the recursive Clos network of one FRED switch, and routing a phase through it.

**Structure.** FRED_m(P) has P input and P output ports.

- P <= 2 (base case FRED_m(2)): one 2x2 µSwitch, named ``x``.
- P = 2r (even): r input µSwitches ``i0..i{r-1}`` (2 inputs, one link to each middle), m
  middle sub-switches ``m0..m{m-1}``, each a FRED_m(r), and r output µSwitches
  ``o0..o{r-1}`` (one link from each middle, 2 outputs). Port p enters input µSwitch p // 2.
- P = 2r + 1 (odd): as for 2r, but the middles are FRED_m(r + 1) and the last port is fanned
  out: a demux ``if`` (1 input, m outputs) before and a mux ``of`` (m inputs, 1 output)
  after, on the middles' last port. FRED_m(3) (the other base case) is its smallest
  instance: one 2-port µSwitch and the fan around three 2x2 µSwitches.

An element inside middle ``c`` is named with the prefix ``m{c}.`` (``m1.m0.i2``).

**State.** Every element's state lists, for each of its outputs, the inputs it sums onto it
(empty: idle). That one form covers the paper's kinds: two inputs summed (R, an input
µSwitch both of whose ports carry the flow), one input copied to two outputs (D, an output
µSwitch both of whose ports the flow leaves by), both at once (RD, a 2x2 µSwitch of a
2-port all-reduce) and plain bar/cross crossbars. An element no flow uses is idle and not
listed.

**Routing** (the paper's, outermost level first): a flow enters the input µSwitches of its
input ports and leaves by the output µSwitches of its output ports; two flows that share an
input or an output µSwitch conflict. The conflict graph is coloured with m colours
(`backends.fred.colour`), one per middle, and each middle routes, recursively, the flows of
its colour with the µSwitch indices as their ports. A flow thus has one colour per level.

**Size.** A state costs `state_bits`: per port of an input or output µSwitch, the middle it
uses or none (ceil(log2(m + 1)) bits) plus a reduce (input side) or broadcast (output side)
enable; per fan, one middle selection; per 2x2 µSwitch, bar/cross, reduce and broadcast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from backends.fred.colour import colour
from backends.fred.errors import FredUncolourable

State = list[list[int]]
"""Per output of an element, the inputs summed onto it."""


@dataclass(frozen=True)
class LocalFlow:
    """A flow inside one switch: ``id`` (its name in the caller's terms), its input and
    output ports (each non-empty, sorted, no repeats)."""

    id: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class Routed:
    """A routed phase of one FRED_m(P): the state of every element in use and each flow's
    colour per level (`colours[flow id]`), with how each level was coloured."""

    ports: int
    m: int
    states: dict[str, State] = field(default_factory=dict)
    colours: dict[int, list[int]] = field(default_factory=dict)
    methods: dict[str, int] = field(default_factory=dict)


def _split(p: int, ports: int) -> tuple[int, int]:
    """(µSwitch index, port on it) of port ``p`` of a FRED_m(ports), ports > 2."""
    r = ports // 2
    return (p // 2, p % 2) if p < 2 * r else (r, 0)


def levels(ports: int) -> int:
    """The number of Clos levels above the 2x2 µSwitches of a FRED_m(ports)."""
    n = 0
    while ports > 2:
        ports = ports // 2 + ports % 2
        n += 1
    return n


def state_bits(ports: int, m: int) -> int:
    """The bits one phase's state of every element of FRED_m(ports) takes (module
    docstring, Size)."""
    if ports <= 2:
        return 3
    sel = math.ceil(math.log2(m + 1))
    r, odd = divmod(ports, 2)
    return 2 * r * (2 * sel + 1) + 2 * odd * sel + m * state_bits(r + odd, m)


def element_ports(name: str, ports: int, m: int) -> tuple[int, int]:
    """(inputs, outputs) of the element ``name`` of a FRED_m(ports); KeyError when there is
    no such element."""
    *path, last = name.split(".")
    for part in path:
        if ports <= 2 or not part.startswith("m") or not part[1:].isdigit():
            raise KeyError(name)
        if not 0 <= int(part[1:]) < m:
            raise KeyError(name)
        ports = ports // 2 + ports % 2
    r, odd = divmod(ports, 2)
    if ports <= 2:
        if last == "x":
            return ports, ports
    elif last == "if" and odd:
        return 1, m
    elif last == "of" and odd:
        return m, 1
    elif last[:1] in ("i", "o") and last[1:].isdigit() and int(last[1:]) < r:
        return (2, m) if last[0] == "i" else (m, 2)
    raise KeyError(name)


def route(
    flows: Sequence[LocalFlow],
    ports: int,
    m: int,
    exact: bool = True,
    time_limit_s: float = 1.0,
    label: Callable[[int], str] = str,
) -> Routed:
    """Route ``flows`` (disjoint ports, distinct ids) through FRED_m(ports), or raise
    `FredUncolourable` naming the level, the sub-switch and the flows (``label(id)``) of the
    first conflict graph that has no m-colouring."""
    if len({f.id for f in flows}) != len(flows):
        raise ValueError("local flows need distinct ids")
    out = Routed(ports, m)
    for f in flows:
        out.colours[f.id] = []
    _route(list(flows), ports, m, "", 0, out, exact, time_limit_s, label)
    return out


def _route(
    flows: list[LocalFlow],
    ports: int,
    m: int,
    prefix: str,
    level: int,
    out: Routed,
    exact: bool,
    limit: float,
    label: Callable[[int], str],
) -> None:
    if not flows:
        return
    if ports <= 2:
        state: State = [[] for _ in range(ports)]
        for f in flows:
            for o in f.outputs:
                state[o] = list(f.inputs)
        out.states[prefix + "x"] = state
        return
    r, odd = divmod(ports, 2)
    ins = [sorted({_split(p, ports)[0] for p in f.inputs}) for f in flows]
    outs = [sorted({_split(p, ports)[0] for p in f.outputs}) for f in flows]
    by_in: dict[int, list[int]] = {}
    by_out: dict[int, list[int]] = {}
    for k in range(len(flows)):
        for s in ins[k]:
            by_in.setdefault(s, []).append(k)
        for s in outs[k]:
            by_out.setdefault(s, []).append(k)
    adj: list[set[int]] = [set() for _ in flows]
    for group in (*by_in.values(), *by_out.values()):
        for a in group:
            adj[a].update(b for b in group if b != a)
    got = colour([sorted(a) for a in adj], m, exact, limit)
    out.methods[got.method] = out.methods.get(got.method, 0) + 1
    if not got.ok:
        where = f"sub-switch {prefix[:-1]}" if prefix else "the outermost level"
        ids = ", ".join(label(f.id) for f in flows)
        why = {"timeout": "none found within the time limit"}.get(got.method, "none exists")
        raise FredUncolourable(
            f"level {level} ({where}, FRED_{m}({ports})): the conflict graph of flows {ids} "
            f"has no {m}-colouring ({why})",
            level,
            [f.id for f in flows],
        )
    middles: list[list[LocalFlow]] = [[] for _ in range(m)]
    for k, f in enumerate(flows):
        c = got.colours[k]
        out.colours[f.id].append(c)
        for p in f.inputs:
            s, q = _split(p, ports)
            name = f"{prefix}if" if s == r else f"{prefix}i{s}"
            st = out.states.setdefault(name, [[] for _ in range(m)])
            st[c].append(q)
        for p in f.outputs:
            s, q = _split(p, ports)
            name = f"{prefix}of" if s == r else f"{prefix}o{s}"
            st = out.states.setdefault(name, [[] for _ in range(1 if s == r else 2)])
            st[q] = [c]
        middles[c].append(LocalFlow(f.id, tuple(ins[k]), tuple(outs[k])))
    sub = r + odd
    for c in range(m):
        _route(middles[c], sub, m, f"{prefix}m{c}.", level + 1, out, exact, limit, label)
