"""The MSCCLang front end: compile MSCCLang programs (Python) into a verified Program.

A program is parsed with collc's Lark grammar for the Python subset MSCCLang programs use
(`parse`), run by a tree-walking interpreter (`interpreter`) against collc's implementation
of the MSCCLang API (`msccl_api`), and the operations it recorded are lowered into a
`chakra_ir.Program` and verified (`lowering`). Nothing of the program runs as Python: it
cannot reach files, the network or modules other than argparse, math and msccl.*.

    compiled = compile_file("allreduce_ring.py", argv=["8", "1"])
    compiled.program          # the verified chakra_ir.Program
    compiled.options          # protocol, instances, threadblock_policy, ...

Every problem is a `CompileError` with ``file:line:column`` and the source line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from mscclang_frontend.compiler import compile_all as compile_all
    from mscclang_frontend.compiler import compile_file as compile_file
    from mscclang_frontend.compiler import compile_file_all as compile_file_all
    from mscclang_frontend.compiler import compile_source as compile_source
    from mscclang_frontend.compiler import select_program as select_program
    from mscclang_frontend.errors import CompileError as CompileError
    from mscclang_frontend.limits import Limits as Limits
    from mscclang_frontend.lowering import CompiledProgram as CompiledProgram

_LAZY: dict[str, str] = {
    "CompileError": "mscclang_frontend.errors",
    "CompiledProgram": "mscclang_frontend.lowering",
    "Limits": "mscclang_frontend.limits",
    "compile_all": "mscclang_frontend.compiler",
    "compile_file": "mscclang_frontend.compiler",
    "compile_file_all": "mscclang_frontend.compiler",
    "compile_source": "mscclang_frontend.compiler",
    "select_program": "mscclang_frontend.compiler",
}
"""Where each public name lives, imported on first use: importing a submodule (such as
``mscclang_frontend.xml.options``) does not load the parser and the interpreter."""

__all__ = [
    "CompileError",
    "CompiledProgram",
    "Limits",
    "compile_all",
    "compile_file",
    "compile_file_all",
    "compile_source",
    "select_program",
]


__getattr__ = lazy_exports(__name__, _LAZY, globals())
