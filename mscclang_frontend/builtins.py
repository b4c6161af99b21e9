"""The whitelisted builtins a MSCCLang program may use (``print``, ``len``, ``range``, ...).

Nothing here touches files, the network or imports; every builtin that builds or walks a
collection is bounded through the `Guard` the interpreter provides. The methods of data types
(`builtin_methods`) and the ``math`` and ``argparse`` modules (`builtin_modules`) live beside
this module; their names, and the `guard` helpers, are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from mscclang_frontend.builtin_methods import make_methods
from mscclang_frontend.builtin_modules import (
    ARGPARSE_EXPOSED,
    ArgumentParser,
    make_argparse,
    make_math,
)
from mscclang_frontend.guard import Guard, as_callable, check_format_spec, materialize, to_dict
from mscclang_frontend.values import ApiError, Builtin, UserClass, UserInstance, type_name

__all__ = [
    "ARGPARSE_EXPOSED",
    "ArgumentParser",
    "Guard",
    "check_format_spec",
    "make_argparse",
    "make_builtins",
    "make_math",
    "make_methods",
    "materialize",
]


# ------------------------------------------------------------------------------ functions
def _print(
    guard: Guard, *args: object, sep: object = " ", end: object = "\n", flush: object = False
) -> None:
    if sep is None:
        sep = " "
    if end is None:
        end = "\n"
    if not isinstance(sep, str) or not isinstance(end, str):
        raise ApiError("print(): sep and end must be strings")
    guard.write(sep.join(str(a) for a in args) + end)


def _range(*args: object) -> range:
    if not 1 <= len(args) <= 3:
        raise ApiError(f"range expected 1 to 3 arguments, got {len(args)}")
    for i, a in enumerate(args):
        if isinstance(a, bool) or not isinstance(a, int):
            raise ApiError(f"range() arguments must be integers, got {type_name(a)}", i)
    return range(*args)  # type: ignore[call-overload, no-any-return]


def _len(v: object) -> int:
    try:
        return len(v)  # type: ignore[arg-type]
    except TypeError:
        raise ApiError(f"object of type '{type_name(v)}' has no len()", 0) from None


def _enumerate(guard: Guard, iterable: object, start: object = 0) -> Iterator[tuple[int, object]]:
    if isinstance(start, bool) or not isinstance(start, int):
        raise ApiError("enumerate(): start must be an int", 1)
    return enumerate(guard.iterate(iterable), start)


def _zip(guard: Guard, *iterables: object) -> Iterator[tuple[object, ...]]:
    return zip(*(guard.iterate(x) for x in iterables), strict=False)


def _minmax(
    pick: Callable[..., Any], name: str, guard: Guard, *args: object, **kw: object
) -> object:
    key = as_callable(guard, kw.pop("key", None))
    has_default = "default" in kw
    default = kw.pop("default", None)
    if kw:
        raise ApiError(f"{name}() got an unexpected keyword argument '{next(iter(kw))}'")
    if not args:
        raise ApiError(f"{name} expected at least 1 argument, got 0")
    items = materialize(guard, args[0]) if len(args) == 1 else list(args)
    if not items:
        if has_default:
            return default
        raise ApiError(f"{name}() arg is an empty sequence")
    return pick(items, key=key) if key is not None else pick(items)


def _sum(guard: Guard, iterable: object, start: object = 0) -> object:
    total = start
    for x in guard.iterate(iterable):
        total = total + x  # type: ignore[operator]
        if isinstance(total, int):
            guard.check_int(total)
        elif isinstance(total, list | tuple | str):
            guard.check_size(len(total))
    return total


def _sorted(
    guard: Guard, iterable: object, key: object = None, reverse: object = False
) -> list[object]:
    items = materialize(guard, iterable)
    k = as_callable(guard, key)
    return sorted(items, key=k, reverse=bool(reverse))  # type: ignore[arg-type,type-var]


def _reversed(v: object) -> Iterator[object]:
    if isinstance(v, list | tuple | str | range):
        return reversed(v)
    raise ApiError(f"'{type_name(v)}' object is not reversible", 0)


def _any(guard: Guard, iterable: object) -> bool:
    return any(guard.iterate(iterable))


def _all(guard: Guard, iterable: object) -> bool:
    return all(guard.iterate(iterable))


def _list(guard: Guard, iterable: object = ()) -> list[object]:
    return materialize(guard, iterable)


def _tuple(guard: Guard, iterable: object = ()) -> tuple[object, ...]:
    return tuple(materialize(guard, iterable))


def _int(x: object = 0, base: object = None) -> int:
    if base is not None:
        if not isinstance(x, str) or isinstance(base, bool) or not isinstance(base, int):
            raise ApiError("int() with a base converts a string")
        return int(x, base)
    if isinstance(x, int | float | str):
        return int(x)
    raise ApiError(f"int() argument must be a string or a number, not '{type_name(x)}'", 0)


def _float(x: object = 0.0) -> float:
    if isinstance(x, int | float | str):
        return float(x)
    raise ApiError(f"float() argument must be a string or a number, not '{type_name(x)}'", 0)


def _pow(guard: Guard, base: object, exp: object, mod: object = None) -> object:
    if (
        mod is None
        and isinstance(base, int)
        and isinstance(exp, int)
        and exp > 0
        and abs(base) > 1
        and base.bit_length() * exp > 1 << 20
    ):
        raise ApiError("pow(): the result is too large")
    result: object = pow(base, exp, mod)  # type: ignore[call-overload]
    if isinstance(result, int):
        guard.check_int(result)
    return result


def _isinstance(obj: object, cls: object) -> bool:
    classes = cls if isinstance(cls, tuple) else (cls,)
    for c in classes:
        if isinstance(c, Builtin) and c.name in _TYPES:
            if isinstance(obj, _TYPES[c.name]):
                return True
        elif isinstance(c, UserClass):
            if isinstance(obj, UserInstance) and obj.cls.derives_from(c):
                return True
        else:
            raise ApiError("isinstance() arg 2 must be a type or a tuple of types", 1)
    return False


def _chr(i: object) -> str:
    if isinstance(i, bool) or not isinstance(i, int):
        raise ApiError("chr() needs an int", 0)
    return chr(i)


def _repr(v: object) -> str:
    return repr(v)


def _str(guard: Guard, v: object = "") -> str:
    s = str(v)
    guard.check_size(len(s))
    return s


_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
}


def make_builtins(guard: Guard) -> dict[str, object]:
    """The builtin names of a program, bound to ``guard``."""
    fns: dict[str, Callable[..., Any]] = {
        "print": partial(_print, guard),
        "len": _len,
        "range": _range,
        "enumerate": partial(_enumerate, guard),
        "zip": partial(_zip, guard),
        "min": partial(_minmax, min, "min", guard),
        "max": partial(_minmax, max, "max", guard),
        "sum": partial(_sum, guard),
        "sorted": partial(_sorted, guard),
        "reversed": _reversed,
        "any": partial(_any, guard),
        "all": partial(_all, guard),
        "abs": abs,
        "round": round,
        "divmod": divmod,
        "pow": partial(_pow, guard),
        "int": _int,
        "float": _float,
        "str": partial(_str, guard),
        "bool": bool,
        "list": partial(_list, guard),
        "tuple": partial(_tuple, guard),
        "dict": partial(to_dict, guard),
        "isinstance": _isinstance,
        "repr": _repr,
        "hex": hex,
        "bin": bin,
        "oct": oct,
        "ord": ord,
        "chr": _chr,
    }
    out: dict[str, object] = {name: Builtin(name, fn) for name, fn in fns.items()}
    return out
