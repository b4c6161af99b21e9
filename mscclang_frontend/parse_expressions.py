"""The tree builder's expression rules: Lark's expression nodes (operators, calls, subscripts,
literals and f-strings, displays and comprehensions) become `nodes`; lambda, yield, walrus,
starred expressions and the like are recorded as unsupported.
"""

from __future__ import annotations

from typing import Any

from lark import Token
from lark.exceptions import LarkError
from lark.visitors import v_args

from mscclang_frontend import nodes as N
from mscclang_frontend.parse_errors import SyntaxProblem, translate
from mscclang_frontend.parse_strings import decode_escapes, split_fstring, split_literal
from mscclang_frontend.parse_tree import TreeBuilder, Unsupported, meta_pos, tok_meta, tok_pos


@v_args(meta=True)
class ExpressionRules(TreeBuilder):
    """The expression rules of the tree builder (statements: `parse_statements`)."""

    def fstring_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return children[0]  # type: ignore[no-any-return]

    # -- expressions ---------------------------------------------------------------------------
    def ifexp(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        body, test, orelse = children
        return N.IfExp(line, col, test, body, orelse)

    def lambdef(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "lambda expressions are")

    def lambda_params(self, meta: Any, children: list[Any]) -> None:
        return None

    def lambda_param(self, meta: Any, children: list[Any]) -> None:
        return None

    def walrus(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "assignment expressions (:=) are")

    def yield_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "yield expressions are")

    def await_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "await expressions are")

    def or_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.BoolOp(line, col, "or", list(children))

    def and_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.BoolOp(line, col, "and", list(children))

    def not_test(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.Not(line, col, children[0])

    def comparison(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        first = children[0]
        ops: list[str] = []
        operands: list[N.Expr] = []
        i = 1
        while i < len(children):
            tok = children[i]
            op = tok.value
            if op == "not":  # "not in"
                op, i = "not in", i + 2
            elif op == "is" and isinstance(children[i + 1], Token):  # "is not"
                op, i = "is not", i + 2
            else:
                i += 1
            ops.append(op)
            operands.append(children[i])
            i += 1
        return N.Compare(line, col, first, ops, operands)

    def _chain(self, meta: Any, children: list[Any], op: str | None = None) -> N.Expr:
        line, col = meta_pos(meta)
        first = children[0]
        ops: list[str] = []
        operands: list[N.Expr] = []
        if op is None:
            for i in range(1, len(children), 2):
                tok = children[i]
                if tok.value == "@":
                    return self._reject(tok_meta(tok), "the @ operator is")
                ops.append(str(tok.value))
                operands.append(children[i + 1])
        else:
            ops = [op] * (len(children) - 1)
            operands = list(children[1:])
        return N.Chain(line, col, first, ops, operands)

    def expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "|")

    def xor_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "^")

    def and_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "&")

    def shift_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children)

    arith_expr = shift_expr
    term = shift_expr

    def power(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._chain(meta, children, "**")

    def unary(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        op, operand = children
        return N.Unary(line, col, str(op.value), operand)

    def call(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        func = children[0]
        args, kwargs = children[1] if len(children) > 1 and children[1] is not None else ([], [])
        return N.Call(line, col, func, args, kwargs)

    def arguments(self, meta: Any, children: list[Any]) -> tuple[list[N.Expr], list[N.Keyword]]:
        args: list[N.Expr] = []
        kwargs: list[N.Keyword] = []
        names: set[str] = set()
        for c in children:
            if isinstance(c, N.Keyword):
                if c.name in names:
                    raise SyntaxProblem(f"keyword argument repeated: {c.name}", c.line, c.col)
                names.add(c.name)
                kwargs.append(c)
            elif isinstance(c, N.Expr):
                if kwargs and not isinstance(c, Unsupported):
                    raise SyntaxProblem(
                        "positional argument follows keyword argument", c.line, c.col
                    )
                args.append(c)
        return args, kwargs

    def genexp_argument(
        self, meta: Any, children: list[Any]
    ) -> tuple[list[N.Expr], list[N.Keyword]]:
        return [self._comprehension(meta, "gen", None, children[0], children[1])], []

    def kwarg(self, meta: Any, children: list[Any]) -> N.Keyword:
        line, col = meta_pos(meta)
        return N.Keyword(str(children[0]), children[1], line, col)

    def star_arg(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "*args in calls are")

    def starstar_arg(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "**kwargs in calls are")

    def subscript_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.Subscript(line, col, children[0], children[1])

    def subscripts(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._seq(meta, children)

    def slice_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        lower, upper = children[0], children[1]
        step = children[2] if len(children) > 2 else None
        return N.SliceExpr(line, col, lower, upper, step)

    def sliceop(self, meta: Any, children: list[Any]) -> Any:
        return children[0]

    def attribute(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.Attribute(line, col, children[0], str(children[1]))

    def name(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.Name(line, col, str(children[0]))

    def const_none(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*meta_pos(meta), None)

    def const_true(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*meta_pos(meta), True)

    def const_false(self, meta: Any, children: list[Any]) -> N.Expr:
        return N.Const(*meta_pos(meta), False)

    def number(self, meta: Any, children: list[Any]) -> N.Expr:
        tok: Token = children[0]
        line, col = tok_pos(tok)
        text = str(tok.value)
        if tok.type == "IMAG_NUMBER":
            return self._reject(meta, "complex numbers are")
        if tok.type == "FLOAT_NUMBER":
            return N.Const(line, col, float(text.replace("_", "")))
        return N.Const(line, col, int(text, 0))

    def string(self, meta: Any, children: list[Any]) -> Any:
        return children[0]

    def strings(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        parts: list[str | N.FField] = []
        is_f = False
        for tok in children:
            if tok.type == "BYTES":
                return self._reject(tok_meta(tok), "bytes literals are")
            if tok.type in ("FSTRING", "LONG_FSTRING"):
                is_f = True
                parts.extend(split_fstring(tok, self._parse_inner))
            else:
                prefix, body, _ = split_literal(tok.value)
                try:
                    parts.append(body if "r" in prefix else decode_escapes(body))
                except ValueError as e:
                    raise SyntaxProblem(f"invalid string literal: {e}", *tok_pos(tok)) from None
        if not is_f:
            return N.Const(line, col, "".join(p for p in parts if isinstance(p, str)))
        merged: list[str | N.FField] = []
        for p in parts:
            if isinstance(p, str) and merged and isinstance(merged[-1], str):
                merged[-1] += p
            elif p != "":
                merged.append(p)
        return N.FString(line, col, merged)

    def _parse_inner(self, text: str, line: int, col: int) -> N.Expr:
        padded = "\n" * (line - 1) + " " * (col - 1) + text
        try:
            tree = self.parser.parse(padded, start="fstring_expr")
        except LarkError as exc:
            err = translate(exc, self.source, self.parser)
            message = err.message.replace("end of line", "'}'").replace("end of file", "'}'")
            pos = err.pos
            raise SyntaxProblem(
                f"f-string: {message}", pos.line if pos else line, pos.column if pos else col
            ) from None
        sub = type(self)(self.parser, self.source)
        expr = sub.transform(tree)
        self.unsupported.extend(sub.unsupported)
        return expr  # type: ignore[no-any-return]

    # -- displays --------------------------------------------------------------------------------
    def tuple_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.TupleDisplay(line, col, [c for c in children if isinstance(c, N.Expr)])

    def list_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        return N.ListDisplay(line, col, [c for c in children if isinstance(c, N.Expr)])

    def dict_display(self, meta: Any, children: list[Any]) -> N.Expr:
        line, col = meta_pos(meta)
        keys: list[N.Expr] = []
        values: list[N.Expr] = []
        for c in children:
            if isinstance(c, tuple):
                keys.append(c[0])
                values.append(c[1])
        return N.DictDisplay(line, col, keys, values)

    def dict_item(self, meta: Any, children: list[Any]) -> tuple[N.Expr, N.Expr]:
        return children[0], children[1]

    def dict_unpack(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "dict unpacking (**) is")

    def set_display(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "set displays are")

    def _comprehension(
        self, meta: Any, kind: str, key: N.Expr | None, elt: N.Expr, clauses: Any
    ) -> N.Expr:
        line, col = meta_pos(meta)
        if isinstance(clauses, Unsupported):
            return clauses
        return N.Comprehension(line, col, kind, elt, key, list(clauses))

    def genexp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "gen", None, children[0], children[1])

    def listcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "list", None, children[0], children[1])

    def dictcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._comprehension(meta, "dict", children[0], children[1], children[2])

    def setcomp(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "set comprehensions are")

    def comp_for(self, meta: Any, children: list[Any]) -> list[N.CompFor | N.Expr] | N.Expr:
        if children and isinstance(children[0], Token):
            return self._reject(meta, "async comprehensions are")
        rest = children[2] if len(children) > 2 else []
        if isinstance(rest, Unsupported):
            return rest
        return [N.CompFor(self._target(children[0]), children[1]), *rest]

    def comp_if(self, meta: Any, children: list[Any]) -> list[N.CompFor | N.Expr] | N.Expr:
        rest = children[1] if len(children) > 1 else []
        if isinstance(rest, Unsupported):
            return rest
        return [children[0], *rest]

    def star_expr(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "starred expressions (*x) are")

    def star_target(self, meta: Any, children: list[Any]) -> N.Expr:
        return self._reject(meta, "starred assignment targets (*x) are")
