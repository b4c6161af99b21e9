"""Compiling a Program into the XML document: the passes and the attempts.

1. `graph.build_graph`: physical slots, counts cut to ``max_count``, messages paired.
2. `fusion.find_fusions` (``options.fusion``): receive + forwarding send -> one step.
3. `channels.assign_channels`: a channel per message.
4. `threadblocks.plan_threadblocks`: which threadblock owns each (peer, channel); fused
   steps whose peers cannot share a threadblock are unfused.
5. `order.schedule`: plays the threadblock-serialized program out to order each
   threadblock's steps (connections keep their send order; a send waits while its connection
   holds ``buffer_slots`` messages). When the play gets stuck, the message at fault gets a
   channel of its own and 3-5 run again; with hints, or out of channels, a full buffer is
   ignored instead and step 8 judges.
6. `steps.build_gpu`: operands, minimal cross-threadblock dependencies, nops, hasdep.
7. `limits.check_limits`: without hints, a broken steps or threadblocks limit spreads the
   messages over more channels and starts again from 3; otherwise `XmlLimitError`.
8. `deadlock.find_deadlock` (``options.check_deadlock``).

Attempts, in order, until one passes 7 and 8: fused steps in merged threadblocks (a
threadblock may pair a send peer with a receive peer, as MSCCLang does), fused steps in split
threadblocks, then the same two without fusion. If all deadlock, `XmlDeadlockError` names the
cycle of the last attempt.
"""

from __future__ import annotations

from backends.msccl_xml.channels import Spread, assign_channels, fresh_channel
from backends.msccl_xml.deadlock import find_deadlock
from backends.msccl_xml.errors import XmlDeadlockError, XmlExportError, XmlLimitError
from backends.msccl_xml.fusion import Fusion, find_fusions
from backends.msccl_xml.graph import Graph, build_graph
from backends.msccl_xml.limits import check_limits
from backends.msccl_xml.model import XAlgo
from backends.msccl_xml.order import make_units, schedule
from backends.msccl_xml.steps import build_gpu
from backends.msccl_xml.threadblocks import plan_threadblocks
from chakra_ir.collective import CollectiveKind
from chakra_ir.program import Program
from mscclang_frontend.xml import format as fmt
from mscclang_frontend.xml.options import XmlOptions


def header(program: Program, options: XmlOptions) -> tuple[str, str]:
    """The ``name`` and ``coll`` attributes; refuses a custom collective, or one split into
    process groups, without ``coll``."""
    c = program.collective
    refusal = program.flow_refusal(
        "MSCCL-IR XML", "the MSCCL runtime moves data between GPUs; its switches do not reduce"
    )
    if refusal:
        raise XmlExportError(refusal)
    name = options.name or program.name or c.name or c.kind.value
    if options.coll:
        return name, options.coll
    if c.groups:
        raise XmlExportError(
            f"the program runs {c.kind.value} in {c.num_groups} process groups at once, and the "
            f"MSCCL runtime would run it as one {c.kind.value} over all {c.num_ranks} ranks of "
            "its communicator (a different result); name the runtime collective to run it "
            f"as anyway (--coll, one of {', '.join(fmt.RUNTIME_COLL.values())})"
        )
    if c.kind is CollectiveKind.CUSTOM:
        what = f" {c.name!r}" if c.name and c.name != "custom" else ""
        # --as-custom names its collective "<the standard collective>-as-custom".
        origin, _, tail = (c.name or "").rpartition("-as-custom")
        header = (
            f"; --coll {fmt.RUNTIME_COLL[fmt.COLL_NAMES[origin]]} writes what msccl-tools "
            f"writes for it"
            if not tail and fmt.COLL_NAMES.get(origin) in fmt.RUNTIME_COLL
            else ""
        )
        raise XmlExportError(
            f"the program computes the custom collective{what}; say what the XML's coll "
            f"names (--coll): the runtime collective it stands for, one of "
            f"{', '.join(fmt.RUNTIME_COLL.values())}, or custom, as msccl-tools writes custom "
            "collectives (collc and msccl-tools read it back; msccl-executor-nccl loads only "
            f"the runtime collectives){header}"
        )
    return name, fmt.RUNTIME_COLL[c.kind]


def compile_program(program: Program, options: XmlOptions) -> tuple[XAlgo, Graph]:
    """The document for ``program`` and the graph it was built from."""
    name, coll = header(program, options)
    g = build_graph(program, options.max_count)
    fusions = find_fusions(g) if options.fusion else {}
    attempts = [
        (fuse, split)
        for fuse in ((True, False) if fusions else (False,))
        for split in (False, True)
    ]
    cycle = ""
    for fuse, split in attempts:
        algo = _fit_limits(g, fusions if fuse else {}, split, options, name, coll)
        if not options.check_deadlock:
            return algo, g
        found = find_deadlock(algo, g, options.buffer_slots)
        if found is None:
            return algo, g
        cycle = found
    raise XmlDeadlockError(
        f"the threadblocks deadlock when they run their steps in order (connections buffering "
        f"{options.buffer_slots} message{'s' if options.buffer_slots > 1 else ''}): {cycle}"
    )


def _beyond_any_spread(g: Graph, options: XmlOptions) -> None:
    """Refuse, before any search, a program no channel spreading can fit: a rank sends each
    peer's messages from the threadblocks that own that peer, one per channel, so more than
    ``max_channels * max_steps_per_tb`` messages from one rank to another (after splitting to
    the count limit) cannot fit, and likewise for the receiving side."""
    per_pair: dict[tuple[int, int], int] = {}
    for msg in g.messages:
        key = (msg.src, msg.dst)
        per_pair[key] = per_pair.get(key, 0) + 1
    if not per_pair:
        return
    (a, b), count = max(per_pair.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))
    room = options.max_channels * options.max_steps_per_tb
    if count > room:
        raise XmlLimitError(
            f"rank {a} sends {count} messages to rank {b}, and the runtime can hold at most "
            f"{room} ({options.max_channels} channel{'s' if options.max_channels > 1 else ''}, "
            f"each with one threadblock sending to "
            f"rank {b}, of at most {options.max_steps_per_tb} steps each); cut the program "
            "into fewer, larger messages",
            "steps",
        )


def _fit_limits(
    g: Graph, fusions: dict[int, Fusion], split: bool, options: XmlOptions, name: str, coll: str
) -> XAlgo:
    if not g.hinted:
        _beyond_any_spread(g, options)
    spread = Spread()
    first = None
    while True:
        algo = _build(g, fusions, split, spread, options, name, coll)
        v = check_limits(algo, options)
        if v is None:
            return algo
        first = first or v
        if g.hinted or not v.splittable:
            why = (
                " (the program's channel/threadblock hints fix its layout)"
                if g.hinted and v.splittable
                else ""
            )
            raise XmlLimitError(first.message + why, first.limit)
        if v.limit == "threadblocks":
            spread = Spread(spread.by_pair + 1, spread.by_order)
        else:
            spread = Spread(spread.by_pair, spread.by_order + 1)
        if spread.channels > options.max_channels:
            raise XmlLimitError(
                f"{first.message}, and spreading the messages over {options.max_channels} "
                "channels does not help",
                first.limit,
            )


def _build(
    g: Graph,
    fusions: dict[int, Fusion],
    split: bool,
    spread: Spread,
    options: XmlOptions,
    name: str,
    coll: str,
) -> XAlgo:
    moved: dict[int, int] = {}
    capacity: int | None = options.buffer_slots
    while True:
        channels = assign_channels(g, spread, moved)
        usable = {
            r: f
            for r, f in fusions.items()
            if channels[g.nodes[f.recv].msg] == channels[g.nodes[f.send].msg]
        }
        layout = plan_threadblocks(g, usable, channels, merge=not split)
        units, unit_of = make_units(g, layout.fusions)
        stuck = schedule(
            g,
            units,
            unit_of,
            channels,
            layout,
            capacity=capacity,
            max_reduce_fusion=options.max_reduce_fusion,
        )
        if stuck is None:
            break
        m = stuck.message
        fresh = -1 if g.hinted else fresh_channel(g, channels, m)
        if stuck.why == "buffer" and not 0 <= fresh < options.max_channels:
            capacity = None  # leave the verdict to the deadlock check
            continue
        if fresh < 0:
            msg = g.messages[m]
            raise XmlExportError(
                f"{g.describe(msg.recv)} must be received before older messages from rank "
                f"{msg.src} on channel {channels[m]}, but the runtime receives a channel's "
                "messages in send order; give it another channel hint"
            )
        moved[m] = fresh
    tbs = layout.numbered()
    p = g.program
    gpus = [build_gpu(g, r, tbs[r]) for r in range(p.num_ranks)]
    nchannels = max((tb.chan for gpu in gpus for tb in gpu.tbs), default=0) + 1
    nchunks = max((max(gpu.i_chunks, gpu.o_chunks) for gpu in gpus), default=1)
    return XAlgo(
        name=name,
        proto=options.proto,
        nchannels=nchannels,
        nchunksperloop=max(nchunks, 1),
        ngpus=p.num_ranks,
        coll=coll,
        inplace=p.collective.inplace if options.inplace is None else options.inplace,
        header_extras=options.header_extras,
        min_bytes=options.min_bytes,
        max_bytes=options.max_bytes,
        gpus=gpus,
    )
