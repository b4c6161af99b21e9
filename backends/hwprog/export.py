"""Program + mesh/torus topology -> hardware program (see docs/hardware.md).

`plan` does everything that can fail (the topology, the routes, message matching, the VC
assignment and the channel-dependency check) before anything is written; `npu_documents`
then yields one NPU's command stream at a time, so memory stays bounded by one NPU's
commands plus the plan's columns. `export` writes the folder atomically; `build_hwprog`
returns the documents in memory (tests, small programs).
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from backends.hwprog.errors import HwDeadlockError, HwProgError
from backends.hwprog.format import Format
from backends.hwprog.grid import Grid, GridLink, grid_of, port_name
from backends.hwprog.vcs import MAX_VCS, assign, classes_needed, find_cycle, lanes, per_class
from chakra_ir.collective import collective_to_dict
from chakra_ir.outdir import Manifest, atomic_folder, collc_version
from chakra_ir.program import OpKind, Program
from topologies.topology import Topology

FORMAT = Format(
    "collc-hwprog",
    1,
    Path(__file__).resolve().parent / "schema" / "hwprog-1.json",
    error=HwProgError,
)
HEADER_FILE = "hwprog.json"
ROUTERS_FILE = "routers.json"
NPU_DIR = "npus"
BUFFERS = ("input", "output", "scratch")
SEND, RECV, RECV_REDUCE, COPY = (
    int(OpKind.SEND),
    int(OpKind.RECV),
    int(OpKind.RECV_REDUCE),
    int(OpKind.COPY),
)


@dataclass(frozen=True)
class HwOptions:
    """The header's hardware parameters. ``vcs=None`` takes the fewest the VC scheme needs
    (1 on a mesh, 2 on a torus, more classes when source routes turn back; at most
    `MAX_VCS`); ``link_width=None`` gives every link its bandwidth / clock; ``force`` writes a
    program whose channel-dependency graph has a cycle (recorded in the header);
    ``buffer_depth=None`` gives every VC buffer the packets a credit round trip needs on the
    slowest link (`credit_depth`), so streams run at full rate."""

    vcs: int | None = None
    packet_bytes: int = 4096
    buffer_depth: int | None = None
    link_width: float | None = None
    clock_ghz: float = 1.0
    router_cycles: int = 1
    force: bool = False

    def check(self) -> None:
        if self.vcs is not None and not 1 <= self.vcs <= MAX_VCS:
            raise HwProgError(f"--vcs {self.vcs}: between 1 and {MAX_VCS}")
        if not 1 <= self.packet_bytes <= 1 << 30:
            raise HwProgError(f"--packet-size {self.packet_bytes}: between 1 B and 1 GiB")
        if self.buffer_depth is not None and not 1 <= self.buffer_depth <= 1 << 20:
            raise HwProgError(
                f"--buffer-depth {self.buffer_depth}: between 1 and {1 << 20:,} packets"
            )
        if self.link_width is not None and not (
            math.isfinite(self.link_width) and 0 < self.link_width <= 1e9
        ):
            raise HwProgError(f"--link-width {self.link_width}: a positive number of bytes/cycle")
        if not (math.isfinite(self.clock_ghz) and 1e-6 <= self.clock_ghz <= 1e6):
            raise HwProgError(f"--clock {self.clock_ghz}: a positive number of GHz")
        if not 0 <= self.router_cycles <= 1 << 20:
            raise HwProgError(
                f"--router-cycles {self.router_cycles}: between 0 and {1 << 20:,} cycles"
            )


MAX_LINK_CYCLES = 1 << 40
"""A packet's serialization and a link's latency, in cycles, stay below this, so that every
cycle count of a replay is exact in a JSON number."""


def credit_depth(
    latency_cycles: int, width_bytes_per_cycle: float, packet_bytes: int, router_cycles: int
) -> int:
    """The packets a VC buffer must hold for a stream of full packets to run at the link's
    rate: a slot is taken from a packet's start upstream until its credit returns, ``2L + R``
    cycles of ``s = ceil(packet / width)`` each (docs/hardware.md, Credits):
    ``1 + ceil((2L + R) / s)``."""
    s = max(1, math.ceil(packet_bytes / width_bytes_per_cycle))
    return 1 + math.ceil((2 * latency_cycles + router_cycles) / s)


@dataclass
class HwProgram:
    """A hardware program as its JSON documents: the header, the routers' tables and one
    document per NPU (index = NPU)."""

    header: dict[str, Any]
    routers: dict[str, Any]
    npus: list[dict[str, Any]]


@dataclass
class _Route:
    nodes: tuple[int, ...]
    hops: list[GridLink]
    routing: str
    vcs: list[int] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """Everything decided before writing."""

    program: Program
    grid: Grid
    header: dict[str, Any]
    routers: dict[str, Any]
    chunk_bytes: int
    flow_of: npt.NDArray[np.int64]
    """Per operation: its message's flow id (-1 for local operations)."""
    route_of_op: npt.NDArray[np.int64]
    """Per operation: its route's index in ``routes`` (sends only, else -1)."""
    routes: list[_Route]
    rank_on: list[int]
    """Per NPU: the rank placed on it, or -1."""


def _fail(program: Program, g: int, message: str) -> HwProgError:
    return HwProgError(f"{program.describe_op(g)}: {message}")


def _match(program: Program) -> npt.NDArray[np.int64]:
    """Flow ids: the k-th send of the program is flow k; its matched receive gets the same."""
    p = program
    R = p.num_ranks
    rank_of = p.op_rank().astype(np.int64)
    kind = p.kind
    sends = np.flatnonzero(kind == OpKind.SEND)
    recvs = np.flatnonzero((kind == OpKind.RECV) | (kind == OpKind.RECV_REDUCE))
    peer = p.peer.astype(np.int64)
    s_pair = rank_of[sends] * R + peer[sends]
    r_pair = peer[recvs] * R + rank_of[recvs]
    s_order = np.lexsort((sends, p.tag[sends], s_pair))
    r_order = np.lexsort((recvs, p.tag[recvs], r_pair))
    ok = len(sends) == len(recvs) and bool(
        np.array_equal(s_pair[s_order], r_pair[r_order])
        and np.array_equal(p.tag[sends][s_order], p.tag[recvs][r_order])
    )
    if not ok:
        raise HwProgError("the program's sends and receives do not match (verify it first)")
    flow_of = np.full(p.num_ops, -1, dtype=np.int64)
    flow_of[sends] = np.arange(len(sends), dtype=np.int64)
    flow_of[recvs[r_order]] = flow_of[sends[s_order]]
    return flow_of


def _channel_name(grid: Grid, channel: int, num_vcs: int) -> str:
    g = grid.links[channel // num_vcs]
    return f"{g.src}>{g.dst} ({port_name(g.port)}) vc{channel % num_vcs}"


def describe_cycle(grid: Grid, cycle: list[int], num_vcs: int, limit: int = 10) -> str:
    """``a>b (+0) vc0 -> b>c (+0) vc0 -> ... -> back to a>b`` (at most ``limit`` channels)."""
    names = [_channel_name(grid, c, num_vcs) for c in cycle[:limit]]
    more = f" -> ... ({len(cycle)} channels)" if len(cycle) > limit else ""
    return " -> ".join(names) + more + f" -> back to {names[0]}"


def plan(
    program: Program,
    topology: Topology,
    manifest: Manifest,
    target: str,
    options: HwOptions | None = None,
) -> Plan:
    """Check and decide everything; raises `HwProgError` (`HwDeadlockError` for a cycle)."""
    o = options or HwOptions()
    o.check()
    refusal = program.flow_refusal(
        f"a {target} hardware program", f"{target} routers forward packets and never reduce"
    )
    if refusal:
        raise HwProgError(refusal)
    grid = grid_of(topology, target)
    p = program
    coll = p.collective
    R = p.num_ranks
    npu_of_rank = [coll.npu(r) for r in range(R)]
    rank_on = [-1] * topology.num_npus
    for r, n in enumerate(npu_of_rank):
        if not 0 <= n < topology.num_npus:
            raise HwProgError(f"rank {r} is placed on NPU {n}, which {topology.spec!r} lacks")
        rank_on[n] = r
    flow_of = _match(p)

    # Routes: each distinct node path once.
    rank_of = p.op_rank()
    sends = np.flatnonzero(p.kind == OpKind.SEND)
    rn = p.route_nodes.tolist()
    ro = p.route_offsets.tolist()
    src_l = rank_of[sends].tolist()
    dst_l = p.peer[sends].tolist()
    index: dict[tuple[int, ...], int] = {}
    routes: list[_Route] = []
    route_ids = np.empty(len(sends), dtype=np.int64)
    for i, g in enumerate(sends.tolist()):
        a, b = ro[g], ro[g + 1]
        s, d = npu_of_rank[src_l[i]], npu_of_rank[dst_l[i]]
        key = tuple(rn[a:b]) if b > a else topology.route(s, d)
        rid = index.get(key)
        if rid is None:
            if len(key) < 2 or key[0] != s or key[-1] != d:
                raise _fail(
                    p, g, f"route {'>'.join(map(str, key))} does not lead from NPU {s} to NPU {d}"
                )
            hops: list[GridLink] = []
            for u, v in itertools.pairwise(key):
                h = grid.by_pair.get((u, v))
                if h is None:
                    raise _fail(
                        p,
                        g,
                        f"route {'>'.join(map(str, key))} uses {u}>{v}, which is not a link of {topology.spec!r}",
                    )
                hops.append(h)
            routing = "dor" if key == grid.dor_path(s, d) else "source"
            rid = len(routes)
            index[key] = rid
            routes.append(_Route(key, hops, routing))
        route_ids[i] = rid

    # Virtual channels and the channel-dependency graph.
    need = max((classes_needed(r.hops) for r in routes), default=1)
    fewest = min(MAX_VCS, (2 if grid.target == "torus" else 1) * need)
    num_vcs = fewest if o.vcs is None else o.vcs
    n_lanes = lanes(grid, num_vcs, need)
    edges: set[tuple[int, int]] = set()
    for rid, route in enumerate(routes):
        route.vcs = assign(grid, route.hops, num_vcs, need, rid)
        if rid % n_lanes:
            # A dimension-order router knows lane 0 only: other lanes are table-driven.
            route.routing = "source"
        route.ports = [h.port for h in route.hops]
        chans = [h.index * num_vcs + v for h, v in zip(route.hops, route.vcs, strict=True)]
        edges.update(itertools.pairwise(chans))
    cycle = find_cycle(edges)
    named: list[tuple[int, int, int, int]] = []
    if cycle is not None:
        for c in cycle:
            h = grid.links[c // num_vcs]
            named.append((h.src, h.port, h.dst, c % num_vcs))
        if not o.force:
            hint = (
                "a torus needs 2 (the dateline pair)"
                if grid.target == "torus" and num_vcs < 2
                else "more VCs (--vcs) may break it"
            )
            raise HwDeadlockError(
                f"--target {target}: with {num_vcs} VC(s) the channel-dependency graph of "
                f"{topology.spec!r} has a cycle: {describe_cycle(grid, cycle, num_vcs)}; "
                f"{hint}, or --force writes the program anyway",
                named,
            )

    route_of_op = np.full(p.num_ops, -1, dtype=np.int64)
    route_of_op[sends] = route_ids
    chunk = manifest.chunk_bytes
    counts = p.count.astype(np.int64)
    nbytes = counts[sends] * chunk
    packets = -(-nbytes // o.packet_bytes)
    hop_counts = np.array([len(r.hops) for r in routes], dtype=np.int64)
    source_mask = np.array([r.routing == "source" for r in routes], dtype=bool)
    source_flows = int(source_mask[route_ids].sum()) if len(routes) else 0

    # Routers: tables of the source-routed flows.
    tables: list[list[dict[str, int]]] = [[] for _ in range(topology.num_npus)]
    if source_flows:
        for f in np.flatnonzero(source_mask[route_ids]).tolist():
            sr = routes[int(route_ids[f])]
            for h, v in zip(sr.hops, sr.vcs, strict=True):
                tables[h.src].append({"flow": f, "port": h.port, "vc": v})
    routers = {
        **FORMAT.header(),
        "kind": "routers",
        "routers": [{"router": n, "flows": t} for n, t in enumerate(tables)],
    }

    clock = o.clock_ghz
    links: list[dict[str, Any]] = []
    for h in sorted(grid.links, key=lambda x: (x.src, x.port)):
        lk = topology.links[h.index]
        width = o.link_width if o.link_width is not None else lk.bandwidth_bytes_per_ns / clock
        cycles = max(o.packet_bytes / width, lk.latency_ns * clock)
        if not cycles < MAX_LINK_CYCLES:
            raise HwProgError(
                f"link {h.src}>{h.dst}: a packet of {o.packet_bytes} B at {width:g} bytes/cycle "
                f"and {lk.latency_ns:g} ns at {clock:g} GHz take {cycles:.3g} cycles, beyond "
                f"2^40: raise --link-width or lower --clock"
            )
        links.append(
            {
                "src": h.src,
                "port": h.port,
                "dst": h.dst,
                "dim": h.dim,
                "dir": "+" if h.sign > 0 else "-",
                "dateline": h.dateline,
                "latency_ns": lk.latency_ns,
                "bandwidth_bytes_per_ns": lk.bandwidth_bytes_per_ns,
                "latency_cycles": round(lk.latency_ns * clock),
                "width_bytes_per_cycle": width,
            }
        )
    widest = max((float(x["width_bytes_per_cycle"]) for x in links), default=1.0)
    depth = o.buffer_depth
    if depth is None:
        depth = max(
            (
                credit_depth(
                    int(x["latency_cycles"]),
                    float(x["width_bytes_per_cycle"]),
                    o.packet_bytes,
                    o.router_cycles,
                )
                for x in links
            ),
            default=1,
        )
    pc = per_class(grid, num_vcs)
    header: dict[str, Any] = {
        **FORMAT.header(),
        "kind": "header",
        "target": target,
        "collc_version": collc_version(),
        "topology": topology.spec,
        "shape": list(grid.shape),
        "dims": list(grid.kinds),
        "num_npus": topology.num_npus,
        "num_ports": grid.num_ports,
        "failed": [list(x) for x in topology.failed],
        "links": links,
        "algorithm": manifest.algorithm,
        "collective": collective_to_dict(coll),
        "placement": npu_of_rank,
        "size_bytes": manifest.size_bytes,
        "chunk_bytes": chunk,
        "completion": manifest.completion,
        "link_width_bytes_per_cycle": o.link_width if o.link_width is not None else widest,
        "clock_ghz": clock,
        "packet_bytes": o.packet_bytes,
        "buffer_depth_packets": depth,
        "router_pipeline_cycles": o.router_cycles,
        "num_vcs": num_vcs,
        "routing": "dimension-order",
        "vc_rule": "dateline" if pc == 2 else "single",
        "vcs_per_class": pc,
        "deadlock": {
            "acyclic": cycle is None,
            "forced": cycle is not None,
            "channels": len(grid.links) * num_vcs,
            "dependencies": len(edges),
            "cycle": [{"src": s, "port": pt, "dst": d, "vc": v} for s, pt, d, v in named],
        },
        "counts": {
            "commands": p.num_ops,
            "messages": len(sends),
            "source_routed": source_flows,
            "packets": int(packets.sum()),
            "packet_hops": int((packets * hop_counts[route_ids]).sum()) if len(routes) else 0,
        },
        "npus": [
            {
                "npu": n,
                "rank": None if r < 0 else r,
                "file": f"{NPU_DIR}/{n}.json",
                "commands": 0 if r < 0 else p.rank_len(r),
            }
            for n, r in enumerate(rank_on)
        ],
        "routers_file": ROUTERS_FILE,
    }
    return Plan(p, grid, header, routers, chunk, flow_of, route_of_op, routes, rank_on)


def _exec_order(
    local_deps: list[list[int]], deps: npt.NDArray[np.int32], offsets: list[int]
) -> list[int]:
    """Program order when every dependency points backwards, else the topological order
    that stays closest to it (smallest id first)."""
    owner = np.repeat(np.arange(len(local_deps)), np.diff(np.asarray(offsets)))
    if not np.any(deps >= owner):
        return list(range(len(local_deps)))
    n = len(local_deps)
    indeg = [len(set(ds)) for ds in local_deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, ds in enumerate(local_deps):
        for d in set(ds):
            users[d].append(i)
    heap = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        i = heapq.heappop(heap)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, u)
    if len(order) != n:
        raise HwProgError("a rank's dependencies form a cycle (verify the program first)")
    return order


def npu_documents(pl: Plan) -> Iterator[dict[str, Any]]:
    """One document per NPU, in NPU order."""
    p = pl.program
    chunk = pl.chunk_bytes
    placement = [p.collective.npu(x) for x in range(p.num_ranks)]
    for n, r in enumerate(pl.rank_on):
        doc: dict[str, Any] = {**FORMAT.header(), "kind": "npu", "npu": n}
        if r < 0:
            doc.update(rank=None, buffers={"input": 0, "output": 0, "scratch": 0}, commands=[])
            yield doc
            continue
        a, b = int(p.rank_offsets[r]), int(p.rank_offsets[r + 1])
        sizes = p.buffer_sizes[r].tolist()
        doc.update(rank=r, buffers=dict(zip(BUFFERS, sizes, strict=True)))
        kind = p.kind[a:b].tolist()
        peer = p.peer[a:b].tolist()
        sb, si = p.src_buf[a:b].tolist(), p.src_index[a:b].tolist()
        db, di = p.dst_buf[a:b].tolist(), p.dst_index[a:b].tolist()
        count = p.count[a:b].tolist()
        after = p.after[a:b].tolist()
        flow = pl.flow_of[a:b].tolist()
        route = pl.route_of_op[a:b].tolist()
        do = p.dep_offsets[a : b + 1].tolist()
        deps_all = p.deps[do[0] : do[-1]].tolist()
        base = do[0]
        local_deps = [deps_all[do[i] - base : do[i + 1] - base] for i in range(b - a)]
        commands: list[dict[str, Any]] = []
        append = commands.append
        routes = pl.routes
        for i in _exec_order(local_deps, p.deps[do[0] : do[-1]], do):
            k = kind[i]
            if k == SEND:
                rt = routes[route[i]]
                c = {
                    "id": i,
                    "op": "send",
                    "waits": local_deps[i],
                    "bytes": count[i] * chunk,
                    "src": [BUFFERS[sb[i]], si[i], count[i]],
                    "to": placement[peer[i]],
                    "flow": flow[i],
                    "routing": rt.routing,
                    "ports": rt.ports,
                    "vcs": rt.vcs,
                }
                if after[i] >= 0:
                    c["after"] = after[i]
            elif k in (RECV, RECV_REDUCE):
                c = {
                    "id": i,
                    "op": "recv",
                    "waits": local_deps[i],
                    "bytes": count[i] * chunk,
                    "dst": [BUFFERS[db[i]], di[i], count[i]],
                    "from": placement[peer[i]],
                    "flow": flow[i],
                    "reduce": k == RECV_REDUCE,
                }
            else:
                c = {
                    "id": i,
                    "op": "copy" if k == COPY else "reduce",
                    "waits": local_deps[i],
                    "src": [BUFFERS[sb[i]], si[i], count[i]],
                    "dst": [BUFFERS[db[i]], di[i], count[i]],
                }
            append(c)
        doc["commands"] = commands
        yield doc


def build_hwprog(
    program: Program,
    topology: Topology,
    manifest: Manifest,
    target: str,
    options: HwOptions | None = None,
) -> HwProgram:
    """The hardware program in memory (never mutates ``program``)."""
    pl = plan(program, topology, manifest, target, options)
    return HwProgram(pl.header, pl.routers, list(npu_documents(pl)))


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def _dump_npu(doc: dict[str, Any]) -> str:
    """One NPU document with one command a line."""
    meta = {k: v for k, v in doc.items() if k != "commands"}
    head = json.dumps(meta, separators=(", ", ": "))[:-1]
    cmds = doc["commands"]
    if not cmds:
        return head + ', "commands": []}\n'
    # Commands hold no nested objects, so '},{"id"' only ever joins two commands.
    body = json.dumps(cmds, separators=(",", ":"))[1:-1].replace('},{"id"', '},\n {"id"')
    return head + ', "commands": [\n ' + body + "\n]}\n"


def write_documents(
    header: dict[str, Any],
    routers: dict[str, Any],
    npus: Iterator[dict[str, Any]] | list[dict[str, Any]],
    out: Path | str,
) -> list[Path]:
    """Write the folder atomically: a temporary folder beside ``out``, renamed into place.
    An existing ``out`` is replaced only when it is empty or an earlier hardware program."""
    out = Path(out)
    written: list[Path] = []
    with atomic_folder(out, HEADER_FILE, "a hardware program", HwProgError) as tmp:
        (tmp / NPU_DIR).mkdir()
        for doc in npus:
            name = f"{NPU_DIR}/{doc['npu']}.json"
            (tmp / name).write_text(_dump_npu(doc), encoding="utf-8")
            written.append(out / name)
        (tmp / ROUTERS_FILE).write_text(_dump(routers), encoding="utf-8")
        (tmp / HEADER_FILE).write_text(_dump(header), encoding="utf-8")
    return [out / HEADER_FILE, out / ROUTERS_FILE, *written]


def export(
    program: Program,
    topology: Topology,
    manifest: Manifest,
    out: Path | str,
    target: str,
    options: HwOptions | None = None,
) -> list[Path]:
    """Write the hardware program of ``program`` on ``topology`` into ``out``; return the
    files written. Everything that can be refused is refused before anything is written."""
    pl = plan(program, topology, manifest, target, options)
    return write_documents(pl.header, pl.routers, npu_documents(pl), out)
