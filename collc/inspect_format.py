"""What ``collc inspect`` prints: a program or a single ET file, as text or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from chakra_ir.et import AttrValue, EtNode, read_et_file
from chakra_ir.outdir import Manifest
from chakra_ir.program import Copy, FlowIn, FlowOut, Program, Recv, Send, Slice


def _slice(s: Slice) -> dict[str, Any]:
    return {"buffer": s.buffer.label, "index": s.index, "count": s.count}


def program_json(manifest: Manifest, program: Program) -> dict[str, Any]:
    """The manifest and every operation of every rank, as a JSON-ready dict."""
    ranks = []
    for r in range(program.num_ranks):
        ops = []
        for i, op in enumerate(program.ops(r)):
            d: dict[str, Any] = {"id": i}
            if isinstance(op, Send):
                d |= {"op": "send", "peer": op.peer, "src": _slice(op.src), "tag": op.tag}
            elif isinstance(op, Recv):
                d |= {"op": "recv", "peer": op.peer, "dst": _slice(op.dst), "tag": op.tag}
                d["reduce"] = op.reduce
            elif isinstance(op, FlowIn):
                d |= {"op": "flow-in", "flow": op.flow, "src": _slice(op.src)}
            elif isinstance(op, FlowOut):
                d |= {"op": "flow-out", "flow": op.flow, "dst": _slice(op.dst)}
            else:
                d |= {"op": "copy" if isinstance(op, Copy) else "reduce"}
                d |= {"src": _slice(op.src), "dst": _slice(op.dst)}
            d["deps"] = list(op.deps)
            if op.hints.route:
                d["route"] = list(op.hints.route)
            if op.hints.channel >= 0:
                d["channel"] = op.hints.channel
            if op.hints.threadblock >= 0:
                d["threadblock"] = op.hints.threadblock
            ops.append(d)
        i_, o_, s_ = (int(x) for x in program.buffer_sizes[r])
        buffers = {"input": i_, "output": o_, "scratch": s_}
        ranks.append({"rank": r, "npu": program.collective.npu(r), "buffers": buffers, "ops": ops})
    out: dict[str, Any] = plain(
        {"manifest": manifest.to_json(), "program": program.name, "ranks": ranks}
    )
    return out


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and tuples turned into the Python types `json` writes
    (the Program's columns are numpy arrays, so its hints and deps arrive as numpy ints)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _jsonable(v: AttrValue) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


def _node_json(n: EtNode) -> dict[str, Any]:
    d: dict[str, Any] = {"id": n.id, "name": n.name, "type": n.type_name}
    if n.data_deps:
        d["data_deps"] = list(n.data_deps)
    if n.ctrl_deps:
        d["ctrl_deps"] = list(n.ctrl_deps)
    if n.duration_micros:
        d["duration_micros"] = n.duration_micros
    d["attrs"] = {k: _jsonable(v) for k, v in n.attrs.items()}
    return d


def et_file_json(path: Path) -> dict[str, Any]:
    """One ET file (any tool's) at the node level, as one JSON document."""
    t = read_et_file(path)
    out: dict[str, Any] = plain(
        {
            "file": str(path),
            "version": t.version,
            "metadata": {k: _jsonable(v) for k, v in t.metadata.items()},
            "nodes": [_node_json(n) for n in t.nodes()],
        }
    )
    return out


def et_file_text(path: Path) -> str:
    """One ET file, one node a line: ``id TYPE name deps=... attr=value ...``."""
    t = read_et_file(path)
    lines = [f"# {path}: version {t.version or '(none)'}, {len(t)} nodes"]
    for k, v in t.metadata.items():
        text = str(_jsonable(v))
        lines.append(f"# {k} = {text if len(text) <= 120 else text[:117] + '...'}")
    for n in t.nodes():
        parts = [str(n.id), n.type_name, n.name or "-"]
        if n.data_deps:
            parts.append("deps=" + ",".join(map(str, n.data_deps)))
        if n.ctrl_deps:
            parts.append("ctrl=" + ",".join(map(str, n.ctrl_deps)))
        if n.duration_micros:
            parts.append(f"duration_micros={n.duration_micros}")
        parts.extend(f"{k}={_jsonable(v)}" for k, v in n.attrs.items())
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"
