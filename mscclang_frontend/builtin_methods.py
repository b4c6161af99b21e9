"""The methods of Python data types that programs may call (``list``, ``dict``, ``str``,
``tuple``, ``int``, ``float``), each bounded through the `Guard` like the builtins.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

from mscclang_frontend.guard import Guard, as_callable, check_format_spec, materialize, to_dict
from mscclang_frontend.values import ApiError, type_name


def _list_methods(guard: Guard) -> dict[str, Callable[..., Any]]:
    def append(lst: list[object], x: object) -> None:
        guard.check_size(len(lst) + 1, 1)
        lst.append(x)

    def extend(lst: list[object], it: object) -> None:
        items = materialize(guard, it)
        guard.check_size(len(lst) + len(items), len(items))
        lst.extend(items)

    def insert(lst: list[object], i: object, x: object) -> None:
        if isinstance(i, bool) or not isinstance(i, int):
            raise ApiError("list.insert(): the index must be an int", 0)
        guard.check_size(len(lst) + 1, 1)
        lst.insert(i, x)

    def pop(lst: list[object], i: object = -1) -> object:
        if isinstance(i, bool) or not isinstance(i, int):
            raise ApiError("list.pop(): the index must be an int", 0)
        if not lst:
            raise ApiError("pop from empty list")
        if not -len(lst) <= i < len(lst):
            raise ApiError("pop index out of range", 0)
        return lst.pop(i)

    def sort(lst: list[object], key: object = None, reverse: object = False) -> None:
        guard.check_size(len(lst))
        lst.sort(key=as_callable(guard, key), reverse=bool(reverse))  # type: ignore[arg-type]

    def copy(lst: list[object]) -> list[object]:
        guard.check_size(len(lst))
        return list(lst)

    def index(lst: list[object], x: object, *args: object) -> int:
        try:
            return lst.index(x, *args)  # type: ignore[arg-type]
        except ValueError:
            raise ApiError(f"{x!r} is not in list", 0) from None

    def remove(lst: list[object], x: object) -> None:
        try:
            lst.remove(x)
        except ValueError:
            raise ApiError(f"list.remove(x): {x!r} is not in list", 0) from None

    return {
        "append": append,
        "extend": extend,
        "insert": insert,
        "pop": pop,
        "sort": sort,
        "copy": copy,
        "index": index,
        "remove": remove,
        "count": list.count,
        "reverse": list.reverse,
        "clear": list.clear,
    }


def _dict_methods(guard: Guard) -> dict[str, Callable[..., Any]]:
    def setdefault(d: dict[object, object], k: object, default: object = None) -> object:
        if k not in d:
            guard.check_size(len(d) + 1, 1)
        return d.setdefault(k, default)

    def update(d: dict[object, object], other: object = (), **kw: object) -> None:
        new = to_dict(guard, other, **kw)
        guard.check_size(len(d) + len(new), len(new))
        d.update(new)

    def pop(d: dict[object, object], k: object, *default: object) -> object:
        if k in d:
            return d.pop(k)
        if default:
            return default[0]
        raise ApiError(f"key {k!r} not found in dict", 0)

    def copy(d: dict[object, object]) -> dict[object, object]:
        guard.check_size(len(d))
        return dict(d)

    def get(d: dict[object, object], k: object, default: object = None) -> object:
        return d.get(k, default)

    return {
        "items": dict.items,
        "keys": dict.keys,
        "values": dict.values,
        "get": get,
        "setdefault": setdefault,
        "update": update,
        "pop": pop,
        "copy": copy,
        "clear": dict.clear,
    }


_FIELD_NAME = re.compile(r"^(\d+|[^\W\d]\w*)?$")


def _str_methods(guard: Guard) -> dict[str, Callable[..., Any]]:
    def join(sep: str, it: object) -> str:
        items = materialize(guard, it)
        total = 0
        for x in items:
            if not isinstance(x, str):
                raise ApiError(f"str.join() expects strings, found {type_name(x)}", 0)
            total += len(x) + len(sep)
        guard.check_size(total)
        return sep.join(items)  # type: ignore[arg-type]

    def fmt(s: str, *args: object, **kw: object) -> str:
        for _, name, spec, _ in string.Formatter().parse(s):
            if name is not None and not _FIELD_NAME.match(name):
                raise ApiError(
                    f"str.format(): field {{{name}}} is not supported (use names or numbers)"
                )
            if spec:
                if "{" in spec:
                    raise ApiError("str.format(): nested fields in format specs are not supported")
                check_format_spec(guard, spec)
        return s.format(*args, **kw)

    def widen(name: str) -> Callable[..., str]:
        method = getattr(str, name)

        def run(s: str, width: object, *args: object) -> str:
            if isinstance(width, bool) or not isinstance(width, int):
                raise ApiError(f"str.{name}(): the width must be an int", 0)
            guard.check_size(width)
            return method(s, width, *args)  # type: ignore[no-any-return]

        return run

    def replace(s: str, old: object, new: object, count: object = -1) -> str:
        if not isinstance(old, str) or not isinstance(new, str):
            raise ApiError("str.replace() takes strings", 0)
        if len(new) > len(old):
            n = s.count(old) if old else len(s) + 1
            guard.check_size(len(s) + n * (len(new) - len(old)))
        return s.replace(old, new, count)  # type: ignore[arg-type]

    simple = [
        "split",
        "rsplit",
        "strip",
        "lstrip",
        "rstrip",
        "upper",
        "lower",
        "title",
        "capitalize",
        "startswith",
        "endswith",
        "find",
        "rfind",
        "count",
        "isdigit",
        "isalpha",
        "isalnum",
        "isspace",
        "splitlines",
        "partition",
        "rpartition",
    ]
    out: dict[str, Callable[..., Any]] = {name: getattr(str, name) for name in simple}
    out.update(
        {
            "join": join,
            "format": fmt,
            "replace": replace,
            "zfill": widen("zfill"),
            "ljust": widen("ljust"),
            "rjust": widen("rjust"),
            "center": widen("center"),
        }
    )
    return out


def make_methods(guard: Guard) -> dict[type, dict[str, Callable[..., Any]]]:
    """Methods of Python data types that programs may call, by type; each takes the object first."""
    return {
        list: _list_methods(guard),
        dict: _dict_methods(guard),
        str: _str_methods(guard),
        tuple: {"index": tuple.index, "count": tuple.count},
        int: {"bit_length": int.bit_length},
        bool: {"bit_length": int.bit_length},
        float: {"is_integer": float.is_integer},
    }
