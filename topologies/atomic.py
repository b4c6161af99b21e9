"""Writing a file so that a reader never sees it half-written: one place for the rule.

`write_atomically` writes into a temporary file in the target's folder and renames it over
the target, so a failure leaves the old file as it was. Two kinds of target are not
replaced:

- a symbolic link is followed: the file it points to is replaced and the link stays;
- a target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is
  written directly, since a rename would put a regular file in the device's place.

Errors (``OSError``) name the path the user gave, never the temporary file. It lives in
`topologies`, the leftmost package, so that every package may use it.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
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
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
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
