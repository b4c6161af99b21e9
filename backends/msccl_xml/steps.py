"""From threadblocks to XML steps: operands, cross-threadblock dependencies, nops, hasdep.

Operands (buffer codes are physical, see `backends.msccl_xml.graph`):

======  =====================================  ======================================
type    srcbuf/srcoff                          dstbuf/dstoff
======  =====================================  ======================================
s       the local slot sent                    the receiver's slot (the old runtime's
                                               direct send reads it)
r, rcs  the sender's slot (unused)             the local slot written
rrc     the local slot reduced (= dst)         the local slot written
rrcs    the local slot reduced (= dst)         the local slot written and forwarded
rrs     the local slot reduced                 the same slot (nothing is stored)
cpy/re  the local source                       the local destination
nop     ``i`` -1                               ``o`` -1, ``cnt`` 0
======  =====================================  ======================================

The reducing receives name the *receiver's* slot in ``srcbuf``/``srcoff``: the runtime reads
it as the local operand. MSCCLang writes the sender's slot there (a trap of msccl-tools' XML),
which is only right when both slots have the same name.

Dependencies: a step waits for the steps of other threadblocks that its nodes depend on;
waits implied by earlier waits of the same threadblock (or by the other waits of the step) are
dropped (`mscclang_frontend.xml.depgraph`). A step keeps one wait (the one on the highest
threadblock id); each other becomes a ``nop`` just before it. Steps waited for get
``hasdep="1"``.
"""

from __future__ import annotations

from backends.msccl_xml.errors import XmlExportError
from backends.msccl_xml.graph import Graph
from backends.msccl_xml.model import XGpu, XStep, XTb
from backends.msccl_xml.threadblocks import Step, Tb
from chakra_ir.collective import Buffer, CollectiveKind
from mscclang_frontend.xml import format as fmt
from mscclang_frontend.xml.depgraph import DepCycle, Item, schedule


def _operands(g: Graph, step: Step) -> XStep:
    nodes = [g.nodes[x] for x in step.nodes]
    first = nodes[0]
    t = step.type
    if t == "s":
        peer = g.nodes[g.messages[first.msg].recv]
        src, dst = first.src, peer.dst
    elif t in ("r", "rcs"):
        peer = g.nodes[g.messages[first.msg].send]
        src, dst = peer.src, first.dst
    elif t in ("rrc", "rrcs", "rrs"):
        src = dst = first.dst
    else:
        src, dst = first.src, first.dst
    out = XStep(t, src[0], src[1], dst[0], dst[1], first.count, nodes=step.nodes)
    for n in nodes:
        if n.receives:
            out.recv_msg = n.msg
        elif n.msg >= 0:
            out.send_msg = n.msg
    return out


def build_steps(g: Graph, rank: int, tbs: list[Tb]) -> list[XTb]:
    """The ``<tb>`` elements of ``rank``, steps with operands, dependencies and nops."""
    where: dict[int, Item] = {}
    for tb in tbs:
        for i, step in enumerate(tb.steps):
            for x in step.nodes:
                where[x] = (tb.id, i)
    cross: dict[Item, set[Item]] = {}
    for tb in tbs:
        for i, step in enumerate(tb.steps):
            cross[(tb.id, i)] = {
                where[d] for x in step.nodes for d in g.nodes[x].deps if d not in step.nodes
            }
    try:
        _, kept = schedule([len(tb.steps) for tb in tbs], cross)
    except DepCycle as e:
        t, i = e.cycle[0]
        node = tbs[t].steps[i].nodes[0]
        raise XmlExportError(
            f"threadblock order on rank {rank} contradicts the dependencies at "
            f"{g.describe(node)} (internal error)"
        ) from None
    # Final step numbers, nops included.
    final: dict[Item, int] = {}
    for tb in tbs:
        s = 0
        for i in range(len(tb.steps)):
            s += max(len(kept.get((tb.id, i), [])) - 1, 0)
            final[(tb.id, i)] = s
            s += 1
    out: list[XTb] = []
    waited: set[tuple[int, int]] = set()
    for tb in tbs:
        xtb = XTb(tb.id, tb.send, tb.recv, tb.chan)
        for i, step in enumerate(tb.steps):
            waits = kept.get((tb.id, i), [])
            for t, k in waits[:-1]:
                nop = XStep("nop", int(Buffer.INPUT), -1, int(Buffer.OUTPUT), -1, 0)
                nop.depid, nop.deps = t, final[(t, k)]
                xtb.steps.append(nop)
                waited.add((t, final[(t, k)]))
            xs = _operands(g, step)
            if waits:
                t, k = waits[-1]
                xs.depid, xs.deps = t, final[(t, k)]
                waited.add((t, final[(t, k)]))
            xtb.steps.append(xs)
        out.append(xtb)
    for xtb in out:
        for s, xs in enumerate(xtb.steps):
            xs.hasdep = (xtb.id, s) in waited
    return out


def build_gpu(g: Graph, rank: int, tbs: list[Tb]) -> XGpu:
    """The ``<gpu>`` of ``rank``: buffer sizes and threadblocks.

    Sizes are the Program's; in place, the buffer that aliases into the other one has size 0
    (MSCCLang names every slot by the buffer that holds it). A custom collective's input and
    output sizes are what the GPU's steps use, as msccl-tools writes them (0 on a GPU that does
    not touch the buffer): the runtime only checks the steps' offsets against them, and takes
    the chunk size from ``nchunksperloop``, the largest of them.
    """
    p = g.program
    c = p.collective
    sizes = [int(x) for x in p.buffer_sizes[rank]]
    if c.inplace:
        for b in (Buffer.INPUT, Buffer.OUTPUT):
            if c.physical(rank, b, 0)[0] is not b:
                sizes[b] = 0
    xtbs = build_steps(g, rank, tbs)
    if c.kind is CollectiveKind.CUSTOM:
        used = _used_extent(xtbs)
        sizes[Buffer.INPUT] = used[Buffer.INPUT]
        sizes[Buffer.OUTPUT] = used[Buffer.OUTPUT]
    return XGpu(rank, sizes[0], sizes[1], sizes[2], xtbs)


def _used_extent(tbs: list[XTb]) -> list[int]:
    """Per buffer, one past the last chunk the steps read or write on this GPU (a send's
    destination is the peer's, not counted)."""
    used = [0, 0, 0]
    for tb in tbs:
        for st in tb.steps:
            kind = fmt.STEP_TYPES[st.type]
            if kind.reads_src:
                used[st.srcbuf] = max(used[st.srcbuf], st.srcoff + st.cnt)
            if kind.recv or kind.local:
                used[st.dstbuf] = max(used[st.dstbuf], st.dstoff + st.cnt)
    return used
