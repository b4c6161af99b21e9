"""The runtime's limits, checked on the finished document.

msccl-executor-nccl and RCCL refuse (or silently mis-run) an algorithm with more than 32
threadblocks on one channel of a GPU, more than 64 steps in a threadblock (nops included),
more than 32 channels, or a step moving 72 chunks or more. The runtime also fuses consecutive
``re`` steps of a threadblock that reduce into the same slot from the same buffer (when the
later one has no dependency and the earlier is not depended on) into one transfer with up to
16 sources, keeping one count for all: longer runs, or runs of different counts, are refused
here. Counts are cut to the limit when the graph is built, so they never fail this check.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from backends.msccl_xml.model import XAlgo
from chakra_ir.collective import Buffer
from mscclang_frontend.xml.options import XmlOptions


@dataclass(frozen=True)
class Violation:
    """``limit`` is one of: steps, threadblocks, channels, count, reduce-fusion."""

    limit: str
    message: str

    @property
    def splittable(self) -> bool:
        """Whether spreading messages over more channels can help."""
        return self.limit in ("steps", "threadblocks")


def check_limits(algo: XAlgo, options: XmlOptions) -> Violation | None:
    """The first limit ``algo`` breaks, or None."""
    if algo.nchannels > options.max_channels:
        return Violation(
            "channels",
            f"the algorithm needs {algo.nchannels} channels; the runtime allows "
            f"{options.max_channels}",
        )
    for gpu in algo.gpus:
        per_chan = Counter(tb.chan for tb in gpu.tbs)
        for chan, count in sorted(per_chan.items()):
            if count > options.max_tbs_per_channel:
                return Violation(
                    "threadblocks",
                    f"rank {gpu.id} has {count} threadblocks on channel {chan}; the runtime "
                    f"allows {options.max_tbs_per_channel} per channel",
                )
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            if len(tb.steps) > options.max_steps_per_tb:
                return Violation(
                    "steps",
                    f"rank {gpu.id} threadblock {tb.id} has {len(tb.steps)} steps; the runtime "
                    f"allows {options.max_steps_per_tb} per threadblock",
                )
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for s, step in enumerate(tb.steps):
                if step.cnt > options.max_count:
                    return Violation(
                        "count",
                        f"rank {gpu.id} threadblock {tb.id} step {s} moves {step.cnt} chunks; "
                        f"the runtime allows {options.max_count}",
                    )
            v = _reduce_runs(gpu.id, tb.id, tb.steps, options.max_reduce_fusion)
            if v is not None:
                return v
    return None


def _reduce_runs(gpu: int, tb: int, steps: list, limit: int) -> Violation | None:  # type: ignore[type-arg]
    run = 0
    prev = None
    for s, step in enumerate(steps):
        if step.type != "re":
            run, prev = 0, None
            continue
        continues = (
            prev is not None
            and prev.dstbuf == step.dstbuf
            and prev.dstoff == step.dstoff
            and prev.srcbuf == step.srcbuf
            and step.depid < 0
            and not prev.hasdep
        )
        if not continues:
            run, prev = 1, step
            continue
        assert prev is not None
        run += 1
        slot = f"{Buffer(step.dstbuf).short}[{step.dstoff}]"
        if step.cnt != prev.cnt:
            return Violation(
                "reduce-fusion",
                f"rank {gpu} threadblock {tb} steps {s - 1} and {s} reduce into {slot} with "
                "different counts; the runtime would fuse them with one count",
            )
        if run > limit:
            return Violation(
                "reduce-fusion",
                f"rank {gpu} threadblock {tb} has {run} consecutive reductions into {slot} "
                f"ending at step {s}; the runtime fuses at most {limit}",
            )
        prev = step
    return None
