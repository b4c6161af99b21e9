"""Compiling MSCCLang programs: parse, run, lower and verify (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mscclang_frontend import hooks
from mscclang_frontend.errors import CompileError, Source
from mscclang_frontend.interpreter import Interpreter
from mscclang_frontend.limits import Limits
from mscclang_frontend.lowering import CompiledProgram, lower
from mscclang_frontend.msccl_program import ProgramState
from mscclang_frontend.parse import parse_program
from topologies.errors import SourcePos


def compile_all(
    source: str,
    filename: str = "<program>",
    argv: Sequence[str] = (),
    *,
    limits: Limits | None = None,
    as_custom: bool = False,
) -> list[CompiledProgram]:
    """Parse and run a MSCCLang program given as text; lower and verify every
    ``with MSCCLProgram(...):`` block it ran, in order.

    ``argv`` are the program's own command-line arguments (what its ``parse_args()`` sees).
    ``as_custom`` compiles programs over standard collectives as custom collectives whose
    postcondition is what they compute (`lowering.lower`). Raises `CompileError` (with the
    position and, in ``.stdout``, what the program printed so far) for syntax errors,
    unsupported constructs, runtime errors, a failing ``Check()``, a program that exceeds
    ``limits``, a file without any MSCCLProgram and a compiled program that does not verify.
    """
    text = source.replace("\r\n", "\n")
    lim = limits or Limits()
    check_source_size(text, filename, lim)
    module = parse_program(text, filename, max_tokens=lim.max_tokens)
    src = Source(text, filename)
    interp: Interpreter

    def on_xml(state: ProgramState) -> str | None:
        if hooks.xml_emitter() is None:
            return None
        try:
            compiled = lower(state, src, interp.stdout, True, as_custom=as_custom)
        except CompileError:
            # msccl-tools' examples call XML() before Check(): a program that is wrong so far
            # prints nothing here and runs on, so that its Check() (or, without one, the
            # lowering of the finished program) reports what is wrong.
            return None
        return hooks.emit_xml(compiled)

    interp = Interpreter(src, list(argv), lim, on_xml)
    try:
        interp.run(module)
        programs = interp.api.programs
        if not programs:
            raise CompileError(
                "the program never runs a `with MSCCLProgram(...):` block, so there is nothing "
                "to compile",
                SourcePos(filename),
            )
        return [
            lower(p, src, interp.stdout, interp.api.xml_requested, as_custom=as_custom)
            for p in programs
        ]
    except CompileError as e:
        e.stdout = interp.stdout
        raise


def compile_source(
    source: str,
    filename: str = "<program>",
    argv: Sequence[str] = (),
    *,
    limits: Limits | None = None,
    program: str | int | None = None,
    as_custom: bool = False,
) -> CompiledProgram:
    """`compile_all`, for one program: the only one the file builds, or the one ``program``
    names (its MSCCLProgram name, or its 1-based position among the file's programs)."""
    compiled = compile_all(source, filename, argv, limits=limits, as_custom=as_custom)
    return select_program(compiled, program, filename)


def select_program(
    compiled: list[CompiledProgram], program: str | int | None, filename: str
) -> CompiledProgram:
    """The program ``program`` names among ``compiled`` (see `compile_source`)."""
    names = ", ".join(f"{i + 1}: {c.name}" for i, c in enumerate(compiled))
    if program is None:
        if len(compiled) == 1:
            return compiled[0]
        raise CompileError(
            f"the file builds {len(compiled)} MSCCLPrograms ({names}); choose one by name or "
            "number (collc compile --program), or compile all of them into one folder each",
            SourcePos(filename),
        )
    if isinstance(program, int) or program.isdigit():
        k = int(program)
        if 1 <= k <= len(compiled):
            return compiled[k - 1]
    else:
        found = [c for c in compiled if c.name == program]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise CompileError(
                f"{len(found)} MSCCLPrograms are named {program!r} ({names}); choose one by number",
                SourcePos(filename),
            )
    raise CompileError(f"no MSCCLProgram {program!r} in the file ({names})", SourcePos(filename))


def compile_file(
    path: str | Path,
    argv: Sequence[str] = (),
    *,
    limits: Limits | None = None,
    program: str | int | None = None,
    as_custom: bool = False,
) -> CompiledProgram:
    """`compile_source` on the contents of ``path`` (UTF-8); errors name the file."""
    text = read_source(path, limits or Limits())
    return compile_source(
        text, str(path), argv, limits=limits, program=program, as_custom=as_custom
    )


def compile_file_all(
    path: str | Path,
    argv: Sequence[str] = (),
    *,
    limits: Limits | None = None,
    as_custom: bool = False,
) -> list[CompiledProgram]:
    """`compile_all` on the contents of ``path`` (UTF-8); errors name the file."""
    text = read_source(path, limits or Limits())
    return compile_all(text, str(path), argv, limits=limits, as_custom=as_custom)


def read_source(path: str | Path, limits: Limits) -> str:
    """The text of ``path``, refused before reading when it is larger than
    ``limits.max_source_bytes``."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limits.max_source_bytes:
            raise CompileError(
                f"the program is {size:,} bytes, more than the limit of "
                f"{limits.max_source_bytes:,} (raise it with --max-source-bytes)",
                SourcePos(str(path)),
            )
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise CompileError(
            f"the program is not UTF-8 text: {e.reason}", SourcePos(str(path))
        ) from None
    except OSError as e:
        raise CompileError(
            f"cannot read the program: {e.strerror or e}", SourcePos(str(path))
        ) from None


def check_source_size(text: str, filename: str, limits: Limits) -> None:
    """Refuse a program text longer than ``limits.max_source_bytes`` (in UTF-8 bytes)."""
    if len(text) > limits.max_source_bytes or len(text.encode()) > limits.max_source_bytes:
        raise CompileError(
            f"the program is {len(text.encode()):,} bytes, more than the limit of "
            f"{limits.max_source_bytes:,} (raise it with --max-source-bytes)",
            SourcePos(filename),
        )
