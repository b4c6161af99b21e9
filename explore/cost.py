"""LIBRA's linear network cost model (docs/libra.md, section 3).

Each dimension belongs to a cost *level* (LIBRA's ``CostDimension``: InterChiplet,
InterPackage, InterNode, InterPod, or any name a file defines) whose elements have a unit cost
in dollars per GB/s (``Link``, ``Switch``, ``Nic``). A ring or fully connected dimension pays
for its links only, a switch dimension for links, NICs and switch ports. Summed over every
link of the machine, dimension d costs ``N * bw[d] * unit[d]`` (N NPUs, ``bw`` per NPU in
GB/s), so the whole network costs ``N * sum_d bw[d] * unit[d]`` (`CostModel.cost`), whatever
the dimension's size: a ring's ``2p`` links of ``bw/2``, a fully connected group's
``p(p-1)`` links of ``bw/(p-1)`` and a switch's ``p`` ports of ``bw`` all carry ``p * bw``.

Files are LIBRA's cost-model YAML: a mapping from level to a mapping from element to unit
cost. collc adds one optional key, ``Dimensions``: the level of each dimension, innermost
first (LIBRA takes them from its network file's ``CostDimension``). An element a level does
not price costs 0 (LIBRA's artifact refuses a switch level without ``Nic``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from explore.network import ExploreError, Network
from topologies.errors import SourcePos

ELEMENTS = ("Link", "Switch", "Nic", "Npu")
"""LIBRA's cost elements (``Npu`` is parsed and never charged, as in LIBRA)."""

DEFAULT_UNITS: dict[str, dict[str, float]] = {
    "InterChiplet": {"Link": 2.0},
    "InterPackage": {"Link": 4.0, "Switch": 13.0},
    "InterNode": {"Link": 4.0, "Switch": 13.0},
    "InterPod": {"Link": 7.8, "Switch": 18.0, "Nic": 31.6},
}
"""LIBRA's shipped unit costs ($ per GB/s), without the 1e-5 offsets its files add to break
ties."""

DEFAULT_LEVELS = ("InterChiplet", "InterPackage", "InterNode", "InterPod")
"""Without a file, a network of n <= 4 dimensions takes the last n levels, innermost first."""


@dataclass(frozen=True)
class CostModel:
    """Unit costs per level (``units[level][element]``, $ per GB/s) and the level of each
    dimension (``levels``, innermost first). ``source`` names where it came from."""

    units: Mapping[str, Mapping[str, float]]
    levels: tuple[str, ...]
    source: str = "LIBRA's shipped unit costs"

    def unit_costs(self, net: Network) -> tuple[float, ...]:
        """Per dimension, $ per GB/s of one NPU's bandwidth: Link, plus Switch and Nic for a
        switch dimension."""
        if len(self.levels) != net.ndims:
            raise ExploreError(
                f"{self.source}: {len(self.levels)} cost levels for a network of "
                f"{net.ndims} dimensions ({net.label()})"
            )
        out = []
        for d, level in zip(net.dims, self.levels, strict=True):
            if level not in self.units:
                known = ", ".join(self.units)
                raise ExploreError(f"{self.source}: no cost level {level!r} (has {known})")
            u = self.units[level]
            c = u.get("Link", 0.0)
            if d.kind == "switch":
                c += u.get("Switch", 0.0) + u.get("Nic", 0.0)
            out.append(c)
        return tuple(out)

    def cost(self, net: Network, bw: Sequence[float]) -> float:
        """The network's cost in $ for per-NPU bandwidths ``bw`` (GB/s)."""
        units = self.unit_costs(net)
        return net.num_npus * sum(b * u for b, u in zip(bw, units, strict=True))


def default_cost_model(net: Network) -> CostModel:
    """LIBRA's shipped unit costs, levels by `DEFAULT_LEVELS`; ExploreError beyond 4 dims."""
    if net.ndims > len(DEFAULT_LEVELS):
        raise ExploreError(
            f"{net.label()} has {net.ndims} dimensions; the default cost model prices at most "
            f"{len(DEFAULT_LEVELS)}: give --cost-model with a Dimensions list"
        )
    return CostModel(DEFAULT_UNITS, DEFAULT_LEVELS[len(DEFAULT_LEVELS) - net.ndims :])


def read_cost_model(path: str | Path, levels: Sequence[str] | None = None) -> CostModel:
    """A cost model from LIBRA's YAML (plus collc's optional ``Dimensions`` key). ``levels``
    (from LIBRA's network file) take the place of ``Dimensions``. Errors name the file, line
    and column."""
    from topologies.files import YamlDocument

    name = str(path)
    doc = YamlDocument(name, Path(path).read_text(encoding="utf-8"))
    data = doc.data
    if not isinstance(data, dict) or not data:
        raise ExploreError("expected a mapping from cost level to unit costs", doc.pos(()))
    units: dict[str, dict[str, float]] = {}
    dims: tuple[str, ...] | None = None
    for level, body in data.items():
        key = (str(level),)
        if level == "Dimensions":
            if not isinstance(body, list) or not all(isinstance(x, str) for x in body):
                raise doc.error(key, "expected a list of cost-level names")
            dims = tuple(body)
            continue
        if not isinstance(body, dict):
            raise doc.error(key, "expected a mapping from element (Link, Switch, Nic) to $/GB/s")
        units[str(level)] = {}
        for element, value in body.items():
            ekey = (*key, str(element))
            if element not in ELEMENTS:
                raise doc.error(
                    ekey,
                    f"unknown element {element!r} (expected {', '.join(ELEMENTS)})",
                    at_key=True,
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise doc.error(ekey, f"unit cost {value!r} is not a positive number")
            units[str(level)][str(element)] = float(value)
    chosen = tuple(levels) if levels is not None else dims
    if chosen is None:
        chosen = tuple(units)
    for lv in chosen:
        if lv not in units:
            raise ExploreError(
                f"cost level {lv!r} is not defined (the file defines {', '.join(units)})",
                SourcePos(file=name),
            )
    return CostModel(units, chosen, source=name)
