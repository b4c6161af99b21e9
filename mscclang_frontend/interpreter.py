"""The tree-walking interpreter that runs a MSCCLang program against collc's MSCCLang API.

It walks the syntax tree that `parse.py` builds from Lark's parse tree, with Python's
semantics for the subset MSCCLang programs use (scoping with closures, classes with single
or multiple inheritance and ``super()``, ``for``/``while`` with ``else``, unpacking, ...).
Only whitelisted builtins, methods and modules exist: a program cannot open files, reach the
network or import modules other than argparse, math and msccl.*. Every statement, call and
loop iteration is an evaluation step; the steps, the sizes of collections, integers and
output and the depth of calls are bounded (`Limits`), so a runaway program ends with a
`CompileError` naming its line.

The interpreter is built in layers, each a class deriving from the one before:
`interp_runtime` (frames, bounds, errors), `interp_expressions`, `interp_calls` (attributes
and calls) and `interp_statements`; `Interpreter` sets them up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mscclang_frontend import nodes as N
from mscclang_frontend.builtins import make_argparse, make_builtins, make_math, make_methods
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.interp_runtime import Frame
from mscclang_frontend.interp_statements import StatementExecutor
from mscclang_frontend.limits import Limits
from mscclang_frontend.msccl_api import MscclApi, ProgramState
from mscclang_frontend.values import EXCEPTION_NAMES, ApiError, Builtin, ExceptionValue, Namespace

RECOGNISED_MODULES = ("argparse", "math", "msccl")


class Interpreter(StatementExecutor):
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
        self._exec: dict[type, Callable[[Any, Frame], int]] = {
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
        self._eval: dict[type, Callable[[Any, Frame], object]] = {
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
        frame = Frame(self.globals, (), None, None, "module")
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

    def none_hint(self, attribute: str) -> str:
        return self.api.none_hint(attribute)

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


def _exception_maker(name: str) -> Callable[..., ExceptionValue]:
    def make(*args: object) -> ExceptionValue:
        return ExceptionValue(name, args)

    return make
