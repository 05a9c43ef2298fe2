"""Prototype matrices from files made elsewhere: banks, NumPy, torch and text.

``spherecodes certify`` reads any of these, so prototypes produced by other
tools can be checked with the same certificate as spherecodes' own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .bank import read_code
from .code import NAME_PUNCTUATION, Code, make_code
from .errors import SpherecodesError
from .stats import validate_prototypes

#: File name endings and what they hold.
MATRIX_SUFFIXES = {
    ".h5": "spherecodes bank",
    ".hdf5": "spherecodes bank",
    ".npy": "NumPy array",
    ".pt": "torch tensor",
    ".pth": "torch tensor",
    ".txt": "whitespace-separated text",
    ".csv": "comma-separated text",
}


def load_code(
    path, name: str | None = None, *, normalize: bool = False, stats_device=None, max_memory: float | None = None
) -> Code:
    """A code from a bank, or from a (K, d) matrix in a ``.npy``, ``.pt``/``.pth``, ``.txt`` or ``.csv`` file.

    Parameters
    ----------
    path : str or Path
        The file; its ending says how to read it (:data:`MATRIX_SUFFIXES`).
    name : str, optional
        Code name inside a bank (banks only).
    normalize : bool
        Rescale rows to unit length instead of refusing rows that are not.
    stats_device, max_memory : optional
        Where the statistics of a matrix file are computed, and the memory
        they may use (see :func:`spherecodes.stats.separation_statistics`);
        a bank's are read, not computed.

    Returns
    -------
    Code
        For a matrix file, a code named after the file with method ``"external"``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "protos.csv")
    >>> np.savetxt(path, np.eye(3), delimiter=",")
    >>> code = load_code(path)
    >>> code.name, code.method, code.prototypes.shape
    ('protos', 'external', (3, 3))
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MATRIX_SUFFIXES:
        allowed = ", ".join(MATRIX_SUFFIXES)
        raise SpherecodesError(f"cannot read {path}: unknown file type {suffix or '(none)'!r}; use one of {allowed}")
    if not path.exists():
        raise SpherecodesError(f"no such file: {path}")
    if MATRIX_SUFFIXES[suffix] == "spherecodes bank":
        return read_code(path, name)
    if name is not None:
        raise SpherecodesError(f"--code selects a code inside a bank; {path} is a {MATRIX_SUFFIXES[suffix]}")
    if path.stat().st_size == 0:
        raise SpherecodesError(f"{path} is empty; expected a (K, d) matrix")
    matrix = _read_matrix(path, suffix)
    prototypes = validate_prototypes(matrix, normalize=normalize)
    settings = {"source": str(path), "normalized": bool(normalize)}
    stem = "".join(c if c.isalnum() or c in NAME_PUNCTUATION else "_" for c in path.stem) or "external"
    return make_code(prototypes, method="external", name=stem, settings=settings, stats_device=stats_device,
                     max_memory=max_memory)


def _read_matrix(path: Path, suffix: str) -> np.ndarray:
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if suffix in (".pt", ".pth"):
            return _read_torch(path)
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        delimiter = "," if suffix == ".csv" or "," in first else None
        return np.loadtxt(path, delimiter=delimiter, ndmin=2)
    except SpherecodesError:
        raise
    except (ValueError, OSError, EOFError, UnicodeDecodeError, RuntimeError) as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SpherecodesError(f"cannot read {path} as a {MATRIX_SUFFIXES[suffix]}: {message}") from None


def _read_torch(path: Path) -> np.ndarray:
    import torch

    # weights_only: never run pickled code from a file we were only asked to check.
    obj = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(obj, dict):
        matrices = {key: value for key, value in obj.items() if isinstance(value, torch.Tensor) and value.ndim == 2}
        if len(matrices) != 1:
            keys = ", ".join(map(str, obj)) or "none"
            raise SpherecodesError(
                f"{path} holds a dict; expected exactly one 2-D tensor in it, found {len(matrices)} (keys: {keys})"
            )
        obj = next(iter(matrices.values()))
    if not isinstance(obj, torch.Tensor):
        raise SpherecodesError(f"{path} holds a {type(obj).__name__}, not a tensor")
    return obj.detach().to(torch.float64).numpy()
