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
from pathlib import Path

from google.protobuf.message import DecodeError

from backends.astrasim.workload import WorkloadAttr, workload_metadata, workload_node
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.framing import load_et_bytes, split_frames
from chakra_ir.et.reader import et_rank_files
from chakra_ir.outdir import atomic_folder
from topologies.errors import SourcePos
from topologies.groups import GroupsError, read_astra_groups
from topologies.jsonfile import load_json
from workloads.model import NodeKind, WNode, Workload, WorkloadError

PREFIX = "workload"
GROUPS_FILE = "comm_groups.json"
DESCRIPTION = "workload.json"

_INT_NAMES = frozenset(
    {
        "num_ops",
        "tensor_size",
        "comm_type",
        "comm_size",
        "comm_src",
        "comm_dst",
        "comm_tag",
        "comm_priority",
        "is_cpu_op",
    }
)


def read_workload(location: str | os.PathLike[str], comm_groups: str | None = None) -> Workload:
    """The workload at ``location`` (a folder with one ET set, or a prefix) with its
    communicator groups (``comm_groups``: a JSON path; None: the folder's ``comm_groups.json``
    if there is one). Raises WorkloadError for unreadable files or attributes of the wrong
    type; `workloads.model.check_workload` checks the rest."""
    try:
        paths = et_rank_files(location)
    except EtDecodeError as e:
        raise WorkloadError(e.message, e.pos) from None
    cache: dict[bytes, WNode] = {}
    ranks = [read_rank(p, cache) for p in paths]
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
    warnings: list[str] = []
    desc = folder / DESCRIPTION
    if desc.is_file():
        # Only a description (model, parallelism, memory): the run does not need it.
        try:
            loaded = load_json(desc, WorkloadError)
        except WorkloadError as e:
            loaded = None
            warnings.append(f"{e}; the workload runs without its description")
        if isinstance(loaded, dict):
            meta = loaded
        elif loaded is not None:
            warnings.append(f"{desc}: not a JSON object; the workload runs without it")
    return Workload(ranks, groups, [str(p) for p in paths], meta, warnings)


def read_group_names(path: Path) -> dict[str, tuple[int, ...]]:
    """ASTRA-sim's communicator-group JSON as ``{pg_name: NPUs ascending}`` (ASTRA-sim sorts
    each group; the key is the name a node's ``pg_name`` gives)."""
    try:
        g = read_astra_groups(path)
    except GroupsError as e:
        raise WorkloadError(e.message, e.pos) from None
    out: dict[str, tuple[int, ...]] = {}
    for gid, members in zip(g.ids, g.members, strict=True):
        if len(set(members)) != len(members):
            raise WorkloadError(f"{path}: group '{gid}' names an NPU twice")
        out[str(gid)] = tuple(sorted(members))
    return out


_INT_MEMBERS = frozenset(
    {
        "int32_val",
        "int64_val",
        "uint32_val",
        "uint64_val",
        "sint32_val",
        "sint64_val",
        "fixed32_val",
        "fixed64_val",
        "sfixed32_val",
        "sfixed64_val",
        "bool_val",
    }
)


_INT64_LIMIT = 1 << 63


def read_rank(path: str | os.PathLike[str], cache: dict[bytes, WNode] | None = None) -> list[WNode]:
    """One NPU's ET file as `WNode`s (file order). ``cache`` maps a node's bytes to its node:
    NPUs of a workload share most nodes byte for byte, so each is decoded once. Raises
    WorkloadError (file and byte offset) for framing, a first message that is no
    GlobalMetadata, an unreadable node, or an attribute of a type ASTRA-sim does not read (a
    float or string where it wants an integer, ``involved_dim`` that is not a bool list,
    ``pg_name`` that is not a string)."""
    try:
        data, name = load_et_bytes(path)
        starts, ends = split_frames(data, name)
    except EtDecodeError as e:
        raise WorkloadError(e.message, e.pos) from None
    cache = {} if cache is None else cache
    try:
        pb.GlobalMetadata.FromString(data[int(starts[0]) : int(ends[0])])
    except DecodeError:
        raise WorkloadError(
            "the first message is not a GlobalMetadata", SourcePos(name, offset=0)
        ) from None
    out: list[WNode] = []
    for a, b in zip(starts[1:].tolist(), ends[1:].tolist(), strict=True):
        body = data[a:b]
        n = cache.get(body)
        if n is None:
            n = cache[body] = _decode_node(body, name, a)
        out.append(n)
    return out


def _decode_node(body: bytes, file: str, offset: int) -> WNode:
    try:
        m = pb.Node.FromString(body)
    except DecodeError as e:
        raise WorkloadError(f"a node cannot be read: {e}", SourcePos(file, offset=offset)) from None
    big = [v for v in (m.id, *m.data_deps, *m.ctrl_deps) if v >= _INT64_LIMIT]
    if big:
        raise WorkloadError(
            f"node {m.id}: the value {big[0]} is out of range (2**63 or more; node ids and "
            "dependencies are signed 64-bit numbers in the simulators)",
            SourcePos(file, offset=offset),
        )
    ints: dict[str, int] = {}
    pg = ""
    dims: tuple[bool, ...] | None = None
    for at in m.attr:
        member = at.WhichOneof("value")
        name = at.name
        if name == "pg_name":
            if member != "string_val":
                raise WorkloadError(
                    f"node {m.id}: pg_name is {member}, ASTRA-sim reads a string",
                    SourcePos(file, offset=offset),
                )
            pg = at.string_val
        elif name == "involved_dim":
            if member != "bool_list":
                raise WorkloadError(
                    f"node {m.id}: involved_dim must be a bool_list (ASTRA-sim exits otherwise)",
                    SourcePos(file, offset=offset),
                )
            dims = tuple(at.bool_list.values)
        elif name in _INT_NAMES and member is not None:
            if member not in _INT_MEMBERS:
                raise WorkloadError(
                    f"node {m.id}: attribute {name} is {member}, ASTRA-sim reads an integer",
                    SourcePos(file, offset=offset),
                )
            ints[name] = int(getattr(at, member))
    g = ints.get
    return WNode(
        m.id,
        m.name,
        m.type,
        tuple(m.data_deps),
        tuple(m.ctrl_deps),
        m.duration_micros,
        bool(g("is_cpu_op", 0)),
        g("num_ops"),
        g("tensor_size"),
        g("comm_type"),
        g("comm_size"),
        pg,
        dims,
        g("comm_src"),
        g("comm_dst"),
        g("comm_tag"),
        g("comm_priority", 0),
    )


def encode_rank(nodes: list[WNode], metadata: dict[str, str] | None = None) -> bytes:
    """One NPU's ET file: a GlobalMetadata (version set, collc's attributes), then the nodes,
    each attribute with the type ASTRA-sim reads (`backends.astrasim.workload.workload_node`)."""
    parts = [workload_metadata(metadata or {})]
    for n in nodes:
        attrs: list[WorkloadAttr] = [("is_cpu_op", "bool_val", n.is_cpu_op)]
        for name, member in _SCALARS:
            v = getattr(n, name)
            if v is not None:
                attrs.append((name, member, v))
        if n.kind == NodeKind.COLL:
            attrs.append(("pg_name", "string_val", n.pg_name))
            if n.involved_dim is not None:
                attrs.append(("involved_dim", "bool_list", n.involved_dim))
        for name in ("comm_src", "comm_dst", "comm_tag"):
            v = getattr(n, name)
            if v is not None:
                attrs.append((name, "int32_val", v))
        if n.comm_priority:
            attrs.append(("comm_priority", "int32_val", n.comm_priority))
        parts.append(
            workload_node(
                n.id,
                n.name,
                n.kind,
                attrs,
                data_deps=n.data_deps,
                ctrl_deps=n.ctrl_deps,
                duration_micros=n.duration_micros,
            )
        )
    return b"".join(parts)


_SCALARS = (
    ("num_ops", "int64_val"),
    ("tensor_size", "uint64_val"),
    ("comm_type", "int64_val"),
    ("comm_size", "int64_val"),
)


def write_workload(w: Workload, out: str | os.PathLike[str]) -> list[Path]:
    """Write ``w`` into the folder ``out`` (ET files, ``comm_groups.json``, ``workload.json``)
    through a temporary folder renamed into place: ``out`` is never half-written. Refuses to
    replace a non-empty folder that is not a collc workload folder. Returns the files."""
    out = Path(out)
    names = [f"{PREFIX}.{r}.et" for r in range(w.num_npus)]
    files = list(names)
    with atomic_folder(out, DESCRIPTION, "a collc workload folder", WorkloadError) as tmp:
        for r, nodes in enumerate(w.ranks):
            (tmp / names[r]).write_bytes(encode_rank(nodes, {"collc_workload": "1"}))
        if w.groups:
            (tmp / GROUPS_FILE).write_text(
                json.dumps({k: list(v) for k, v in w.groups.items()}, indent=1) + "\n"
            )
            files.append(GROUPS_FILE)
        (tmp / DESCRIPTION).write_text(json.dumps(w.metadata, indent=2) + "\n")
        files.append(DESCRIPTION)
    return [out / f for f in files]
