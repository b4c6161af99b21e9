"""The one place where failures become what the user sees: `ErrorMappingGroup` turns a typed
`CollcError` into a one-line message on stderr and an exit status (2 for bad input or a
failed step, 1 when ``collc verify`` finds a program wrong), a file it cannot read or write
and running out of memory into status 2, Ctrl-C into 130, and a closed standard output into
a quiet end with SIGPIPE's status 141; `run` does the same for a closed pipe outside a
command.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from topologies.errors import CollcError


def _is_verify_error(err: CollcError) -> bool:
    """Whether ``err`` is a `chakra_ir.verify.VerifyError` (its module is loaded if one was
    raised; looked up so that start-up imports nothing of the verifier)."""
    module = sys.modules.get("chakra_ir.verify_error")
    return module is not None and isinstance(err, module.VerifyError)


def _report(err: CollcError) -> None:
    if sys.stderr.isatty():  # clear a phase or progress line first
        click.echo("\r\033[K", err=True, nl=False)
    click.echo(f"collc: error: {err}", err=True)
    caret = err.caret()
    if caret:
        click.echo(caret, err=True)


class ErrorMappingGroup(click.Group):
    """Turns library errors into messages and exit statuses, in this one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CollcError as err:
            if _is_verify_error(err):
                _report(err)
                ctx.exit(1 if ctx.invoked_subcommand == "verify" else 2)
            _report(err)
            ctx.exit(2)
        except BrokenPipeError:
            # The reader went away (`collc simulate OUT | head`): end quietly, as a Unix tool
            # killed by SIGPIPE does, and keep Python from complaining when it flushes stdout.
            silence_stdout()
            ctx.exit(SIGPIPE_STATUS)
        except OSError as err:
            # A file or folder the command cannot read or write (a missing parent, no
            # permission, a full disk): the user's input, not a bug.
            where = f"{err.filename}: " if err.filename else ""
            click.echo(f"collc: error: {where}{err.strerror or err}", err=True)
            ctx.exit(2)
        except MemoryError:
            click.echo(
                "collc: error: out of memory: the input asks for more than this machine has",
                err=True,
            )
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("collc: interrupted", err=True)
            ctx.exit(130)


SIGPIPE_STATUS = 128 + 13
"""The exit status of a Unix tool that SIGPIPE ended."""


def silence_stdout() -> None:
    """Point standard output at /dev/null, so nothing more is written to a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run(group: click.Group, prog_name: str) -> None:
    """Run ``group`` as the program ``prog_name``; a closed pipe seen outside a command (e.g.
    by --help) ends it quietly with SIGPIPE's status."""
    try:
        group(prog_name=prog_name)
    except BrokenPipeError:  # a closed pipe seen outside a command (e.g. by --help)
        silence_stdout()
        sys.exit(SIGPIPE_STATUS)
