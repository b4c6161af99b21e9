"""The ASTRA-sim bundle: what goes in it (`plan_bundle`) and how it is written (`write_bundle`).

Layout of a bundle folder (every path relative to it; ``run.sh`` runs ASTRA-sim from it, and
ASTRA-sim resolves the workload prefix and the custom-collective prefix relative to its working
directory):

``collective/<name>.<rank>.et``  the Program as per-rank custom-collective ETs
``workload/<name>.<npu>.et``     the one-collective workload, one file per NPU of the network
``network.yml``                  the analytical network (`backends.astrasim.network`)
``system.json``                  the system configuration, naming ``collective/<name>``
``remote_memory.json``           ``{"memory-type": "NO_MEMORY_EXPANSION"}``
``comm_group.json``              only when the ranks are a subset of the NPUs: ``{"1": [npus]}``
``process_groups.json``          only for a program split into process groups: the groups' NPUs
                                 in ASTRA-sim's communicator-group format (for workloads)
``run.sh``, ``README.txt``       the command line and what ASTRA-sim reports
``collc_bundle.json``            what collc wrote (marks the folder as a collc ASTRA-sim bundle)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from backends.astrasim.errors import AstraExportError
from backends.astrasim.network import AstraDimension, astra_dimensions, network_yaml
from backends.astrasim.options import AstraOptions
from backends.astrasim.workload import (
    collective_workload,
    idle_workload,
    workload_comm_size,
)
from chakra_ir.collective import Collective, CollectiveKind, collective_to_dict
from chakra_ir.et import EtEncodeError, write_et_files
from chakra_ir.et.layout import check_encodable
from chakra_ir.outdir import atomic_folder, collc_version
from chakra_ir.program import Program
from topologies.atomic import umask_mode
from topologies.topology import Topology

BUNDLE_MARKER = "collc_bundle.json"
"""The file that marks a folder as a collc ASTRA-sim bundle (which a new export may replace)."""
BUNDLE_FORMAT = 1
BINARY = "AstraSim_Analytical_Congestion_Unaware"
COLLECTIVE_DIR = "collective"
WORKLOAD_DIR = "workload"
NETWORK = "network.yml"
SYSTEM = "system.json"
REMOTE_MEMORY = "remote_memory.json"
COMM_GROUP = "comm_group.json"
PROCESS_GROUPS = "process_groups.json"
RUN = "run.sh"
README = "README.txt"
GROUP_ID = "1"
"""The communicator group id (``pg_name``) used when the ranks are a subset of the NPUs."""

CUSTOM_KEYS: dict[CollectiveKind, str] = {
    CollectiveKind.ALLREDUCE: "all-reduce-implementation-custom",
    CollectiveKind.ALLGATHER: "all-gather-implementation-custom",
    CollectiveKind.REDUCE_SCATTER: "reduce-scatter-implementation-custom",
    CollectiveKind.ALLTOALL: "all-to-all-implementation-custom",
}
"""collc kinds ASTRA-sim can run as a custom collective -> the system JSON key."""

NATIVE_KEYS = (
    "all-reduce-implementation",
    "reduce-scatter-implementation",
    "all-gather-implementation",
    "all-to-all-implementation",
)


@dataclass(frozen=True)
class BundlePlan:
    """Everything a bundle holds, decided before anything is written.

    ``files`` maps a path relative to the bundle to its content, for every file except the
    custom-collective ETs, which `write_bundle` streams from ``program`` (``collective_prefix``
    names them, with ``chunk_bytes`` and ``reduce_micros``). ``group`` is the communicator
    group's NPUs in rank order, empty when the ranks are all NPUs in order.
    """

    program: Program
    options: AstraOptions
    dims: tuple[AstraDimension, ...]
    name: str
    collective_prefix: str
    workload_prefix: str
    group: tuple[int, ...]
    comm_size: int
    files: dict[str, bytes] = field(default_factory=dict)


def _refuse_collective(program: Program) -> None:
    c = program.collective
    if c.kind in CUSTOM_KEYS:
        return
    supported = ", ".join(k.value for k in CUSTOM_KEYS)
    if c.kind is CollectiveKind.CUSTOM:
        what = f"a custom collective{f' ({c.name})' if c.name else ''}"
    else:
        what = c.kind.value
    raise AstraExportError(
        f"ASTRA-sim has no custom-collective key for {what} (it runs custom ETs for "
        f"{supported} only)"
    )


def _short(npus: list[int]) -> str:
    if len(npus) <= 8:
        return str(npus)
    return "[" + ", ".join(map(str, npus[:6])) + f", ...] ({len(npus)} NPUs)"


def _group(program: Program, topology: Topology) -> tuple[int, ...]:
    """The communicator group, or () when rank r runs on NPU r for every NPU."""
    c = program.collective
    npus = [c.npu(r) for r in range(c.num_ranks)]
    n = topology.num_npus
    outside = [p for p in npus if p >= n]
    if outside:
        raise AstraExportError(
            f"placement puts a rank on NPU {outside[0]}, but topology {topology.spec} has NPUs "
            f"0..{n - 1}"
        )
    if npus == list(range(n)):
        return ()
    if any(b <= a for a, b in pairwise(npus)):
        raise AstraExportError(
            f"placement {_short(npus)} is not ascending: ASTRA-sim runs a custom collective by "
            f"position in its communicator group, and its versions disagree on whether that "
            f"order is the group's or the sorted one; only identity and ascending placements "
            f"are exported"
        )
    if len(npus) < 2:
        raise AstraExportError(
            f"placement {_short(npus)} is a communicator group of {len(npus)} NPU; ASTRA-sim needs at "
            f"least 2"
        )
    return tuple(npus)


def _stem(program: Program, options: AstraOptions) -> str:
    return options.name or program.collective.kind.value


def _number(x: float) -> int | float:
    """``x`` as a JSON integer when it is one (as ASTRA-sim's shipped files write it)."""
    return int(x) if float(x).is_integer() else float(x)


def system_config(kind: CollectiveKind, num_dims: int, prefix: str, options: AstraOptions) -> Any:
    """The system JSON (a dict in key order) running ``kind`` as the custom collective of
    ``prefix`` (a path relative to ASTRA-sim's working directory), with native
    ``options.native_implementation`` lists of one entry per dimension for the others."""
    if kind not in CUSTOM_KEYS:
        raise AstraExportError(f"ASTRA-sim has no custom-collective key for {kind.value}")
    cfg: dict[str, Any] = {
        "scheduling-policy": options.scheduling_policy,
        "collective-optimization": options.collective_optimization,
        "endpoint-delay": options.endpoint_delay_ns,
        "active-chunks-per-dimension": options.active_chunks_per_dimension,
        "preferred-dataset-splits": options.preferred_dataset_splits,
        "local-mem-bw": _number(options.local_mem_bw_gb_per_s),
    }
    for key in NATIVE_KEYS:
        cfg[key] = [options.native_implementation] * num_dims
    cfg[CUSTOM_KEYS[kind]] = [prefix]
    return cfg


def run_command(workload_prefix: str, *, comm_group: bool, binary: str = BINARY) -> list[str]:
    """The ASTRA-sim command line, run from the bundle folder."""
    cmd = [
        binary,
        f"--workload-configuration={workload_prefix}",
        f"--system-configuration={SYSTEM}",
        f"--network-configuration={NETWORK}",
        f"--remote-memory-configuration={REMOTE_MEMORY}",
    ]
    if comm_group:
        cmd.append(f"--comm-group-configuration={COMM_GROUP}")
    return cmd


def _run_sh(plan: BundlePlan) -> str:
    args = run_command(plan.workload_prefix, comm_group=bool(plan.group))[1:]
    lines = [
        "#!/bin/sh",
        "# Runs this bundle in ASTRA-sim's congestion-unaware analytical backend. Every path is",
        "# relative to this folder, so the script first changes into it. Set ASTRA_SIM to the",
        f"# binary's path if {BINARY} is not on PATH.",
        "set -e",
        'cd "$(dirname "$0")"',
        f'exec "${{ASTRA_SIM:-{BINARY}}}" \\',
    ]
    lines += [f"  {a} \\" for a in args[:-1]]
    lines.append(f"  {args[-1]}")
    return "\n".join(lines) + "\n"


def _readme(plan: BundlePlan, topology: Topology) -> str:
    p, o = plan.program, plan.options
    c = p.collective
    cmd = " ".join(run_command(plan.workload_prefix, comm_group=bool(plan.group)))
    dims = ", ".join(f"{d.topology} {d.npus_count}" for d in plan.dims)
    ranks = (
        f"ranks 0..{c.num_ranks - 1} on NPUs {list(plan.group)} (communicator group "
        f'"{GROUP_ID}" in {COMM_GROUP}; NPUs outside it run a 1 ns idle node)'
        if plan.group
        else f"rank r on NPU r, all {c.num_ranks} NPUs"
    )
    size = c.size_chunks * o.chunk_bytes
    ag = (
        f" ASTRA-sim's all-gather size is the per-rank input, so the workload node says "
        f"{plan.comm_size} bytes."
        if c.kind is CollectiveKind.ALLGATHER
        else ""
    )
    group_note = (
        [
            "",
            "Communicator group: ASTRA-sim opens collective/<name>.<position in the group>.et",
            "and maps the ETs' comm_src/comm_dst through the group's NPU list. ASTRA-sim",
            "versions before the custom-collective work (2024) run every group smaller than",
            "the system as a native ring instead; use a recent master.",
        ]
        if plan.group
        else []
    )
    version_note = (
        [
            "",
            "Reduce-scatter: ASTRA-sim reads reduce-scatter-implementation-custom from commit",
            "a84fa60 (Nov 2025, 'Create CollectiveImplLookup') on. Older builds ignore the key",
            "without a word and run their native reduce-scatter (ring here), so their time is",
            "not this program's.",
        ]
        if c.kind is CollectiveKind.REDUCE_SCATTER
        else []
    )
    reductions = (
        [f"Reductions are COMP nodes of {o.reduce_micros} us."]
        if o.reduce_micros
        else [
            "Reductions take 0 us, so a reducing receive has no reduction node (ASTRA-sim",
            "runs a 0 us COMP node for 1 ns).",
        ]
    )
    lines = [
        f"ASTRA-sim bundle written by collc {collc_version()}",
        "",
        f"Program:    {p.name or '(unnamed)'}",
        f"Collective: {c.kind.value}, {c.num_ranks} ranks, {c.chunks_per_rank} chunk(s) per rank,"
        f" {size} bytes (collc's size: the largest buffer), {o.chunk_bytes} bytes per chunk." + ag,
        f"Placement:  {ranks}",
        f"Topology:   {topology.spec}",
        f"Network:    [{dims}] (network.yml; bandwidth in GB/s of 2^30 bytes)",
        "",
        "Run from this folder (run.sh does it from anywhere):",
        "",
        f"  {cmd}",
        "",
        f"Use {BINARY}. AstraSim_Analytical_Congestion_Aware reads the",
        "same files but, on the analytical backend's Nov-2024 main, supports only 1-dimensional",
        "networks (it aborts with 'only support 1-dim topology'), and it models store-and-forward",
        "hops with per-link contention, so its times differ even where it runs. Built from the",
        "backend's public will/congestion-multidim branch it runs several dimensions too:",
        "ASTRA_SIM=<that binary> ./run.sh.",
        "",
        "Which collc model predicts which binary (`collc simulate` on the same program):",
        "",
        f"  --model analytical   {BINARY} (run.sh's default)",
        "  --model astra-aware  AstraSim_Analytical_Congestion_Aware, built with the network",
        "                       backend's will/congestion-multidim branch",
        "",
        "Both predict the binary's time for these files only; a note in `collc simulate`'s",
        "output says when ASTRA-sim would not run them (refused with --strict).",
        "",
        "What ASTRA-sim reports: one line per NPU,",
        "",
        "  sys[i] finished, T cycles, exposed communication E cycles",
        "",
        "with 1 cycle = 1 ns. The workload is the collective alone, so the largest T is the",
        "collective's simulated time.",
        "",
        "How ASTRA-sim runs it: system.json names the custom collective",
        f'  "{CUSTOM_KEYS[c.kind]}": ["{plan.collective_prefix}"]',
        "(a path prefix, relative to the working directory), so ASTRA-sim opens",
        f"{plan.collective_prefix}.<rank>.et for every rank and ignores the workload node's",
        "comm_size (each ET message states its own size: these ETs are built for this size",
        "only). Every ready node of a custom ET issues at once.",
        *reductions,
        f"The native *-implementation lists ({o.native_implementation} per dimension) serve",
        "any other collective.",
        "ASTRA-sim's congestion-unaware model charges a message hops x latency + bytes /",
        "bandwidth of the LOWEST dimension in which its NPUs differ, without contention;",
        "ASTRA-sim writes its logs to ./log.",
        *group_note,
        *version_note,
        *_process_groups_note(c),
    ]
    return "\n".join(lines) + "\n"


def _process_groups_note(c: Collective) -> list[str]:
    if not c.groups:
        return []
    return [
        "",
        f"Process groups: the program runs {c.kind.value} in {c.num_groups} groups of "
        f"{c.group_size} NPUs at once",
        "(collc's groups share the network, as in a training step). Each NPU's custom ET holds",
        "its part of its own group's algorithm and talks only to its group, so ASTRA-sim runs",
        "every group at once as one custom collective over these NPUs, on every version that",
        f"runs custom collectives. {PROCESS_GROUPS} lists the groups in ASTRA-sim's",
        "--comm-group-configuration format, for workloads that call the collective per group;",
        "run.sh does not need it.",
    ]


def _marker(plan: BundlePlan, topology: Topology, files: list[str]) -> dict[str, Any]:
    c = plan.program.collective
    return {
        "format": BUNDLE_FORMAT,
        "target": "astra-sim",
        "collc_version": collc_version(),
        "program": plan.program.name,
        "collective": collective_to_dict(c),
        "topology": topology.spec,
        "chunk_bytes": plan.options.chunk_bytes,
        "reduce_micros": plan.options.reduce_micros,
        "size_bytes": c.size_chunks * plan.options.chunk_bytes,
        "workload_comm_size": plan.comm_size,
        "collective_prefix": plan.collective_prefix,
        "workload_prefix": plan.workload_prefix,
        "comm_group": list(plan.group),
        "command": run_command(plan.workload_prefix, comm_group=bool(plan.group)),
        "files": files,
    }


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()


def plan_bundle(program: Program, topology: Topology, options: AstraOptions) -> BundlePlan:
    """Check that the bundle can be written and decide its content; `AstraExportError` for
    every refusal (nothing is written here)."""
    refusal = program.flow_refusal(
        "an ASTRA-sim bundle", "ASTRA-sim's network backends have no reducing switches"
    )
    if refusal:
        raise AstraExportError(refusal)
    _refuse_collective(program)
    dims = astra_dimensions(topology)
    group = _group(program, topology)
    c = program.collective
    try:
        check_encodable(program, options.chunk_bytes, options.reduce_micros)
    except EtEncodeError as e:
        raise AstraExportError(
            f"the program cannot be written as custom-collective ETs: {e.message}"
        ) from None
    name = _stem(program, options)
    coll_prefix = f"{COLLECTIVE_DIR}/{name}"
    wl_prefix = f"{WORKLOAD_DIR}/{name}"
    comm_size = workload_comm_size(c, options.chunk_bytes)
    if comm_size >= 1 << 63:
        raise AstraExportError(f"the workload's comm_size {comm_size} does not fit in int64")
    plan = BundlePlan(
        program=program,
        options=options,
        dims=dims,
        name=name,
        collective_prefix=coll_prefix,
        workload_prefix=wl_prefix,
        group=group,
        comm_size=comm_size,
    )
    files = plan.files
    files[NETWORK] = network_yaml(topology).encode()
    files[SYSTEM] = _json(system_config(c.kind, len(dims), coll_prefix, options))
    files[REMOTE_MEMORY] = _json({"memory-type": "NO_MEMORY_EXPANSION"})
    if group:
        files[COMM_GROUP] = _json({GROUP_ID: list(group)})
    if c.groups:
        files[PROCESS_GROUPS] = _json(
            {str(g + 1): [c.npu(r) for r in ranks] for g, ranks in enumerate(c.groups)}
        )
    members = set(group) if group else set(range(topology.num_npus))
    node_name = f"{c.kind.value}_{comm_size}B"
    busy = collective_workload(
        c.kind,
        comm_size,
        name=node_name,
        num_dims=len(dims),
        pg_name=GROUP_ID if group else "",
    )
    idle = idle_workload()
    for npu in range(topology.num_npus):
        files[f"{wl_prefix}.{npu}.et"] = busy if npu in members else idle
    files[RUN] = _run_sh(plan).encode()
    files[README] = _readme(plan, topology).encode()
    return plan


def write_bundle(plan: BundlePlan, topology: Topology, out_dir: Path | str) -> list[Path]:
    """Write ``plan`` into ``out_dir`` atomically and return the files written (paths inside
    ``out_dir``, sorted).

    Through the one output-folder writer (`chakra_ir.outdir.atomic_folder`): the bundle is
    written into a temporary folder next to ``out_dir`` and renamed into place. An existing
    ``out_dir`` is replaced only when it is empty or holds a previous collc ASTRA-sim bundle
    (``collc_bundle.json``), and only once the new bundle is complete; otherwise
    `AstraExportError`. On any failure (SIGTERM included) nothing is left behind, not even
    parent folders this call created.
    """
    given = Path(out_dir)
    with atomic_folder(given, BUNDLE_MARKER, "a collc ASTRA-sim bundle", AstraExportError) as tmp:
        mode = umask_mode(0o755) | 0o700
        o = plan.options
        et_dir, stem = plan.collective_prefix.split("/")
        write_et_files(
            plan.program, tmp / et_dir, stem, o.chunk_bytes, reduce_micros=o.reduce_micros
        )
        for rel, data in plan.files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (tmp / RUN).chmod(mode)
        rels = sorted(str(f.relative_to(tmp).as_posix()) for f in tmp.rglob("*") if f.is_file())
        rels = sorted([*rels, BUNDLE_MARKER])
        (tmp / BUNDLE_MARKER).write_bytes(_json(_marker(plan, topology, rels)))
    return [given / r for r in rels]
