"""The values a MSCCLang program handles besides plain Python data.

Functions, classes and instances defined by the program, builtin functions and classes that
collc provides, and namespaces (modules such as ``math`` or enum-like objects such as
``Buffer``). The interpreter only ever calls or looks into these types and a fixed set of
Python data types, so a program cannot reach Python internals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mscclang_frontend.nodes import FunctionDef


class ApiError(Exception):
    """A wrong use of a builtin or of the MSCCLang API.

    The interpreter turns it into a `CompileError` at the call; ``arg`` (a positional index
    or a parameter name) moves the caret onto that argument when the call spells it out;
    ``at`` (line, column) places the error elsewhere in the program, at the line that caused
    it (``Check()`` points at the call that wrote a wrong slot).
    """

    def __init__(
        self, message: str, arg: int | str | None = None, at: tuple[int, int] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.arg = arg
        self.at = at


@dataclass(eq=False)
class UserFunction:
    """A ``def`` of the program, with its evaluated defaults and enclosing scopes."""

    node: FunctionDef
    defaults: list[object]
    closure: tuple[dict[str, object], ...]
    owner: UserClass | None = None
    call_hook: Callable[[UserFunction, list[object]], object] | None = None

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"<function {self.node.name}>"

    def __call__(self, *args: object) -> object:
        # Python builtins such as sorted(key=f) call back into the program through here.
        if self.call_hook is None:
            raise ApiError(f"{self.node.name}() cannot be called here")
        return self.call_hook(self, list(args))


@dataclass(eq=False)
class BuiltinClass:
    """A class collc provides that programs may derive from (MSCCLang's ``Collective``).

    ``methods`` take the instance first; ``runtime`` lets them call back into the program.
    """

    name: str
    methods: dict[str, Callable[..., object]]

    def __repr__(self) -> str:
        return f"<class '{self.name}'>"


@dataclass(eq=False)
class UserClass:
    """A ``class`` of the program: single or multiple bases, methods and class attributes."""

    name: str
    bases: tuple[UserClass | BuiltinClass, ...]
    namespace: dict[str, object]

    def __repr__(self) -> str:
        return f"<class '{self.name}'>"

    def mro(self) -> list[UserClass | BuiltinClass]:
        """Depth-first, left-to-right, without repeats (enough for the programs in question)."""
        out: list[UserClass | BuiltinClass] = []

        def visit(c: UserClass | BuiltinClass) -> None:
            if c in out:
                return
            out.append(c)
            if isinstance(c, UserClass):
                for b in c.bases:
                    visit(b)

        visit(self)
        return out

    def derives_from(self, other: UserClass | BuiltinClass) -> bool:
        return other in self.mro()

    def overrides(self, name: str) -> bool:
        """Whether a class of the program on the way to the builtin bases defines ``name``."""
        return any(isinstance(c, UserClass) and name in c.namespace for c in self.mro())


@dataclass(eq=False)
class UserInstance:
    cls: UserClass
    attrs: dict[str, object] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<{self.cls.name} object>"


@dataclass(eq=False)
class BoundMethod:
    """A method looked up on an instance: calling it passes the instance first."""

    self_obj: object
    func: UserFunction | Callable[..., object]
    name: str

    def __repr__(self) -> str:
        return f"<bound method {self.name}>"


@dataclass(eq=False)
class SuperProxy:
    """``super()`` inside a method: attribute lookup starts after ``owner`` in the MRO."""

    owner: UserClass
    self_obj: UserInstance


@dataclass(eq=False)
class Builtin:
    """A Python function offered to programs under ``name``.

    It receives plain values; it raises `ApiError` for wrong arguments.
    """

    name: str
    fn: Callable[..., Any]

    def __repr__(self) -> str:
        return f"<built-in function {self.name}>"


@dataclass(eq=False)
class Namespace:
    """A module (``math``, ``argparse``, ``msccl.language``), an enum-like object (``Buffer``)
    or the result of ``parse_args()`` (kind ``"args"``, whose attributes may be set).
    """

    name: str
    attrs: dict[str, object]
    kind: str = "module"

    @property
    def mutable(self) -> bool:
        return self.kind == "args"

    def __repr__(self) -> str:
        if self.kind == "args":
            inner = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
            return f"Namespace({inner})"
        return f"<{self.kind} '{self.name}'>"


class ContextValue:
    """A value usable in a ``with`` statement (MSCCLProgram)."""

    def enter(self) -> object:
        raise NotImplementedError

    def exit(self, failed: bool) -> None:
        raise NotImplementedError


def type_name(v: object) -> str:
    """The name a Python user would expect for the type of ``v``, for error messages."""
    if isinstance(v, UserInstance):
        return v.cls.name
    if isinstance(v, UserFunction):
        return "function"
    if isinstance(v, UserClass | BuiltinClass):
        return "type"
    if isinstance(v, Builtin | BoundMethod):
        return "builtin_function_or_method" if isinstance(v, Builtin) else "method"
    if isinstance(v, Namespace):
        return {"module": "module", "enum": "EnumType", "args": "Namespace"}[v.kind]
    if v is None:
        return "NoneType"
    return type(v).__name__


@dataclass(frozen=True)
class Unavailable:
    """A name a program imported from msccl-tools that collc does not provide.

    Importing it is fine (msccl-tools' examples star-import modules they never use); calling
    it, reading its attributes or computing with it is an error at that use.
    """

    name: str
    module: str
    why: str = ""

    def problem(self) -> str:
        """The one-line message for a use of this name."""
        why = f": {self.why}" if self.why else ""
        return f"'{self.name}' (from {self.module}) is not provided by collc{why}"

    def __repr__(self) -> str:
        return f"<unavailable {self.module}.{self.name}>"


@dataclass(frozen=True)
class ExceptionValue:
    """An exception a program created (``ValueError("...")``) to ``raise``: collc programs
    have no ``try``, so raising one ends the compilation with its message."""

    name: str
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        text = str(self.args[0]) if len(self.args) == 1 else str(self.args)
        return f"{self.name}: {text}"


EXCEPTION_NAMES = (
    "Exception",
    "RuntimeError",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "AssertionError",
    "NotImplementedError",
)
"""The exception classes programs may raise."""
