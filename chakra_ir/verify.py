"""The verifier: a Program is checked after every producer and before every backend.

`verify` runs four checks and raises `VerifyError` at the first failure, naming the rank, the
operation and, where one is involved, the chunk:

- structure: operation kinds, peers, buffers and slot ranges, buffer sizes against the
  collective, dependency ids, and message matching (the k-th send from a to b with tag t pairs
  with the k-th receive on b from a with tag t; both move the same number of slots); every
  in-network flow has inputs and outputs, on at least two ranks of one group, each rank at
  most once on each side, all moving the same number of slots;
- progress: with unbounded bandwidth and buffering every operation eventually runs (a
  dependency cycle, or a receive waiting on a send that can never be issued, is a deadlock);
- semantics: symbolic execution of chunk contents on physical slots (in-place aliases
  resolved), in a topological order of the program: reading an empty slot, reducing a
  contribution twice (in a rank or inside the network, where a flow sums its inputs), or an
  output that ends up wrong is an error;
- races: any two accesses to one slot, of which at least one writes or reduces, must be
  ordered by dependencies and message matching (happens-before); otherwise the result would
  depend on timing.

The checks live in `chakra_ir.verify_structure` (structure) and `chakra_ir.verify_execution`
(progress, semantics and races), the symbolic state in `chakra_ir.verify_memory`; `VerifyError`
and `SymbolicMemory` are importable from here.
"""

from __future__ import annotations

import gc
import itertools
from dataclasses import dataclass

import numpy as np

from chakra_ir.program import Program
from chakra_ir.verify_error import Race as Race
from chakra_ir.verify_error import VerifyError as VerifyError
from chakra_ir.verify_execution import Checker
from chakra_ir.verify_execution import MessageTrace as MessageTrace
from chakra_ir.verify_memory import SymbolicMemory as SymbolicMemory
from chakra_ir.verify_structure import FLOW_IN, SEND
from topologies.topology import Topology


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` checked, for summaries."""

    ranks: int
    operations: int
    messages: int
    checks: tuple[str, ...] = ("structure", "progress", "semantics", "races")
    flows: int = 0
    """In-network flows."""


def verify(program: Program) -> VerifyReport:
    """Check ``program`` completely; raise `VerifyError` at the first problem.

    Returns a `VerifyReport` of what was checked. Runs in time roughly linear in the number of
    operations (about a few microseconds each).
    """
    checker = Checker(program)
    match = checker.structure()
    # The symbolic state is millions of small tuples and lists that never form cycles; the
    # cyclic collector would rescan them over and over and make the run quadratic.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        checker.run(match)
    finally:
        if was_enabled:
            gc.enable()
    messages = int(np.count_nonzero(program.kind == SEND))
    return VerifyReport(program.num_ranks, program.num_ops, messages, flows=len(checker.flow_ins))


def message_contents(program: Program) -> MessageTrace:
    """Verify ``program`` completely (as `verify`) and return what each message carries: the
    contents of every Send and FlowIn and of every reducing Recv's slots before it reduces
    (`MessageTrace`), from the same symbolic execution. Raises `VerifyError` as `verify`."""
    checker = Checker(program)
    match = checker.structure()
    trace = MessageTrace(match)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        checker.run(match, trace)
    finally:
        if was_enabled:
            gc.enable()
    return trace


def verify_races(program: Program) -> None:
    """The structure, progress and race checks of `verify`, without the symbolic contents:
    for executors that compute contents in their own order (``backends.hwprog``) and need
    every race found whatever the contents. Raises `VerifyError`; a race carries
    `VerifyError.race`."""
    checker = Checker(program)
    match = checker.structure()
    checker.run(match, semantics=False)


def verify_routes(program: Program, topology: Topology) -> None:
    """Check the placement and every Send's route hint against ``topology``.

    Each placed rank must be an NPU of the topology; a route must start at the sender's NPU,
    end at the receiver's and follow existing links; in-network flows need a topology whose
    switches reduce and multicast (`Topology.in_network`). Raises `VerifyError` (check "structure").
    """
    c = program.collective
    for r in range(program.num_ranks):
        if not 0 <= c.npu(r) < topology.num_npus:
            raise VerifyError(
                "structure",
                f"rank {r} is placed on NPU {c.npu(r)}, but the topology has {topology.num_npus} NPUs",
                r,
            )
    if program.has_flows and not topology.in_network:
        g = int(np.flatnonzero(program.kind >= FLOW_IN)[0])
        r = int(program.op_rank()[g])
        raise VerifyError(
            "structure",
            f"{program.describe_op(g)}: an in-network flow needs switches that reduce and "
            f"multicast, and {topology.spec} has none (FRED: fred:N; a reducing switch: "
            "switch:N,innet=yes)",
            r,
            g - int(program.rank_offsets[r]),
        )
    if not program.has_routes:
        return
    offsets = program.route_offsets
    nodes = program.route_nodes.tolist()
    rank_of = program.op_rank()
    for g in np.flatnonzero(np.diff(offsets) > 0).tolist():
        route = nodes[offsets[g] : offsets[g + 1]]
        r = int(rank_of[g])
        problem = ""
        if int(program.kind[g]) != SEND:
            problem = "carries a route but is not a send"
        elif route[0] != c.npu(r) or route[-1] != c.npu(int(program.peer[g])):
            problem = (
                f"route {'>'.join(map(str, route))} does not run from NPU {c.npu(r)} "
                f"to NPU {c.npu(int(program.peer[g]))}"
            )
        else:
            for u, v in itertools.pairwise(route):
                if not (0 <= u < topology.num_nodes and 0 <= v < topology.num_nodes) or not (
                    topology.links_between(u, v)
                ):
                    problem = f"route uses {u}>{v}, which is not a link of the topology"
                    break
        if problem:
            local = g - int(program.rank_offsets[r])
            raise VerifyError("structure", f"{program.describe_op(g)}: {problem}", r, local)
