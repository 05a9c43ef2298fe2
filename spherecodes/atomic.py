"""Files that appear whole or not at all: write beside the target, then rename.

The temporary file is named after the target, the host and the process that
writes it (``.bank.h5.<host>-<pid>.<random>.tmp``), so that the next write to
the same file can tell a temporary file left by a writer that died (killed,
or its machine rebooted) from one that is still being written, and remove it.
Ctrl-C while the temporary file is written abandons it and leaves the target
as it was; Ctrl-C during the rename itself is held back until the rename is
done, then delivered.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import tempfile
import threading
from pathlib import Path

from .errors import SpherecodesError

__all__ = ["replace_atomically"]


@contextlib.contextmanager
def replace_atomically(path, suffix: str = ".tmp"):
    """Yield a temporary path beside ``path`` that replaces it when the block succeeds.

    The temporary file lives in the same directory (so the rename is atomic),
    is flushed to disk, gets the mode ``path`` had or, for a new file, the one
    the user's umask gives, and is renamed over ``path``.  If the block raises
    (Ctrl-C included) the temporary file is removed and ``path`` is untouched.
    Temporary files that dead writers left beside ``path`` are removed first.

    Parameters
    ----------
    path : str or Path
        The file to create or replace.
    suffix : str
        Suffix of the temporary file (writers that pick a format from the
        suffix, such as matplotlib, need the real one).

    Raises
    ------
    SpherecodesError
        The temporary file cannot be created, or cannot replace ``path``
        (a read-only or immutable file or directory); ``path`` is unchanged.

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
    _remove_stale_temporaries(directory, path.name, suffix)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.{_writer()}.", suffix=suffix, dir=directory)
    except OSError as err:
        raise SpherecodesError(f"cannot write {path}: no file can be created in {directory} ({err.strerror})") from None
    os.close(fd)
    tmp = Path(name)
    try:
        with _ctrl_c_watch() as watch:
            yield tmp
            watch.check()  # a Ctrl-C that a library swallowed while the block ran still aborts
            try:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
                # mkstemp creates the file private (0600).
                os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
                watch.check()
                with watch.deferred():
                    os.replace(tmp, path)
            except OSError as err:
                raise SpherecodesError(f"cannot write {path} ({err.strerror}); it is unchanged") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _writer() -> str:
    """``<host>-<pid>``: who writes a temporary file, in a form a file name can hold."""
    host = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}"


def _remove_stale_temporaries(directory: Path, name: str, suffix: str) -> None:
    """Remove temporary files of ``name`` whose writer, a process of this host, is no longer alive."""
    host = _writer().rsplit("-", 1)[0]
    pattern = re.compile(rf"\.{re.escape(name)}\.{re.escape(host)}-(\d+)\.[^.]+{re.escape(suffix)}")
    try:
        candidates = [entry for entry in os.scandir(directory) if pattern.fullmatch(entry.name)]
    except OSError:
        return
    for entry in candidates:
        pid = int(pattern.fullmatch(entry.name).group(1))
        if pid != os.getpid() and not _alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


class _CtrlCWatch:
    """Notes Ctrl-C while a file is written; holds it back during the rename."""

    def __init__(self):
        self.received = False
        self.holding = False

    def handle(self, signum, frame):
        self.received = True
        if not self.holding:
            raise KeyboardInterrupt

    def check(self):
        if self.received:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self):
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        self.check()


@contextlib.contextmanager
def _ctrl_c_watch():
    """A :class:`_CtrlCWatch` installed as the SIGINT handler (in the main thread only; elsewhere inert)."""
    watch = _CtrlCWatch()
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
        signal.SIG_IGN, None
    ):
        yield watch
        return
    previous = signal.signal(signal.SIGINT, watch.handle)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
