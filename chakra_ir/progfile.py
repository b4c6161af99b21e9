"""The compact program file: one file holding a `Program` or a `SymmetricProgram`.

The file is an uncompressed numpy ``.npz`` archive (a zip of ``.npy`` arrays, read without
pickles) with one member ``header``: UTF-8 JSON as bytes, whose fields are

| field | content |
|---|---|
| ``format`` | ``"collc-program"`` |
| ``version`` | 1; a newer version is refused |
| ``form`` | ``"symmetric"`` or ``"full"`` |
| ``collective`` | the Collective as JSON (`collective_to_dict`) |
| ``name`` | the program's name |
| ``topology`` | the topology spec it was made for ("" when unknown) |
| ``chunk_bytes`` | bytes per chunk (a positive integer) |
| ``planned_ns`` | the producer's estimate (0 when unknown) |
| ``completion`` | the send-completion rule it was made and timed under (``on-arrival`` or ``on-departure``); absent: the default rule |
| ``shape``, ``block`` | symmetric form: the translation group's shape and the slots per block |

and the arrays: symmetric form, the template columns (`TEMPLATE_COLUMNS`), ``dep_offsets`` and
``deps``; full form, ``rank_offsets``, every `COLUMNS` column, ``dep_offsets``, ``deps``,
``route_offsets``, ``route_nodes`` and ``buffer_sizes``. docs/symmetric.md describes the
symmetric form. Files are written under a temporary name and renamed. Reading checks every
field and every array's presence, type and length, and raises `ProgramFileError` naming the
file; the program's meaning is for the verifier.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chakra_ir.collective import collective_from_dict, collective_to_dict
from chakra_ir.program import COLUMNS, Program
from chakra_ir.symmetric import TEMPLATE_COLUMNS, SymmetricProgram, TranslationGroup
from topologies.atomic import write_atomically
from topologies.cost_model import DEFAULT_COMPLETION, Completion
from topologies.errors import CollcError

FORMAT = "collc-program"
VERSION = 1
SUFFIX = ".collcp"


class ProgramFileError(CollcError):
    """A program file that cannot be read: one line naming the file and what is wrong."""


@dataclass(frozen=True)
class ProgramFile:
    """What a program file holds: the program (either form) and its header's facts."""

    program: Program | SymmetricProgram
    topology: str
    chunk_bytes: int
    planned_ns: float
    completion: str = DEFAULT_COMPLETION.value
    """The send-completion rule the program was synthesized and timed under
    (`topologies.cost_model.Completion`); a file without it reads as the default rule."""


def write_program_file(
    path: str | Path,
    program: Program | SymmetricProgram,
    *,
    chunk_bytes: int,
    topology: str = "",
    planned_ns: float | None = None,
    completion: str = DEFAULT_COMPLETION.value,
) -> None:
    """Write ``program`` to ``path`` (module docstring), atomically."""
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "collective": collective_to_dict(program.collective),
        "name": program.name,
        "topology": topology,
        "chunk_bytes": int(chunk_bytes),
        "completion": Completion.parse(completion).value,
    }
    arrays: dict[str, Any]
    if isinstance(program, SymmetricProgram):
        header.update(form="symmetric", shape=list(program.group.shape), block=program.block)
        header["planned_ns"] = program.planned_ns if planned_ns is None else planned_ns
        arrays = dict(program.columns)
        arrays.update(dep_offsets=program.dep_offsets, deps=program.deps)
    else:
        header.update(form="full", planned_ns=planned_ns or 0.0)
        arrays = {name: getattr(program, name) for name in COLUMNS}
        for name in ("rank_offsets", "dep_offsets", "deps", "route_offsets", "route_nodes"):
            arrays[name] = getattr(program, name)
        arrays["buffer_sizes"] = program.buffer_sizes
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)

    def write(name: str) -> None:
        with open(name, "wb") as f:
            np.savez(f, **arrays)

    write_atomically(path, write)


def is_program_file(path: str | Path) -> bool:
    """Whether ``path`` is a file that looks like a program file (a zip with a header)."""
    p = Path(path)
    if not p.is_file() or not zipfile.is_zipfile(p):
        return False
    with zipfile.ZipFile(p) as z:
        return "header.npy" in z.namelist()


def read_program_file(path: str | Path) -> ProgramFile:
    """Read a program file; `ProgramFileError` when it is not a valid one."""
    where = str(path)

    def bad(text: str) -> ProgramFileError:
        return ProgramFileError(f"{where}: {text}")

    try:
        with np.load(where, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise bad(f"not a collc program file ({e})") from None
    try:
        raw = data.pop("header")
        header = json.loads(raw.astype(np.uint8).tobytes().decode())
        assert isinstance(header, dict)
    except (KeyError, ValueError, UnicodeDecodeError, AssertionError):
        raise bad("no readable header") from None
    if header.get("format") != FORMAT:
        raise bad(f"format is {header.get('format')!r}, expected {FORMAT!r}")
    version = header.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise bad(f"version {version!r} is not one this collc reads (1..{VERSION})")
    chunk = header.get("chunk_bytes")
    planned = header.get("planned_ns", 0.0)
    topology = header.get("topology", "")
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0:
        raise bad(f"chunk_bytes must be a positive integer, got {chunk!r}")
    if not isinstance(planned, int | float) or not np.isfinite(planned) or planned < 0:
        raise bad(f"planned_ns must be a finite number >= 0, got {planned!r}")
    if not isinstance(topology, str):
        raise bad("topology must be a string")
    completion = header.get("completion", DEFAULT_COMPLETION.value)
    try:
        completion = Completion.parse(completion).value if isinstance(completion, str) else None
    except ValueError:
        completion = None
    if completion is None:
        choices = ", ".join(c.value for c in Completion)
        raise bad(f"completion must be one of {choices}, got {header.get('completion')!r}")
    collective = collective_from_dict(header.get("collective") or {})
    name = str(header.get("name", ""))

    def arr(key: str, kinds: str = "iu") -> Any:
        a = data.get(key)
        if a is None or a.ndim not in (1, 2) or a.dtype.kind not in kinds:
            raise bad(f"array {key!r} is missing or not integers")
        return a

    form = header.get("form")
    if form == "symmetric":
        shape, block = header.get("shape"), header.get("block")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 1 for s in shape):
            raise bad(f"shape must be a list of positive integers, got {shape!r}")
        if not isinstance(block, int) or block < 1:
            raise bad(f"block must be a positive integer, got {block!r}")
        group = TranslationGroup(tuple(shape))
        if group.order != collective.num_ranks:
            raise bad(f"the group has {group.order} elements for {collective.num_ranks} ranks")
        cols = {k: arr(k).astype(np.int32) for k in TEMPLATE_COLUMNS}
        t = len(cols["kind"])
        if any(len(v) != t or v.ndim != 1 for v in cols.values()):
            raise bad("template columns differ in length")
        offs, deps = arr("dep_offsets").astype(np.int64), arr("deps").astype(np.int32)
        if len(offs) != t + 1 or offs[0] != 0 or offs[-1] != len(deps) or (np.diff(offs) < 0).any():
            raise bad("dep_offsets do not describe the deps")
        sp = SymmetricProgram(collective, group, block, cols, offs, deps, name, float(planned))
        return ProgramFile(sp, topology, chunk, float(planned), completion)
    if form != "full":
        raise bad(f"form must be 'symmetric' or 'full', got {form!r}")
    ro = arr("rank_offsets")
    if len(ro) != collective.num_ranks + 1 or ro[0] != 0 or (np.diff(ro) < 0).any():
        raise bad("rank_offsets do not match the collective's ranks")
    n = int(ro[-1])
    columns = {k: arr(k) for k in COLUMNS}
    if any(len(v) != n for v in columns.values()):
        raise bad(f"columns must hold {n} operations")
    offs = arr("dep_offsets")
    deps = arr("deps")
    r_off, r_nodes = arr("route_offsets"), arr("route_nodes")
    for key, o, vals in (("dep_offsets", offs, deps), ("route_offsets", r_off, r_nodes)):
        if len(o) != n + 1 or o[0] != 0 or o[-1] != len(vals) or (np.diff(o) < 0).any():
            raise bad(f"{key} do not describe their values")
    sizes = arr("buffer_sizes")
    if sizes.size != 3 * collective.num_ranks:
        raise bad("buffer_sizes must hold 3 numbers per rank")
    program = Program.from_columns(collective, ro, columns, offs, deps, sizes, r_off, r_nodes, name)
    return ProgramFile(program, topology, chunk, float(planned), completion)
