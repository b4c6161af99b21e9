"""Folders, pages and the expected per-link messages the view tests share.

The expected messages of a link come from ``collc inspect --json`` and the topology alone (a
send's route hint, else the topology's route; a flow's tree), never from the page's own code,
so a page that lists the wrong messages fails.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from collc.cli import cli
from topologies import Topology, parse_topology
from topologies.cost_model import CostModel
from topologies.innetwork import FlowTrees


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def synthesize(out: Path, topology: str, collective: str, *extra: str) -> Path:
    res = run("synthesize", "-t", topology, "-c", collective, "-o", str(out), *extra)
    assert res.exit_code == 0, res.output
    return out


def inspect_json(folder: Path) -> dict[str, Any]:
    res = run("inspect", "--json", str(folder))
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(res.output)
    return doc


def _link(topology: Topology, u: int, v: int) -> int:
    # the engine takes the fastest of parallel links; these topologies have one per pair
    links = topology.links_between(u, v)
    assert len(links) == 1, (u, v)
    return links[0].index


def expected_messages(folder: Path) -> tuple[Topology, dict[int, Counter[tuple[str, int, int]]]]:
    """Per link, the messages that cross it: ``("op", rank, op id)`` once per message, or
    ``("flow", flow id, -1)`` once per piece of an in-network flow."""
    doc = inspect_json(folder)
    manifest = doc["manifest"]
    topology = parse_topology(manifest["topology"])
    npu = {r["rank"]: r["npu"] for r in doc["ranks"]}
    per_link: dict[int, Counter[tuple[str, int, int]]] = {}
    flows_in: dict[int, list[int]] = {}
    flows_out: dict[int, list[int]] = {}
    flow_slots: dict[int, int] = {}
    for r in doc["ranks"]:
        for op in r["ops"]:
            if op["op"] == "send":
                path = op.get("route") or topology.route(npu[r["rank"]], npu[op["peer"]])
                for u, v in pairwise(path):
                    per_link.setdefault(_link(topology, u, v), Counter())[
                        ("op", r["rank"], op["id"])
                    ] += 1
            elif op["op"] == "flow-in":
                flows_in.setdefault(op["flow"], []).append(npu[r["rank"]])
                flow_slots[op["flow"]] = op["src"]["count"]
            elif op["op"] == "flow-out":
                flows_out.setdefault(op["flow"], []).append(npu[r["rank"]])
    if flows_in:
        trees = FlowTrees(topology)
        for f, ins in flows_in.items():
            tree = trees.tree(ins, flows_out[f])
            pieces = len(CostModel().flow_pieces(flow_slots[f] * manifest["chunk_bytes"]))
            for u, v in (*tree.up, *tree.down):
                per_link.setdefault(_link(topology, u, v), Counter())[("flow", f, -1)] += pieces
    return topology, per_link


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Flags for Debian's chromium on a machine with no network (background requests refused)."""


def chromium() -> str | None:
    """The browser to drive: ``$COLLC_CHROMIUM``, else chromium on PATH, else None."""
    given = os.environ.get("COLLC_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None
