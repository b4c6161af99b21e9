"""The interpreter's expressions: names, f-strings, subscripts and slices, the operators with
their bounds on sizes and integers, comparisons, conditionals, comprehensions and displays.
"""

from __future__ import annotations

import difflib
import operator
from collections.abc import Callable
from typing import Any

from mscclang_frontend import nodes as N
from mscclang_frontend.guard import check_format_spec
from mscclang_frontend.interp_runtime import DICT_VIEWS, Frame, InterpreterCore, work
from mscclang_frontend.msccl_api import ITERABLE_TYPES, SUBSCRIPTABLE_TYPES
from mscclang_frontend.values import ApiError, type_name

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "is": operator.is_,
    "is not": operator.is_not,
}

_CONTAINERS: tuple[type, ...] = (list, tuple, str, dict, range, *DICT_VIEWS, *ITERABLE_TYPES)
_SEQUENCES = (list, tuple, str)


class ExpressionEvaluator(InterpreterCore):
    """Evaluates expressions (attributes and calls: `interp_calls.CallEvaluator`)."""

    def eval(self, node: N.Expr, frame: Frame) -> object:
        # Every expression evaluated is a step too, so the bound tracks the time taken
        # whatever the shape of the program (checked at statements, calls and iterations).
        self.steps += 1
        return self._eval[type(node)](node, frame)

    def truth(self, v: object, node: N.Expr) -> bool:
        try:
            return bool(v)
        except (TypeError, ValueError) as e:
            raise self.error(str(e), node) from None

    def _e_const(self, node: N.Const, frame: Frame) -> object:
        return node.value

    def _e_name(self, node: N.Name, frame: Frame) -> object:
        name = node.id
        local = frame.locals
        if name in local:
            return local[name]
        if frame.local_names is not None and name in frame.local_names:
            raise self.error(f"local variable '{name}' is used before it is assigned", node)
        for scope in frame.closure:
            if name in scope:
                return scope[name]
        g = self.globals
        if name in g:
            return g[name]
        b = self.builtins
        if name in b:
            return b[name]
        raise self.error(f"name '{name}' is not defined{self._did_you_mean(name, frame)}", node)

    def _did_you_mean(self, name: str, frame: Frame) -> str:
        """`` (did you mean 'x'?)`` naming the closest visible name, or nothing."""
        seen: set[str] = set(frame.locals)
        for scope in frame.closure:
            seen.update(scope)
        seen.update(self.globals)
        seen.update(self.builtins)
        seen.discard(name)
        close = difflib.get_close_matches(name, sorted(seen), n=1, cutoff=0.75)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def _e_fstring(self, node: N.FString, frame: Frame) -> object:
        out: list[str] = []
        size = 0
        for part in node.parts:
            if isinstance(part, str):
                text = part
            else:
                v = self.eval(part.expr, frame)
                try:
                    if part.conversion == "r":
                        v = repr(v)
                    elif part.conversion == "s":
                        v = str(v)
                    elif part.conversion == "a":
                        v = ascii(v)
                    if part.spec:
                        check_format_spec(self, part.spec)
                        text = format(v, part.spec)
                    else:
                        text = str(v)
                except ApiError as e:
                    raise self.error(e.message, part.expr) from None
                except (TypeError, ValueError) as e:
                    raise self.error(f"f-string: {e}", part.expr) from None
                text = part.debug_text + text
            size += len(text)
            out.append(text)
        try:
            self.check_size(size)
        except ApiError as e:
            raise self.error(e.message, node) from None
        return "".join(out)

    def _e_subscript(self, node: N.Subscript, frame: Frame) -> object:
        obj = self.eval(node.value, frame)
        index = self.eval(node.index, frame)
        return self.get_item(obj, index, node)

    def get_item(self, obj: object, index: object, node: N.Subscript) -> object:
        if isinstance(obj, list | tuple | str | range):
            if isinstance(index, slice):
                result = obj[index]
                try:
                    self.check_size(len(result))
                except ApiError as e:
                    raise self.error(e.message, node) from None
                return result
            if isinstance(index, bool) or not isinstance(index, int):
                raise self.error(
                    f"{type_name(obj)} indices must be integers or slices, not {type_name(index)}",
                    node.index,
                )
            try:
                return obj[index]
            except IndexError:
                raise self.error(
                    f"{type_name(obj)} index {index} out of range (it has {len(obj)} items)",
                    node.index,
                ) from None
        if isinstance(obj, dict):
            try:
                return obj[index]
            except KeyError:
                raise self.error(f"key {index!r} not found", node.index) from None
            except TypeError:
                raise self.error(f"unhashable type: '{type_name(index)}'", node.index) from None
        if isinstance(obj, SUBSCRIPTABLE_TYPES):
            try:
                return obj[index]  # type: ignore[index]
            except ApiError as e:
                raise self.error(e.message, node.index) from None
        raise self.error(f"'{type_name(obj)}' object is not subscriptable", node.value)

    def _e_slice(self, node: N.SliceExpr, frame: Frame) -> object:
        parts: list[int | None] = []
        for e in (node.lower, node.upper, node.step):
            if e is None:
                parts.append(None)
                continue
            v = self.eval(e, frame)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise self.error(f"slice indices must be integers or None, not {type_name(v)}", e)
            parts.append(v)
        if parts[2] == 0:
            raise self.error("slice step cannot be zero", node.step or node)
        return slice(*parts)

    def binary(self, op: str, a: object, b: object, node: N.Node) -> object:
        try:
            bits = self.limits.max_int_bits
            if op == "*":
                if isinstance(a, _SEQUENCES) and isinstance(b, int):
                    self.check_size(len(a) * max(b, 0))
                elif isinstance(b, _SEQUENCES) and isinstance(a, int):
                    self.check_size(len(b) * max(a, 0))
                elif (
                    isinstance(a, int)
                    and isinstance(b, int)
                    and a.bit_length() + b.bit_length() > bits
                ):
                    raise ApiError(f"an integer of more than {bits} bits")
            elif op == "+" and isinstance(a, _SEQUENCES) and type(a) is type(b):
                self.check_size(len(a) + len(b))
            elif (
                op == "**"
                and isinstance(a, int)
                and isinstance(b, int)
                and b > 0
                and abs(a) > 1
                and a.bit_length() * b > bits
            ) or (
                op == "<<"
                and isinstance(a, int)
                and isinstance(b, int)
                and a
                and b > 0
                and a.bit_length() + b > bits
            ):
                raise ApiError(f"an integer of more than {bits} bits")
            elif op == "%" and isinstance(a, str):
                check_format_spec(self, a)
            return _BINARY[op](a, b)
        except ApiError as e:
            raise self.error(e.message, node) from None
        except ZeroDivisionError:
            raise self.error("division by zero", node) from None
        except TypeError:
            if op == "%" and isinstance(a, str):
                raise self.error(
                    "not all arguments converted during string formatting", node
                ) from None
            raise self.error(
                f"unsupported operand type(s) for {op}: '{type_name(a)}' and '{type_name(b)}'",
                node,
            ) from None
        except (ValueError, OverflowError) as e:
            raise self.error(str(e), node) from None

    def _e_chain(self, node: N.Chain, frame: Frame) -> object:
        value = self.eval(node.first, frame)
        for op, operand in zip(node.ops, node.operands, strict=True):
            value = self.binary(op, value, self.eval(operand, frame), node)
        return value

    def _e_unary(self, node: N.Unary, frame: Frame) -> object:
        v = self.eval(node.operand, frame)
        try:
            if node.op == "-":
                return -v  # type: ignore[operator]
            if node.op == "+":
                return +v  # type: ignore[operator]
            return ~v  # type: ignore[operator]
        except TypeError:
            raise self.error(
                f"bad operand type for unary {node.op}: '{type_name(v)}'", node
            ) from None

    def _e_boolop(self, node: N.BoolOp, frame: Frame) -> object:
        value: object = None
        if node.op == "and":
            for e in node.values:
                value = self.eval(e, frame)
                if not self.truth(value, e):
                    return value
            return value
        for e in node.values:
            value = self.eval(e, frame)
            if self.truth(value, e):
                return value
        return value

    def _e_not(self, node: N.Not, frame: Frame) -> object:
        return not self.truth(self.eval(node.operand, frame), node.operand)

    def _e_compare(self, node: N.Compare, frame: Frame) -> object:
        left = self.eval(node.first, frame)
        for op, operand in zip(node.ops, node.operands, strict=True):
            right = self.eval(operand, frame)
            try:
                if op == "in" or op == "not in":
                    if not isinstance(right, _CONTAINERS):
                        raise self.error(
                            f"argument of type '{type_name(right)}' is not a container", operand
                        )
                    self.charge_work(work((right,)))
                    result: object = left in right  # type: ignore[operator]
                    if op == "not in":
                        result = not result
                else:
                    self.charge_work(work((left, right)))
                    result = _COMPARE[op](left, right)
            except ApiError as e:
                raise self.error(e.message, node) from None
            except TypeError:
                raise self.error(
                    f"'{op}' not supported between instances of '{type_name(left)}' and "
                    f"'{type_name(right)}'",
                    node,
                ) from None
            if not self.truth(result, node):
                return result
            left = right
        return result

    def _e_ifexp(self, node: N.IfExp, frame: Frame) -> object:
        if self.truth(self.eval(node.test, frame), node.test):
            return self.eval(node.body, frame)
        return self.eval(node.orelse, frame)

    def _e_comprehension(self, node: N.Comprehension, frame: Frame) -> object:
        """A comprehension in its own scope; a generator expression is built at once."""
        inner = Frame({}, (frame.locals, *frame.closure), None, frame.function, "function")
        items: list[object] = []
        pairs: dict[object, object] = {}

        def emit() -> None:
            if node.key is not None:
                key = self.eval(node.key, inner)
                try:
                    if key not in pairs:
                        self.check_size(len(pairs) + 1, 1)
                    pairs[key] = self.eval(node.elt, inner)
                except TypeError:
                    raise self.error(f"unhashable type: '{type_name(key)}'", node.key) from None
            else:
                items.append(self.eval(node.elt, inner))
                self.check_size(len(items), 1)

        def run(k: int) -> None:
            if k == len(node.clauses):
                emit()
                return
            clause = node.clauses[k]
            if isinstance(clause, N.CompFor):
                value = self.eval(clause.iter, inner if k else frame)
                try:
                    it = self._iter(value)
                except ApiError as e:
                    raise self.error(e.message, clause.iter) from None
                for item in it:
                    self._charge()
                    self.assign(clause.target, item, inner)
                    run(k + 1)
            elif self.truth(self.eval(clause, inner), clause):
                run(k + 1)

        try:
            run(0)
        except ApiError as e:
            raise self.error(e.message, node) from None
        return pairs if node.key is not None else items

    def _e_list(self, node: N.ListDisplay, frame: Frame) -> object:
        return [self.eval(e, frame) for e in node.items]

    def _e_tuple(self, node: N.TupleDisplay, frame: Frame) -> object:
        return tuple(self.eval(e, frame) for e in node.items)

    def _e_dict(self, node: N.DictDisplay, frame: Frame) -> object:
        out: dict[object, object] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = self.eval(k, frame)
            try:
                out[key] = self.eval(v, frame)
            except TypeError:
                raise self.error(f"unhashable type: '{type_name(key)}'", k) from None
        return out
