"""The cost model: what a transfer costs. Every producer that estimates time and the simulator
use this one module, so an estimate and a replay of the same program agree.

Choices, each deliberate:

- A message crosses its route hop by hop, store-and-forward: a hop over link ``e`` takes
  ``latency_ns(e) + bytes / bandwidth(e)``, and the next hop starts when the whole message has
  arrived (as ASTRA-sim's congestion-aware backend does).
- A link is a FIFO server busy for the serialization time ``bytes / bandwidth`` only; its
  latency is propagation, so the next message may enter the link while the previous one is
  still in flight (the link is a pipe).
- A switch is an ordinary node: crossing it is the hop on its down link, whose latency and
  bandwidth stand for the switch port. It adds no processing delay of its own beyond
  ``switch_delay_ns`` (0 by default), and it does not reduce (in-network reduction is a later
  extension).
- A Send completes when its last byte has left the sender (the first hop's serialization
  ends): its source slots may then be reused. A Recv completes when the message has arrived.
- A reduction of ``bytes`` costs ``bytes / reduce_bytes_per_ns``; with no reduction bandwidth
  set (the default) reductions are free. ASTRA-sim charges ``3 * bytes / local-mem-bw`` (one
  write, two reads): `CostModel.astrasim_reduction` builds that rule.
- Copies inside a rank are free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from topologies.topology import Link


@dataclass(frozen=True)
class CostModel:
    """Times in ns for bytes moved over links; see the module docstring for the rules."""

    reduce_bytes_per_ns: float = 0.0
    """Reduction throughput; 0 means reductions take no time."""
    switch_delay_ns: float = 0.0
    """Extra delay per switch crossed (0: the switch port's link latency says it all)."""

    @classmethod
    def astrasim_reduction(cls, local_mem_bw_gb_per_s: float) -> CostModel:
        """ASTRA-sim's rule: reducing m bytes costs 3m / local-mem-bw (decimal GB/s)."""
        return cls(reduce_bytes_per_ns=local_mem_bw_gb_per_s / 3.0)

    def serialization_ns(self, link: Link, nbytes: float) -> float:
        """How long ``nbytes`` keep ``link`` busy."""
        return nbytes / link.bandwidth_bytes_per_ns

    def hop_ns(self, link: Link, nbytes: float) -> float:
        """From the first byte entering ``link`` to the last byte arriving at its end."""
        return link.latency_ns + nbytes / link.bandwidth_bytes_per_ns

    def path_ns(self, links: Iterable[Link], nbytes: float, switches_crossed: int = 0) -> float:
        """Uncontended store-and-forward time of one message along ``links``."""
        total = sum(self.hop_ns(link, nbytes) for link in links)
        return total + switches_crossed * self.switch_delay_ns

    def reduction_ns(self, nbytes: float) -> float:
        """Time to reduce ``nbytes`` into a buffer."""
        if self.reduce_bytes_per_ns <= 0:
            return 0.0
        return nbytes / self.reduce_bytes_per_ns


DEFAULT_COST_MODEL = CostModel()
