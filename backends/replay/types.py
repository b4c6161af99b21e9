"""The values every replayer shares: `ReplayOptions` in, `ReplayResult` out (with its
`LinkReport` and `BufferUse` rows), and `Replayer`, the signature a target registers in
`backends.replay.framework.REPLAYERS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReplayOptions:
    """``timeline``: keep what a Chrome/Perfetto trace needs (command and link spans)."""

    timeline: bool = False


@dataclass(frozen=True)
class BufferUse:
    """The most slots one VC input buffer ever had in use (packets in it or on the wire
    towards it, i.e. credits taken), named by the router, its input port and the VC."""

    router: int
    port: int
    vc: int
    link_src: int
    max_packets: int

    def to_json(self) -> dict[str, Any]:
        return {
            "router": self.router,
            "port": self.port,
            "vc": self.vc,
            "from": self.link_src,
            "max_packets": self.max_packets,
        }


@dataclass(frozen=True)
class LinkReport:
    src: int
    port: int
    dst: int
    busy_cycles: int
    packets: int

    def to_json(self, cycles: int) -> dict[str, Any]:
        return {
            "src": self.src,
            "port": self.port,
            "dst": self.dst,
            "busy_cycles": self.busy_cycles,
            "packets": self.packets,
            "utilisation": self.busy_cycles / cycles if cycles else 0.0,
        }


@dataclass
class ReplayResult:
    """What a replay found. ``cycles`` is the last command's completion (or, after a
    deadlock, the cycle the network stalled at); ``time_ns`` = cycles / clock.
    ``postcondition`` is ``"holds"``, ``"fails"`` or ``"not reached"`` (a deadlock), with
    ``postcondition_message`` saying why. ``deadlock`` is None or the stall: the cycle of
    waiting buffers, the commands left, the packets still in the network."""

    target: str
    folder: str
    topology: str
    algorithm: str
    collective: str
    completion: str
    clock_ghz: float
    cycles: int
    commands: int
    commands_done: int
    messages: int
    packets: int
    packet_hops: int
    links: list[LinkReport]
    buffers: list[BufferUse]
    postcondition: str
    postcondition_message: str = ""
    deadlock: dict[str, Any] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def time_ns(self) -> float:
        return self.cycles / self.clock_ghz

    @property
    def completed(self) -> bool:
        return self.commands_done == self.commands

    def max_buffer(self) -> BufferUse | None:
        return max(self.buffers, key=lambda b: b.max_packets, default=None)

    def busiest_link(self) -> LinkReport | None:
        return max(self.links, key=lambda lk: lk.busy_cycles, default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "folder": self.folder,
            "topology": self.topology,
            "algorithm": self.algorithm,
            "collective": self.collective,
            "completion": self.completion,
            "parameters": self.parameters,
            "completed": self.completed,
            "cycles": self.cycles,
            "time_ns": self.time_ns,
            "clock_ghz": self.clock_ghz,
            "commands": self.commands,
            "commands_done": self.commands_done,
            "messages": self.messages,
            "packets": self.packets,
            "packet_hops": self.packet_hops,
            "postcondition": self.postcondition,
            "postcondition_message": self.postcondition_message,
            "deadlock": self.deadlock,
            "links": [lk.to_json(self.cycles) for lk in self.links],
            "buffers": [b.to_json() for b in self.buffers],
        }


Replayer = Callable[[Path, ReplayOptions], ReplayResult]
"""A target's replayer: read the hardware program in the folder and replay it."""
