"""Reading ET files at the node level: one file, bytes, or a whole per-rank folder.

Every reader here returns `EtTrace`s and raises `EtDecodeError` (naming the file and byte
offset) for anything it cannot read; corrupted input never surfaces as a protobuf exception.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.framing import load_et_bytes, split_frames
from chakra_ir.et.pbread import metadata_attrs, parse_metadata, read_nodes_pb
from chakra_ir.et.scan import Fallback, scan_nodes
from chakra_ir.et.trace import EtTrace, check_trace
from chakra_ir.et.wire import I64, PAD

_RANK_FILE = re.compile(r"^(?P<prefix>.*)\.(?P<rank>0|[1-9][0-9]*)\.et$")


def parse_et(data: bytes, file: str = "<bytes>", *, fast: bool = True) -> EtTrace:
    """Read one ET stream (GlobalMetadata, then Nodes) from ``data``; ``file`` names it in
    errors. With ``fast`` (the default) the vectorized reader runs first and hands anything it
    does not handle to the generic reader; ``fast=False`` uses the generic reader only.

    Checks the framing, that the first message is a GlobalMetadata, that every node parses,
    that node ids are unique and that every dependency names a node of the file. Raises
    EtDecodeError otherwise.
    """
    starts, ends = split_frames(data, file)
    meta = parse_metadata(data, int(starts[0]), int(ends[0]), file, 0)
    n_starts, n_ends = starts[1:], ends[1:]
    frame_offsets = _frame_offsets(starts, ends)[1:]
    trace: EtTrace | None = None
    if fast and len(n_starts):
        buf = np.zeros((len(data) + PAD + 7) // 8 * 8, dtype=np.uint8)
        buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        try:
            trace = scan_nodes(buf, n_starts, n_ends, file, frame_offsets)
        except (Fallback, IndexError, ValueError, OverflowError):
            # Anything the fast reader does not understand is the generic reader's: it accepts
            # what protobuf accepts and names what is wrong.
            trace = None
    if trace is None:
        trace = read_nodes_pb(data, n_starts, n_ends, file, frame_offsets)
    trace.version = meta.version
    trace.metadata = metadata_attrs(meta)
    check_trace(trace)
    return trace


def _frame_offsets(starts: I64, ends: I64) -> I64:
    """Where each frame (its length prefix) begins: the end of the previous message."""
    out = np.zeros(len(starts), dtype=np.int64)
    out[1:] = ends[:-1]
    return out


def read_et_file(path: str | os.PathLike[str], *, fast: bool = True) -> EtTrace:
    """Read one ET file (raw, or gzip which is decompressed; see `chakra_ir.et.framing`)."""
    data, name = load_et_bytes(path)
    return parse_et(data, name, fast=fast)


def et_rank_files(location: str | os.PathLike[str]) -> list[Path]:
    """The per-rank files ``<prefix>.0.et``, ``<prefix>.1.et``... of an ET set, by rank.

    ``location`` is the prefix (``out/ring`` for ``out/ring.<rank>.et``) or a folder holding
    exactly one such set. Raises EtDecodeError when there is none, several prefixes, or a gap
    in the ranks.
    """
    loc = Path(location)
    if loc.is_dir():
        sets: dict[str, dict[int, Path]] = {}
        for p in loc.iterdir():
            m = _RANK_FILE.match(p.name)
            if m and p.is_file():
                sets.setdefault(m["prefix"], {})[int(m["rank"])] = p
        if not sets:
            raise EtDecodeError("no ET files named <prefix>.<rank>.et in the folder", str(loc))
        if len(sets) > 1:
            names = ", ".join(sorted(sets))
            raise EtDecodeError(
                f"the folder holds several ET sets ({names}); name one by its prefix", str(loc)
            )
        prefix, found = next(iter(sets.items()))
        where = str(loc / prefix)
    else:
        found = {}
        parent = loc.parent if str(loc.parent) else Path(".")
        if parent.is_dir():
            for p in parent.iterdir():
                m = _RANK_FILE.match(p.name)
                if m and m["prefix"] == loc.name and p.is_file():
                    found[int(m["rank"])] = p
        where = str(loc)
        if not found:
            raise EtDecodeError(f"no ET files {loc.name}.<rank>.et", where)
    missing = [r for r in range(max(found) + 1) if r not in found]
    if missing:
        raise EtDecodeError(
            f"the ET set lacks rank {missing[0]} (has {len(found)} files up to rank {max(found)})",
            where,
        )
    return [found[r] for r in range(len(found))]


def read_et_folder(location: str | os.PathLike[str], *, fast: bool = True) -> list[EtTrace]:
    """Read every rank's file of an ET set (see `et_rank_files`); index = rank."""
    return [read_et_file(p, fast=fast) for p in et_rank_files(location)]


def iter_et_sources(
    sources: Iterable[bytes | str | os.PathLike[str]], *, fast: bool = True
) -> Iterator[EtTrace]:
    """Read ETs given as file contents or paths, one at a time (the ``i``-th bytes source is
    named ``<source i>`` in errors)."""
    for i, src in enumerate(sources):
        if isinstance(src, bytes | bytearray | memoryview):
            yield parse_et(bytes(src), f"<source {i}>", fast=fast)
        else:
            yield read_et_file(src, fast=fast)


def read_et_sources(
    sources: Iterable[bytes | str | os.PathLike[str]], *, fast: bool = True
) -> list[EtTrace]:
    """Read ETs given as file contents or paths (see `iter_et_sources`)."""
    return list(iter_et_sources(sources, fast=fast))
