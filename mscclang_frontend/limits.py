"""Bounds on running a program (`Limits`) and on what it builds through the MSCCLang API
(`ApiLimits`): collc runs MSCCLang programs, so it must stop runaway ones.

A program that exceeds a bound gets a `CompileError` naming the line it was on, never a hang
or an exhausted machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ApiLimits:
    """Bounds on what a program may build (it is run, so it must not exhaust the machine)."""

    max_ranks: int = 1 << 16
    max_buffer_slots: int = 1 << 22
    max_instances: int = 1 << 10
    max_ops: int = 200_000
    """Operations of the lowered program (a copy between ranks is two, times the instances).
    The default stops a loop that keeps recording within seconds; --max-ops raises it."""


@dataclass(frozen=True)
class Limits:
    """``max_steps``: statements, expressions, calls and loop iterations; ``max_collection``: elements of
    one list, tuple, dict or string; ``max_alloc``: elements created by all of them together;
    ``max_call_depth``: nested calls of the program's functions; ``max_output``: characters
    printed; ``max_int_bits``: size of integers; ``max_source_bytes``/``max_tokens``: size of the
    program text, checked before it is parsed; ``api``: ranks, buffer slots, instances and
    recorded operations.
    """

    max_steps: int = 2_000_000
    max_collection: int = 4_000_000
    max_alloc: int = 50_000_000
    max_call_depth: int = 64
    max_output: int = 16 << 20
    max_int_bits: int = 1 << 16
    max_source_bytes: int = 1 << 20
    max_tokens: int = 200_000
    api: ApiLimits = field(default_factory=ApiLimits)
