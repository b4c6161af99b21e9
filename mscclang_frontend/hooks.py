"""The hook through which ``XML()`` prints MSCCL-IR XML.

The XML writer lives in ``backends/msccl_xml``, to the right of this package, so the front end
cannot import it. Whoever wires the pipeline registers it with `set_xml_emitter`; until then
``XML()`` only records that it was called (``CompiledProgram.xml_requested``) and prints
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mscclang_frontend.lowering import CompiledProgram

XmlEmitter = Callable[["CompiledProgram"], str]

_emitter: XmlEmitter | None = None


def set_xml_emitter(emitter: XmlEmitter | None) -> None:
    """Register the function that turns a compiled program into XML text (None: remove it)."""
    global _emitter
    _emitter = emitter


def xml_emitter() -> XmlEmitter | None:
    """The registered emitter, or None."""
    return _emitter


def emit_xml(program: CompiledProgram) -> str | None:
    """The XML of ``program`` from the registered emitter; None when none is registered."""
    if _emitter is None:
        return None
    return _emitter(program)
