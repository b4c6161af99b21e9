"""The MSCCLang API's value types and argument checks.

``Buffer`` and ``ThreadblockPolicy``, the symbolic chunks a buffer slot holds (`Chunk`,
`ReduceChunk`; a slot is one of them or None) with the constructors programs call, and
`as_int`/`as_bool`, which every API function applies to its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from chakra_ir.collective import Contents, describe, merge
from mscclang_frontend.values import ApiError, type_name


# ------------------------------------------------------------------------------ enums
class BufferName(Enum):
    """MSCCLang's ``Buffer``: the input, output and (default) scratch buffer."""

    input = "i"
    output = "o"
    scratch = "s"

    def __repr__(self) -> str:
        return f"Buffer.{self.name}"

    __str__ = __repr__


class ThreadblockPolicy(Enum):
    auto = "auto"
    manual = "manual"

    def __repr__(self) -> str:
        return f"ThreadblockPolicy.{self.name}"

    __str__ = __repr__


PROTOCOLS = ("Simple", "LL", "LL128")


# ------------------------------------------------------------------------------ chunks
@dataclass(frozen=True, slots=True)
class Chunk:
    """A plain chunk: slot ``origin_index`` of rank ``origin_rank``'s input.

    ``dst_rank``/``dst_index`` say where it must end (all-to-all routing, custom collectives).
    Equality compares all four fields, as MSCCLang's does.
    """

    origin_rank: int
    origin_index: int
    dst_rank: int = -1
    dst_index: int = -1

    @property
    def contents(self) -> Contents:
        return ((self.origin_index, 1 << self.origin_rank),)


@dataclass(frozen=True, slots=True, eq=False)
class ReduceChunk:
    """The reduction of several chunks; equal to another when the contributions are equal."""

    creation_rank: int
    chunks: tuple[Chunk, ...]
    contents: Contents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReduceChunk) and other.contents == self.contents

    def __hash__(self) -> int:
        return hash(self.contents)

    def __repr__(self) -> str:
        return f"ReduceChunk(creation_rank={self.creation_rank}, {describe(self.contents)})"


Slot = Chunk | ReduceChunk | None


def slot_contents(v: Slot) -> Contents | None:
    return None if v is None else v.contents


def describe_slot(v: Slot) -> str:
    return describe(slot_contents(v))


# ------------------------------------------------------------------------------ helpers
HINT_MAX = 2**31 - 1
"""The largest threadblock or channel hint: MSCCL-IR XML and the IR keep them as 32-bit ints."""


def as_int(
    v: object,
    what: str,
    arg: int | str | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ApiError(f"{what} must be an int, got {type_name(v)} {v!r}", arg)
    if minimum is not None and v < minimum:
        raise ApiError(f"{what} must be at least {minimum}, got {v}", arg)
    if maximum is not None and v > maximum:
        raise ApiError(f"{what} must be at most {maximum}, got {v}", arg)
    return v


def as_bool(v: object, what: str, arg: int | str | None = None) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ApiError(f"{what} must be True or False, got {type_name(v)} {v!r}", arg)


def buffer_label(key: object) -> str:
    if isinstance(key, BufferName):
        return key.name
    return f"scratch buffer {key!r}"


def make_chunk(
    origin_rank: object, origin_index: object, dst_rank: object = -1, dst_index: object = -1
) -> Chunk:
    return Chunk(
        as_int(origin_rank, "origin_rank", 0, minimum=0),
        as_int(origin_index, "origin_index", 1, minimum=0),
        as_int(dst_rank, "dst_rank", 2, minimum=-1),
        as_int(dst_index, "dst_index", 3, minimum=-1),
    )


def make_reduce_chunk(creation_rank: object, chunks: object) -> ReduceChunk:
    r = as_int(creation_rank, "creation_rank", 0, minimum=0)
    if not isinstance(chunks, list | tuple) or not chunks:
        raise ApiError("ReduceChunk needs a non-empty list of chunks", 1)
    contents: Contents | None = None
    parts: list[Chunk] = []
    for c in chunks:
        if not isinstance(c, Chunk):
            raise ApiError(f"ReduceChunk lists Chunks, got {type_name(c)}", 1)
        parts.append(c)
        contents = c.contents if contents is None else merge(contents, c.contents)
        if contents is None:
            raise ApiError("ReduceChunk lists a chunk twice", 1)
    assert contents is not None
    return ReduceChunk(r, tuple(parts), contents)
