"""Reading a JSON file the way every collc reader does: one place for the rules.

`load_json` reads at most a size limit, decodes UTF-8 and parses JSON, and turns every
failure into one error of the caller's type with the file and position:

- a file that cannot be read, or is larger than the limit (read no further);
- bytes that are not UTF-8 (line and column of the first bad byte);
- text that is not JSON (line and column, and the line shown under a caret);
- ``NaN``, ``Infinity`` and ``-Infinity``, which Python's reader accepts and JSON does not;
- nesting too deep for the parser.

It lives in `topologies`, the leftmost package, beside the shared error types, so that every
package may use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from topologies.errors import CollcError, SourcePos

MAX_JSON_BYTES = 64 << 20
"""Default largest JSON file read: far above any configuration, group or manifest file."""

ErrorType = Callable[[str, SourcePos], CollcError]
"""Builds the caller's error from a message and the position."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(
    path: str | os.PathLike[str], error: ErrorType, *, max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """The JSON value in ``path``; any failure raises ``error(message, position)``."""
    name = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise error(f"cannot read: {e.strerror or e}", SourcePos(name)) from None
    if len(raw) > max_bytes:
        raise error(f"larger than {max_bytes:,} bytes, the most collc reads", SourcePos(name))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise error(
            f"not UTF-8: byte 0x{raw[e.start]:02x} cannot start or continue a character",
            SourcePos(name, line, col, e.start),
        ) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        lines = text.splitlines()
        shown = lines[e.lineno - 1][:200] if 0 < e.lineno <= len(lines) else ""
        raise error(f"not JSON: {e.msg}", SourcePos(name, e.lineno, e.colno, -1, shown)) from None
    except ValueError as e:
        raise error(f"not JSON: {e}", SourcePos(name)) from None
    except RecursionError:
        raise error("not JSON: nested too deeply", SourcePos(name)) from None
