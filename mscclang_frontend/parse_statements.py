"""The tree builder's statement rules: Lark's statement nodes (simple and compound statements,
imports, function and class definitions) become `nodes`; the constructs the language leaves
out (try, global, decorators, annotations, ...) are recorded as unsupported.
"""

from __future__ import annotations

from typing import Any

from lark import Token
from lark.visitors import v_args

from mscclang_frontend import nodes as N
from mscclang_frontend.parse_errors import SyntaxProblem
from mscclang_frontend.parse_tree import TreeBuilder, Unsupported, meta_pos


@v_args(meta=True)
class StatementRules(TreeBuilder):
    """The statement rules of the tree builder (expressions: `parse_expressions`)."""

    # -- module and statements ------------------------------------------------------------------
    def file_input(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return self._flatten(children)

    @staticmethod
    def _flatten(children: list[Any]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for c in children:
            if isinstance(c, list):
                out.extend(c)
            elif isinstance(c, N.Stmt):
                out.append(c)
        return out

    def simple_stmt(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return [c for c in children if isinstance(c, N.Stmt)]

    def suite(self, meta: Any, children: list[Any]) -> list[N.Stmt]:
        return self._flatten(children)

    def expr_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.ExprStmt(line, col, children[0])

    def assign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        targets = [self._target(t) for t in children[:-1]]
        return N.Assign(line, col, targets, children[-1])

    def augassign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        target, op, value = children
        if not isinstance(target, N.Name | N.Attribute | N.Subscript | Unsupported):
            raise SyntaxProblem(
                "augmented assignment needs a single name, attribute or item",
                target.line,
                target.col,
            )
        if op.value == "@=":
            return self._stmt_reject(meta, "the @= operator is")
        line, col = meta_pos(meta)
        return N.AugAssign(line, col, target, op.value[:-1], value)

    def _stmt_reject(self, meta: Any, what: str) -> N.Stmt:
        self._reject(meta, what)
        line, col = meta_pos(meta)
        return N.Pass(line, col)

    def annassign_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "type annotations are")

    def testlist_star(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._seq(meta, children)

    testlist = testlist_star
    exprlist = testlist_star

    def pass_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Pass(*meta_pos(meta))

    def break_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Break(*meta_pos(meta))

    def continue_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return N.Continue(*meta_pos(meta))

    def return_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.Return(line, col, children[0] if children else None)

    def raise_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.Raise(line, col, children[0] if children else None)

    def global_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "global statements are")

    def nonlocal_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "nonlocal statements are")

    def del_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "del statements are")

    def assert_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.Assert(line, col, children[0], children[1] if len(children) > 1 else None)

    # -- imports -------------------------------------------------------------------------------
    def dotted_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        line, col = meta_pos(meta)
        return N.ImportName("".join(str(c) for c in children), None, line, col)

    def dotted_as_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        name: N.ImportName = children[0]
        if len(children) > 1:
            name.asname = str(children[1])
        return name

    def import_as_name(self, meta: Any, children: list[Any]) -> N.ImportName:
        line, col = meta_pos(meta)
        return N.ImportName(
            str(children[0]), str(children[1]) if len(children) > 1 else None, line, col
        )

    def import_as_names(self, meta: Any, children: list[Any]) -> list[N.ImportName]:
        return [c for c in children if isinstance(c, N.ImportName)]

    def import_star(self, meta: Any, children: list[Any]) -> str:
        return "*"

    def relative_dots(self, meta: Any, children: list[Any]) -> Unsupported:
        return self._reject(meta, "relative imports are")

    def import_name(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.Import(line, col, list(children))

    def import_from(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        if any(isinstance(c, Unsupported) for c in children):
            return N.Pass(line, col)
        module: N.ImportName = children[0]
        names = children[-1]
        return N.ImportFrom(module.line, module.col, module.name, None if names == "*" else names)

    # -- compound statements ---------------------------------------------------------------------
    def if_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        test, body, *rest = children
        orelse: list[N.Stmt] = []
        if rest and isinstance(rest[-1], tuple) and rest[-1][0] == "else":
            orelse = rest.pop()[1]
        for clause in reversed(rest):
            _, (eline, ecol, etest, ebody) = clause
            orelse = [N.If(eline, ecol, etest, ebody, orelse)]
        return N.If(line, col, test, body, orelse)

    def elif_clause(self, meta: Any, children: list[Any]) -> tuple[str, Any]:
        line, col = meta_pos(meta)
        return ("elif", (line, col, children[0], children[1]))

    def else_clause(self, meta: Any, children: list[Any]) -> tuple[str, Any]:
        return ("else", children[0])

    def while_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        orelse = children[2][1] if len(children) > 2 else []
        return N.While(line, col, children[0], children[1], orelse)

    def for_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        orelse = children[3][1] if len(children) > 3 else []
        return N.For(line, col, self._target(children[0]), children[1], children[2], orelse)

    def try_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "try statements are")

    def except_clause(self, meta: Any, children: list[Any]) -> None:
        return None

    def finally_clause(self, meta: Any, children: list[Any]) -> None:
        return None

    def with_item(self, meta: Any, children: list[Any]) -> N.WithItem:
        target = self._target(children[1]) if len(children) > 1 else None
        return N.WithItem(children[0], target)

    def with_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        return N.With(line, col, list(children[:-1]), children[-1])

    def param(self, meta: Any, children: list[Any]) -> N.Param | Unsupported:
        line, col = meta_pos(meta)
        default = None
        for c in children[1:]:
            if isinstance(c, Unsupported):
                return c
            default = c
        return N.Param(str(children[0]), default, line, col)

    def annotation(self, meta: Any, children: list[Any]) -> Unsupported:
        return self._reject(meta, "type annotations are")

    return_annotation = annotation

    def star_param(self, meta: Any, children: list[Any]) -> Unsupported:
        if children and children[0] is not None and isinstance(children[0], Token):
            return self._reject(meta, "*args parameters are")
        return self._reject(meta, "keyword-only parameters are")

    def starstar_param(self, meta: Any, children: list[Any]) -> Unsupported:
        return self._reject(meta, "**kwargs parameters are")

    def slash_param(self, meta: Any, children: list[Any]) -> Unsupported:
        return self._reject(meta, "positional-only parameters are")

    def parameters(self, meta: Any, children: list[Any]) -> list[Any]:
        params = [c for c in children if isinstance(c, N.Param | Unsupported)]
        seen_default = False
        names: set[str] = set()
        for p in params:
            if isinstance(p, N.Param):
                if p.name in names:
                    raise SyntaxProblem(f"duplicate parameter '{p.name}'", p.line, p.col)
                names.add(p.name)
                if p.default is not None:
                    seen_default = True
                elif seen_default:
                    raise SyntaxProblem(
                        "a parameter without a default follows one with a default",
                        p.line,
                        p.col,
                    )
        return params

    def funcdef(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        name = str(children[0])
        params: list[N.Param] = []
        body: list[N.Stmt] = children[-1]
        for c in children[1:-1]:
            if isinstance(c, list):
                params = [p for p in c if isinstance(p, N.Param)]
        local = N.assigned_names(body) | {p.name for p in params}
        return N.FunctionDef(line, col, name, params, body, frozenset(local))

    def classdef(self, meta: Any, children: list[Any]) -> N.Stmt:
        line, col = meta_pos(meta)
        bases: list[N.Expr] = []
        if len(children) > 2 and children[1] is not None:
            args, kwargs = children[1]
            if kwargs:
                self.unsupported.append(
                    (
                        kwargs[0].line,
                        kwargs[0].col,
                        "class keyword arguments are not supported in MSCCLang programs",
                    )
                )
            bases = args
        return N.ClassDef(line, col, str(children[0]), bases, children[-1])

    def decorated(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "decorators are")

    def decorator(self, meta: Any, children: list[Any]) -> None:
        return None

    def async_stmt(self, meta: Any, children: list[Any]) -> N.Stmt:
        return self._stmt_reject(meta, "async statements are")
