"""The output folder: per-rank ET files plus a manifest.

A folder written by ``collc synthesize``/``compile`` holds ``<prefix>.<rank>.et`` for every rank
and ``manifest.json`` naming the collective, the topology spec (failures included), the
placement, the size, the seed, the send-completion rule, the ET prefix and the collc version, so
later commands need no repeated flags. The whole folder is written under a temporary name and
renamed into place, so a failed run leaves nothing half-written, and an existing collc folder is
replaced only once the new one is complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chakra_ir.collective import Collective, collective_from_dict, collective_to_dict
from chakra_ir.program import Program
from chakra_ir.version import VERSION
from topologies.atomic import remove_stale_temporaries as remove_stale_temporaries
from topologies.atomic import terminate_as_exit as terminate_as_exit
from topologies.atomic import umask_mode
from topologies.cost_model import COMPLETIONS, DEFAULT_COMPLETION, LEGACY_COMPLETION
from topologies.errors import CollcError, SourcePos
from topologies.jsonfile import load_json
from topologies.topology import Topology

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class OutputError(CollcError):
    """A missing, unreadable or mismatched output folder."""


def collc_version() -> str:
    """The collc that writes a file (`chakra_ir.version.VERSION`)."""
    return VERSION


@dataclass(frozen=True)
class Manifest:
    """What an output folder holds. ``size_bytes`` = chunks of the sized buffer x ``chunk_bytes``."""

    collective: Collective
    topology: str
    size_bytes: int
    chunk_bytes: int
    et_prefix: str
    algorithm: str = ""
    seed: int | None = None
    collc_version: str = field(default_factory=collc_version)
    extra: dict[str, Any] = field(default_factory=dict)
    completion: str = DEFAULT_COMPLETION.value
    """The send-completion rule the program was produced and timed under
    (`topologies.cost_model.Completion`); a manifest without it reads as ``on-departure``,
    the rule of every folder written before it was recorded."""

    def to_json(self) -> dict[str, Any]:
        c = self.collective
        return {
            "format": FORMAT_VERSION,
            "collc_version": self.collc_version,
            "algorithm": self.algorithm,
            "collective": collective_to_dict(c),
            "placement": [c.npu(r) for r in range(c.num_ranks)],
            "topology": self.topology,
            "size_bytes": self.size_bytes,
            "chunk_bytes": self.chunk_bytes,
            "seed": self.seed,
            "completion": self.completion,
            "et_prefix": self.et_prefix,
            "et_files": [f"{self.et_prefix}.{r}.et" for r in range(c.num_ranks)],
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], file: str) -> Manifest:
        """The manifest described by the JSON object ``d`` read from ``file``.

        Every field is checked for its type and range (integers must be JSON integers, sizes
        positive, ``size_bytes`` = chunks x ``chunk_bytes``, ``extra`` values finite numbers
        where collc reads numbers); OutputError naming ``file`` and the field otherwise.
        """
        where = SourcePos(file)
        try:
            fmt = _int_field(d, "format")
            if fmt > FORMAT_VERSION:
                raise OutputError(
                    f"manifest format {fmt} is newer than this collc reads ({FORMAT_VERSION})",
                    where,
                )
            seed = d.get("seed")
            completion = d.get("completion", LEGACY_COMPLETION.value)
            if not isinstance(completion, str) or completion not in COMPLETIONS:
                raise OutputError(
                    f"unknown send completion {completion!r} (expected one of "
                    f"{', '.join(COMPLETIONS)})",
                    where,
                )
            raw_collective = d["collective"]
            if not isinstance(raw_collective, dict):
                raise OutputError("field 'collective' must be an object", where)
            collective = collective_from_dict(raw_collective)
            extra = d.get("extra")
            extra = {} if extra is None else extra
            if not isinstance(extra, dict):
                raise OutputError("field 'extra' must be an object", where)
            _check_extra(extra, where)
            manifest = cls(
                collective=collective,
                topology=_str_field(d, "topology"),
                size_bytes=_int_field(d, "size_bytes", minimum=1),
                chunk_bytes=_int_field(d, "chunk_bytes", minimum=1),
                et_prefix=_str_field(d, "et_prefix"),
                algorithm=str(d.get("algorithm", "")),
                seed=None if seed is None else _int_field(d, "seed", minimum=None),
                collc_version=str(d.get("collc_version", "")),
                extra=dict(extra),
                completion=completion,
            )
        except KeyError as e:
            raise OutputError(f"malformed manifest: missing field {e}", where) from None
        except (TypeError, ValueError, OverflowError) as e:
            raise OutputError(f"malformed manifest: {e}", where) from None
        except OutputError as e:
            if e.pos is None:
                raise OutputError(e.message, where) from None
            raise
        except CollcError as e:
            raise OutputError(e.message, where) from None
        if not _PREFIX.fullmatch(manifest.et_prefix):
            raise OutputError(
                f"field 'et_prefix' {manifest.et_prefix!r} is not a plain file-name stem", where
            )
        n = collective.num_ranks
        placement = d.get("placement")
        if placement is not None and (
            not isinstance(placement, list)
            or len(placement) != n
            or placement != [collective.npu(r) for r in range(n)]
        ):
            raise OutputError(
                "field 'placement' disagrees with the collective's placement "
                f"({n} ranks on NPUs {collective.npu(0)}, ...)",
                where,
            )
        et_files = d.get("et_files")
        if et_files is not None and (
            not isinstance(et_files, list)
            or len(et_files) != n
            or et_files != [f"{manifest.et_prefix}.{r}.et" for r in range(n)]
        ):
            raise OutputError(
                f"field 'et_files' is not the {n} files {manifest.et_prefix}.<rank>.et", where
            )
        want = manifest.chunk_bytes * collective.size_chunks
        if manifest.size_bytes != want:
            raise OutputError(
                f"size_bytes {manifest.size_bytes} is not chunk_bytes {manifest.chunk_bytes} x "
                f"{collective.size_chunks} chunks ({want})",
                where,
            )
        return manifest


_PREFIX = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")

EXTRA_NUMBERS = ("lower_bound_ns", "estimated_ns")
"""``extra`` fields collc reads as finite non-negative numbers."""


def _int_field(d: dict[str, Any], key: str, minimum: int | None = 0) -> int:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise OutputError(f"field {key!r} must be an integer, not {_show(v)}")
    if minimum is not None and v < minimum:
        raise OutputError(f"field {key!r} must be at least {minimum}, not {v}")
    if abs(v) >= 1 << 63:
        raise OutputError(f"field {key!r} is outside int64: {_show(v)}")
    return v


def _str_field(d: dict[str, Any], key: str) -> str:
    v = d[key]
    if not isinstance(v, str):
        raise OutputError(f"field {key!r} must be a string, not {_show(v)}")
    return v


def _show(v: object) -> str:
    text = json.dumps(v) if not isinstance(v, float) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_extra(extra: dict[str, Any], where: SourcePos) -> None:
    """The ``extra`` values collc reads must have the types it reads them as."""
    for key in EXTRA_NUMBERS:
        v = extra.get(key)
        if v is None:
            continue
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not math.isfinite(v)
            or v < 0
            or v > 1e30
        ):
            raise OutputError(
                f"field 'extra.{key}' must be a finite non-negative number, not {_show(v)}", where
            )
    rm = extra.get("reduce_micros")
    if rm is not None and (isinstance(rm, bool) or not isinstance(rm, int) or not 0 <= rm < 2**53):
        raise OutputError(
            f"field 'extra.reduce_micros' must be a non-negative integer, not {_show(rm)}", where
        )
    lb = extra.get("lower_bound")
    if lb is not None and not isinstance(lb, str):
        raise OutputError(f"field 'extra.lower_bound' must be a string, not {_show(lb)}", where)


def chunk_bytes_for(collective: Collective, size_bytes: int) -> int:
    """Bytes per chunk for a collective of ``size_bytes`` (the largest buffer, as nccl-tests).

    Rounds up when the size is not a multiple of the chunk count; the manifest records the
    exact size that results.
    """
    if size_bytes <= 0:
        raise CollcError(f"size must be positive, got {size_bytes} bytes")
    n = collective.size_chunks
    return -(-size_bytes // n)


def replace_dir(tmp: Path, out: Path) -> None:
    """Put the complete folder ``tmp`` at ``out``, replacing what is there.

    The old folder is renamed aside before the new one is renamed in, so ``out`` is at every
    moment either the old folder or the new one. Callers check first that ``out`` may be
    replaced; both must be on one file system (``tmp`` is made beside ``out``).
    """
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=out.parent))
        os.rename(out, old / out.name)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)


@contextlib.contextmanager
def atomic_folder(
    out: Path | str,
    marker: str,
    what: str,
    error: type[CollcError] = OutputError,
) -> Iterator[Path]:
    """Write a folder all at once: the block fills the temporary folder it is given (beside
    ``out``), which then replaces ``out``; on any exception (SIGTERM included) it is removed,
    and so are the parent folders this call created, and ``out`` is untouched. ``out`` may be
    missing, empty or an earlier folder of this kind (it holds the file ``marker``); anything
    else is refused with ``error`` naming ``what`` the folder should be, checked again just
    before the replacement, under a lock of the parent folder (another writer may have filled
    ``out`` meanwhile). The working
    folder, or one that holds it, is refused. A symbolic link ``out`` keeps pointing at the
    folder written. Hidden temporaries that dead processes left beside ``out`` are removed
    first. An ``OSError`` names the path under ``out``, never the temporary."""
    given = Path(out)
    real = Path(os.path.realpath(given))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == real.parent or cwd == real or real in cwd.parents:
        raise error(
            f"{given}: the working folder (or one holding it) is not replaced by {what}; "
            "name a folder of its own"
        )
    _check_replaceable(real, given, marker, what, error)
    parent = real.parent
    created: list[Path] = []
    p = parent
    while not p.exists():
        created.append(p)
        p = p.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(real)
    with terminate_as_exit():
        tmp: Path | None = None
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{real.name}.tmp-{os.getpid()}-", dir=parent))
            # mkdtemp makes it private; the result is an ordinary folder
            os.chmod(tmp, umask_mode(0o777))
            yield tmp
            with _folder_lock(parent):
                _check_replaceable(real, given, marker, what, error)
                replace_dir(tmp, real)
        except BaseException as exc:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            for d in created:  # innermost first; only while still empty
                try:
                    d.rmdir()
                except OSError:
                    break
            if isinstance(exc, OSError) and exc.errno is not None:
                name = exc.filename
                if name is None:  # a write() that failed (ENOSPC): the folder being written
                    raise OSError(exc.errno, exc.strerror, str(given)) from None
                inside = tmp is not None and isinstance(name, str)
                if inside and (name == str(tmp) or str(name).startswith(f"{tmp}{os.sep}")):
                    shown = given / os.path.relpath(name, tmp)
                    raise OSError(exc.errno, exc.strerror, os.path.normpath(shown)) from None
            raise


@contextlib.contextmanager
def _folder_lock(parent: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``parent`` while a writer checks and replaces a folder in it,
    so that two writers never both find the place free (the kernel drops the lock of a
    process that dies). Without the means to lock (a file system that cannot), no lock."""
    try:
        fd = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _check_replaceable(
    real: Path, given: Path, marker: str, what: str, error: type[CollcError]
) -> None:
    if real.exists():
        if not real.is_dir():
            raise error(f"{given} exists and is not a folder")
        if any(real.iterdir()) and not (real / marker).is_file():
            raise error(f"{given} exists, is not empty and is not {what}; not replacing it")


def write_output(
    out: Path | str, program: Program, manifest: Manifest, **et_options: Any
) -> list[Path]:
    """Write ``program`` as ET files plus the manifest into ``out``, atomically
    (`atomic_folder`).

    Returns the files written (inside ``out``). ``et_options`` go to the ET writer.
    """
    from chakra_ir.et import write_et_files

    out = Path(out)
    with atomic_folder(out, MANIFEST, "a collc output folder") as tmp:
        files = write_et_files(program, tmp, manifest.et_prefix, manifest.chunk_bytes, **et_options)
        with open(tmp / MANIFEST, "w") as f:
            json.dump(manifest.to_json(), f, indent=2)
            f.write("\n")
    return [*(out / Path(p).name for p in files), out / MANIFEST]


def read_manifest(out: Path | str) -> Manifest:
    """The manifest of an output folder; OutputError (naming the file and, for malformed JSON
    or bytes that are not UTF-8, the position) when missing or malformed."""
    out = Path(out)
    if not out.exists():
        raise OutputError(f"{out}: no such folder")
    if not out.is_dir():
        raise OutputError(f"{out} is not an output folder")
    path = out / MANIFEST
    if not path.exists():
        raise OutputError(f"{out} has no {MANIFEST}: not a collc output folder")
    data = load_json(path, OutputError, max_bytes=MAX_MANIFEST_BYTES)
    if not isinstance(data, dict):
        raise OutputError("the manifest must be a JSON object", SourcePos(str(path)))
    return Manifest.from_json(data, str(path))


MAX_MANIFEST_BYTES = 64 << 20
"""A manifest larger than this is refused before it is parsed."""


def read_output(out: Path | str) -> tuple[Manifest, Program]:
    """The manifest and the Program decoded from an output folder's ET files (not verified).

    Checked before anything is decoded: the manifest names no more ranks than the folder holds
    ``<prefix>.<rank>.et`` files (so a manifest cannot make collc allocate for ranks that are
    not there). Checked while decoding: each file holds the rank of its name, and every file's
    chunk size (and so every message's size) is the manifest's ``chunk_bytes``.
    """
    from chakra_ir.et import decode_rank_files

    out = Path(out)
    manifest = read_manifest(out)
    where = SourcePos(str(out / MANIFEST))
    num_ranks = manifest.collective.num_ranks
    prefix = manifest.et_prefix + "."
    on_disk = 0
    with os.scandir(out) as it:
        for entry in it:
            if entry.name.startswith(prefix) and entry.name.endswith(".et"):
                on_disk += 1
    if num_ranks > on_disk:
        raise OutputError(
            f"the manifest names {num_ranks} ranks but the folder holds {on_disk} "
            f"{manifest.et_prefix}.<rank>.et files",
            where,
        )
    files = [out / f"{manifest.et_prefix}.{r}.et" for r in range(num_ranks)]
    for f in files:
        if not f.exists():
            raise OutputError(f"{f}: missing ET file (the manifest names {len(files)} ranks)")
    decoded = decode_rank_files(files)
    program = decoded.program
    if program.collective != manifest.collective:
        raise OutputError(f"{out}: the ET files describe a different collective than {MANIFEST}")
    if decoded.chunk_bytes != manifest.chunk_bytes:
        raise OutputError(
            f"chunk_bytes {manifest.chunk_bytes} differs from the ET files' own chunk size "
            f"{decoded.chunk_bytes} (collc_chunk_bytes, the message sizes)",
            where,
        )
    rm = manifest.extra.get("reduce_micros")
    if rm is not None and rm != decoded.reduce_micros:
        raise OutputError(
            f"extra.reduce_micros {rm} differs from the ET files' collc_reduce_micros "
            f"{decoded.reduce_micros}",
            where,
        )
    return manifest, program


def manifest_topology(manifest: Manifest, folder: Path | str) -> Topology:
    """The topology the manifest of ``folder`` names, checked against its program.

    OutputError naming the manifest when the spec does not parse (an unknown kind such as
    ``mesk:8``; the spec's own error and column are quoted) or when the placement puts a rank
    on an NPU the topology does not have (``ring:4`` for 8 ranks).
    """
    from topologies import parse_topology

    where = SourcePos(str(Path(folder) / MANIFEST))
    try:
        topology = parse_topology(manifest.topology)
    except CollcError as e:
        raise OutputError(f"field 'topology': {e}", where) from None
    c = manifest.collective
    worst = max((c.npu(r) for r in range(c.num_ranks)), default=0)
    if c.num_ranks > topology.num_npus or worst >= topology.num_npus:
        raise OutputError(
            f"field 'topology' {manifest.topology!r} has {topology.num_npus} NPUs, too few for "
            f"the {c.num_ranks} ranks placed up to NPU {worst}",
            where,
        )
    return topology
