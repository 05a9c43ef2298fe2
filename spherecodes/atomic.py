"""Files that appear whole or not at all: write beside the target, then rename.

The temporary file is named after the target, the host and the process that
writes it (``.bank.h5.<host>-<pid>.<random>.tmp``), so that the next write to
the same file can tell one left by a writer that died from one still being
written, and remove it.  Ctrl-C abandons the temporary file, except during
the rename, where it is held back until the rename is done; each file
replaced is noted, so that a command stopped by Ctrl-C can say which of its
files were written (:func:`written_files`).  A symbolic link as the target is
written through.  Read-modify-write of a file is serialised by
:func:`exclusive_lock`.  docs/security.md ("Writing") gives the guarantees.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from .errors import SpherecodesError

__all__ = ["ENDING_SIGNALS", "LOCK_QUIET_S", "Terminated", "check_name_fits", "check_not_input", "ending_signals_raise",
           "exclusive_lock", "file_kind", "output_directory", "replace_atomically", "resolve_output", "written_files"]

_SPECIAL_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def output_directory(path, fix: str) -> Path:
    """The directory that ``path`` would be written into, refused (ending with ``fix``) unless it is one.

    Examples
    --------
    >>> output_directory("/etc/passwd/bank.h5", "choose another --out")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: /etc/passwd is a regular file, not a directory; choose another --out
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        mode = directory.stat().st_mode
    except FileNotFoundError:
        raise SpherecodesError(f"directory {directory} does not exist; create it first or {fix}") from None
    except OSError as err:
        raise SpherecodesError(f"cannot reach directory {directory} ({_reason(err)}); {fix}") from None
    if not stat.S_ISDIR(mode):
        raise SpherecodesError(f"{directory} is {file_kind(mode)}, not a directory; {fix}")
    return directory


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words, for messages.

    Examples
    --------
    >>> file_kind(os.stat("/dev/null").st_mode), file_kind(os.stat("/").st_mode)
    ('a character device', 'a directory')
    """
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _SPECIAL_FILES if test(mode)), "not a plain file")


@contextlib.contextmanager
def replace_atomically(path, suffix: str = ".tmp", *, noted: bool = True):
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
    noted : bool
        Whether the file is one of the command's outputs, listed by
        :func:`written_files` (an entry of the per-user cache is not).

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
    path = resolve_output(path)
    directory = path.parent
    check_name_fits(path, suffix)
    try:
        mode = path.stat().st_mode
    except OSError:  # absent (created here), or a name the file system refuses (reported below)
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        # The rename would put a regular file where a device (a link to /dev/null, say) or a fifo was.
        raise SpherecodesError(f"cannot write {path}: it is {file_kind(mode)}, not a regular file; "
                               "choose a file name") from None
    _remove_stale_temporaries(directory, path.name, suffix)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.{_writer()}.", suffix=suffix, dir=directory)
    except OSError as err:
        raise SpherecodesError(f"cannot write {path}: its temporary file cannot be created in {directory} "
                               f"({_reason(err)})") from None
    os.close(fd)
    tmp = Path(name)
    record = _Write(path)
    if noted:
        _WRITES.append(record)
    # The watch is left after the temporary file is removed: a SIGTERM that would have killed the process
    # outright is delivered again only then (see _signal_watch).
    with _signal_watch() as watch:
        try:
            try:
                yield tmp
            except OSError as err:
                # A full disk, the file-size limit (ulimit -f), a name too long: the target is untouched.
                raise SpherecodesError(f"cannot write {path} ({_reason(err)}); it is unchanged") from None
            watch.check()  # a Ctrl-C that a library swallowed while the block ran still aborts
            try:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
                # mkstemp creates the file private (0600).
                os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
                watch.check()
                written = os.stat(tmp)
                with watch.deferred():
                    os.replace(tmp, path)
                    record.identity = (written.st_dev, written.st_ino)
            except OSError as err:
                raise SpherecodesError(f"cannot write {path} ({_reason(err)}); it is unchanged") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def check_not_input(out, source, fix: str = "choose another --out") -> None:
    """Refuse to write ``out`` where that would replace ``source``, the file the output is made from.

    The same file under another name — a symbolic link (``x.npy -> bank.h5``,
    written through to its target) or a hard link — counts: writing it
    would replace the input with what was made from it.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "bank.h5").write_bytes(b"a bank")
    >>> (folder / "x.npy").symlink_to(folder / "bank.h5")
    >>> check_not_input(folder / "x.npy", folder / "bank.h5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: .../x.npy is .../bank.h5 itself (a link to it): writing it would replace ...
    """
    try:
        same = os.path.samefile(out, source)
    except OSError:  # out does not exist yet (or cannot be followed, which writing reports): it replaces nothing
        return
    if same:
        how = "a link to it" if Path(out).is_symlink() or Path(source).is_symlink() else "the same file"
        raise SpherecodesError(f"{out} is {source} itself ({how}): writing it would replace the file it is made "
                               f"from; {fix}")


def resolve_output(path) -> Path:
    """The file that writing ``path`` must replace: a symbolic link's target (so the link is kept).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "link.h5").symlink_to(folder / "real.h5")
    >>> resolve_output(folder / "link.h5") == (folder / "real.h5").resolve()
    True
    """
    path = Path(path)
    try:
        link = path.is_symlink()
    except OSError:  # a name the file system refuses (too long): reported where the file is checked or written
        return path
    if link:
        try:
            return Path(os.path.realpath(path, strict=True))
        except FileNotFoundError:
            return Path(os.path.realpath(path))  # a dangling link: create what it points to
        except OSError as err:
            raise SpherecodesError(f"cannot write {path}: the symbolic link cannot be followed ({_reason(err)})") from None
    return path


#: Seconds a writer waits for another one's lock before saying that it waits.
LOCK_QUIET_S = 1.0


@contextlib.contextmanager
def exclusive_lock(path, waiting=None, timeout: float | None = None):
    """Hold an advisory lock on ``path`` so that read-modify-write cycles of it run one at a time.

    The lock is ``fcntl.flock`` on a hidden file beside ``path``
    (``.NAME.lock``), released by the kernel when its holder exits, however
    it exits.  The holder writes its process id into the lock file, which is
    removed on release; a writer that finds the lock file it locked already
    removed or replaced takes the new one.  A second writer waits (Ctrl-C
    stops the wait and changes nothing).

    Parameters
    ----------
    path : str or Path
        The file about to be read, changed and replaced (a symbolic link is
        locked at its target).
    waiting : callable, optional
        Called with one line of text (which file, which process holds it)
        when the wait passes :data:`LOCK_QUIET_S` seconds; e.g. a function
        that prints it on stderr.
    timeout : float, optional
        Most seconds to wait for the lock (a run's time limit); default: as
        long as it takes.

    Raises
    ------
    SpherecodesError
        The lock file cannot be created (a read-only directory), or another
        process held the lock for longer than ``timeout``.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "bank.h5"
    >>> with exclusive_lock(target):
    ...     with replace_atomically(target) as tmp:
    ...         _ = tmp.write_text("one writer at a time")
    >>> target.read_text()
    'one writer at a time'
    """
    path = resolve_output(path)
    lock = path.parent / f".{path.name}.lock"
    said = waiting is None
    give_up = math.inf if timeout is None else time.monotonic() + timeout
    while True:
        try:
            # Never through a link: the holder writes into the lock file, which must not be someone else's file.
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except OSError as err:
            raise SpherecodesError(f"cannot lock {path} for writing: {lock} cannot be created ({_reason(err)}); "
                                   "remove it if it is not a lock file") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:  # 0: its holder has just removed it
            os.close(fd)
            raise SpherecodesError(f"cannot lock {path} for writing: {lock} is not a plain file of its own (a "
                                   "hard link, a fifo, a device); remove it")
        try:
            if not _lock_within(fd, min(LOCK_QUIET_S, give_up - time.monotonic()) if not said else 0.0):
                if not said:
                    waiting(f"{path} is being written by another spherecodes process ({_holder(fd)}); waiting for "
                            "it to finish (Ctrl-C stops waiting and changes nothing)")
                    said = True
                if timeout is None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                elif not _lock_within(fd, give_up - time.monotonic()):
                    raise SpherecodesError(f"gave up waiting for {path}: another spherecodes process "
                                           f"({_holder(fd)}) was still writing it after {timeout:.3g} s, what the "
                                           f"time limit left; {path} is unchanged",
                                           flags={"the time limit": "--time-limit"})
            held = os.fstat(fd)
            try:
                current = os.stat(lock)
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        # The previous holder removes the lock file as it releases it: lock the file now at that name instead.
        if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)
    with contextlib.suppress(OSError):  # who holds it, for a writer that waits: information, not a condition
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _lock_within(fd: int, seconds: float) -> bool:
    """Take the lock on ``fd`` if it is free or freed within ``seconds``; whether it was."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _holder(fd: int) -> str:
    """The process that wrote its id into a lock file, in words."""
    try:
        pid, host = os.pread(fd, 256, 0).decode("ascii").split()
        if not (pid.isdigit() and re.fullmatch(r"[A-Za-z0-9.-]{1,253}", host)):  # anyone can write the lock file
            raise ValueError(host)
    except (OSError, ValueError, UnicodeDecodeError):
        return "its process id unknown"
    return f"process {int(pid)}" + (f" on {host}" if host != socket.gethostname() else "")


class _Write:
    """A file this process set out to replace, and the identity (device, inode) of what it put there."""

    def __init__(self, path: Path):
        self.path = path
        self.identity = None


_WRITES: list[_Write] = []


def written_files() -> list[tuple[Path, bool]]:
    """Every file this process set out to replace, each with whether it now holds what was written.

    Checked on disk: a file counts as written only when it is still the very
    file (same device and inode) that the rename put in place, so a write cut
    short before its rename, or replaced since by another process, counts as
    not written.  For the message of a command stopped by Ctrl-C.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "notes.txt"
    >>> with replace_atomically(target) as tmp:
    ...     _ = tmp.write_text("kept")
    >>> written_files()[-1] == (target, True)
    True
    """
    outcomes = []
    for record in _WRITES:
        if any(record.path.parent == other.path.parent and record.path.name.startswith(f".{other.path.name}.{_writer()}.")
               for other in _WRITES):
            continue  # a temporary file of another write, written into before its rename
        try:
            info = os.stat(record.path)
            stored = record.identity == (info.st_dev, info.st_ino)
        except OSError:
            stored = False
        outcomes.append((record.path, stored))
    return outcomes


def check_name_fits(path, suffix: str = ".tmp") -> None:
    """Refuse a file name too long for its file system, counting the temporary file written beside it.

    The temporary file's name is some 30 to 70 bytes longer than the target's:
    a name close to the limit is refused here, before any work.

    Examples
    --------
    >>> import tempfile
    >>> check_name_fits(Path(tempfile.mkdtemp()) / ("x" * 300))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: the file name xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... is too long: 300 bytes, ...
    """
    path = Path(path)
    try:
        most = os.pathconf(path.parent if path.parent.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        return  # the file system does not say: its own error, if any, is reported when the file is written
    length = len(os.fsencode(path.name))
    extra = len(os.fsencode(f"..{_writer()}.")) + _RANDOM_CHARACTERS + len(os.fsencode(suffix))
    if length + extra > most:
        shown = path.name if len(path.name) <= 40 else path.name[:40] + "..."
        raise SpherecodesError(f"the file name {shown} is too long: {length} bytes, and this file system allows {most} "
                               f"bytes for a name, less {extra} for the temporary file written beside it; choose a "
                               f"name of at most {most - extra} bytes")


#: Characters of the random part of a temporary file's name (what :func:`tempfile.mkstemp` adds).
_RANDOM_CHARACTERS = 8


def _reason(err: OSError) -> str:
    """What went wrong, in words (a full disk, the file-size limit, a name too long, ...).

    HDF5's errors carry the system's error number only inside a long text: the number is looked up instead.
    """
    number = err.errno
    if number is None:
        found = re.search(r"errno = (\d+)", str(err))
        number = int(found.group(1)) if found else None
    if number:
        return os.strerror(number)
    text = err.strerror or str(err) or type(err).__name__
    return text.splitlines()[0][:160]


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


class Terminated(BaseException):
    """The process was asked to end by SIGTERM or SIGHUP (``kill``, a closed terminal, a batch system).

    Raised where the program runs, as Ctrl-C raises KeyboardInterrupt, so that
    every file being written is abandoned and its temporary file removed
    before the process ends; the command-line tool ends with one line and
    the status 128 + the signal's number.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: Signals that end the process as Ctrl-C does: raised as :class:`Terminated` where they would kill it.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def ending_signals_raise():
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` instead of killing the process at once.

    In the main thread only, and only for those signals whose handler is the
    default (a signal ignored, or handled by the program, stays so); the
    previous handlers come back on exit.  The command-line tool runs every
    command inside it.

    Examples
    --------
    >>> import os, signal
    >>> with ending_signals_raise():
    ...     try:
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...     except Terminated as ended:
    ...         print(ended)
    SIGTERM
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    def raise_terminated(signum, frame):
        raise Terminated(signum)

    previous = {}
    try:
        for signum in ENDING_SIGNALS:
            if signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, raise_terminated)
        with _redelivered():
            yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _redelivered():
    """While the block runs, a signal's exception that Python could not raise is delivered again.

    A handler that raises while Python runs a callback it cannot raise from (a
    weak reference's clean-up, say) has its exception printed as "Exception
    ignored" and lost, and the program goes on: a SIGTERM during a download
    then let the download run to its end.  Sent again a moment later, from
    another thread (sent at once, its handler would run inside this hook and
    be lost the same way), the signal raises at the program's next step.
    """
    previous = sys.unraisablehook

    def again(signum: int) -> None:
        timer = threading.Timer(0.01, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()

    def hook(unraisable):
        if isinstance(unraisable.exc_value, Terminated):
            again(unraisable.exc_value.signum)
        elif isinstance(unraisable.exc_value, KeyboardInterrupt):
            again(signal.SIGINT)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


class _SignalWatch:
    """Notes Ctrl-C, SIGTERM and SIGHUP while a file is written; holds them back during the rename."""

    def __init__(self):
        self.received = None  # the signal's number
        self.holding = False

    def handle(self, signum, frame):
        self.received = signum
        if not self.holding:
            self.check()

    def check(self):
        if self.received == signal.SIGINT:
            raise KeyboardInterrupt
        if self.received is not None:
            raise Terminated(self.received)

    @contextlib.contextmanager
    def deferred(self):
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        self.check()


@contextlib.contextmanager
def _signal_watch():
    """A :class:`_SignalWatch` installed as the handler of SIGINT, SIGTERM and SIGHUP (in the main thread only;
    elsewhere inert; a signal ignored stays ignored).

    A SIGTERM or SIGHUP whose handler was the default (it would have killed
    the process, leaving the temporary file) raises :class:`Terminated`
    through the write, and once the write is undone the signal is delivered
    again with its default action: the process ends as it would have, by
    that signal, without leaving the file behind.
    """
    watch = _SignalWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    previous = {}
    for signum in (signal.SIGINT, *ENDING_SIGNALS):
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):
            previous[signum] = signal.signal(signum, watch.handle)
    try:
        with _redelivered():
            yield watch
    except Terminated as ended:
        if previous.get(ended.signum) == signal.SIG_DFL:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.kill(os.getpid(), ended.signum)  # the default action: the process ends here
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
