"""What the builtins need from the interpreter (`Guard`), and the bounded conversions they share.

Functions that build collections check their size first and functions that walk an iterable
are charged one evaluation step per item, through the `Guard`, so ``sum(range(10**12))``
stops with an error instead of running for hours.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Protocol

from mscclang_frontend.values import ApiError


class Guard(Protocol):
    """What builtins need from the interpreter."""

    def check_size(self, n: int, added: int | None = None) -> None:
        """Raise ApiError if a collection may not have ``n`` elements (``added`` of them new,
        all by default)."""

    def iterate(self, v: object) -> Iterator[object]:
        """Iterate ``v`` (an allowed iterable), one evaluation step per item."""
        ...

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object:
        """Call a program value (a function, a builtin...)."""

    def write(self, text: str) -> None:
        """Append to the program's standard output."""

    def check_int(self, v: int) -> None:
        """Raise ApiError if an integer result is too large."""


_WIDTH = re.compile(r"(\d+)")


def check_format_spec(guard: Guard, spec: str) -> None:
    """Reject format specs whose width or precision would build a huge string."""
    for m in _WIDTH.finditer(spec):
        if len(m.group(1)) > 9:
            raise ApiError(f"format width {m.group(1)[:12]}... is too large")
        guard.check_size(int(m.group(1)))


def materialize(guard: Guard, v: object) -> list[object]:
    """The items of an iterable as a list, within the size limits."""
    if isinstance(v, list | tuple | str | dict | range):
        guard.check_size(len(v))
        return list(guard.iterate(v))
    out: list[object] = []
    for x in guard.iterate(v):
        out.append(x)
        if len(out) % 65536 == 0:
            guard.check_size(len(out), 0)
    guard.check_size(len(out))
    return out


def as_callable(guard: Guard, fn: object) -> Callable[[object], object] | None:
    """A program value (such as a ``key=`` function) as a Python callable; None stays None."""
    if fn is None:
        return None
    return lambda x: guard.call(fn, [x], {})


def to_dict(guard: Guard, iterable: object = (), **kw: object) -> dict[object, object]:
    """``dict(iterable, **kw)`` within the size limits (the builtin and ``dict.update``)."""
    out: dict[object, object] = {}
    if isinstance(iterable, dict):
        guard.check_size(len(iterable))
        out.update(iterable)
    else:
        for item in materialize(guard, iterable):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ApiError("dict() needs pairs (key, value)", 0)
            out[item[0]] = item[1]
    out.update(kw)
    return out
