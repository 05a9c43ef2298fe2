"""Files that appear whole or not at all: write beside the target, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["replace_atomically"]


@contextlib.contextmanager
def replace_atomically(path, suffix: str = ".tmp"):
    """Yield a temporary path beside ``path`` that replaces it when the block succeeds.

    The temporary file lives in the same directory (so the rename is atomic),
    is flushed to disk, gets the mode ``path`` had or, for a new file, the one
    the user's umask gives, and is renamed over ``path``.  If the block raises
    (Ctrl-C included) the temporary file is removed and ``path`` is untouched.

    Parameters
    ----------
    path : str or Path
        The file to create or replace.
    suffix : str
        Suffix of the temporary file (writers that pick a format from the
        suffix, such as matplotlib, need the real one).

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "data.txt"
    >>> with replace_atomically(target) as tmp:
    ...     _ = tmp.write_text("all or nothing")
    >>> target.read_text()
    'all or nothing'
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=directory)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        # mkstemp creates the file private (0600).
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
