"""In-network collectives (FRED): the switches reduce and multicast, the NPUs only inject and
collect.

Each collective is a handful of in-network flows (`chakra_ir.program`: a flow sums its
inputs inside the network and delivers the sum to its outputs), one per result a rank needs:

- all-reduce: one flow, every rank's buffer in, every rank's buffer out: each NPU sends and
  receives the buffer once, against ``2(n-1)/n`` of it for the best endpoint algorithm;
- reduce-scatter: flow ``i`` sums slice ``i`` of every other rank's input into rank ``i``,
  which adds its own slice locally (in place, via scratch, since the flow would overwrite it);
- all-gather: flow ``i`` multicasts rank ``i``'s input to every other rank, which keeps its own
  by a local copy;
- reduce: one flow from every rank into the root; broadcast: one multicast from the root.

Every rank injects its flows in flow order, so the pieces of one flow leave all the NPUs
together and the switches never wait long for a straggler. Groups spanning several L1 switches
go through L2: that is the flow's tree (`topologies.innetwork`), not the program's concern.
"""

from __future__ import annotations

from baselines.base import BaselineError, trivial_program
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice
from topologies import Topology

INNETWORK_KINDS = frozenset(
    {
        CollectiveKind.ALLREDUCE,
        CollectiveKind.REDUCE_SCATTER,
        CollectiveKind.ALLGATHER,
        CollectiveKind.REDUCE,
        CollectiveKind.BROADCAST,
    }
)


def innetwork_granularity(kind: CollectiveKind, num_ranks: int) -> int:
    """One chunk per rank: a flow pipelines its bytes through the switches by itself."""
    del kind, num_ranks
    return 1


def innetwork_program(collective: Collective, topology: Topology, name: str = "") -> Program:
    """The in-network program of ``collective`` (see the module docstring).

    Raises `BaselineError` when ``topology``'s switches do not reduce and multicast, or the
    kind is not one of `INNETWORK_KINDS`.
    """
    c = collective
    if not topology.in_network:
        raise BaselineError(
            f"{topology.spec} has no switches that reduce and multicast, so in-network "
            "collectives cannot run on it (FRED: fred:N, not innet=no; a reducing switch: "
            "switch:N,innet=yes)"
        )
    if c.kind not in INNETWORK_KINDS:
        served = ", ".join(sorted(k.value for k in INNETWORK_KINDS))
        raise BaselineError(f"in-network {c.kind.value} is not built (it serves {served})")
    n, cf = c.num_ranks, c.chunks_per_rank
    if n == 1:
        return trivial_program(c, name)
    b = ProgramBuilder(c, auto_deps=True, name=name)
    k = c.kind
    if k is CollectiveKind.ALLREDUCE:
        for r in range(n):
            b.flow_in(r, 0, Slice(Buffer.INPUT, 0, cf))
        for r in range(n):
            b.flow_out(r, 0, Slice(Buffer.OUTPUT, 0, cf))
    elif k is CollectiveKind.REDUCE_SCATTER:
        for r in range(n):
            for f in range(n):
                if f != r:
                    b.flow_in(r, f, Slice(Buffer.INPUT, f * cf, cf))
        for r in range(n):
            own = Slice(Buffer.INPUT, r * cf, cf)
            if c.inplace:  # the output is the rank's own slice: sum the others beside it
                b.flow_out(r, r, Slice(Buffer.SCRATCH, 0, cf))
                b.reduce(r, Slice(Buffer.SCRATCH, 0, cf), Slice(Buffer.OUTPUT, 0, cf))
            else:
                b.flow_out(r, r, Slice(Buffer.OUTPUT, 0, cf))
                b.reduce(r, own, Slice(Buffer.OUTPUT, 0, cf))
    elif k is CollectiveKind.ALLGATHER:
        for r in range(n):
            b.flow_in(r, r, Slice(Buffer.INPUT, 0, cf))
            if not c.inplace:
                b.copy(r, Slice(Buffer.INPUT, 0, cf), Slice(Buffer.OUTPUT, r * cf, cf))
        for r in range(n):
            for f in range(n):
                if f != r:
                    b.flow_out(r, f, Slice(Buffer.OUTPUT, f * cf, cf))
    elif k is CollectiveKind.REDUCE:
        for r in range(n):
            b.flow_in(r, 0, Slice(Buffer.INPUT, 0, cf))
        b.flow_out(c.root, 0, Slice(Buffer.OUTPUT, 0, cf))
    else:  # BROADCAST
        b.flow_in(c.root, 0, Slice(Buffer.INPUT, 0, cf))
        if not c.inplace:
            b.copy(c.root, Slice(Buffer.INPUT, 0, cf), Slice(Buffer.OUTPUT, 0, cf))
        for r in range(n):
            if r != c.root:
                b.flow_out(r, 0, Slice(Buffer.OUTPUT, 0, cf))
    return b.build()
