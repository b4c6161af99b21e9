"""The interpreter's attributes and calls: what ``obj.name`` gives a program, calling builtins
(with the work they do charged and their errors placed on the right argument), the program's
functions and classes, and ``super()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mscclang_frontend import nodes as N
from mscclang_frontend.builtin_modules import ARGPARSE_EXPOSED, ArgumentParser
from mscclang_frontend.errors import CompileError
from mscclang_frontend.interp_expressions import ExpressionEvaluator
from mscclang_frontend.interp_runtime import (
    CONSTANT_TIME,
    MISSING,
    NO_DEFAULT,
    RETURN,
    Frame,
    work,
)
from mscclang_frontend.msccl_api import ATTRIBUTE_ALIASES, EXPOSED
from mscclang_frontend.values import (
    ApiError,
    BoundMethod,
    Builtin,
    BuiltinClass,
    Namespace,
    SuperProxy,
    Unavailable,
    UserClass,
    UserFunction,
    UserInstance,
    type_name,
)


class CallEvaluator(ExpressionEvaluator):
    """Attribute lookups and calls (statements: `interp_statements.StatementExecutor`)."""

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object:
        return self.call_value(fn, args, kwargs, self.call_node or self.current)

    def _e_attribute(self, node: N.Attribute, frame: Frame) -> object:
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
            if found is not MISSING:
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
            if found is MISSING:
                raise ApiError(f"'super' object has no attribute '{name}'")
            if isinstance(found, UserFunction) or callable(found):
                return BoundMethod(obj.self_obj, found, name)
            return found
        if isinstance(obj, UserClass):
            found = self._class_lookup(obj.mro(), name)
            if found is MISSING:
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
                if label in CONSTANT_TIME:
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
        hint = self.none_hint(name) if obj is None else ""
        raise ApiError(f"'{type_name(obj)}' object has no attribute '{name}'{hint}")

    def none_hint(self, attribute: str) -> str:
        """Why a value is None where the program reads ``attribute`` of it ("" here; the
        interpreter asks the MSCCLang API)."""
        return ""

    @staticmethod
    def _class_lookup(mro: list[UserClass | BuiltinClass], name: str) -> object:
        for c in mro:
            if isinstance(c, UserClass):
                if name in c.namespace:
                    return c.namespace[name]
            elif name in c.methods:
                return c.methods[name]
        return MISSING

    def _e_call(self, node: N.Call, frame: Frame) -> object:
        self.steps += 1
        if self.steps > self.max_steps:
            raise self.error(self._steps_message(), node)
        fn = self.eval(node.func, frame)
        args = [self.eval(a, frame) for a in node.args]
        kwargs = {k.name: self.eval(k.value, frame) for k in node.kwargs} if node.kwargs else {}
        if fn is self.super_builtin:
            return self._super(node, frame, args)
        return self.call_value(fn, args, kwargs, node)

    def _super(self, node: N.Call, frame: Frame, args: list[object]) -> object:
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
        elif init is not MISSING:
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
            if args and name not in CONSTANT_TIME and "." not in name:
                self.charge_work(work(args) + (work(kwargs.values()) if kwargs else 0))
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
        if e.at is not None:
            return self.source.error(e.message, *e.at)
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
                    if default is NO_DEFAULT:
                        raise self.error(f"{name}() missing required argument '{p.name}'", node)
                    local[p.name] = default
        if self.depth >= self.limits.max_call_depth:
            raise self.error(
                f"calls nested more than {self.limits.max_call_depth} deep (endless recursion?)",
                node,
            )
        frame = Frame(local, fn.closure, d.local_names, fn, "function")
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


def _bind_charged(
    method: Callable[..., Any], obj: object, charge: Callable[[int], None]
) -> Callable[..., Any]:
    """`_bind`, charging the receiver's and the arguments' sizes before each call."""

    def bound(*args: object, **kwargs: object) -> object:
        charge(work((obj, *args)) + work(kwargs.values()))
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
