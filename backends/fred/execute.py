"""Executing one phase's element states of a FRED_m(P), stage by stage.

`run_network` pushes a value from each input port through the elements' states
(`backends.fred.clos`, State): every element output becomes the sum (``add``) of the inputs
its state lists, level by level, into the middles and out of them. The values are opaque to
this module; the replay sums symbolic chunk contents tagged with their flow, and its ``add``
refuses to sum two flows (two flows on one µSwitch port). An element that sums an input
carrying nothing raises `ElementError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from backends.fred.clos import State
from backends.fred.errors import FredError

V = TypeVar("V")


class ElementError(FredError):
    """A state that cannot run: ``element`` names the µSwitch (``m1.i0``)."""

    def __init__(self, element: str, message: str) -> None:
        super().__init__(message)
        self.element = element


def _apply(
    name: str,
    state: State,
    inputs: Mapping[int, V],
    add: Callable[[str, V, V], V],
    strict: bool,
) -> dict[int, V]:
    out: dict[int, V] = {}
    for k, srcs in enumerate(state):
        acc: V | None = None
        if not strict and any(s not in inputs for s in srcs):
            continue
        for s in srcs:
            if s not in inputs:
                raise ElementError(name, f"output {k} takes input {s}, which carries nothing")
            acc = inputs[s] if acc is None else add(name, acc, inputs[s])
        if acc is not None:
            out[k] = acc
    return out


def run_network(
    states: Mapping[str, State],
    ports: int,
    m: int,
    inputs: Mapping[int, V],
    add: Callable[[str, V, V], V],
    prefix: str = "",
    strict: bool = True,
) -> dict[int, V]:
    """The values at the output ports of FRED_m(ports) given ``inputs`` per input port.
    ``add(element, a, b)`` sums two values meeting at ``element``. Not ``strict``, an
    element output whose inputs have not all arrived is left out instead of refused (for a
    switch whose inputs arrive in several passes)."""
    if ports <= 2:
        st = states.get(prefix + "x")
        return {} if st is None else _apply(prefix + "x", st, inputs, add, strict)
    r, odd = divmod(ports, 2)
    mid_in: list[dict[int, V]] = [{} for _ in range(m)]
    for s in range(r + odd):
        name = f"{prefix}if" if s == r else f"{prefix}i{s}"
        st = states.get(name)
        if st is None:
            continue
        local = {0: inputs[2 * s]} if s == r and 2 * s in inputs else {}
        if s < r:
            local = {q: inputs[2 * s + q] for q in (0, 1) if 2 * s + q in inputs}
        for c, v in _apply(name, st, local, add, strict).items():
            mid_in[c][s] = v
    mid_out = [
        run_network(states, r + odd, m, mid_in[c], add, f"{prefix}m{c}.", strict) for c in range(m)
    ]
    out: dict[int, V] = {}
    for s in range(r + odd):
        name = f"{prefix}of" if s == r else f"{prefix}o{s}"
        st = states.get(name)
        if st is None:
            continue
        local = {c: mid_out[c][s] for c in range(m) if s in mid_out[c]}
        for q, v in _apply(name, st, local, add, strict).items():
            out[2 * s + q] = v
    return out
