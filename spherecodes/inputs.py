"""Files named by the user, read without trusting them (NumPy only).

A path may name a fifo (opening it would wait for a writer forever), a device
such as ``/dev/zero`` (reading it never ends) or a directory; only regular
files are read.  A ``.npy`` file's header is read and checked before its data:
the dtype must be numbers (never Python objects, which would be unpickled),
and the shape it declares must match the bytes the file holds, so a
928-byte file claiming 26 GiB is refused without allocating anything.  A
sparse file (a few kilobytes on disk, 40 GB long) passes that check, so the
memory the array needs is checked too, against ``max_memory`` or what is free.
"""

from __future__ import annotations

import math
import stat
from pathlib import Path

import numpy as np

from .errors import SpherecodesError
from .memory import require_memory

__all__ = ["check_input_file", "check_real_dtype", "read_npy"]

_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def check_input_file(path, what: str) -> Path:
    """``path`` as a Path if it names a regular file, else a one-line error naming ``what`` was expected.

    Examples
    --------
    >>> check_input_file("/dev/zero", "class-names file")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: /dev/zero is not a regular file (it is a character device); give a class-names file
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SpherecodesError(f"no such {what}: {path}") from None
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if stat.S_ISDIR(mode):
        raise SpherecodesError(f"{path} is a directory; give a {what}")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _SPECIAL_FILES if test(mode)), "not a plain file")
        raise SpherecodesError(f"{path} is not a regular file (it is {kind}); give a {what}")
    return path


def read_npy(path, what: str = ".npy array", *, max_memory: float | None = None) -> np.ndarray:
    """A real numeric array from a ``.npy`` file, its header checked before any data is read.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file should hold, for messages (``"(K, d) prototype matrix"``).
    max_memory : float, optional
        Bytes the array and its float64 copy may take; default a safe share
        of the free memory.

    Raises
    ------
    SpherecodesError
        Not a regular file, not a ``.npy`` file, a dtype that is not real
        numbers (objects, strings, complex, dates, records), fewer data
        bytes than the header's shape and dtype need, or more memory than
        ``max_memory`` allows.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> np.save(path, np.eye(2, dtype=np.float32))
    >>> read_npy(path).dtype
    dtype('float32')
    >>> np.save(path, np.eye(2) * 1j)
    >>> read_npy(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: ... holds complex numbers (complex128); give real numbers
    """
    path = check_input_file(path, what)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        try:
            version = np.lib.format.read_magic(fh)
            reader = _HEADER_READERS.get(version)
            if reader is None:
                raise ValueError(f"version {version[0]}.{version[1]} headers are not read here")
            shape, fortran_order, dtype = reader(fh)
        except (ValueError, EOFError, SyntaxError) as err:
            message = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
            raise SpherecodesError(f"{path} is not a readable .npy file ({message}); save a {what} with numpy.save") from None
        check_real_dtype(dtype, f"{path}")
        count = math.prod(shape)
        needed = count * dtype.itemsize
        held = size - fh.tell()
        if held < needed:
            raise SpherecodesError(
                f"{path} declares shape {shape} of {dtype} ({needed} bytes) but holds only {held} bytes after its "
                "header; the file is truncated or its header is wrong"
            )
        # The array, then the float64 copy that every reader makes of it.
        require_memory(needed + 8.0 * count, f"{path} (shape {shape} of {dtype})", limit=max_memory,
                       hint="check the file")
        data = np.fromfile(fh, dtype=dtype, count=count)
    return data.reshape(shape, order="F" if fortran_order else "C")


def check_real_dtype(dtype: np.dtype, where: str) -> None:
    """Refuse every dtype but real numbers: objects (pickles), text, complex numbers, dates, records, booleans.

    Examples
    --------
    >>> check_real_dtype(np.dtype("<U3"), "x.npy")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: x.npy holds <U3 values; give real numbers (floating-point or integer)
    """
    if dtype.hasobject:
        raise SpherecodesError(f"{where} holds Python objects (a pickle), which are never loaded; give real numbers")
    if dtype.kind == "c":
        raise SpherecodesError(f"{where} holds complex numbers ({dtype}); give real numbers")
    if dtype.kind not in "iuf" or dtype.fields is not None:
        raise SpherecodesError(f"{where} holds {dtype} values; give real numbers (floating-point or integer)")
