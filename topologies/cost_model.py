"""The cost model: what a transfer costs. Every producer that estimates time and the simulator
use this one module, so an estimate and a replay of the same program agree.

Choices, each deliberate:

- A message crosses its route hop by hop, store-and-forward: a hop over link ``e`` takes
  ``latency_ns(e) + bytes / bandwidth(e)``, and the next hop starts when the whole message has
  arrived (as ASTRA-sim's congestion-aware backend does).
- A link is a FIFO server busy for the serialization time ``bytes / bandwidth`` only; its
  latency is propagation, so the next message may enter the link while the previous one is
  still in flight (the link is a pipe). ``latency_holds_link`` selects the TACOS reference
  implementation's model instead: the link stays busy for latency + serialization.
- A switch is an ordinary node: crossing it is the hop on its down link, whose latency and
  bandwidth stand for the switch port. It adds no processing delay of its own beyond
  ``switch_delay_ns`` (0 by default). Messages between ranks are never reduced inside it.
- In-network flows (FRED; `topologies.innetwork`) run on switches that reduce and multicast.
  A flow of ``bytes`` is cut into `CostModel.flow_pieces` pieces that pipeline through the
  flow's tree; each piece crosses each tree link once, store-and-forward, as a message of its
  own on that link's FIFO. A switch passes piece j up once it has piece j from every up child
  (the reduction runs at line rate: no time of its own, as FRED's staged 2x2 µSwitches
  allow); the root, and every switch on the way down, copies piece j onto each down link as
  soon as it has it (multicast). A FlowIn puts all its pieces on its NPU's up link at once and
  completes by the send rule below, per piece (arrival at the first switch, or departure); a
  FlowOut completes when its last piece has arrived.
- When a Send completes is a stated rule, `Completion`, with two values:

  - ``on-arrival`` (the default, ASTRA-sim's: both of its network frontends fire a send's
    callback when the message has arrived): a node that depends on a Send waits for the
    message's delivery at the receiver;
  - ``on-departure`` (hardware whose DMA engines release the source buffer once it is read):
    the Send completes when its last byte has left the sender (the first hop's serialization
    ends).

  A Recv completes when the message has arrived, under both rules. The rule changes only what
  waits on a Send; no link is busier or freer under one rule than under the other.
- A reduction of ``bytes`` costs ``bytes / reduce_bytes_per_ns``; with no reduction bandwidth
  set (the default) reductions are free. ASTRA-sim charges ``3 * bytes / local-mem-bw`` (one
  write, two reads): `CostModel.astrasim_reduction` builds that rule.
- Copies inside a rank are free.
- Switching is store-and-forward, as above. The simulator alone also offers virtual
  cut-through (``cut_through_router_ns``), the rule of mesh and torus routers
  (`backends.replay`): a message holds each link of its route for its serialization, from
  when its head has reached the link's router and passed its pipeline (``R`` ns) and the link
  is free, but never so early that its tail would leave before it has arrived; it is
  delivered ``R`` after its tail arrives. One message over ``h`` equal hops then takes
  ``h L + (h + 1) R + S`` instead of ``h (L + S)``. Producers, estimates and bounds keep
  store-and-forward.

Simulators and synthesizers keep time in whole picoseconds (`to_ps`): each hop's serialization
and arrival time, each reduction and each compute duration is rounded to the picosecond once
(`CostModel.hop_ps`), and everything after is integer arithmetic. Equal times are then equal
wherever they are computed, so which of two messages reaches a link first never depends on
floating-point noise, and a synthesizer can predict a simulator to the picosecond.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

PS_PER_NS = 1000


def to_ps(ns: float) -> int:
    """Nanoseconds to whole picoseconds (nearest; halves to even)."""
    return round(ns * PS_PER_NS)


class LinkLike(Protocol):
    """What the cost model reads of a link."""

    @property
    def latency_ns(self) -> float: ...

    @property
    def bandwidth_bytes_per_ns(self) -> float: ...


class Completion(Enum):
    """When a Send completes: see the module docstring."""

    ON_ARRIVAL = "on-arrival"
    ON_DEPARTURE = "on-departure"

    @classmethod
    def parse(cls, text: str) -> Completion:
        """``on-arrival`` or ``on-departure``; ValueError naming the choices otherwise."""
        for c in cls:
            if c.value == text:
                return c
        raise ValueError(
            f"unknown send completion {text!r} (expected one of {', '.join(COMPLETIONS)})"
        )


COMPLETIONS: tuple[str, ...] = tuple(c.value for c in Completion)
"""The completion rules by name, the default first; CLI choices come from here."""
DEFAULT_COMPLETION = Completion.ON_ARRIVAL
LEGACY_COMPLETION = Completion.ON_DEPARTURE
"""The rule of output folders written before the rule was recorded."""


@dataclass(frozen=True)
class CostModel:
    """Times in ns for bytes moved over links; see the module docstring for the rules."""

    completion: Completion = DEFAULT_COMPLETION
    """When a Send completes (its dependants may start)."""

    reduce_bytes_per_ns: float = 0.0
    """Reduction throughput; 0 means reductions take no time."""
    latency_holds_link: bool = False
    """The TACOS reference implementation's link model: a hop keeps its link busy for latency
    plus serialization, so the next message cannot enter while one is in flight (off: the
    link is a pipe, busy for the serialization only)."""
    switch_delay_ns: float = 0.0
    """Extra delay per switch crossed (0: the switch port's link latency says it all)."""
    flow_piece_bytes: int = 65536
    """An in-network flow is cut into pieces of about this many bytes ..."""
    flow_min_pieces: int = 16
    """... but at least this many (a flow of one piece would pay store-and-forward in full
    at every level of the tree) ..."""
    flow_max_pieces: int = 256
    """... and at most this many (the pipeline's fill is then under 1/256 of the time)."""
    cut_through_router_ns: float | None = None
    """Virtual cut-through switching with this router delay (ns) per router passed; None:
    store-and-forward. The simulator's congestion model only (module docstring)."""

    @classmethod
    def astrasim_reduction(
        cls, local_mem_bw_gb_per_s: float, completion: Completion = DEFAULT_COMPLETION
    ) -> CostModel:
        """ASTRA-sim's rule: reducing m bytes costs 3m / local-mem-bw (decimal GB/s)."""
        return cls(completion=completion, reduce_bytes_per_ns=local_mem_bw_gb_per_s / 3.0)

    @property
    def on_arrival(self) -> bool:
        """Whether a Send completes when its message has arrived."""
        return self.completion is Completion.ON_ARRIVAL

    def send_done_ns(self, departed_ns: float, arrived_ns: float) -> float:
        """When a Send completes, given when its last byte left the sender and when the
        message arrived at the receiver."""
        return arrived_ns if self.on_arrival else departed_ns

    def serialization_ns(self, link: LinkLike, nbytes: float) -> float:
        """How long ``nbytes`` keep ``link`` busy."""
        return nbytes / link.bandwidth_bytes_per_ns

    def hop_ns(self, link: LinkLike, nbytes: float) -> float:
        """From the first byte entering ``link`` to the last byte arriving at its end."""
        return link.latency_ns + nbytes / link.bandwidth_bytes_per_ns

    def path_ns(self, links: Iterable[LinkLike], nbytes: float, switches_crossed: int = 0) -> float:
        """Uncontended store-and-forward time of one message along ``links``."""
        total = sum(self.hop_ns(link, nbytes) for link in links)
        return total + switches_crossed * self.switch_delay_ns

    def hop_ps(self, link: LinkLike, nbytes: float, into_switch: bool = False) -> tuple[int, int]:
        """``(serialization, arrival)`` of one hop in whole ps: how long ``nbytes`` keep
        ``link`` busy, and when their last byte has arrived at its far end (plus the switch
        delay when that end is a switch), both from the hop's start."""
        arrive = to_ps(self.hop_ns(link, nbytes))
        ser = arrive if self.latency_holds_link else to_ps(self.serialization_ns(link, nbytes))
        if into_switch:
            arrive += to_ps(self.switch_delay_ns)
        return ser, arrive

    def flow_pieces(self, nbytes: int) -> list[int]:
        """The piece sizes of an in-network flow of ``nbytes``: ``ceil(nbytes /
        flow_piece_bytes)`` pieces, clamped to ``flow_min_pieces..flow_max_pieces`` and to
        ``nbytes``; sizes differ by at most one byte, the larger first."""
        k = -(-nbytes // self.flow_piece_bytes)
        k = max(self.flow_min_pieces, min(self.flow_max_pieces, k))
        k = max(1, min(k, nbytes))
        base, extra = divmod(nbytes, k)
        return [base + 1] * extra + [base] * (k - extra)

    def reduction_ns(self, nbytes: float) -> float:
        """Time to reduce ``nbytes`` into a buffer."""
        if self.reduce_bytes_per_ns <= 0:
            return 0.0
        return nbytes / self.reduce_bytes_per_ns


DEFAULT_COST_MODEL = CostModel()
