"""The tree-walking interpreter that runs a MSCCLang program against collc's MSCCLang API.

It walks the syntax tree that `parse.py` builds from Lark's parse tree, with Python's
semantics for the subset MSCCLang programs use (scoping with closures, classes with single
or multiple inheritance and ``super()``, ``for``/``while`` with ``else``, unpacking, ...).
Only whitelisted builtins, methods and modules exist: a program cannot open files, reach the
network or import modules other than argparse, math and msccl.*. Every statement, call and
loop iteration is an evaluation step; the steps, the sizes of collections, integers and
output and the depth of calls are bounded (`Limits`), so a runaway program ends with a
`CompileError` naming its line.
"""

from __future__ import annotations

import difflib
import inspect
import operator
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from mscclang_frontend import nodes as N
from mscclang_frontend.builtins import (
    ARGPARSE_EXPOSED,
    ArgumentParser,
    check_format_spec,
    make_argparse,
    make_builtins,
    make_math,
    make_methods,
    materialize,
)
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.limits import Limits
from mscclang_frontend.msccl_api import (
    ATTRIBUTE_ALIASES,
    EXPOSED,
    ITERABLE_TYPES,
    SUBSCRIPTABLE_TYPES,
    MscclApi,
    ProgramState,
)
from mscclang_frontend.values import (
    EXCEPTION_NAMES,
    ApiError,
    BoundMethod,
    Builtin,
    BuiltinClass,
    ContextValue,
    ExceptionValue,
    Namespace,
    SuperProxy,
    Unavailable,
    UserClass,
    UserFunction,
    UserInstance,
    type_name,
)

NORMAL, BREAK, CONTINUE, RETURN = 0, 1, 2, 3

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

_DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
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
    *_DICT_VIEWS,
    *ITERABLE_TYPES,
)
_CONTAINERS: tuple[type, ...] = (list, tuple, str, dict, range, *_DICT_VIEWS, *ITERABLE_TYPES)
_SEQUENCES = (list, tuple, str)

RECOGNISED_MODULES = ("argparse", "math", "msccl")


class _Frame:
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


class Interpreter:
    """Runs one program. `run` executes it; `api` then holds the MSCCLang programs it built."""

    def __init__(
        self,
        source: Source,
        argv: Sequence[str] = (),
        limits: Limits | None = None,
        on_xml: Callable[[ProgramState], str | None] | None = None,
    ) -> None:
        self.source = source
        self.limits = limits or Limits()
        self.max_steps = self.limits.max_steps
        self.steps = 0
        self.allocated = 0
        self.depth = 0
        self.output: list[str] = []
        self.output_size = 0
        self.pos = (0, 0)
        self.current: N.Node | None = None
        self.call_node: N.Node | None = None
        self.api = MscclApi(self, self.limits.api, on_xml)
        self.builtins = make_builtins(self)
        self.super_builtin = Builtin("super", lambda: None)
        self.builtins["super"] = self.super_builtin
        self.methods = make_methods(self)
        self.modules = self._modules(argv)
        self.globals: dict[str, object] = {"__name__": "__main__", "__file__": source.filename}
        self._exec: dict[type, Callable[[Any, _Frame], int]] = {
            N.ExprStmt: self._s_expr,
            N.Assign: self._s_assign,
            N.AugAssign: self._s_augassign,
            N.Pass: self._s_pass,
            N.Break: self._s_break,
            N.Continue: self._s_continue,
            N.Return: self._s_return,
            N.If: self._s_if,
            N.While: self._s_while,
            N.For: self._s_for,
            N.FunctionDef: self._s_def,
            N.ClassDef: self._s_class,
            N.With: self._s_with,
            N.Assert: self._s_assert,
            N.Raise: self._s_raise,
            N.Import: self._s_import,
            N.ImportFrom: self._s_import_from,
        }
        self._eval: dict[type, Callable[[Any, _Frame], object]] = {
            N.Const: self._e_const,
            N.Name: self._e_name,
            N.FString: self._e_fstring,
            N.Attribute: self._e_attribute,
            N.Subscript: self._e_subscript,
            N.Call: self._e_call,
            N.Chain: self._e_chain,
            N.Unary: self._e_unary,
            N.BoolOp: self._e_boolop,
            N.Not: self._e_not,
            N.Compare: self._e_compare,
            N.IfExp: self._e_ifexp,
            N.ListDisplay: self._e_list,
            N.TupleDisplay: self._e_tuple,
            N.DictDisplay: self._e_dict,
            N.SliceExpr: self._e_slice,
            N.Comprehension: self._e_comprehension,
        }
        for exc in EXCEPTION_NAMES:
            self.builtins.setdefault(exc, Builtin(exc, _exception_maker(exc)))

    # ------------------------------------------------------------------------------ running
    def run(self, module: N.Module) -> None:
        """Execute the program; raise `CompileError` for any problem."""
        frame = _Frame(self.globals, (), None, None, "module")
        try:
            self.exec_block(module.body, frame)
        except CompileError:
            raise
        except RecursionError:
            raise self.error(
                "the program nests calls or expressions too deeply", self.current
            ) from None
        except ApiError as e:
            raise self.error(e.message, self.current) from None
        except Exception as e:  # a bug of collc's, reported at the program's line
            raise self.error(f"internal error: {type(e).__name__}: {e}", self.current) from e

    @property
    def stdout(self) -> str:
        return "".join(self.output)

    def error(self, message: str, node: N.Node | N.Keyword | N.Param | None) -> CompileError:
        if node is None:
            return CompileError(message, self.source.pos(0, 0))
        return self.source.error(message, node.line, node.col)

    def _modules(self, argv: Sequence[str]) -> dict[str, Namespace]:
        mods = dict(self.api.modules())
        mods["math"] = make_math(self)
        mods["argparse"] = make_argparse(self, argv)
        mods["__future__"] = Namespace("__future__", {"annotations": True})
        mods["msccl"] = Namespace("msccl", {})
        for dotted in sorted(mods, key=len):
            if dotted.startswith("msccl."):
                self._link_parent(mods, dotted)
        return mods

    @staticmethod
    def _link_parent(mods: dict[str, Namespace], dotted: str) -> None:
        """Make ``dotted`` an attribute of its parent module (``msccl.language.buffer`` of
        ``msccl.language``), creating empty parents on the way."""
        parent, _, leaf = dotted.rpartition(".")
        if parent not in mods:
            mods[parent] = Namespace(parent, {})
            Interpreter._link_parent(mods, parent)
        mods[parent].attrs.setdefault(leaf, mods[dotted])

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

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object:
        return self.call_value(fn, args, kwargs, self.call_node or self.current)

    def write(self, text: str) -> None:
        self.output_size += len(text)
        if self.output_size > self.limits.max_output:
            raise ApiError(f"the program printed more than {self.limits.max_output:,} characters")
        self.output.append(text)

    def call_position(self) -> tuple[int, int]:
        return self.pos

    # ------------------------------------------------------------------------------ statements
    def exec_block(self, body: list[N.Stmt], frame: _Frame) -> int:
        table = self._exec
        for stmt in body:
            self.steps += 1
            if self.steps > self.max_steps:
                raise self.error(self._steps_message(), stmt)
            self.current = stmt
            r = table[type(stmt)](stmt, frame)
            if r:
                return r
        return NORMAL

    def _s_expr(self, s: N.ExprStmt, frame: _Frame) -> int:
        self.eval(s.value, frame)
        return NORMAL

    def _s_assign(self, s: N.Assign, frame: _Frame) -> int:
        value = self.eval(s.value, frame)
        for t in s.targets:
            self.assign(t, value, frame)
        return NORMAL

    def _s_augassign(self, s: N.AugAssign, frame: _Frame) -> int:
        t = s.target
        if isinstance(t, N.Name):
            cur = self._e_name(t, frame)
            frame.locals[t.id] = self._augment(cur, s, frame)
        elif isinstance(t, N.Subscript):
            obj = self.eval(t.value, frame)
            index = self.eval(t.index, frame)
            cur = self.get_item(obj, index, t)
            self.set_item(obj, index, self._augment(cur, s, frame), t)
        else:
            assert isinstance(t, N.Attribute)
            obj = self.eval(t.value, frame)
            cur = self._get_attr_at(obj, t.attr, t)
            self.set_attr(obj, t.attr, self._augment(cur, s, frame), t)
        return NORMAL

    def _augment(self, cur: object, s: N.AugAssign, frame: _Frame) -> object:
        value = self.eval(s.value, frame)
        if s.op == "+" and isinstance(cur, list):
            try:
                items = materialize(self, value)
                self.check_size(len(cur) + len(items), len(items))
            except ApiError as e:
                raise self.error(e.message, s.value) from None
            cur.extend(items)
            return cur
        return self.binary(s.op, cur, value, s)

    def _s_pass(self, s: N.Pass, frame: _Frame) -> int:
        return NORMAL

    def _s_break(self, s: N.Break, frame: _Frame) -> int:
        return BREAK

    def _s_continue(self, s: N.Continue, frame: _Frame) -> int:
        return CONTINUE

    def _s_return(self, s: N.Return, frame: _Frame) -> int:
        frame.retval = None if s.value is None else self.eval(s.value, frame)
        return RETURN

    def _s_if(self, s: N.If, frame: _Frame) -> int:
        if self.truth(self.eval(s.test, frame), s.test):
            return self.exec_block(s.body, frame)
        if s.orelse:
            return self.exec_block(s.orelse, frame)
        return NORMAL

    def _s_while(self, s: N.While, frame: _Frame) -> int:
        while self.truth(self.eval(s.test, frame), s.test):
            self.steps += 1
            if self.steps > self.max_steps:
                raise self.error(self._steps_message(), s)
            r = self.exec_block(s.body, frame)
            if r == BREAK:
                return NORMAL
            if r == RETURN:
                return r
        if s.orelse:
            return self.exec_block(s.orelse, frame)
        return NORMAL

    def _s_for(self, s: N.For, frame: _Frame) -> int:
        value = self.eval(s.iter, frame)
        try:
            it = self._iter(value)
        except ApiError as e:
            raise self.error(e.message, s.iter) from None
        target = s.target
        simple = target.id if isinstance(target, N.Name) else None
        local = frame.locals
        while True:
            try:
                item = next(it)
            except StopIteration:
                break
            except RuntimeError as e:  # a dict changed size during iteration
                raise self.error(str(e), s.iter) from None
            self.steps += 1
            if self.steps > self.max_steps:
                raise self.error(self._steps_message(), s)
            if simple is not None:
                local[simple] = item
            else:
                self.assign(target, item, frame)
            r = self.exec_block(s.body, frame)
            if r == BREAK:
                return NORMAL
            if r == RETURN:
                return r
        if s.orelse:
            return self.exec_block(s.orelse, frame)
        return NORMAL

    def _s_def(self, s: N.FunctionDef, frame: _Frame) -> int:
        defaults = [
            self.eval(p.default, frame) if p.default is not None else _NO_DEFAULT for p in s.params
        ]
        if frame.kind == "function":
            closure = (frame.locals, *frame.closure)
        elif frame.kind == "class":
            closure = frame.closure
        else:
            closure = ()
        fn = UserFunction(s, defaults, closure, None, self._call_from_python)
        if frame.kind == "class":
            frame.defined.append(fn)
        frame.locals[s.name] = fn
        return NORMAL

    def _s_class(self, s: N.ClassDef, frame: _Frame) -> int:
        bases: list[UserClass | BuiltinClass] = []
        for b in s.bases:
            v = self.eval(b, frame)
            if isinstance(v, Unavailable):
                raise self.error(v.problem(), b)
            if not isinstance(v, UserClass | BuiltinClass):
                raise self.error(
                    f"class {s.name} can derive only from Collective or classes of the program, "
                    f"not from {type_name(v)} {v!r}",
                    b,
                )
            bases.append(v)
        ns: dict[str, object] = {}
        closure = (frame.locals, *frame.closure) if frame.kind == "function" else frame.closure
        cframe = _Frame(ns, closure, None, None, "class")
        r = self.exec_block(s.body, cframe)
        if r != NORMAL:
            raise self.error("'return', 'break' or 'continue' in a class body", s)
        cls = UserClass(s.name, tuple(bases), ns)
        for fn in cframe.defined:
            fn.owner = cls
        frame.locals[s.name] = cls
        return NORMAL

    def _s_with(self, s: N.With, frame: _Frame) -> int:
        entered: list[ContextValue] = []
        try:
            for item in s.items:
                ctx = self.eval(item.context, frame)
                if not isinstance(ctx, ContextValue):
                    raise self.error(
                        f"'{type_name(ctx)}' object cannot be used in a with statement "
                        "(MSCCLProgram(...) can)",
                        item.context,
                    )
                self.pos = (item.context.line, item.context.col)
                try:
                    value = ctx.enter()
                except ApiError as e:
                    raise self.error(e.message, item.context) from None
                entered.append(ctx)
                if item.target is not None:
                    self.assign(item.target, value, frame)
            r = self.exec_block(s.body, frame)
        except BaseException:
            for ctx in reversed(entered):
                ctx.exit(True)
            raise
        for ctx in reversed(entered):
            ctx.exit(False)
        return r

    def _s_assert(self, s: N.Assert, frame: _Frame) -> int:
        if not self.truth(self.eval(s.test, frame), s.test):
            message = "assertion failed"
            if s.msg is not None:
                message += f": {self.eval(s.msg, frame)}"
            raise self.error(message, s)
        return NORMAL

    def _s_raise(self, s: N.Raise, frame: _Frame) -> int:
        if s.exc is None:
            raise self.error("raise without an exception: there is nothing to re-raise", s)
        v = self.eval(s.exc, frame)
        if isinstance(v, Builtin) and v.name in EXCEPTION_NAMES:
            v = ExceptionValue(v.name)
        if not isinstance(v, ExceptionValue):
            raise self.error(f"exceptions must be exceptions, not {type_name(v)}", s.exc)
        raise self.error(f"the program raised {v}", s)

    def _module(self, name: str, node: N.Node | N.ImportName) -> Namespace:
        mod = self.modules.get(name)
        if mod is None and name.startswith("msccl."):
            # A module of msccl-tools collc does not model: importing it is fine (examples
            # star-import modules they never use); its names are unavailable where used.
            mod = self.modules[name] = Namespace(name, {})
            self._link_parent(self.modules, name)
        if mod is None:
            raise self.source.error(
                f"module '{name}' is not available in MSCCLang programs (collc provides "
                "argparse, math and msccl-tools' msccl package)",
                node.line,
                node.col,
            )
        return mod

    def _s_import(self, s: N.Import, frame: _Frame) -> int:
        for n in s.names:
            mod = self._module(n.name, n)
            if n.asname is not None:
                frame.locals[n.asname] = mod
            else:
                top = n.name.split(".")[0]
                frame.locals[top] = self._module(top, n)
        return NORMAL

    def _s_import_from(self, s: N.ImportFrom, frame: _Frame) -> int:
        mod = self._module(s.module, s)
        if s.names is None:
            for k, v in mod.attrs.items():
                if not (isinstance(v, Namespace) and v.kind == "module") and not k.startswith("_"):
                    frame.locals[k] = v
            return NORMAL
        for n in s.names:
            if n.name not in mod.attrs:
                if s.module == "msccl" or s.module.startswith("msccl."):
                    frame.locals[n.asname or n.name] = Unavailable(n.name, s.module)
                    continue
                raise self.source.error(
                    f"cannot import name '{n.name}' from '{s.module}'", n.line, n.col
                )
            frame.locals[n.asname or n.name] = mod.attrs[n.name]
        return NORMAL

    # ------------------------------------------------------------------------------ assignment
    def assign(self, target: N.Expr, value: object, frame: _Frame) -> None:
        if isinstance(target, N.Name):
            frame.locals[target.id] = value
        elif isinstance(target, N.TupleDisplay | N.ListDisplay):
            targets = target.items
            try:
                items = value if isinstance(value, tuple | list) else materialize(self, value)
            except ApiError:
                raise self.error(
                    f"cannot unpack non-iterable {type_name(value)} object", target
                ) from None
            if len(items) != len(targets):
                if len(items) > len(targets):
                    msg = f"too many values to unpack (expected {len(targets)})"
                else:
                    msg = f"not enough values to unpack (expected {len(targets)}, got {len(items)})"
                raise self.error(msg, target)
            for sub, item in zip(targets, items, strict=True):
                self.assign(sub, item, frame)
        elif isinstance(target, N.Subscript):
            obj = self.eval(target.value, frame)
            index = self.eval(target.index, frame)
            self.set_item(obj, index, value, target)
        elif isinstance(target, N.Attribute):
            obj = self.eval(target.value, frame)
            self.set_attr(obj, target.attr, value, target)
        else:
            raise self.error("cannot assign to this expression", target)

    def set_item(self, obj: object, index: object, value: object, node: N.Subscript) -> None:
        if isinstance(obj, list):
            if isinstance(index, slice):
                try:
                    items = materialize(self, value)
                    self.check_size(len(obj) + len(items), len(items))
                    obj[index] = items
                except ApiError as e:
                    raise self.error(e.message, node) from None
                except ValueError as e:
                    raise self.error(str(e), node.index) from None
                return
            if isinstance(index, bool) or not isinstance(index, int):
                raise self.error(
                    f"list indices must be integers, not {type_name(index)}", node.index
                )
            if not -len(obj) <= index < len(obj):
                raise self.error(
                    f"list assignment index {index} out of range (the list has {len(obj)} items)",
                    node.index,
                )
            obj[index] = value
        elif isinstance(obj, dict):
            try:
                if index not in obj:
                    self.check_size(len(obj) + 1, 1)
                obj[index] = value
            except TypeError:
                raise self.error(f"unhashable type: '{type_name(index)}'", node.index) from None
            except ApiError as e:
                raise self.error(e.message, node) from None
        else:
            raise self.error(
                f"'{type_name(obj)}' object does not support item assignment", node.value
            )

    def set_attr(self, obj: object, name: str, value: object, node: N.Node) -> None:
        if isinstance(obj, UserInstance):
            obj.attrs[name] = value
        elif isinstance(obj, UserClass):
            obj.namespace[name] = value
        elif isinstance(obj, Namespace) and obj.mutable:
            obj.attrs[name] = value
        else:
            raise self.error(f"cannot set attribute '{name}' of {type_name(obj)} objects", node)

    # ------------------------------------------------------------------------------ expressions
    def eval(self, node: N.Expr, frame: _Frame) -> object:
        # Every expression evaluated is a step too, so the bound tracks the time taken
        # whatever the shape of the program (checked at statements, calls and iterations).
        self.steps += 1
        return self._eval[type(node)](node, frame)

    def truth(self, v: object, node: N.Expr) -> bool:
        try:
            return bool(v)
        except (TypeError, ValueError) as e:
            raise self.error(str(e), node) from None

    def _e_const(self, node: N.Const, frame: _Frame) -> object:
        return node.value

    def _e_name(self, node: N.Name, frame: _Frame) -> object:
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

    def _did_you_mean(self, name: str, frame: _Frame) -> str:
        """`` (did you mean 'x'?)`` naming the closest visible name, or nothing."""
        seen: set[str] = set(frame.locals)
        for scope in frame.closure:
            seen.update(scope)
        seen.update(self.globals)
        seen.update(self.builtins)
        seen.discard(name)
        close = difflib.get_close_matches(name, sorted(seen), n=1, cutoff=0.75)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def _e_fstring(self, node: N.FString, frame: _Frame) -> object:
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

    def _e_attribute(self, node: N.Attribute, frame: _Frame) -> object:
        obj = self.eval(node.value, frame)
        return self._get_attr_at(obj, node.attr, node)

    def _get_attr_at(self, obj: object, name: str, node: N.Node) -> object:
        try:
            return self.get_attr(obj, name)
        except ApiError as e:
            raise self.error(e.message, node) from None

    def get_attr(self, obj: object, name: str) -> object:
        """``obj.name`` as a program sees it; ApiError when there is no such attribute."""
        if isinstance(obj, Unavailable):
            raise ApiError(obj.problem())
        if isinstance(obj, UserInstance):
            if name in obj.attrs:
                return obj.attrs[name]
            found = self._class_lookup(obj.cls.mro(), name)
            if found is not _MISSING:
                if isinstance(found, UserFunction):
                    return BoundMethod(obj, found, name)
                if callable(found) and not isinstance(found, UserClass | Builtin | BuiltinClass):
                    return BoundMethod(obj, found, name)
                return found
            raise ApiError(f"'{obj.cls.name}' object has no attribute '{name}'")
        if isinstance(obj, SuperProxy):
            mro = obj.self_obj.cls.mro()
            rest = mro[mro.index(obj.owner) + 1 :]
            found = self._class_lookup(rest, name)
            if found is _MISSING:
                raise ApiError(f"'super' object has no attribute '{name}'")
            if isinstance(found, UserFunction) or callable(found):
                return BoundMethod(obj.self_obj, found, name)
            return found
        if isinstance(obj, UserClass):
            found = self._class_lookup(obj.mro(), name)
            if found is _MISSING:
                raise ApiError(f"type object '{obj.name}' has no attribute '{name}'")
            if callable(found) and not isinstance(found, UserFunction | UserClass | Builtin):
                return Builtin(name, found)
            return found
        if isinstance(obj, BuiltinClass):
            if name in obj.methods:
                return Builtin(name, obj.methods[name])
            raise ApiError(f"type object '{obj.name}' has no attribute '{name}'")
        if isinstance(obj, Namespace):
            if name in obj.attrs:
                return obj.attrs[name]
            if obj.kind == "module" and obj.name.split(".")[0] == "msccl":
                return Unavailable(name, obj.name)
            if obj.kind == "module":
                raise ApiError(f"module '{obj.name}' has no attribute '{name}'")
            raise ApiError(
                f"'{obj.name if obj.kind == 'enum' else 'Namespace'}' has no attribute '{name}'"
            )
        t = type(obj)
        if not name.startswith("_"):
            py = self.methods.get(t)
            if py is not None and name in py:
                method = py[name]
                label = f"{t.__name__}.{name}"
                if label in _CONSTANT_TIME:
                    return Builtin(label, _bind(method, obj))
                return Builtin(label, _bind_charged(method, obj, self.charge_work))
            exposed = EXPOSED.get(t)
            if t is ArgumentParser:
                exposed = ARGPARSE_EXPOSED
            if exposed is not None and name in exposed:
                real = ATTRIBUTE_ALIASES.get((t, name), name)
                v = getattr(obj, real)
                if inspect.ismethod(v):
                    return Builtin(name, v)
                return v
        raise ApiError(f"'{type_name(obj)}' object has no attribute '{name}'")

    @staticmethod
    def _class_lookup(mro: list[UserClass | BuiltinClass], name: str) -> object:
        for c in mro:
            if isinstance(c, UserClass):
                if name in c.namespace:
                    return c.namespace[name]
            elif name in c.methods:
                return c.methods[name]
        return _MISSING

    def _e_subscript(self, node: N.Subscript, frame: _Frame) -> object:
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

    def _e_slice(self, node: N.SliceExpr, frame: _Frame) -> object:
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

    def _e_call(self, node: N.Call, frame: _Frame) -> object:
        self.steps += 1
        if self.steps > self.max_steps:
            raise self.error(self._steps_message(), node)
        fn = self.eval(node.func, frame)
        args = [self.eval(a, frame) for a in node.args]
        kwargs = {k.name: self.eval(k.value, frame) for k in node.kwargs} if node.kwargs else {}
        if fn is self.super_builtin:
            return self._super(node, frame, args)
        return self.call_value(fn, args, kwargs, node)

    def _super(self, node: N.Call, frame: _Frame, args: list[object]) -> object:
        fn = frame.function
        if args or fn is None or fn.owner is None or not fn.node.params:
            raise self.error("super() works only without arguments inside a method", node)
        self_obj = frame.locals.get(fn.node.params[0].name)
        if not isinstance(self_obj, UserInstance):
            raise self.error("super(): the method's first argument is not an instance", node)
        return SuperProxy(fn.owner, self_obj)

    def call_value(
        self, fn: object, args: list[object], kwargs: dict[str, object], node: N.Node | None
    ) -> object:
        if isinstance(fn, Builtin):
            return self._call_builtin(fn.name, fn.fn, args, kwargs, node)
        if isinstance(fn, UserFunction):
            return self.call_function(fn, args, kwargs, node)
        if isinstance(fn, BoundMethod):
            f = fn.func
            if isinstance(f, UserFunction):
                return self.call_function(f, [fn.self_obj, *args], kwargs, node)
            return self._call_builtin(fn.name, f, [fn.self_obj, *args], kwargs, node, shift=1)
        if isinstance(fn, UserClass):
            return self._instantiate(fn, args, kwargs, node)
        if isinstance(fn, BuiltinClass):
            raise self.error(
                f"{fn.name} is a base class: derive a class from it and create that", node
            )
        if isinstance(fn, Unavailable):
            raise self.error(fn.problem(), node)
        raise self.error(f"'{type_name(fn)}' object is not callable", node)

    def _instantiate(
        self, cls: UserClass, args: list[object], kwargs: dict[str, object], node: N.Node | None
    ) -> UserInstance:
        inst = UserInstance(cls)
        init = self._class_lookup(cls.mro(), "__init__")
        if isinstance(init, UserFunction):
            result = self.call_function(init, [inst, *args], kwargs, node)
            if result is not None:
                raise self.error("__init__() should return None", node)
        elif init is not _MISSING:
            self._call_builtin(f"{cls.name}.__init__", init, [inst, *args], kwargs, node, shift=1)  # type: ignore[arg-type]
        elif args or kwargs:
            raise self.error(f"{cls.name}() takes no arguments", node)
        return inst

    def _call_builtin(
        self,
        name: str,
        fn: Callable[..., object],
        args: list[object],
        kwargs: dict[str, object],
        node: N.Node | None,
        shift: int = 0,
    ) -> object:
        outer = self.call_node
        self.call_node = node
        if node is not None:
            self.pos = (node.line, node.col)
        try:
            if args and name not in _CONSTANT_TIME and "." not in name:
                self.charge_work(_work(args) + (_work(kwargs.values()) if kwargs else 0))
            return fn(*args, **kwargs)
        except ApiError as e:
            raise self._api_error(e, fn, node, shift) from None
        except CompileError:
            raise
        except TypeError as e:
            problem = _arity_problem(fn, args, kwargs)
            if problem is not None:
                raise self.error(f"{name}(): {problem}", node) from None
            raise self.error(f"{name}(): {e}", node) from None
        except (ValueError, OverflowError, ZeroDivisionError, IndexError, KeyError) as e:
            text = str(e) if not isinstance(e, KeyError) else f"key {e.args[0]!r} not found"
            raise self.error(f"{name}(): {text}", node) from None
        finally:
            self.call_node = outer

    def _api_error(
        self, e: ApiError, fn: Callable[..., object], node: N.Node | None, shift: int = 0
    ) -> CompileError:
        target: N.Node | N.Keyword | None = node
        if isinstance(node, N.Call) and e.arg is not None:
            index: int | None = e.arg if isinstance(e.arg, int) else None
            if isinstance(e.arg, str):
                for k in node.kwargs:
                    if k.name == e.arg:
                        target = k.value
                        index = None
                        break
                else:
                    found = _param_index(fn, e.arg)
                    index = None if found is None else found - shift
            if index is not None and 0 <= index < len(node.args):
                target = node.args[index]
        return self.error(e.message, target)

    def call_function(
        self, fn: UserFunction, args: list[object], kwargs: dict[str, object], node: N.Node | None
    ) -> object:
        d = fn.node
        params = d.params
        name = d.name
        if len(args) > len(params):
            raise self.error(
                f"{name}() takes {len(params)} positional argument{'s' if len(params) != 1 else ''} "
                f"but {len(args)} were given",
                node,
            )
        local: dict[str, object] = {}
        for p, a in zip(params, args, strict=False):
            local[p.name] = a
        if kwargs:
            names = {p.name for p in params}
            for k, v in kwargs.items():
                if k not in names:
                    raise self.error(f"{name}() got an unexpected keyword argument '{k}'", node)
                if k in local:
                    raise self.error(f"{name}() got multiple values for argument '{k}'", node)
                local[k] = v
        if len(local) < len(params):
            for p, default in zip(params, fn.defaults, strict=True):
                if p.name not in local:
                    if default is _NO_DEFAULT:
                        raise self.error(f"{name}() missing required argument '{p.name}'", node)
                    local[p.name] = default
        if self.depth >= self.limits.max_call_depth:
            raise self.error(
                f"calls nested more than {self.limits.max_call_depth} deep (endless recursion?)",
                node,
            )
        frame = _Frame(local, fn.closure, d.local_names, fn, "function")
        self.depth += 1
        outer_current = self.current
        try:
            r = self.exec_block(d.body, frame)
        finally:
            self.depth -= 1
            self.current = outer_current
        return frame.retval if r == RETURN else None

    def _call_from_python(self, fn: UserFunction, args: list[object]) -> object:
        return self.call_function(fn, args, {}, self.call_node or self.current)

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

    def _e_chain(self, node: N.Chain, frame: _Frame) -> object:
        value = self.eval(node.first, frame)
        for op, operand in zip(node.ops, node.operands, strict=True):
            value = self.binary(op, value, self.eval(operand, frame), node)
        return value

    def _e_unary(self, node: N.Unary, frame: _Frame) -> object:
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

    def _e_boolop(self, node: N.BoolOp, frame: _Frame) -> object:
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

    def _e_not(self, node: N.Not, frame: _Frame) -> object:
        return not self.truth(self.eval(node.operand, frame), node.operand)

    def _e_compare(self, node: N.Compare, frame: _Frame) -> object:
        left = self.eval(node.first, frame)
        for op, operand in zip(node.ops, node.operands, strict=True):
            right = self.eval(operand, frame)
            try:
                if op == "in" or op == "not in":
                    if not isinstance(right, _CONTAINERS):
                        raise self.error(
                            f"argument of type '{type_name(right)}' is not a container", operand
                        )
                    self.charge_work(_work((right,)))
                    result: object = left in right  # type: ignore[operator]
                    if op == "not in":
                        result = not result
                else:
                    self.charge_work(_work((left, right)))
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

    def _e_ifexp(self, node: N.IfExp, frame: _Frame) -> object:
        if self.truth(self.eval(node.test, frame), node.test):
            return self.eval(node.body, frame)
        return self.eval(node.orelse, frame)

    def _e_comprehension(self, node: N.Comprehension, frame: _Frame) -> object:
        """A comprehension in its own scope; a generator expression is built at once."""
        inner = _Frame({}, (frame.locals, *frame.closure), None, frame.function, "function")
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

    def _e_list(self, node: N.ListDisplay, frame: _Frame) -> object:
        return [self.eval(e, frame) for e in node.items]

    def _e_tuple(self, node: N.TupleDisplay, frame: _Frame) -> object:
        return tuple(self.eval(e, frame) for e in node.items)

    def _e_dict(self, node: N.DictDisplay, frame: _Frame) -> object:
        out: dict[object, object] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = self.eval(k, frame)
            try:
                out[key] = self.eval(v, frame)
            except TypeError:
                raise self.error(f"unhashable type: '{type_name(key)}'", k) from None
        return out


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
_NO_DEFAULT: Any = _Missing()


def _exception_maker(name: str) -> Callable[..., ExceptionValue]:
    def make(*args: object) -> ExceptionValue:
        return ExceptionValue(name, args)

    return make


WORK_PER_STEP = 32
"""Elements a builtin walks per evaluation step charged (C loops are that much faster)."""

_CONSTANT_TIME = frozenset(
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


def _work(values: Iterable[object]) -> int:
    """Elements of the collections among ``values`` (what a builtin may walk)."""
    n = 0
    for v in values:
        if type(v) in _SIZED:
            n += len(v)  # type: ignore[arg-type]
    return n


def _bind_charged(
    method: Callable[..., Any], obj: object, charge: Callable[[int], None]
) -> Callable[..., Any]:
    """`_bind`, charging the receiver's and the arguments' sizes before each call."""

    def bound(*args: object, **kwargs: object) -> object:
        charge(_work((obj, *args)) + _work(kwargs.values()))
        return method(obj, *args, **kwargs)

    bound.__wrapped__ = method  # type: ignore[attr-defined]
    return bound


def _bind(method: Callable[..., Any], obj: object) -> Callable[..., Any]:
    def bound(*args: object, **kwargs: object) -> object:
        return method(obj, *args, **kwargs)

    bound.__wrapped__ = method  # type: ignore[attr-defined]
    return bound


def _signature(fn: Callable[..., object]) -> inspect.Signature | None:
    target = getattr(fn, "__wrapped__", fn)
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def _arity_problem(
    fn: Callable[..., object], args: list[object], kwargs: dict[str, object]
) -> str | None:
    """Why ``fn(*args, **kwargs)`` does not bind, or None if it does (the TypeError was inside)."""
    sig = _signature(fn)
    if sig is None:
        return None
    try:
        if hasattr(fn, "__wrapped__"):
            sig.bind(None, *args, **kwargs)
        else:
            sig.bind(*args, **kwargs)
    except TypeError as e:
        return str(e)
    return None


def _param_index(fn: Callable[..., object], name: str) -> int | None:
    sig = _signature(fn)
    if sig is None:
        return None
    names = [p for p in sig.parameters if p not in ("self",)]
    if hasattr(fn, "__wrapped__") and names:
        names = names[1:]
    return names.index(name) if name in names else None
