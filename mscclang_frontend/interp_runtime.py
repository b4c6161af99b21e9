"""The interpreter's shared core: frames, the bounds on a run (evaluation steps, sizes of
collections, integers and output, the work charged to builtins) and errors at a node, which
its expression, call and statement parts (`interp_expressions`, `interp_calls`,
`interp_statements`) all build on.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mscclang_frontend import nodes as N
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.limits import Limits
from mscclang_frontend.msccl_api import ITERABLE_TYPES
from mscclang_frontend.values import ApiError, Builtin, Namespace, UserFunction, type_name

NORMAL, BREAK, CONTINUE, RETURN = 0, 1, 2, 3

DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_ITERABLE: tuple[type, ...] = (
    list,
    tuple,
    str,
    dict,
    range,
    enumerate,
    zip,
    reversed,
    types.GeneratorType,
    type(iter([])),
    type(reversed([])),
    type(iter(range(0))),
    type(iter("")),
    type(iter(())),
    *DICT_VIEWS,
    *ITERABLE_TYPES,
)


class Frame:
    """A scope being run: its names (``locals``), the enclosing function scopes (``closure``),
    the names a function assigns (read before assignment: an error), the function running,
    its ``kind`` ("module", "function", "class"), the value returned, and the methods a class
    body defined."""

    __slots__ = ("closure", "defined", "function", "kind", "local_names", "locals", "retval")

    def __init__(
        self,
        local: dict[str, object],
        closure: tuple[dict[str, object], ...],
        local_names: frozenset[str] | None,
        function: UserFunction | None,
        kind: str,
    ) -> None:
        self.locals = local
        self.closure = closure
        self.local_names = local_names
        self.function = function
        self.kind = kind
        self.retval: object = None
        self.defined: list[UserFunction] = []


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()
"""What a class lookup finds when no class of the MRO has the name."""
NO_DEFAULT: Any = _Missing()
"""The default of a parameter that has none."""


WORK_PER_STEP = 32
"""Elements a builtin walks per evaluation step charged (C loops are that much faster)."""

CONSTANT_TIME = frozenset(
    {
        "len",
        "range",
        "enumerate",
        "zip",
        "reversed",
        "isinstance",
        "abs",
        "round",
        "divmod",
        "pow",
        "int",
        "float",
        "bool",
        "hex",
        "bin",
        "oct",
        "ord",
        "chr",
        "super",
        "print",
        "list.append",
        "list.pop",
        "dict.get",
        "dict.setdefault",
        "dict.keys",
        "dict.values",
        "dict.items",
        "dict.pop",
    }
)
"""Builtins and methods whose cost does not grow with their arguments (``print`` is bounded
by the output limit instead); every other one is charged by the sizes of its collection
arguments (`Interpreter.charge_work`)."""


_SIZED = frozenset({list, tuple, str, dict})


def work(values: Iterable[object]) -> int:
    """Elements of the collections among ``values`` (what a builtin may walk)."""
    n = 0
    for v in values:
        if type(v) in _SIZED:
            n += len(v)  # type: ignore[arg-type]
    return n


class InterpreterCore:
    """The state of one run and the bounds on it; `Interpreter` sets the attributes.

    `call` is the call part's (`interp_calls`), `exec_block` and `assign` are the statement
    part's (`interp_statements`); the parts before them use them through these declarations.
    """

    source: Source
    limits: Limits
    max_steps: int
    steps: int
    allocated: int
    depth: int
    output: list[str]
    output_size: int
    pos: tuple[int, int]
    current: N.Node | None
    call_node: N.Node | None
    builtins: dict[str, object]
    super_builtin: Builtin
    methods: dict[type, dict[str, Callable[..., Any]]]
    modules: dict[str, Namespace]
    globals: dict[str, object]
    _exec: dict[type, Callable[[Any, Frame], int]]
    _eval: dict[type, Callable[[Any, Frame], object]]

    @property
    def stdout(self) -> str:
        return "".join(self.output)

    def error(self, message: str, node: N.Node | N.Keyword | N.Param | None) -> CompileError:
        if node is None:
            return CompileError(message, self.source.pos(0, 0))
        return self.source.error(message, node.line, node.col)

    # ------------------------------------------------------------------------------ guard
    def check_size(self, n: int, added: int | None = None) -> None:
        if n > self.limits.max_collection:
            raise ApiError(
                f"a collection of {n:,} elements is larger than the limit of "
                f"{self.limits.max_collection:,}"
            )
        self.allocated += n if added is None else added
        if self.allocated > self.limits.max_alloc:
            raise ApiError(
                f"the program created more than {self.limits.max_alloc:,} list elements in all"
            )

    def check_int(self, v: int) -> None:
        if v.bit_length() > self.limits.max_int_bits:
            raise ApiError(f"an integer of more than {self.limits.max_int_bits} bits")

    def _charge(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise ApiError(self._steps_message())

    def charge_work(self, elements: int) -> None:
        """Charge a builtin that walks ``elements`` elements: one step per `WORK_PER_STEP`,
        so a loop of builtin calls on a huge list meets the step bound as soon as a loop of
        statements doing the same work would."""
        if elements >= WORK_PER_STEP:
            self.steps += elements // WORK_PER_STEP
            if self.steps > self.max_steps:
                raise ApiError(self._steps_message())

    def _steps_message(self) -> str:
        return f"the program ran more than {self.max_steps:,} evaluation steps (an endless loop?)"

    def iterate(self, v: object) -> Iterator[object]:
        it = self._iter(v)
        return self._charged(it)

    def _charged(self, it: Iterator[object]) -> Iterator[object]:
        for x in it:
            self._charge()
            yield x

    def _iter(self, v: object) -> Iterator[object]:
        if isinstance(v, _ITERABLE):
            return iter(v)  # type: ignore[call-overload, no-any-return]
        raise ApiError(f"'{type_name(v)}' object is not iterable")

    def write(self, text: str) -> None:
        self.output_size += len(text)
        if self.output_size > self.limits.max_output:
            raise ApiError(f"the program printed more than {self.limits.max_output:,} characters")
        self.output.append(text)

    def call_position(self) -> tuple[int, int]:
        return self.pos

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object:
        """Call a program value (a function, a builtin...) from the API or a builtin."""
        raise NotImplementedError

    def exec_block(self, body: list[N.Stmt], frame: Frame) -> int:
        """Run ``body`` in ``frame``; NORMAL, BREAK, CONTINUE or RETURN."""
        raise NotImplementedError

    def assign(self, target: N.Expr, value: object, frame: Frame) -> None:
        """Bind ``value`` to ``target`` (a name, an unpacking, an item or an attribute)."""
        raise NotImplementedError
