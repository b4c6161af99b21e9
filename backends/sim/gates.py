"""Gates for any producer's program: an ``after`` hint on every send that becomes ready at the
same instant as the send before it on its first link.

ASTRA-sim's custom collective issues the nodes that are ready at one instant in hash-set order,
so two sends released together onto one link may leave in either order there; collc's simulator
takes them in task order. The ET writes an ``after`` hint as a 1 ns gate node that makes
ASTRA-sim issue the send after the one it names (see `chakra_ir.et.layout`). TACOS sets the
hints itself from its replay; this module finds the ties of any other program by simulating it
once under the cost model.
"""

from __future__ import annotations

import numpy as np

from backends.sim.engine import run_congestion
from backends.sim.routes import message_routes
from backends.sim.tasks import TaskKind, tasks_from_program
from chakra_ir.program import COLUMNS, Program
from topologies.cost_model import DEFAULT_COST_MODEL, CostModel
from topologies.topology import Topology


def gate_ties(
    program: Program,
    topology: Topology,
    chunk_bytes: int,
    cost: CostModel = DEFAULT_COST_MODEL,
) -> Program:
    """``program`` with an ``after`` hint on each send released at the same instant as the
    previous send on its first link (by the congestion model), naming that send; hints the
    program already has are kept. The program's meaning and collc's times do not change.
    Raises SimError as `simulate` does. A program with in-network flows is returned as it is:
    no ASTRA-sim can run it, and its flows are not one task per op."""
    if program.has_flows:
        return program
    graph = tasks_from_program(program, chunk_bytes, cost, fold_reductions=True)
    routes = message_routes(graph, topology)
    run = run_congestion(graph, topology, cost, routes=routes)
    sends = np.flatnonzero(graph.kind == TaskKind.SEND)
    sends = np.array([t for t in sends.tolist() if routes[t]], dtype=np.int64)
    if sends.size < 2:
        return program
    link = np.array([routes[t][0] for t in sends.tolist()], dtype=np.int64)
    issue = np.rint(run.issue_ns[sends] * 1000).astype(np.int64)
    order = np.lexsort((sends, issue, link))
    s, lk, at = sends[order], link[order], issue[order]
    tie = np.flatnonzero((lk[1:] == lk[:-1]) & (at[1:] == at[:-1])) + 1
    if tie.size == 0:
        return program
    # One task per op (reductions folded, no gates): task index == op index.
    rank = program.op_rank().astype(np.int64)
    after = program.after.copy()
    b, a = s[tie], s[tie - 1]
    fresh = after[b] == -1
    after[b[fresh]] = (a - program.rank_offsets[rank[a]])[fresh]
    columns = {name: getattr(program, name) for name in COLUMNS}
    columns["after"] = after
    return Program.from_columns(
        program.collective,
        program.rank_offsets,
        columns,
        program.dep_offsets,
        program.deps,
        program.buffer_sizes,
        program.route_offsets,
        program.route_nodes,
        name=program.name,
    )
