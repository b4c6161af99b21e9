"""The on-disk framing of a Chakra ET file, and reading and writing whole files.

An ET file is a stream of length-delimited messages: a varint32 byte length, then that many
bytes of one serialized message. The first message is the `GlobalMetadata`, every later one a
`Node`. There is no magic number, count or trailer.

gzip: Chakra's Python reader detects gzip and ASTRA-sim (feeder_v3) reads only raw streams.
collc never writes gzip; `load_et_bytes` decompresses a gzip file transparently (the gzip magic
``1f 8b`` cannot start a raw ET, whose first byte is a length and second a GlobalMetadata key),
so foreign traces load for inspection and timing. Byte offsets in errors about such a file
count in the decompressed stream, and say so.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

from chakra_ir.et.errors import EtDecodeError
from chakra_ir.et.wire import I64, read_varints, varint
from topologies.units import env_limit

GZIP_MAGIC = b"\x1f\x8b"
MAX_MESSAGE = (1 << 31) - 1
"""The largest message length a varint32 frame can state (protobuf's 2 GiB limit)."""


def frame(message: bytes) -> bytes:
    """``message`` with its varint length prefix."""
    return varint(len(message)) + message


def split_frames(data: bytes, file: str) -> tuple[I64, I64]:
    """The messages of an ET stream: ``(starts, ends)`` byte offsets of each message body.

    Message ``i`` occupies ``data[starts[i]:ends[i]]``; its length prefix begins at the end of
    message ``i - 1`` (0 for the first). Raises EtDecodeError naming ``file`` and the byte
    offset for an empty file, a truncated or over-long length varint, a message running past
    the end of the file, and a zero-length message (Chakra's Python reader takes that for the
    end of the stream, so a writer must never produce one).
    """
    n = len(data)
    if n == 0:
        raise EtDecodeError("empty file: an ET starts with a GlobalMetadata message", file, 0)
    frames: list[int] = []  # where each frame (its length prefix) begins
    add = frames.append
    pos = 0
    while pos < n:
        # Fast path: 1- and 2-byte lengths; anything else goes through _frame_length.
        b = data[pos]
        if 0 < b < 0x80:
            add(pos)
            pos += 1 + b
            continue
        if b >= 0x80 and pos + 1 < n:
            b2 = data[pos + 1]
            length = (b & 0x7F) | (b2 << 7)
            if b2 < 0x80 and length:
                add(pos)
                pos += 2 + length
                continue
        length, body = _frame_length(data, pos, len(frames), file)
        add(pos)
        pos = body + length
    if pos > n:  # the last frame runs past the end: let the careful path say so
        _frame_length(data, frames[-1], len(frames) - 1, file)
    fp = np.array(frames, dtype=np.int64)
    _, prefix, _ = read_varints(np.frombuffer(data, dtype=np.uint8), fp)
    ends = np.empty(len(fp), dtype=np.int64)
    ends[:-1] = fp[1:]
    ends[-1] = n
    return fp + prefix, ends


def _frame_length(data: bytes, pos: int, index: int, file: str) -> tuple[int, int]:
    """The length of the frame at ``pos`` and where its body starts; raises EtDecodeError
    for a truncated or over-long varint, a zero length or a body past the end."""
    n = len(data)
    frame_at = pos
    length = 0
    shift = 0
    while True:
        if pos >= n:
            raise EtDecodeError(
                f"truncated length varint of message {index} at the end of the file", file, frame_at
            )
        b = data[pos]
        pos += 1
        length |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 35:
            raise EtDecodeError(
                f"length varint of message {index} is longer than 5 bytes (not an ET stream, or corrupted)",
                file,
                frame_at,
            )
    if length == 0:
        raise EtDecodeError(
            f"message {index} has length 0 (Chakra's Python reader takes an empty message for "
            "the end of the stream)",
            file,
            frame_at,
        )
    if length > MAX_MESSAGE or pos + length > n:
        raise EtDecodeError(
            f"message {index} claims {length} bytes but only {n - pos} remain (truncated file?)",
            file,
            frame_at,
        )
    return length, pos


MAX_ET_BYTES = 1 << 30
"""Default largest ET stream read, on disk or unpacked from gzip: 1 GiB, far above any trace
collc writes (a 512-NPU program's ranks hold about 1 MB each), so that a wrong path
(``/dev/zero``) or a gzip bomb ends in one line instead of exhausting memory. The environment
variable ``COLLC_MAX_ET_BYTES`` raises or lowers it (`max_et_bytes`)."""


def max_et_bytes() -> int:
    """The ET size limit: ``COLLC_MAX_ET_BYTES`` when set to a positive integer, else
    `MAX_ET_BYTES`."""
    return env_limit("COLLC_MAX_ET_BYTES", MAX_ET_BYTES)


def _too_large(name: str, limit: int, what: str) -> EtDecodeError:
    return EtDecodeError(
        f"{what} more than {limit:,} bytes, the most collc reads (set COLLC_MAX_ET_BYTES to "
        "raise it)",
        name,
    )


def _gunzip(data: bytes, limit: int, name: str) -> bytes:
    """``data``'s gzip members, unpacked to at most ``limit`` bytes (more raises)."""
    parts: list[bytes] = []
    size = 0
    rest = data
    while rest[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        part = d.decompress(rest, limit + 1 - size)
        size += len(part)
        if size > limit:
            raise _too_large(name, limit, "unpacked, the gzip file holds")
        if not d.eof:
            raise EtDecodeError("corrupt gzip data: the stream ends early", name, 0)
        parts.append(part)
        rest = d.unused_data
    if rest.strip(b"\0"):  # gzip allows zero padding after the last member, nothing else
        raise EtDecodeError("corrupt gzip data: not gzip after the last member", name, 0)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def load_et_bytes(path: str | os.PathLike[str]) -> tuple[bytes, str]:
    """The raw ET stream in ``path`` and the name to report errors under.

    A gzip file is decompressed (the name then says so); a corrupt gzip file raises
    EtDecodeError. A missing file, and a file or unpacked stream larger than `max_et_bytes`,
    raise EtDecodeError too.
    """
    name = str(path)
    limit = max_et_bytes()
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise EtDecodeError(f"cannot read the ET file: {e.strerror or e}", name) from None
    if len(data) > limit:
        raise _too_large(name, limit, "the file holds")
    if data[:2] == GZIP_MAGIC:
        try:
            data = _gunzip(data, limit, name)
        except zlib.error as e:
            raise EtDecodeError(f"corrupt gzip data: {e}", name, 0) from None
        name = f"{name} [gunzipped]"
    return data, name


class RankFileWriter:
    """Writes files ``paths[rank]`` from chunks arriving rank by rank (ascending), each
    through a temporary file in the same folder renamed into place when the next rank
    starts or the writer closes, so a reader never sees a partial file. On an exception the
    current temporary file is removed."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.rank = -1
        self._file: BinaryIO | None = None
        self._tmp: Path | None = None

    def __enter__(self) -> RankFileWriter:
        return self

    def write(self, rank: int, chunk: bytes | memoryview) -> None:
        """Append ``chunk`` to ``rank``'s file, finishing the previous rank's file first."""
        if rank != self.rank:
            if rank < self.rank:
                raise ValueError(f"rank {rank} after rank {self.rank}")
            self._finish()
            self.rank = rank
            path = self.paths[rank]
            self._tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            self._file = open(self._tmp, "wb")  # noqa: SIM115 - closed in _finish/_abort
        assert self._file is not None
        self._file.write(chunk)

    def _finish(self) -> None:
        if self._file is not None and self._tmp is not None:
            self._file.close()
            os.replace(self._tmp, self.paths[self.rank])
        self._file = None
        self._tmp = None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._finish()
        elif self._file is not None and self._tmp is not None:
            self._file.close()
            self._tmp.unlink(missing_ok=True)
