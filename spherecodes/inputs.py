"""Files named by the user, read without trusting them (NumPy only).

A path may name a fifo (opening it would wait for a writer forever), a device
such as ``/dev/zero`` (reading it never ends) or a directory; only regular
files are read.  A ``.npy`` file's header is checked before its data: the
dtype must be numbers (never Python objects, which would be unpickled), the
shape it declares must match the bytes the file holds, and the memory the
array needs must be free (a sparse file passes the size check).  JSON
documents are parsed with bounds on what Python's own parser would turn into
a traceback: integers of thousands of digits, nesting thousands of levels
deep, numbers that overflow a float.
"""

from __future__ import annotations

import json
import math
import stat
import sys
from pathlib import Path

import numpy as np

from .atomic import file_kind
from .errors import SpherecodesError
from .memory import require_memory

__all__ = ["JSON_MAX_DIGITS", "check_input_file", "check_real_dtype", "read_json", "read_npy"]

#: Most digits an integer in a JSON document may have: Python's own limit on
#: converting text to an integer (4300 by default), past which it would raise
#: an exception no reader expects.
JSON_MAX_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300

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
        raise SpherecodesError(f"{path} is not a regular file (it is {file_kind(mode)}); give a {what}")
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
        if any(n < 0 for n in shape):  # numpy would read "as many as there are" for a count of -1
            raise SpherecodesError(f"{path} declares the shape {shape}, with a negative length; its header is damaged")
        count = math.prod(shape)
        needed = count * dtype.itemsize
        held = size - fh.tell()
        if held < needed:
            raise SpherecodesError(f"{path} declares shape {shape} of {dtype} ({needed} bytes) but holds only {held} "
                                   "bytes after its header; the file is truncated or its header is wrong")
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


def read_json(text: str | bytes, where: str, *, finite: bool = True):
    """Parse a JSON document from a file anyone may write, or raise a one-line error naming ``where``.

    Parameters
    ----------
    text : str or bytes
        The document.
    where : str
        What it is, for messages (``"the registry of https://..."``).
    finite : bool
        Refuse ``NaN``, ``Infinity`` and numbers beyond the float64 range
        (such as ``1e400``), which standard JSON does not have. ``False``
        keeps them as floats (documents that record them on purpose).

    Raises
    ------
    SpherecodesError
        Not JSON, not UTF-8, an integer of more than :data:`JSON_MAX_DIGITS`
        digits, nesting deeper than Python's recursion limit, or (with
        ``finite``) a number that is not a finite float64. Whether an
        integer fits what it counts is for the caller to check.

    Examples
    --------
    >>> read_json('{"k": 12, "max_cos": -0.09}', "x.json")
    {'k': 12, 'max_cos': -0.09}
    >>> read_json('{"k": ' + '9' * 5000 + '}', "x.json")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: x.json is damaged: it holds an integer of 5000 digits; at most 4300 are read
    >>> read_json('[' * 100000, "x.json")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: x.json is damaged: it nests lists or objects too deeply to read
    """

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > JSON_MAX_DIGITS:
            raise _Refused(f"it holds an integer of {len(digits.lstrip('-'))} digits; at most {JSON_MAX_DIGITS} "
                           "are read")
        return int(digits)

    def real(digits: str) -> float:
        value = float(digits)
        if finite and not math.isfinite(value):
            raise _Refused(f"it holds the number {digits[:24]}{'...' if len(digits) > 24 else ''}, beyond the "
                           "range of a float64")
        return value

    def constant(name: str) -> float:
        if finite:
            raise _Refused(f"it holds {name}, which is not a JSON number")
        return float(name)

    try:
        return json.loads(text, parse_int=integer, parse_float=real, parse_constant=constant)
    except _Refused as err:
        raise SpherecodesError(f"{where} is damaged: {err}") from None
    except RecursionError:
        raise SpherecodesError(f"{where} is damaged: it nests lists or objects too deeply to read") from None
    except (ValueError, UnicodeDecodeError) as err:  # json.JSONDecodeError is a ValueError
        raise SpherecodesError(f"{where} is not valid JSON ({err})") from None


class _Refused(Exception):
    """Raised from inside the JSON parser's hooks: the parser does not catch it, so it ends the parse."""
