"""Workload ETs on disk: read any Chakra workload ET set, write the ones collc generates.

A workload folder written by collc holds ``workload.<npu>.et`` (one Chakra ET per NPU, as
ASTRA-sim's ``--workload-configuration <folder>/workload`` opens them), ``comm_groups.json``
(ASTRA-sim's ``--comm-group-configuration``, ``{"<id>": [npus]}``) and ``workload.json``
(collc's description: generator, model, parallelism, memory footprint). Attributes are
written with the types ASTRA-sim's feeders read (docs/workloads.md).

Reading takes a folder holding one ET set or a prefix (``wl/workload``), and the
communicator groups from ``--comm-groups`` or, when not given, the folder's
``comm_groups.json``. Every problem is a WorkloadError naming the file (and the node).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.framing import frame
from chakra_ir.et.reader import et_rank_files, read_et_file
from chakra_ir.et.schema import VERSION
from chakra_ir.et.trace import EtTrace
from chakra_ir.outdir import remove_stale_temporaries, replace_dir, terminate_as_exit, umask_mode
from topologies.errors import SourcePos
from topologies.groups import GroupsError, read_astra_groups
from workloads.model import NodeKind, WNode, Workload, WorkloadError

PREFIX = "workload"
GROUPS_FILE = "comm_groups.json"
DESCRIPTION = "workload.json"

_INT_ATTRS = ("num_ops", "tensor_size", "comm_type", "comm_size", "comm_src", "comm_dst")


def read_workload(location: str | os.PathLike[str], comm_groups: str | None = None) -> Workload:
    """The workload at ``location`` (a folder with one ET set, or a prefix) with its
    communicator groups (``comm_groups``: a JSON path; None: the folder's ``comm_groups.json``
    if there is one). Raises WorkloadError for unreadable files or attributes of the wrong
    type; `workloads.model.check_workload` checks the rest."""
    try:
        paths = et_rank_files(location)
    except EtDecodeError as e:
        raise WorkloadError(e.message, e.pos) from None
    ranks: list[list[WNode]] = []
    for p in paths:
        try:
            trace = read_et_file(p)
        except EtDecodeError as e:
            raise WorkloadError(e.message, e.pos) from None
        ranks.append(nodes_of(trace))
    folder = Path(location) if Path(location).is_dir() else Path(location).parent
    groups: dict[str, tuple[int, ...]] = {}
    gpath = Path(comm_groups) if comm_groups else folder / GROUPS_FILE
    if comm_groups or gpath.is_file():
        groups = read_group_names(gpath)
        for key, members in groups.items():
            if members[-1] >= len(paths):
                raise WorkloadError(
                    f"group {key!r} names NPU {members[-1]}, but the workload has "
                    f"{len(paths)} NPUs (0..{len(paths) - 1})",
                    SourcePos(str(gpath)),
                )
    meta: dict[str, object] = {}
    desc = folder / DESCRIPTION
    if desc.is_file():
        try:
            loaded = json.loads(desc.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise WorkloadError(f"cannot read the description: {e}", SourcePos(str(desc))) from None
        if isinstance(loaded, dict):
            meta = loaded
    return Workload(ranks, groups, [str(p) for p in paths], meta)


def read_group_names(path: Path) -> dict[str, tuple[int, ...]]:
    """ASTRA-sim's communicator-group JSON as ``{pg_name: NPUs ascending}`` (ASTRA-sim sorts
    each group; the key is the name a node's ``pg_name`` gives)."""
    try:
        g = read_astra_groups(path)
    except GroupsError as e:
        raise WorkloadError(e.message, e.pos) from None
    keys = sorted(json.loads(Path(path).read_text(encoding="utf-8")), key=int)
    out: dict[str, tuple[int, ...]] = {}
    for key, members in zip(keys, g.members, strict=True):
        if len(set(members)) != len(members):
            raise WorkloadError(f"{path}: group {key!r} names an NPU twice")
        out[str(int(key))] = tuple(sorted(members))
    return out


def nodes_of(t: EtTrace) -> list[WNode]:
    """The nodes of one ET file as `WNode`s (file order). Raises WorkloadError for an
    attribute of a type ASTRA-sim does not read (a float or string where it wants an
    integer, ``involved_dim`` that is not a bool list, ``pg_name`` that is not a string)."""
    n = len(t)
    ints: dict[str, list[int | None]] = {}
    for name in (*_INT_ATTRS, "comm_tag", "comm_priority", "is_cpu_op"):
        col = t.attrs.get(name)
        if col is None:
            ints[name] = [None] * n
            continue
        values, present = col.int_values(n)
        row: list[int | None] = [
            v if p else None for v, p in zip(values.tolist(), present.tolist(), strict=True)
        ]
        ok = col.integer_mask()
        for j in np.flatnonzero(~ok).tolist():
            v = col.value(j)
            node = int(col.nodes[j])
            if isinstance(v, int) and not isinstance(v, bool):
                row[node] = v  # a uint64 beyond int64
            elif v is not None:
                raise WorkloadError(
                    f"node {int(t.ids[node])}: attribute {name} is {type(v).__name__}, "
                    "ASTRA-sim reads an integer",
                    SourcePos(t.file, offset=int(t.offsets[node])),
                )
        ints[name] = row
    pg = [""] * n
    col = t.attrs.get("pg_name")
    if col is not None:
        for j, node in enumerate(col.nodes.tolist()):
            v = col.value(j)
            if not isinstance(v, str):
                raise WorkloadError(
                    f"node {int(t.ids[node])}: pg_name is {type(v).__name__}, ASTRA-sim reads "
                    "a string",
                    SourcePos(t.file, offset=int(t.offsets[node])),
                )
            pg[node] = v
    dims: list[tuple[bool, ...] | None] = [None] * n
    col = t.attrs.get("involved_dim")
    if col is not None:
        for j, node in enumerate(col.nodes.tolist()):
            v = col.value(j)
            if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
                raise WorkloadError(
                    f"node {int(t.ids[node])}: involved_dim must be a bool_list (ASTRA-sim "
                    "exits otherwise)",
                    SourcePos(t.file, offset=int(t.offsets[node])),
                )
            dims[node] = tuple(v)
    ids = t.ids.tolist()
    data = _csr_rows(t.data_dep_offsets.tolist(), t.data_deps.tolist())
    ctrl = _csr_rows(t.ctrl_dep_offsets.tolist(), t.ctrl_deps.tolist())
    names = t.names()
    cpu = ints["is_cpu_op"]
    return [
        WNode(
            ids[i],
            names[i],
            kind,
            data[i],
            ctrl[i],
            dur,
            bool(cpu[i]),
            ints["num_ops"][i],
            ints["tensor_size"][i],
            ints["comm_type"][i],
            ints["comm_size"][i],
            pg[i],
            dims[i],
            ints["comm_src"][i],
            ints["comm_dst"][i],
            ints["comm_tag"][i],
            ints["comm_priority"][i] or 0,
        )
        for i, (kind, dur) in enumerate(zip(t.types.tolist(), t.durations.tolist(), strict=True))
    ]


def _csr_rows(offsets: list[int], values: list[int]) -> list[tuple[int, ...]]:
    if not values:
        return [()] * (len(offsets) - 1)
    return [tuple(values[a:b]) for a, b in zip(offsets, offsets[1:], strict=False)]


def encode_rank(nodes: list[WNode], metadata: dict[str, str] | None = None) -> bytes:
    """One NPU's ET file: a GlobalMetadata (version set, collc's attributes), then the nodes,
    each attribute with the type ASTRA-sim reads."""
    meta = pb.GlobalMetadata(version=VERSION)
    for k, v in (metadata or {}).items():
        meta.attr.add(name=k, string_val=v)
    parts = [frame(meta.SerializeToString())]
    for n in nodes:
        m = pb.Node(id=n.id, name=n.name, type=n.kind)  # type: ignore[arg-type]
        m.data_deps.extend(n.data_deps)
        m.ctrl_deps.extend(n.ctrl_deps)
        m.duration_micros = n.duration_micros
        m.attr.add(name="is_cpu_op", bool_val=n.is_cpu_op)
        if n.num_ops is not None:
            m.attr.add(name="num_ops", int64_val=n.num_ops)
        if n.tensor_size is not None:
            m.attr.add(name="tensor_size", uint64_val=n.tensor_size)
        if n.comm_type is not None:
            m.attr.add(name="comm_type", int64_val=n.comm_type)
        if n.comm_size is not None:
            m.attr.add(name="comm_size", int64_val=n.comm_size)
        if n.kind == NodeKind.COLL:
            m.attr.add(name="pg_name", string_val=n.pg_name)
            if n.involved_dim is not None:
                m.attr.add(name="involved_dim").bool_list.values.extend(n.involved_dim)
        for name in ("comm_src", "comm_dst", "comm_tag"):
            v = getattr(n, name)
            if v is not None:
                m.attr.add(name=name, int32_val=v)
        if n.comm_priority:
            m.attr.add(name="comm_priority", int32_val=n.comm_priority)
        parts.append(frame(m.SerializeToString()))
    return b"".join(parts)


def write_workload(w: Workload, out: str | os.PathLike[str]) -> list[Path]:
    """Write ``w`` into the folder ``out`` (ET files, ``comm_groups.json``, ``workload.json``)
    through a temporary folder renamed into place: ``out`` is never half-written. Refuses to
    replace a non-empty folder that is not a collc workload folder. Returns the files."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise WorkloadError(f"{out} exists and is not a folder")
        if any(out.iterdir()) and not (out / DESCRIPTION).exists():
            raise WorkloadError(
                f"{out} exists, is not empty and is not a collc workload folder; not replacing it"
            )
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    names = [f"{PREFIX}.{r}.et" for r in range(w.num_npus)]
    with terminate_as_exit():
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=parent))
        os.chmod(tmp, umask_mode(0o777))
        try:
            for r, nodes in enumerate(w.ranks):
                (tmp / names[r]).write_bytes(encode_rank(nodes, {"collc_workload": "1"}))
            files = list(names)
            if w.groups:
                (tmp / GROUPS_FILE).write_text(
                    json.dumps({k: list(v) for k, v in w.groups.items()}, indent=1) + "\n"
                )
                files.append(GROUPS_FILE)
            (tmp / DESCRIPTION).write_text(json.dumps(w.metadata, indent=2) + "\n")
            files.append(DESCRIPTION)
            replace_dir(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return [out / f for f in files]
