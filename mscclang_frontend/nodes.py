"""The syntax tree the interpreter walks, built by `parse.py` from Lark's parse tree.

Every node carries the 1-based ``line`` and ``col`` of its first character, so runtime errors
point into the program. Binary operators of one precedence level are kept as a flat `Chain`
(``a + b - c``), so long sums do not make deep trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Node:
    line: int
    col: int


# ------------------------------------------------------------------------------ expressions
@dataclass(slots=True, eq=False)
class Expr(Node):
    pass


@dataclass(slots=True, eq=False)
class Const(Expr):
    value: object


@dataclass(slots=True, eq=False)
class FField:
    """One ``{expr!conv:spec}`` field of an f-string."""

    expr: Expr
    conversion: str
    spec: str
    debug_text: str = ""


@dataclass(slots=True, eq=False)
class FString(Expr):
    parts: list[str | FField]


@dataclass(slots=True, eq=False)
class Name(Expr):
    id: str


@dataclass(slots=True, eq=False)
class Attribute(Expr):
    value: Expr
    attr: str


@dataclass(slots=True, eq=False)
class Subscript(Expr):
    value: Expr
    index: Expr


@dataclass(slots=True, eq=False)
class SliceExpr(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(slots=True, eq=False)
class Keyword:
    name: str
    value: Expr
    line: int
    col: int


@dataclass(slots=True, eq=False)
class Call(Expr):
    func: Expr
    args: list[Expr]
    kwargs: list[Keyword]


@dataclass(slots=True, eq=False)
class Chain(Expr):
    """``first op[0] operands[0] op[1] operands[1] ...``, evaluated left to right."""

    first: Expr
    ops: list[str]
    operands: list[Expr]


@dataclass(slots=True, eq=False)
class Unary(Expr):
    op: str
    operand: Expr


@dataclass(slots=True, eq=False)
class BoolOp(Expr):
    op: str  # "and" or "or"
    values: list[Expr]


@dataclass(slots=True, eq=False)
class Not(Expr):
    operand: Expr


@dataclass(slots=True, eq=False)
class Compare(Expr):
    first: Expr
    ops: list[str]
    operands: list[Expr]


@dataclass(slots=True, eq=False)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(slots=True, eq=False)
class CompFor:
    """One ``for target in iter`` clause of a comprehension."""

    target: Expr
    iter: Expr


@dataclass(slots=True, eq=False)
class Comprehension(Expr):
    """``[elt ...]`` (kind "list"), ``{key: elt ...}`` ("dict") or ``(elt ...)`` ("gen",
    evaluated at once into a list); ``clauses`` are `CompFor` and ``if`` conditions."""

    kind: str
    elt: Expr
    key: Expr | None
    clauses: list[CompFor | Expr]


@dataclass(slots=True, eq=False)
class ListDisplay(Expr):
    items: list[Expr]


@dataclass(slots=True, eq=False)
class TupleDisplay(Expr):
    items: list[Expr]


@dataclass(slots=True, eq=False)
class DictDisplay(Expr):
    keys: list[Expr]
    values: list[Expr]


# ------------------------------------------------------------------------------ statements
@dataclass(slots=True, eq=False)
class Stmt(Node):
    pass


@dataclass(slots=True, eq=False)
class ExprStmt(Stmt):
    value: Expr


@dataclass(slots=True, eq=False)
class Assign(Stmt):
    targets: list[Expr]
    value: Expr


@dataclass(slots=True, eq=False)
class AugAssign(Stmt):
    target: Expr
    op: str  # the binary operator, "+" for "+="
    value: Expr


@dataclass(slots=True, eq=False)
class Pass(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Break(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Continue(Stmt):
    pass


@dataclass(slots=True, eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(slots=True, eq=False)
class If(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass(slots=True, eq=False)
class While(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass(slots=True, eq=False)
class For(Stmt):
    target: Expr
    iter: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass(slots=True, eq=False)
class Param:
    name: str
    default: Expr | None
    line: int
    col: int


@dataclass(slots=True, eq=False)
class FunctionDef(Stmt):
    name: str
    params: list[Param]
    body: list[Stmt]
    local_names: frozenset[str] = field(default_factory=frozenset)


@dataclass(slots=True, eq=False)
class ClassDef(Stmt):
    name: str
    bases: list[Expr]
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class WithItem:
    context: Expr
    target: Expr | None


@dataclass(slots=True, eq=False)
class With(Stmt):
    items: list[WithItem]
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class Raise(Stmt):
    """``raise`` (``exc`` None: re-raise, which has nothing to re-raise without ``try``)."""

    exc: Expr | None


@dataclass(slots=True, eq=False)
class Assert(Stmt):
    test: Expr
    msg: Expr | None


@dataclass(slots=True, eq=False)
class ImportName:
    """``name`` (dotted) bound as ``asname`` (None: bind the first component)."""

    name: str
    asname: str | None
    line: int
    col: int


@dataclass(slots=True, eq=False)
class Import(Stmt):
    names: list[ImportName]


@dataclass(slots=True, eq=False)
class ImportFrom(Stmt):
    module: str
    names: list[ImportName] | None  # None: ``import *``


@dataclass(slots=True, eq=False)
class Module:
    body: list[Stmt]
    filename: str


def assigned_names(body: list[Stmt]) -> frozenset[str]:
    """The names a function body binds (its locals), not looking into nested functions."""
    out: set[str] = set()

    def target(t: Expr) -> None:
        if isinstance(t, Name):
            out.add(t.id)
        elif isinstance(t, TupleDisplay | ListDisplay):
            for x in t.items:
                target(x)

    def walk(stmts: list[Stmt]) -> None:
        for s in stmts:
            if isinstance(s, Assign):
                for t in s.targets:
                    target(t)
            elif isinstance(s, AugAssign):
                target(s.target)
            elif isinstance(s, For):
                target(s.target)
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, If | While):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, With):
                for item in s.items:
                    if item.target is not None:
                        target(item.target)
                walk(s.body)
            elif isinstance(s, FunctionDef | ClassDef):
                out.add(s.name)
            elif isinstance(s, Import):
                for n in s.names:
                    out.add(n.asname or n.name.split(".")[0])
            elif isinstance(s, ImportFrom) and s.names is not None:
                for n in s.names:
                    out.add(n.asname or n.name)

    walk(body)
    return frozenset(out)
