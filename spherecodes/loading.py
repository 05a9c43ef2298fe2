"""Prototype matrices from files made elsewhere: banks, NumPy, torch and text.

``spherecodes certify`` reads any of these, so prototypes produced by other
tools can be checked with the same certificate as spherecodes' own.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np

from .bank import read_code
from .inputs import check_input_file, read_npy
from .memory import require_memory
from .code import NAME_PUNCTUATION, Code, make_code
from .errors import SpherecodesError
from .stats import validate_prototypes

#: Integer tensor types read as numbers (bool is not).
_TORCH_INTEGERS = ("torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.uint8")

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
    kind = MATRIX_SUFFIXES[suffix]
    if kind == "spherecodes bank":
        return read_code(path, name)
    if name is not None:
        raise SpherecodesError(f"--code selects a code inside a bank; {path} is a {kind}")
    check_input_file(path, f"{kind} file")
    if path.stat().st_size == 0:
        raise SpherecodesError(f"{path} is empty; expected a (K, d) matrix")
    matrix, stored = _read_matrix(path, suffix)
    try:
        # NumPy has no bfloat16, so validate_prototypes sees float32 rows: their rounding is checked here.
        rounded = stored == "bfloat16" and not normalize and _within_bfloat16_rounding(matrix)
        prototypes = validate_prototypes(matrix, normalize=normalize or rounded)
    except SpherecodesError as err:
        raise SpherecodesError(f"{path}: {err}", flags=err.flags) from None
    settings = {"source": str(path), "normalized": bool(normalize)}
    if normalize:
        settings.update(normalized_from=stored, normalized_because="asked")
    elif not np.array_equal(prototypes, matrix):
        # Rows stored in a short float, unit up to its rounding: normalised in float64 (see validate_prototypes).
        settings.update(normalized=True, normalized_from=stored, normalized_because="rounding")
    stem = "".join(c if c.isalnum() or c in NAME_PUNCTUATION else "_" for c in path.stem) or "external"
    return make_code(prototypes, method="external", name=stem, settings=settings, stats_device=stats_device,
                     max_memory=max_memory)


#: Machine epsilon of bfloat16 (8 significant bits), which NumPy does not know.
BFLOAT16_EPS = 2.0**-7


def _within_bfloat16_rounding(matrix: np.ndarray) -> bool:
    """Whether rows read from bfloat16 are unit up to its rounding, else an error that says so."""
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    deviation = np.abs(norms - 1.0)
    allowed = float(np.sqrt(matrix.shape[1]) * BFLOAT16_EPS) if matrix.ndim == 2 else 0.0
    if matrix.ndim != 2 or not np.all(np.isfinite(norms)) or deviation.max(initial=0.0) <= allowed:
        return matrix.ndim == 2 and bool(np.all(np.isfinite(norms))) and bool(norms.min(initial=1.0) > 0)
    worst = int(np.argmax(deviation))
    raise SpherecodesError(
        f"rows must be unit vectors: row {worst} has norm {norms[worst]:.12g} (largest deviation from 1: "
        f"{deviation[worst]:.3g}; rows stored as bfloat16 may miss 1 by their rounding, {allowed:.3g}); rescale "
        "them or pass normalize=True", flags={"normalize=True": "--normalize"})


def _read_matrix(path: Path, suffix: str) -> tuple[np.ndarray, str]:
    """The matrix of a file, and the number type it was stored in."""
    if suffix == ".npy":
        matrix = read_npy(path, "(K, d) prototype matrix")
        return matrix, matrix.dtype.name
    if suffix in (".pt", ".pth"):
        return _read_torch(path)
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        delimiter = "," if suffix == ".csv" or "," in first else None
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns, then guesses, on an empty or odd text file
            return np.loadtxt(path, delimiter=delimiter, ndmin=2), "text"
    except (ValueError, OSError, UnicodeDecodeError, UserWarning) as err:
        # NumPy's own advice names its Python arguments (usecols=...): keep only what is wrong.
        message = str(err).splitlines()[0].split(";")[0] if str(err) else type(err).__name__
        if isinstance(err, UnicodeDecodeError):
            message = f"not UTF-8 text (byte {err.start})"
        raise SpherecodesError(f"cannot read {path} as {MATRIX_SUFFIXES[suffix]}: {message[:200]}") from None


def _read_torch(path: Path) -> np.ndarray:
    import torch

    try:
        if zipfile.is_zipfile(path):  # the format since torch 1.6: refuse a small archive that unpacks huge
            with zipfile.ZipFile(path) as archive:
                unpacked = sum(info.file_size for info in archive.infolist())
            require_memory(2.0 * unpacked, f"reading {path} ({unpacked} bytes unpacked)")
        # weights_only: never run pickled code from a file we were only asked to check.
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except SpherecodesError:
        raise
    except Exception as err:  # torch reports unreadable files and refused objects with many exception types
        first = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise SpherecodesError(
            f"cannot read {path} as a torch tensor file: it is damaged or holds objects other than tensors, which "
            f"are never unpickled here ({first}); save a tensor, or a dict holding one 2-D tensor"
        ) from None
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
    if obj.is_complex():
        raise SpherecodesError(f"{path} holds complex numbers ({obj.dtype}); give real numbers")
    if not (obj.is_floating_point() or str(obj.dtype) in _TORCH_INTEGERS):
        raise SpherecodesError(f"{path} holds {obj.dtype} values; give real numbers (floating-point or integer)")
    # NumPy has no bfloat16: it goes through float32, which holds it exactly.
    tensor = obj.detach()
    if tensor.dtype == torch.bfloat16:
        return tensor.float().numpy(), "bfloat16"
    return tensor.numpy(), tensor.numpy().dtype.name
