"""Writing a file so that a reader never sees it half-written: one place for the rule.

`write_atomically` writes into a temporary file in the target's folder and renames it over
the target, so a failure leaves the old file as it was. Two kinds of target are not
replaced:

- a symbolic link is followed: the file it points to is replaced and the link stays;
- a target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is
  written directly, since a rename would put a regular file in the device's place.

Errors (``OSError``) name the path the user gave, never the temporary file. The temporary
is ``.NAME.tmp-PID-XXXX``: SIGTERM during the write removes it (`terminate_as_exit`), and the
temporaries of processes that no longer run (SIGKILL) are removed by the next write to the
same place (`remove_stale_temporaries`, which the output-folder writer uses too). It lives in
`topologies`, the leftmost package, so that every package may use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def umask_mode(mode: int = 0o666) -> int:
    """``mode`` as the process's umask lets a new file have it: for files written through a
    private temporary (``tempfile.mkstemp`` makes them 0600) and then renamed into place."""
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Make ``path`` hold what ``write(name)`` writes into the file ``name`` (see the module
    docstring). The result has the permissions of a new file under the umask."""
    given = str(path)
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), given)
    if target.exists() and not target.is_file():
        try:
            write(str(target))
        except OSError as e:
            raise OSError(e.errno, e.strerror, given) from None
        return
    remove_stale_temporaries(target)
    with terminate_as_exit():
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{target.name}.tmp-{os.getpid()}-", dir=target.parent
            )
        except OSError as e:
            raise OSError(e.errno, e.strerror, given) from None
        os.close(fd)
        try:
            write(tmp)
            os.chmod(tmp, umask_mode())  # mkstemp's file is private; the result is not
            os.replace(tmp, target)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise OSError(e.errno, e.strerror, given) from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """`write_atomically` of ``text`` in UTF-8."""

    def write(name: str) -> None:
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)

    write_atomically(path, write)


@contextlib.contextmanager
def terminate_as_exit() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM raises SystemExit(143) instead of
    ending the process at once, so the ``except``/``finally`` clauses that remove temporaries
    run. The previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>[0-9]+)-[^/]*")
"""A temporary of the writers here: ``.NAME.tmp-PID-*`` (being written) or ``.NAME.old-PID-*``
(a folder being replaced)."""


def temporary_of(name: str) -> str | None:
    """The target a hidden temporary's ``name`` belongs to (``out`` for
    ``.out.tmp-123-abc``), or None when it is no temporary of ours."""
    m = _TEMPORARY.fullmatch(name)
    return m["name"] if m else None


def remove_stale_temporaries(out: Path | str) -> list[Path]:
    """Remove the hidden temporaries ``.OUT.tmp-PID-*`` and ``.OUT.old-PID-*`` (files or
    folders) beside ``out`` that processes no longer running left (killed by SIGKILL, or a
    crash); returns them. A temporary whose process is alive (or whose pid was reused) is
    left alone."""
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    for entry in entries:
        m = _TEMPORARY.fullmatch(entry.name)
        if m is None or m["name"] != out.name or _alive(int(m["pid"])):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True
