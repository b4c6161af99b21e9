"""collc topologies: immutable networks of NPUs and switches, built from spec strings, files and
networkx graphs, with routing and Hamiltonian cycles.

Spec grammar: `topologies.spec` and SPEC.md. Inside, sizes are bytes, times ns and bandwidths
bytes per ns.
"""

from topologies.build import from_networkx, load_topology_file, parse_topology
from topologies.errors import CollcError, SourcePos, SpecError, TopologyError
from topologies.hamiltonian import hamiltonian_cycle
from topologies.topology import Link, Topology

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
