"""The one IR of collc: collectives and programs based on the Chakra execution trace."""

from chakra_ir.collective import (
    Buffer,
    Collective,
    CollectiveKind,
    Contents,
    custom_collective,
    parse_collective_kind,
)
from chakra_ir.program import (
    Copy,
    Hints,
    Op,
    OpKind,
    Program,
    ProgramBuilder,
    Recv,
    Reduce,
    Send,
    Slice,
)
from chakra_ir.text import format_program, parse_program

__all__ = [
    "Buffer",
    "Collective",
    "CollectiveKind",
    "Contents",
    "Copy",
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
