"""The replay framework: one entry point for every hardware target.

`replay(folder, options)` reads the folder's versioned header (``hwprog.json``, through
`backends.hwprog.format`), refuses an unknown target or a version from the future in one
line, and hands the folder to the target's replayer from `REPLAYERS`. Every failure to read
is one `ReplayError`; a program that deadlocks or computes the wrong thing is a result, not
an error (`ReplayResult.completed`, ``deadlock``, ``postcondition``).

A replayer is a function ``(folder, options) -> ReplayResult``; a target registers it in
`REPLAYERS` (``fred``: `backends.replay.fred`). The options and result types live in
`backends.replay.types`, which the replayers import, and are re-exported here.
"""

from __future__ import annotations

import json
from pathlib import Path

from backends.fred.export import FORMAT as FRED_FORMAT
from backends.hwprog.errors import FormatError
from backends.hwprog.export import FORMAT, HEADER_FILE
from backends.replay.errors import ReplayError
from backends.replay.types import BufferUse as BufferUse
from backends.replay.types import LinkReport as LinkReport
from backends.replay.types import Replayer as Replayer
from backends.replay.types import ReplayOptions as ReplayOptions
from backends.replay.types import ReplayResult as ReplayResult


def _grid(folder: Path, options: ReplayOptions) -> ReplayResult:
    from backends.replay.grid import replay_grid  # the packet model, loaded on use

    return replay_grid(folder, options)


def _fred(folder: Path, options: ReplayOptions) -> ReplayResult:
    from backends.replay.fred import replay_fred  # loaded on use

    return replay_fred(folder, options)


REPLAYERS: dict[str, Replayer] = {"mesh": _grid, "torus": _grid, "fred": _fred}
"""Target (the header's ``target``) -> its replayer."""


def read_target(folder: Path | str) -> str:
    """The target named by ``folder``'s header, after checking the format and version."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReplayError(f"{folder}: no such folder")
    path = folder / HEADER_FILE
    try:
        doc = FORMAT.load(path)
        # FRED's switch configurations keep their own format under the same header name.
        named = doc.get("format") if isinstance(doc, dict) else None
        (FRED_FORMAT if named == FRED_FORMAT.name else FORMAT).check_header(doc, str(path))
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
