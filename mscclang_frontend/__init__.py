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

from collections.abc import Sequence
from pathlib import Path

from mscclang_frontend import hooks
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.interpreter import Interpreter
from mscclang_frontend.limits import Limits
from mscclang_frontend.lowering import CompiledProgram, lower
from mscclang_frontend.msccl_api import ProgramState
from mscclang_frontend.parse import parse_program
from topologies.errors import SourcePos

__all__ = ["CompileError", "CompiledProgram", "Limits", "compile_file", "compile_source"]


def compile_source(
    source: str,
    filename: str = "<program>",
    argv: Sequence[str] = (),
    *,
    limits: Limits | None = None,
) -> CompiledProgram:
    """Parse, run, lower and verify a MSCCLang program given as text.

    ``argv`` are the program's own command-line arguments (what its ``parse_args()`` sees).
    The program must run exactly one ``with MSCCLProgram(...):`` block. Raises `CompileError`
    (with the position and, in ``.stdout``, what the program printed so far) for syntax
    errors, unsupported constructs, runtime errors, a failing ``Check()``, a program that
    exceeds ``limits`` and a compiled program that does not verify.
    """
    text = source.replace("\r\n", "\n")
    module = parse_program(text, filename)
    src = Source(text, filename)
    interp: Interpreter

    def on_xml(state: ProgramState) -> str | None:
        if hooks.xml_emitter() is None:
            return None
        return hooks.emit_xml(lower(state, src, interp.stdout, True))

    interp = Interpreter(src, list(argv), limits, on_xml)
    try:
        interp.run(module)
        programs = interp.api.programs
        if not programs:
            raise CompileError(
                "the program never runs a `with MSCCLProgram(...):` block, so there is nothing "
                "to compile",
                SourcePos(filename),
            )
        if len(programs) > 1:
            line, col = programs[1].position
            raise src.error(
                f"the program builds {len(programs)} MSCCLPrograms; collc compiles one per file",
                line,
                col,
            )
        return lower(programs[0], src, interp.stdout, interp.api.xml_requested)
    except CompileError as e:
        e.stdout = interp.stdout
        raise


def compile_file(
    path: str | Path, argv: Sequence[str] = (), *, limits: Limits | None = None
) -> CompiledProgram:
    """`compile_source` on the contents of ``path`` (UTF-8); errors name the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise CompileError(
            f"the program is not UTF-8 text: {e.reason}", SourcePos(str(path))
        ) from None
    except OSError as e:
        raise CompileError(
            f"cannot read the program: {e.strerror or e}", SourcePos(str(path))
        ) from None
    return compile_source(text, str(path), argv, limits=limits)
