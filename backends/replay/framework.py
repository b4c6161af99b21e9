"""The replay framework: one entry point for every hardware target.

`replay(folder, options)` reads the folder's versioned header (``hwprog.json``, through
`backends.hwprog.format`), refuses an unknown target or a version from the future in one
line, and hands the folder to the target's replayer from `REPLAYERS`. Every failure to read
is one `ReplayError`; a program that deadlocks or computes the wrong thing is a result, not
an error (`ReplayResult.completed`, ``deadlock``, ``postcondition``).

A replayer is a function ``(folder, options) -> ReplayResult``; a target registers it in
`REPLAYERS` (FRED's switch programs will add their own).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.hwprog.errors import FormatError
from backends.hwprog.export import FORMAT, HEADER_FILE
from backends.replay.errors import ReplayError


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


def _grid(folder: Path, options: ReplayOptions) -> ReplayResult:
    from backends.replay.grid import replay_grid  # the packet model, loaded on use

    return replay_grid(folder, options)


REPLAYERS: dict[str, Replayer] = {"mesh": _grid, "torus": _grid}
"""Target (the header's ``target``) -> its replayer."""


def read_target(folder: Path | str) -> str:
    """The target named by ``folder``'s header, after checking the format and version."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReplayError(f"{folder}: no such folder")
    path = folder / HEADER_FILE
    try:
        doc = FORMAT.load(path)
        FORMAT.check_header(doc, str(path))
    except FormatError as e:
        raise ReplayError(e.message, e.pos) from None
    target = doc.get("target")
    if not isinstance(target, str) or target not in REPLAYERS:
        known = ", ".join(sorted(REPLAYERS))
        shown = repr(target) if isinstance(target, str) else json.dumps(target)[:60]
        raise ReplayError(f"{path}: $.target: {shown} has no replayer (known: {known})")
    return str(target)


def replay(folder: Path | str, options: ReplayOptions | None = None) -> ReplayResult:
    """Replay the hardware program in ``folder`` with its target's replayer."""
    folder = Path(folder)
    target = read_target(folder)
    try:
        return REPLAYERS[target](folder, options or ReplayOptions())
    except FormatError as e:
        raise ReplayError(e.message, e.pos) from None
