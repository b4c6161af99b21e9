"""``collc export --target fred``: a compiled program as a folder of versioned JSON
(format ``collc-fred``, schema ``schema/fred-1.json``; docs/fred.md):

- ``hwprog.json``, the header (the name every hardware-program folder's header has, so
  `collc replay` finds its target): topology, m, the fix applied, the memory budget, the
  phases with their priority and flows, each flow's NPUs, bytes and phase (the index its
  packets carry), and per switch its configuration count and size;
- ``switches/<name>.json``, per physical switch: its ports by neighbour and, per phase that
  uses it, the local flows with their colour per level and every µSwitch's state;
- ``program.json``, the per-NPU commands the replay executes: flow inputs and outputs with
  their buffer slots, endpoint messages (which travel on configuration 0, the switches'
  default unicast configuration routed online) and local copies and reductions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from backends.fred.clos import levels, state_bits
from backends.fred.compile import FredConfig, FredOptions, compile_fred
from backends.fred.errors import FredError, FredFormatError
from backends.hwprog.export import BUFFERS, HEADER_FILE
from backends.hwprog.format import Format
from chakra_ir.collective import collective_to_dict
from chakra_ir.outdir import Manifest, atomic_folder, collc_version
from chakra_ir.program import OpKind, Program
from topologies.topology import Topology

FORMAT = Format(
    "collc-fred",
    1,
    Path(__file__).resolve().parent / "schema" / "fred-1.json",
    error=FredFormatError,
)
PROGRAM_FILE = "program.json"
SWITCH_DIR = "switches"
_OPS = {
    OpKind.SEND: "send",
    OpKind.RECV: "recv",
    OpKind.RECV_REDUCE: "recv",
    OpKind.COPY: "copy",
    OpKind.REDUCE: "reduce",
    OpKind.FLOW_IN: "flow-in",
    OpKind.FLOW_OUT: "flow-out",
}


def header_document(
    cfg: FredConfig, program: Program, manifest: Manifest, o: FredOptions
) -> dict[str, Any]:
    """The header (see the module docstring)."""
    fabric = cfg.fabric
    coll = program.collective
    switches = []
    for node, sw in sorted(fabric.switches.items()):
        bits = cfg.bits[node]
        switches.append(
            {
                "name": sw.name,
                "node": node,
                "ports": sw.ports,
                "file": f"{SWITCH_DIR}/{sw.name}.json",
                "configurations": len(cfg.switch_phases(node)),
                "config_bits": bits,
                "config_bytes": math.ceil(bits / 8),
            }
        )
    phase_index = {f: ph.index for ph in cfg.phases for f in ph.flows}
    messages = int((program.kind == OpKind.SEND).sum())
    return {
        **FORMAT.header(),
        "kind": "header",
        "target": "fred",
        "collc_version": collc_version(),
        "topology": fabric.topology.spec,
        "algorithm": manifest.algorithm,
        "collective": collective_to_dict(coll),
        "placement": [coll.npu(r) for r in range(program.num_ranks)],
        "num_npus": fabric.topology.num_npus,
        "size_bytes": manifest.size_bytes,
        "chunk_bytes": manifest.chunk_bytes,
        "completion": manifest.completion,
        "m": cfg.m,
        "fix": cfg.fix,
        "memory_bytes": o.memory_bytes,
        "priority": o.priority,
        "routing": dict(sorted(cfg.methods.items())),
        "default_configuration": {
            "index": 0,
            "routing": "unicast, routed online",
            "messages": messages,
        },
        "switches": switches,
        "phases": [
            {"index": ph.index, "priority": ph.priority, "flows": ph.flows} for ph in cfg.phases
        ],
        "flows": [
            {
                "flow": f,
                "inputs": list(pf.inputs),
                "outputs": list(pf.outputs),
                "slots": pf.slots,
                "bytes": pf.slots * manifest.chunk_bytes,
                "phase": phase_index[f],
            }
            for f, pf in sorted(cfg.flows.items())
        ],
        "program_file": PROGRAM_FILE,
    }


def switch_documents(cfg: FredConfig) -> Iterator[dict[str, Any]]:
    """One document per physical switch (see the module docstring)."""
    fabric = cfg.fabric
    for node, sw in sorted(fabric.switches.items()):
        neighbours = []
        for n, first in sorted(sw.base.items(), key=lambda x: x[1]):
            name = f"NPU {n}" if n < fabric.topology.num_npus else fabric.switches[n].name
            neighbours.append(
                {
                    "node": n,
                    "name": name,
                    "first_port": first,
                    "ports": fabric.width[(n, node)],
                    "rate_bytes_per_ns": fabric.port_rate[(n, node)],
                    "latency_ns": fabric.latency[(n, node)],
                }
            )
        confs = []
        for i in cfg.switch_phases(node):
            ph = cfg.phases[i]
            routed = cfg.routed[i][node]
            confs.append(
                {
                    "index": ph.index,
                    "priority": ph.priority,
                    "flows": [
                        {
                            "flow": lf.id,
                            "inputs": list(lf.inputs),
                            "outputs": list(lf.outputs),
                            "colours": routed.colours[k],
                        }
                        for k, lf in enumerate(ph.at_switch[node])
                    ],
                    "elements": dict(sorted(routed.states.items())),
                }
            )
        yield {
            **FORMAT.header(),
            "kind": "switch",
            "name": sw.name,
            "node": node,
            "ports": sw.ports,
            "m": cfg.m,
            "levels": levels(sw.ports),
            "state_bits": state_bits(sw.ports, cfg.m),
            "neighbours": neighbours,
            "configurations": confs,
        }


def program_document(program: Program, num_npus: int) -> dict[str, Any]:
    """Every NPU's commands (see the module docstring)."""
    coll = program.collective
    rank_on = [-1] * num_npus
    for r in range(program.num_ranks):
        rank_on[coll.npu(r)] = r
    npus: list[dict[str, Any]] = []
    for n, r in enumerate(rank_on):
        if r < 0:
            npus.append(
                {"npu": n, "rank": None, "buffers": dict.fromkeys(BUFFERS, 0), "commands": []}
            )
            continue
        a, b = int(program.rank_offsets[r]), int(program.rank_offsets[r + 1])
        sizes = program.buffer_sizes[r].tolist()
        commands = []
        for i in range(b - a):
            g = a + i
            k = OpKind(int(program.kind[g]))
            c: dict[str, Any] = {
                "id": i,
                "op": _OPS[k],
                "waits": sorted(set(program.deps_of(g).tolist())),
            }
            count = int(program.count[g])
            if k in (OpKind.SEND, OpKind.COPY, OpKind.REDUCE, OpKind.FLOW_IN):
                c["src"] = [BUFFERS[int(program.src_buf[g])], int(program.src_index[g]), count]
            if k not in (OpKind.SEND, OpKind.FLOW_IN):
                c["dst"] = [BUFFERS[int(program.dst_buf[g])], int(program.dst_index[g]), count]
            if k in (OpKind.FLOW_IN, OpKind.FLOW_OUT):
                c["flow"] = int(program.tag[g])
            elif k == OpKind.SEND:
                c.update(to=coll.npu(int(program.peer[g])), tag=int(program.tag[g]))
            elif k in (OpKind.RECV, OpKind.RECV_REDUCE):
                c.update(
                    {
                        "from": coll.npu(int(program.peer[g])),
                        "tag": int(program.tag[g]),
                        "reduce": k == OpKind.RECV_REDUCE,
                    }
                )
            commands.append(c)
        npus.append(
            {
                "npu": n,
                "rank": r,
                "buffers": dict(zip(BUFFERS, sizes, strict=True)),
                "commands": commands,
            }
        )
    return {**FORMAT.header(), "kind": "program", "npus": npus}


def _dump(doc: dict[str, Any]) -> str:
    """One line per entry of the document's lists (a configuration, an NPU, a flow)."""
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v:
            body = ",\n  ".join(json.dumps(x, separators=(",", ":")) for x in v)
            lines.append(f" {json.dumps(k)}: [\n  {body}\n ]")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def export(
    program: Program,
    topology: Topology,
    manifest: Manifest,
    out: Path | str,
    options: FredOptions | None = None,
) -> list[Path]:
    """Compile ``program`` for FRED and write the folder ``out`` atomically; return the files
    written. Everything that can be refused (the topology, a phase that does not route, the
    memory budget) is refused before anything is written."""
    o = options or FredOptions()
    cfg = compile_fred(program, topology, o)
    header = header_document(cfg, program, manifest, o)
    out = Path(out)
    written: list[Path] = []
    with atomic_folder(out, HEADER_FILE, "a hardware program", FredError) as tmp:
        (tmp / SWITCH_DIR).mkdir()
        for doc in switch_documents(cfg):
            name = f"{SWITCH_DIR}/{doc['name']}.json"
            (tmp / name).write_text(_dump(doc), encoding="utf-8")
            written.append(out / name)
        (tmp / PROGRAM_FILE).write_text(
            _dump(program_document(program, topology.num_npus)), encoding="utf-8"
        )
        (tmp / HEADER_FILE).write_text(_dump(header), encoding="utf-8")
    return [out / HEADER_FILE, out / PROGRAM_FILE, *written]
