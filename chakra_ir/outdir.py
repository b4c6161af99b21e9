"""The output folder: per-rank ET files plus a manifest.

A folder written by ``collc synthesize``/``compile`` holds ``<prefix>.<rank>.et`` for every rank
and ``manifest.json`` naming the collective, the topology spec (failures included), the
placement, the size, the seed, the send-completion rule, the ET prefix and the collc version, so
later commands need no repeated flags. The whole folder is written under a temporary name and
renamed into place, so a failed run leaves nothing half-written, and an existing collc folder is
replaced only once the new one is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chakra_ir.collective import Collective, collective_from_dict, collective_to_dict
from chakra_ir.program import Program
from topologies.cost_model import COMPLETIONS, DEFAULT_COMPLETION, LEGACY_COMPLETION
from topologies.errors import CollcError, SourcePos

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class OutputError(CollcError):
    """A missing, unreadable or mismatched output folder."""


def collc_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("collc")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


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
        try:
            if int(d["format"]) > FORMAT_VERSION:
                raise OutputError(
                    f"manifest format {d['format']} is newer than this collc reads ({FORMAT_VERSION})",
                    SourcePos(file),
                )
            seed = d.get("seed")
            completion = d.get("completion", LEGACY_COMPLETION.value)
            if not isinstance(completion, str) or completion not in COMPLETIONS:
                raise OutputError(
                    f"unknown send completion {completion!r} (expected one of "
                    f"{', '.join(COMPLETIONS)})",
                    SourcePos(file),
                )
            return cls(
                collective=collective_from_dict(d["collective"]),
                topology=str(d["topology"]),
                size_bytes=int(d["size_bytes"]),
                chunk_bytes=int(d["chunk_bytes"]),
                et_prefix=str(d["et_prefix"]),
                algorithm=str(d.get("algorithm", "")),
                seed=None if seed is None else int(seed),
                collc_version=str(d.get("collc_version", "")),
                extra=dict(d.get("extra") or {}),
                completion=completion,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise OutputError(
                f"malformed manifest: missing or bad field {e}", SourcePos(file)
            ) from None
        except CollcError as e:
            raise OutputError(e.message, SourcePos(file)) from None


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
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)


def _atomic_replace_dir(tmp: Path, out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise OutputError(f"{out} exists and is not a folder")
        if any(out.iterdir()) and not (out / MANIFEST).exists():
            raise OutputError(
                f"{out} exists, is not empty and is not a collc output folder; not replacing it"
            )
    replace_dir(tmp, out)


def write_output(
    out: Path | str, program: Program, manifest: Manifest, **et_options: Any
) -> list[Path]:
    """Write ``program`` as ET files plus the manifest into ``out``, atomically.

    Returns the files written (inside ``out``). ``et_options`` go to the ET writer.
    """
    from chakra_ir.et import write_et_files

    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the result is an ordinary folder
    try:
        files = write_et_files(program, tmp, manifest.et_prefix, manifest.chunk_bytes, **et_options)
        with open(tmp / MANIFEST, "w") as f:
            json.dump(manifest.to_json(), f, indent=2)
            f.write("\n")
        _atomic_replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / Path(p).name for p in [*files, tmp / MANIFEST]]


def read_manifest(out: Path | str) -> Manifest:
    """The manifest of an output folder; OutputError when missing or malformed."""
    out = Path(out)
    if not out.exists():
        raise OutputError(f"{out}: no such folder")
    if not out.is_dir():
        raise OutputError(f"{out} is not an output folder")
    path = out / MANIFEST
    if not path.exists():
        raise OutputError(f"{out} has no {MANIFEST}: not a collc output folder")
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise OutputError(
            f"malformed JSON: {e.msg}", SourcePos(str(path), e.lineno, e.colno)
        ) from None
    if not isinstance(data, dict):
        raise OutputError("the manifest must be a JSON object", SourcePos(str(path)))
    return Manifest.from_json(data, str(path))


def read_output(out: Path | str) -> tuple[Manifest, Program]:
    """The manifest and the Program decoded from an output folder's ET files (not verified)."""
    from chakra_ir.et import decode_program

    out = Path(out)
    manifest = read_manifest(out)
    files = [out / f"{manifest.et_prefix}.{r}.et" for r in range(manifest.collective.num_ranks)]
    for f in files:
        if not f.exists():
            raise OutputError(f"{f}: missing ET file (the manifest names {len(files)} ranks)")
    program = decode_program(files)
    if program.collective != manifest.collective:
        raise OutputError(f"{out}: the ET files describe a different collective than {MANIFEST}")
    return manifest, program
