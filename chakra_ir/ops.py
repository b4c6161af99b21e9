"""One operation of a Program as an object: the operation codes (`OpKind`), the slices they
move (`Slice`), their hints (`Hints`), the six operations and `format_op`, their one-line text.

`chakra_ir.program` stores operations as columns and gives this view of them;
`chakra_ir.text` writes and reads whole programs, one `format_op` line per operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from chakra_ir.collective import Buffer


class OpKind(IntEnum):
    """Operation codes stored in `Program.kind`."""

    SEND = 0
    RECV = 1
    RECV_REDUCE = 2
    COPY = 3
    REDUCE = 4
    # 5..7 are the ET layout's own node codes (`chakra_ir.et.layout`), kept free so that
    # ``collc_op`` stays the OpKind value in files written before flows existed.
    FLOW_IN = 8
    """Contribute ``src`` to in-network flow ``tag``."""
    FLOW_OUT = 9
    """Receive the result of in-network flow ``tag`` into ``dst``."""


@dataclass(frozen=True, slots=True)
class Slice:
    """``count`` consecutive slots of ``buffer`` starting at ``index``."""

    buffer: Buffer
    index: int
    count: int = 1

    def __str__(self) -> str:
        if self.count == 1:
            return f"{self.buffer.label}[{self.index}]"
        return f"{self.buffer.label}[{self.index}:{self.index + self.count}]"


@dataclass(frozen=True)
class Hints:
    """Optional facts that travel with an operation without changing its meaning.

    ``route``: for a Send, the node path (NPU, switches..., NPU) its message was charged on.
    ``channel``/``threadblock``: MSCCL placement hints; -1 when unset.
    ``after``: for a Send, the rank-local id of an earlier Send on the same link that a
    simulator must issue first even when both become ready at one instant; -1 when unset. The
    ET writer expresses it with a gate node (see `chakra_ir.et.layout`).
    """

    route: tuple[int, ...] = ()
    channel: int = -1
    threadblock: int = -1
    after: int = -1


NO_HINTS = Hints()


@dataclass(frozen=True)
class Send:
    peer: int
    src: Slice
    tag: int = 0
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class Recv:
    peer: int
    dst: Slice
    tag: int = 0
    reduce: bool = False
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class Copy:
    src: Slice
    dst: Slice
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class Reduce:
    """``dst <- dst (+) src`` inside one rank."""

    src: Slice
    dst: Slice
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class FlowIn:
    """Contribute ``src`` to in-network flow ``flow`` (see the module docstring)."""

    flow: int
    src: Slice
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


@dataclass(frozen=True)
class FlowOut:
    """Receive the result of in-network flow ``flow`` into ``dst`` (overwriting it)."""

    flow: int
    dst: Slice
    deps: tuple[int, ...] = ()
    hints: Hints = NO_HINTS


Op = Send | Recv | Copy | Reduce | FlowIn | FlowOut


def format_op(op: Op) -> str:
    """One operation, without its id."""
    if isinstance(op, Send):
        text = f"send to={op.peer} src={op.src} tag={op.tag}"
    elif isinstance(op, Recv):
        text = f"recv from={op.peer} dst={op.dst}{' reduce' if op.reduce else ''} tag={op.tag}"
    elif isinstance(op, Copy):
        text = f"copy src={op.src} dst={op.dst}"
    elif isinstance(op, FlowIn):
        text = f"flow-in flow={op.flow} src={op.src}"
    elif isinstance(op, FlowOut):
        text = f"flow-out flow={op.flow} dst={op.dst}"
    else:
        text = f"reduce src={op.src} dst={op.dst}"
    if op.deps:
        text += " deps=" + ",".join(str(d) for d in op.deps)
    h = op.hints
    if h.channel != -1:
        text += f" ch={h.channel}"
    if h.threadblock != -1:
        text += f" tb={h.threadblock}"
    if h.after != -1:
        text += f" after={h.after}"
    if h.route:
        text += " route=" + ">".join(str(n) for n in h.route)
    return text
