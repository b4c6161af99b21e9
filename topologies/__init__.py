"""collc topologies: immutable networks of NPUs and switches, built from spec strings, files and
networkx graphs, with routing and Hamiltonian cycles.

Spec grammar: `topologies.spec` and SPEC.md. Inside, sizes are bytes, times ns and bandwidths
bytes per ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from topologies.build import from_networkx as from_networkx
    from topologies.build import load_topology_file as load_topology_file
    from topologies.build import parse_topology as parse_topology
    from topologies.errors import CollcError as CollcError
    from topologies.errors import SourcePos as SourcePos
    from topologies.errors import SpecError as SpecError
    from topologies.errors import TopologyError as TopologyError
    from topologies.hamiltonian import hamiltonian_cycle as hamiltonian_cycle
    from topologies.topology import Link as Link
    from topologies.topology import Topology as Topology

_LAZY: dict[str, str] = {
    "from_networkx": "topologies.build",
    "load_topology_file": "topologies.build",
    "parse_topology": "topologies.build",
    "CollcError": "topologies.errors",
    "SourcePos": "topologies.errors",
    "SpecError": "topologies.errors",
    "TopologyError": "topologies.errors",
    "hamiltonian_cycle": "topologies.hamiltonian",
    "Link": "topologies.topology",
    "Topology": "topologies.topology",
}
"""Where each public name lives; it is imported on first use, so importing one submodule
does not load them all (start-up time: `collc.cli` imports only what a command needs)."""

__all__ = [
    "CollcError",
    "Link",
    "SourcePos",
    "SpecError",
    "Topology",
    "TopologyError",
    "from_networkx",
    "hamiltonian_cycle",
    "load_topology_file",
    "parse_topology",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
