"""The interpreter's statements: blocks, assignments (unpacking, items, attributes), ``if``,
``while`` and ``for`` with ``else``, ``def`` and ``class``, ``with``, ``assert``, ``raise``
and the imports of the modules a program may use.
"""

from __future__ import annotations

from mscclang_frontend import nodes as N
from mscclang_frontend.guard import materialize
from mscclang_frontend.interp_calls import CallEvaluator
from mscclang_frontend.interp_runtime import (
    BREAK,
    CONTINUE,
    NO_DEFAULT,
    NORMAL,
    RETURN,
    Frame,
)
from mscclang_frontend.values import (
    EXCEPTION_NAMES,
    ApiError,
    Builtin,
    BuiltinClass,
    ContextValue,
    ExceptionValue,
    Namespace,
    Unavailable,
    UserClass,
    UserFunction,
    UserInstance,
    type_name,
)


class StatementExecutor(CallEvaluator):
    """Executes statements; the whole interpreter but for its set-up (`interpreter.Interpreter`)."""

    def exec_block(self, body: list[N.Stmt], frame: Frame) -> int:
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

    def _s_expr(self, s: N.ExprStmt, frame: Frame) -> int:
        self.eval(s.value, frame)
        return NORMAL

    def _s_assign(self, s: N.Assign, frame: Frame) -> int:
        value = self.eval(s.value, frame)
        for t in s.targets:
            self.assign(t, value, frame)
        return NORMAL

    def _s_augassign(self, s: N.AugAssign, frame: Frame) -> int:
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

    def _augment(self, cur: object, s: N.AugAssign, frame: Frame) -> object:
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

    def _s_pass(self, s: N.Pass, frame: Frame) -> int:
        return NORMAL

    def _s_break(self, s: N.Break, frame: Frame) -> int:
        return BREAK

    def _s_continue(self, s: N.Continue, frame: Frame) -> int:
        return CONTINUE

    def _s_return(self, s: N.Return, frame: Frame) -> int:
        frame.retval = None if s.value is None else self.eval(s.value, frame)
        return RETURN

    def _s_if(self, s: N.If, frame: Frame) -> int:
        if self.truth(self.eval(s.test, frame), s.test):
            return self.exec_block(s.body, frame)
        if s.orelse:
            return self.exec_block(s.orelse, frame)
        return NORMAL

    def _s_while(self, s: N.While, frame: Frame) -> int:
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

    def _s_for(self, s: N.For, frame: Frame) -> int:
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

    def _s_def(self, s: N.FunctionDef, frame: Frame) -> int:
        defaults = [
            self.eval(p.default, frame) if p.default is not None else NO_DEFAULT for p in s.params
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

    def _s_class(self, s: N.ClassDef, frame: Frame) -> int:
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
        cframe = Frame(ns, closure, None, None, "class")
        r = self.exec_block(s.body, cframe)
        if r != NORMAL:
            raise self.error("'return', 'break' or 'continue' in a class body", s)
        cls = UserClass(s.name, tuple(bases), ns)
        for fn in cframe.defined:
            fn.owner = cls
        frame.locals[s.name] = cls
        return NORMAL

    def _s_with(self, s: N.With, frame: Frame) -> int:
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

    def _s_assert(self, s: N.Assert, frame: Frame) -> int:
        if not self.truth(self.eval(s.test, frame), s.test):
            message = "assertion failed"
            if s.msg is not None:
                message += f": {self.eval(s.msg, frame)}"
            raise self.error(message, s)
        return NORMAL

    def _s_raise(self, s: N.Raise, frame: Frame) -> int:
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

    def _s_import(self, s: N.Import, frame: Frame) -> int:
        for n in s.names:
            mod = self._module(n.name, n)
            if n.asname is not None:
                frame.locals[n.asname] = mod
            else:
                top = n.name.split(".")[0]
                frame.locals[top] = self._module(top, n)
        return NORMAL

    def _s_import_from(self, s: N.ImportFrom, frame: Frame) -> int:
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

    def assign(self, target: N.Expr, value: object, frame: Frame) -> None:
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

    @staticmethod
    def _link_parent(mods: dict[str, Namespace], dotted: str) -> None:
        """Make ``dotted`` an attribute of its parent module (``msccl.language.buffer`` of
        ``msccl.language``), creating empty parents on the way."""
        parent, _, leaf = dotted.rpartition(".")
        if parent not in mods:
            mods[parent] = Namespace(parent, {})
            StatementExecutor._link_parent(mods, parent)
        mods[parent].attrs.setdefault(leaf, mods[dotted])
