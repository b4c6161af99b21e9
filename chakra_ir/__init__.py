"""The one IR of collc: collectives and programs based on the Chakra execution trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from chakra_ir.collective import Buffer as Buffer
    from chakra_ir.collective import Collective as Collective
    from chakra_ir.collective import CollectiveKind as CollectiveKind
    from chakra_ir.collective import Contents as Contents
    from chakra_ir.collective import custom_collective as custom_collective
    from chakra_ir.collective import parse_collective_kind as parse_collective_kind
    from chakra_ir.ops import Copy as Copy
    from chakra_ir.ops import FlowIn as FlowIn
    from chakra_ir.ops import FlowOut as FlowOut
    from chakra_ir.ops import Hints as Hints
    from chakra_ir.ops import Op as Op
    from chakra_ir.ops import OpKind as OpKind
    from chakra_ir.ops import Recv as Recv
    from chakra_ir.ops import Reduce as Reduce
    from chakra_ir.ops import Send as Send
    from chakra_ir.ops import Slice as Slice
    from chakra_ir.program import Program as Program
    from chakra_ir.program import ProgramBuilder as ProgramBuilder
    from chakra_ir.text import format_program as format_program
    from chakra_ir.text import parse_program as parse_program

_LAZY: dict[str, str] = {
    "Buffer": "chakra_ir.collective",
    "Collective": "chakra_ir.collective",
    "CollectiveKind": "chakra_ir.collective",
    "Contents": "chakra_ir.collective",
    "custom_collective": "chakra_ir.collective",
    "parse_collective_kind": "chakra_ir.collective",
    "Copy": "chakra_ir.ops",
    "FlowIn": "chakra_ir.ops",
    "FlowOut": "chakra_ir.ops",
    "Hints": "chakra_ir.ops",
    "Op": "chakra_ir.ops",
    "OpKind": "chakra_ir.ops",
    "Program": "chakra_ir.program",
    "ProgramBuilder": "chakra_ir.program",
    "Recv": "chakra_ir.ops",
    "Reduce": "chakra_ir.ops",
    "Send": "chakra_ir.ops",
    "Slice": "chakra_ir.ops",
    "format_program": "chakra_ir.text",
    "parse_program": "chakra_ir.text",
}
"""Where each public name lives; it is imported on first use, so importing one submodule
does not load them all (start-up time: `collc.cli` imports only what a command needs)."""

__all__ = [
    "Buffer",
    "Collective",
    "CollectiveKind",
    "Contents",
    "Copy",
    "FlowIn",
    "FlowOut",
    "Hints",
    "Op",
    "OpKind",
    "Program",
    "ProgramBuilder",
    "Recv",
    "Reduce",
    "Send",
    "Slice",
    "custom_collective",
    "format_program",
    "parse_collective_kind",
    "parse_program",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
