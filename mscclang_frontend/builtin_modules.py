"""The ``math`` and ``argparse`` modules programs may import: math's functions and constants,
and an ``ArgumentParser`` that parses the arguments given after ``collc compile ... --``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from mscclang_frontend.errors import CompileError
from mscclang_frontend.guard import Guard
from mscclang_frontend.values import ApiError, Builtin, Namespace, UserFunction


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
