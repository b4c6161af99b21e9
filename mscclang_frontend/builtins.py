"""The whitelisted builtins a MSCCLang program may use, and the argparse and math modules.

Nothing here touches files, the network or imports. Functions that build collections check
their size first and functions that walk an iterable are charged one evaluation step per
item, through the `Guard` the interpreter provides, so ``sum(range(10**12))`` stops with an
error instead of running for hours.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, Protocol

from mscclang_frontend.errors import CompileError
from mscclang_frontend.values import (
    ApiError,
    Builtin,
    Namespace,
    UserClass,
    UserFunction,
    type_name,
)


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


def _as_callable(guard: Guard, fn: object) -> Callable[[object], object] | None:
    if fn is None:
        return None
    return lambda x: guard.call(fn, [x], {})


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
    key = _as_callable(guard, kw.pop("key", None))
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
    k = _as_callable(guard, key)
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


def _dict(guard: Guard, iterable: object = (), **kw: object) -> dict[object, object]:
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
            from mscclang_frontend.values import UserInstance

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
        "dict": partial(_dict, guard),
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


# ------------------------------------------------------------------------------ methods
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
        lst.sort(key=_as_callable(guard, key), reverse=bool(reverse))  # type: ignore[arg-type]

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
        new = _dict(guard, other, **kw)
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


# ------------------------------------------------------------------------------ math
def make_math(guard: Guard) -> Namespace:
    def log(x: object, base: object = math.e) -> float:
        return math.log(x, base)  # type: ignore[arg-type]

    fns: dict[str, Callable[..., Any]] = {
        "log2": math.log2,
        "log10": math.log10,
        "log": log,
        "floor": math.floor,
        "ceil": math.ceil,
        "sqrt": math.sqrt,
        "isqrt": math.isqrt,
        "gcd": math.gcd,
        "lcm": math.lcm,
        "exp": math.exp,
        "pow": math.pow,
        "fabs": math.fabs,
        "trunc": math.trunc,
        "isclose": math.isclose,
    }
    attrs: dict[str, object] = {name: Builtin(f"math.{name}", f) for name, f in fns.items()}
    attrs.update({"pi": math.pi, "e": math.e, "inf": math.inf, "tau": math.tau})
    return Namespace("math", attrs)


# ------------------------------------------------------------------------------ argparse
class _Action:
    def __init__(
        self,
        names: list[str],
        dest: str,
        kind: str,
        type_: object,
        default: object,
        choices: Sequence[object] | None,
        help_: str,
        required: bool,
        nargs: object,
        const: object,
    ) -> None:
        self.names = names
        self.dest = dest
        self.kind = kind
        self.type = type_
        self.default = default
        self.choices = choices
        self.help = help_
        self.required = required
        self.nargs = nargs
        self.const = const

    @property
    def positional(self) -> bool:
        return not self.names[0].startswith("-")


class ArgumentParser:
    """collc's ``argparse.ArgumentParser``: the arguments come from ``collc compile -- ...``."""

    def __init__(
        self,
        guard: Guard,
        argv: Sequence[str],
        prog: object = None,
        description: object = None,
        epilog: object = None,
        usage: object = None,
        add_help: object = True,
        allow_abbrev: object = True,
    ) -> None:
        self._guard = guard
        self._argv = list(argv)
        self.prog = prog if isinstance(prog, str) else "program"
        self.description = description if isinstance(description, str) else ""
        self._add_help = bool(add_help)
        self._abbrev = bool(allow_abbrev)
        self._actions: list[_Action] = []

    def add_argument(
        self,
        *names: object,
        type: object = None,
        default: object = None,
        choices: object = None,
        help: object = None,
        required: object = None,
        nargs: object = None,
        action: object = None,
        dest: object = None,
        metavar: object = None,
        const: object = None,
    ) -> None:
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ApiError("add_argument() needs a name or option strings such as '--size'")
        strs = [str(n) for n in names]
        positional = not strs[0].startswith("-")
        if positional and len(strs) > 1:
            raise ApiError("a positional argument has a single name")
        if not positional and not all(s.startswith("-") for s in strs):
            raise ApiError("option strings start with '-'")
        kind = action if action is not None else "store"
        if kind not in ("store", "store_true", "store_false", "store_const", "append", "count"):
            raise ApiError(f"add_argument(): action {kind!r} is not supported", "action")
        if nargs not in (None, "?", "*", "+") and not (isinstance(nargs, int) and nargs >= 1):
            raise ApiError(f"add_argument(): nargs {nargs!r} is not supported", "nargs")
        if type is not None and not (isinstance(type, Builtin | UserFunction)):
            raise ApiError("add_argument(): type must be a function such as int or str", "type")
        if choices is not None and not isinstance(choices, list | tuple | range | str):
            raise ApiError("add_argument(): choices must be a list", "choices")
        if dest is None:
            if positional:
                d = strs[0]
            else:
                longs = [s for s in strs if s.startswith("--")]
                d = (longs[0] if longs else strs[0]).lstrip("-")
            d = d.replace("-", "_")
        elif isinstance(dest, str):
            d = dest
        else:
            raise ApiError("add_argument(): dest must be a string", "dest")
        if kind == "store_true" and default is None:
            default = False
        if kind == "store_false" and default is None:
            default = True
        if kind == "count" and default is None:
            default = 0
        req = bool(required) if required is not None else (positional and nargs not in ("?", "*"))
        self._actions.append(
            _Action(
                strs,
                d,
                str(kind),
                type,
                default,
                list(choices) if choices is not None else None,
                help if isinstance(help, str) else "",
                req,
                nargs,
                const,
            )
        )

    # -- parsing -----------------------------------------------------------------------------------
    def usage(self) -> str:
        parts = [f"usage: {self.prog}"]
        if self._add_help:
            parts.append("[-h]")
        for a in self._actions:
            if a.positional:
                parts.append(a.dest if a.required else f"[{a.dest}]")
            else:
                flag = a.names[0]
                if a.kind in ("store", "append"):
                    flag += f" {a.dest.upper()}"
                parts.append(flag if a.required else f"[{flag}]")
        return " ".join(parts)

    def format_help(self) -> str:
        lines = [self.usage(), ""]
        if self.description:
            lines += [self.description, ""]
        for a in self._actions:
            lines.append(f"  {', '.join(a.names):<24} {a.help}")
        return "\n".join(lines)

    def print_help(self) -> None:
        self._guard.write(self.format_help() + "\n")

    def _fail(self, message: str) -> ApiError:
        return ApiError(f"program arguments: {message} ({self.usage()})")

    def _convert(self, a: _Action, text: str) -> object:
        if a.type is None:
            value: object = text
        else:
            try:
                if isinstance(a.type, Builtin):
                    value = a.type.fn(text)
                else:
                    value = self._guard.call(a.type, [text], {})
            except (ApiError, CompileError, ValueError, TypeError):
                raise self._fail(
                    f"argument {a.names[0]}: invalid {_type_label(a.type)} value: {text!r}"
                ) from None
        if a.choices is not None and value not in a.choices:
            options = ", ".join(repr(c) for c in a.choices)
            raise self._fail(
                f"argument {a.names[0]}: invalid choice: {value!r} (choose from {options})"
            )
        return value

    def _take(
        self, a: _Action, tokens: list[str], i: int, attached: str | None
    ) -> tuple[object, int]:
        """The value of option ``a`` whose flag is at ``tokens[i - 1]``; returns (value, next i)."""
        if a.kind == "store_true":
            return True, i
        if a.kind == "store_false":
            return False, i
        if a.kind == "store_const":
            return a.const, i
        if a.kind == "count":
            return None, i
        if attached is not None:
            return self._convert(a, attached), i
        args: list[str] = []
        want = a.nargs
        while i < len(tokens) and not (tokens[i].startswith("-") and not _is_number(tokens[i])):
            if want in (None, "?") and args:
                break
            if isinstance(want, int) and len(args) == want:
                break
            args.append(tokens[i])
            i += 1
        if want is None:
            if not args:
                raise self._fail(f"argument {a.names[0]}: expected one argument")
            return self._convert(a, args[0]), i
        if want == "?":
            return (self._convert(a, args[0]) if args else a.const), i
        if want == "+" and not args:
            raise self._fail(f"argument {a.names[0]}: expected at least one argument")
        if isinstance(want, int) and len(args) != want:
            raise self._fail(f"argument {a.names[0]}: expected {want} arguments")
        return [self._convert(a, t) for t in args], i

    def parse_args(self, args: object = None) -> Namespace:
        if args is None:
            tokens = list(self._argv)
        elif isinstance(args, list | tuple) and all(isinstance(t, str) for t in args):
            tokens = [str(t) for t in args]
        else:
            raise ApiError("parse_args() takes a list of strings", 0)
        values: dict[str, object] = {}
        seen: set[str] = set()
        positional_tokens: list[str] = []
        options = {n: a for a in self._actions if not a.positional for n in a.names}
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            i += 1
            if tok == "--":
                positional_tokens.extend(tokens[i:])
                break
            if tok.startswith("-") and tok != "-" and not _is_number(tok):
                name, eq, attached = tok.partition("=")
                if self._add_help and name in ("-h", "--help"):
                    raise ApiError(f"the program printed its help:\n{self.format_help()}")
                a = options.get(name)
                if a is None and self._abbrev and name.startswith("--"):
                    matches = [o for n, o in options.items() if n.startswith(name)]
                    if len({id(m) for m in matches}) == 1:
                        a = matches[0]
                if a is None:
                    raise self._fail(f"unrecognized arguments: {tok}")
                value, i = self._take(a, tokens, i, attached if eq else None)
                seen.add(a.dest)
                if a.kind == "append":
                    lst = values.setdefault(a.dest, [])
                    assert isinstance(lst, list)
                    lst.append(value)
                elif a.kind == "count":
                    count = values.get(a.dest, 0)
                    values[a.dest] = (count if isinstance(count, int) else 0) + 1
                else:
                    values[a.dest] = value
            else:
                positional_tokens.append(tok)
        positionals = [a for a in self._actions if a.positional]
        rest = positional_tokens
        for k, a in enumerate(positionals):
            later_required = sum(
                1
                if b.nargs is None
                else (b.nargs if isinstance(b.nargs, int) else (1 if b.nargs == "+" else 0))
                for b in positionals[k + 1 :]
            )
            available = max(len(rest) - later_required, 0)
            if a.nargs is None:
                if not rest:
                    continue
                values[a.dest] = self._convert(a, rest.pop(0))
            elif a.nargs == "?":
                if available >= 1:
                    values[a.dest] = self._convert(a, rest.pop(0))
            elif a.nargs in ("*", "+"):
                take, rest = rest[:available], rest[available:]
                if a.nargs == "+" and not take:
                    continue
                values[a.dest] = [self._convert(a, t) for t in take]
            else:
                assert isinstance(a.nargs, int)
                if len(rest) < a.nargs:
                    continue
                take, rest = rest[: a.nargs], rest[a.nargs :]
                values[a.dest] = [self._convert(a, t) for t in take]
            seen.add(a.dest)
        if rest:
            raise self._fail(f"unrecognized arguments: {' '.join(rest)}")
        missing = [
            a.dest if a.positional else a.names[0]
            for a in self._actions
            if a.required and a.dest not in seen
        ]
        if missing:
            raise self._fail(f"the following arguments are required: {', '.join(missing)}")
        for a in self._actions:
            if a.dest not in values:
                d = a.default
                if isinstance(d, str) and a.type is not None and a.kind == "store":
                    d = self._convert(a, d)
                values[a.dest] = d
        return Namespace("args", values, "args")

    def __repr__(self) -> str:
        return f"ArgumentParser(prog={self.prog!r})"


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _type_label(t: object) -> str:
    if isinstance(t, Builtin):
        return t.name
    if isinstance(t, UserFunction):
        return t.name
    return "value"


ARGPARSE_EXPOSED = frozenset(
    {"add_argument", "parse_args", "print_help", "format_help", "prog", "description"}
)


def make_argparse(guard: Guard, argv: Sequence[str]) -> Namespace:
    def parser(*args: object, **kw: object) -> ArgumentParser:
        return ArgumentParser(guard, argv, *args, **kw)

    return Namespace(
        "argparse",
        {
            "ArgumentParser": Builtin("ArgumentParser", parser),
        },
    )
