"""The ASTRA-sim exporter: a Program as a bundle that ASTRA-sim's analytical backend runs as is.

`export(program, topology, out_dir, options)` writes into ``out_dir``:

- ``collective/<name>.<rank>.et``: the Program's per-rank custom-collective ETs
  (`chakra_ir.et.write_et_files`, messages of ``count x options.chunk_bytes`` bytes,
  reductions of ``options.reduce_micros`` µs);
- ``workload/<name>.<npu>.et``: a workload of one COMM_COLL_NODE per NPU
  (`backends.astrasim.workload`; all-gather's ``comm_size`` is the per-rank input);
- ``network.yml``: the analytical network (`backends.astrasim.network` states the mapping:
  Ring / FullyConnected / Switch per dimension, bandwidth in GB/s of 2^30 bytes, per-link
  latency in ns, a Switch's latency being its per-link latency);
- ``system.json``: scheduling, chunking and native ``*-implementation`` lists, and the custom
  key of the collective (``all-reduce-implementation-custom`` ...) holding exactly one prefix,
  ``collective/<name>``, relative to the bundle folder;
- ``remote_memory.json`` (no memory expansion), ``comm_group.json`` when the ranks are an
  ascending subset of the NPUs, ``run.sh`` (the command, run from the bundle folder),
  ``README.txt`` and ``collc_bundle.json`` (what was written).

``<name>`` is ``options.name``, else the collective's kind (``allreduce``, ``allgather``,
``reduce_scatter``, ``alltoall``). Run with ``AstraSim_Analytical_Congestion_Unaware``
(see README.txt); the command is::

    AstraSim_Analytical_Congestion_Unaware --workload-configuration=workload/<name> \\
        --system-configuration=system.json --network-configuration=network.yml \\
        --remote-memory-configuration=remote_memory.json \\
        [--comm-group-configuration=comm_group.json]

Refusals raise `AstraExportError` (a `CollcError`, one line) before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from backends.astrasim.bundle import (
    BINARY,
    BUNDLE_MARKER,
    CUSTOM_KEYS,
    BundlePlan,
    plan_bundle,
    run_command,
    system_config,
    write_bundle,
)
from backends.astrasim.errors import AstraExportError
from backends.astrasim.network import (
    AstraDimension,
    astra_bandwidth,
    astra_dimensions,
    network_yaml,
)
from backends.astrasim.options import AstraOptions
from backends.astrasim.workload import (
    COMM_TYPES,
    collective_workload,
    idle_workload,
    workload_comm_size,
)
from chakra_ir.program import Program
from topologies.topology import Topology

__all__ = [
    "BINARY",
    "BUNDLE_MARKER",
    "COMM_TYPES",
    "CUSTOM_KEYS",
    "AstraDimension",
    "AstraExportError",
    "AstraOptions",
    "BundlePlan",
    "astra_bandwidth",
    "astra_dimensions",
    "collective_workload",
    "export",
    "idle_workload",
    "network_yaml",
    "plan_bundle",
    "run_command",
    "system_config",
    "workload_comm_size",
    "write_bundle",
]


def export(
    program: Program, topology: Topology, out_dir: Path, options: AstraOptions
) -> list[Path]:
    """Write the ASTRA-sim bundle of ``program`` on ``topology`` into ``out_dir``; return every
    file written (paths inside ``out_dir``, sorted).

    ``program`` should have passed `chakra_ir.verify.verify`; it is never mutated.
    ``options.chunk_bytes`` is the manifest's chunk size (`AstraOptions.from_manifest`).

    Raises `AstraExportError` (nothing written) for: a collective without an ASTRA-sim
    custom-collective key (reduce, gather, scatter, broadcast, a custom collective); a topology
    that is not a stack of Ring / FullyConnected / Switch dimensions (mesh lines longer than 2,
    one-way rings, FRED, graphs, link-list files), one with failed links, or one whose links of
    a dimension differ in bandwidth or latency; a placement that is neither rank r on NPU r for
    all NPUs nor an ascending list of at least 2 NPUs; an ``out_dir`` that exists, is not
    empty and is not a collc ASTRA-sim bundle. Everything is written into a temporary folder
    and renamed into ``out_dir``, replacing a previous bundle only once the new one is
    complete; any failure leaves nothing behind.
    """
    if not isinstance(options, AstraOptions):
        raise AstraExportError(
            "ASTRA-sim export needs AstraOptions (at least chunk_bytes, the manifest's)"
        )
    plan = plan_bundle(program, topology, options)
    return write_bundle(plan, topology, Path(out_dir))
