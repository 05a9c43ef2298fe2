"""Prototype matrices from files made elsewhere: banks, NumPy, torch and text.

``spherecodes certify`` reads any of these, so prototypes produced by other
tools can be checked with the same certificate as spherecodes' own.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np

from . import heavy
from .bank import read_code
from .inputs import check_input_file, read_npy
from .memory import require_memory
from .code import NAME_PUNCTUATION, Code, make_code
from .context import RunContext
from .errors import SpherecodesError
from .stats import FILE_UNIT_TOL, validate_prototypes

#: Integer tensor types read as numbers (bool is not).
_TORCH_INTEGERS = ("torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.uint8")

#: File name endings and what they hold.
MATRIX_SUFFIXES = {".h5": "spherecodes bank", ".hdf5": "spherecodes bank", ".npy": "NumPy array",
                   ".pt": "torch tensor", ".pth": "torch tensor", ".txt": "whitespace-separated text",
                   ".csv": "comma-separated text"}

#: Pickle files are never loaded (unpickling runs code); what to do instead.
PICKLE_SUFFIXES = (".pkl", ".pickle")
PICKLE_ADVICE = ("pickles are never loaded here, since unpickling runs code; if you trust the file, convert it in one "
                 "line of Python: python -c \"import pickle, numpy; numpy.save('{stem}.npy', "
                 "numpy.asarray(pickle.load(open('{path}', 'rb')), dtype=float))\"")


def load_code(path, name: str | None = None, *, normalize: bool = False, stats_device=None,
              max_memory: float | None = None, announce=None, progress=None) -> Code:
    """A code from a bank, or from a (K, d) matrix in a ``.npy``, ``.pt``/``.pth``, ``.txt`` or ``.csv`` file.

    Parameters
    ----------
    path : str or Path
        The file; its ending says how to read it (:data:`MATRIX_SUFFIXES`).
    name : str, optional
        Code name inside a bank (banks only).
    normalize : bool
        Rescale rows to unit length instead of refusing rows that are not.
        Without it, rows whose norms miss 1 by at most :data:`FILE_UNIT_TOL`
        (1e-6, in any dtype), or by their format's rounding, are normalised in
        float64 and the code's settings record it (``normalized_from``, the
        file's dtype, and ``norm_deviation``, the largest miss).
    stats_device, max_memory : optional
        Where the statistics of a matrix file are computed, and the memory
        they may use (see :func:`spherecodes.stats.separation_statistics`);
        a bank's are read, not computed.
    announce : callable, optional
        Called as ``announce(k, d)`` once a matrix file's rows are read and
        checked, before their statistics (all pairs) are computed: to say
        what that will take, or refuse it by raising.
    progress : callable, optional
        Passed to :func:`spherecodes.stats.separation_statistics`.

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
    if suffix in PICKLE_SUFFIXES:
        raise SpherecodesError(f"cannot read {path}: " + PICKLE_ADVICE.format(stem=path.stem, path=path))
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
    matrix, stored = _read_matrix(path, suffix, max_memory)
    try:
        # NumPy has no bfloat16, so validate_prototypes sees float32 rows: their rounding is checked here.
        rounded = stored == "bfloat16" and not normalize and _within_bfloat16_rounding(matrix)
        prototypes = validate_prototypes(matrix, normalize=normalize or rounded, tolerance=FILE_UNIT_TOL)
    except SpherecodesError as err:
        if not normalize and _columns_are_unit(matrix):
            raise SpherecodesError(f"{path} looks transposed: its {matrix.shape[1]} columns are unit vectors and its "
                                   "rows are not; a code is stored as (K, d), one prototype per row: save the "
                                   f"transpose, of shape {matrix.shape[::-1]}") from None
        raise SpherecodesError(f"{path}: {err}", flags=err.flags) from None
    settings = {"source": str(path), "normalized": bool(normalize)}
    if normalize:
        settings.update(normalized_from=stored, normalized_because="asked")
    elif not np.array_equal(prototypes, matrix):
        # Rows unit up to their format's rounding or FILE_UNIT_TOL: normalised in float64 (see validate_prototypes).
        deviation = float(np.abs(np.linalg.norm(matrix.astype(np.float64), axis=1) - 1.0).max())
        settings.update(normalized=True, normalized_from=stored, normalized_because="rounding",
                        norm_deviation=deviation)
    stem = "".join(c if c.isalnum() or c in NAME_PUNCTUATION else "_" for c in path.stem) or "external"
    if announce is not None:
        announce(*prototypes.shape)
    context = RunContext(device="cpu" if stats_device is None else str(stats_device), max_memory=max_memory,
                         progress=progress)
    return make_code(prototypes, method="external", name=stem, settings=settings, context=context)


def _columns_are_unit(matrix: np.ndarray) -> bool:
    """Whether a 2-D matrix of numbers has unit columns (and at least two of them): a (d, K) code."""
    if matrix.ndim != 2 or matrix.shape[1] < 2 or matrix.dtype.kind not in "iuf":
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(matrix.astype(np.float64), axis=0)
    return bool(np.all(np.abs(norms - 1) <= 1e-6))


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


def _read_matrix(path: Path, suffix: str, max_memory: float | None) -> tuple[np.ndarray, str]:
    """The matrix of a file, and the number type it was stored in."""
    if suffix == ".npy":
        matrix = read_npy(path, "(K, d) prototype matrix", max_memory=max_memory)
        return matrix, matrix.dtype.name
    if suffix in (".pt", ".pth"):
        return _read_torch(path, max_memory)
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


def _read_torch(path: Path, max_memory: float | None = None) -> tuple[np.ndarray, str]:
    torch = heavy.torch()

    try:
        if zipfile.is_zipfile(path):  # the format since torch 1.6: refuse a small archive that unpacks huge
            with zipfile.ZipFile(path) as archive:
                unpacked = sum(info.file_size for info in archive.infolist())
            require_memory(2.0 * unpacked, f"reading {path} ({unpacked} bytes unpacked)", limit=max_memory)
        # weights_only: never run pickled code from a file we were only asked to check.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch's notes on what it rebuilds (sparse layouts in beta)
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except SpherecodesError:
        raise
    except Exception as err:  # torch reports unreadable files and refused objects with many exception types
        first = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise SpherecodesError(f"cannot read {path} as a torch tensor file: it is damaged or holds objects other than "
                               f"tensors, which are never unpickled here ({first}); save a tensor, or a dict holding "
                               "one 2-D tensor") from None
    if isinstance(obj, dict):
        matrices = {key: value for key, value in obj.items() if isinstance(value, torch.Tensor) and value.ndim == 2}
        if len(matrices) != 1:
            keys = ", ".join(map(str, obj)) or "none"
            raise SpherecodesError(f"{path} holds a dict; expected exactly one 2-D tensor in it, found {len(matrices)} "
                                   f"(keys: {keys})")
        obj = next(iter(matrices.values()))
    if not isinstance(obj, torch.Tensor):
        raise SpherecodesError(f"{path} holds a {type(obj).__name__}, not a tensor")
    if obj.layout != torch.strided:
        raise SpherecodesError(f"{path} holds a sparse tensor ({obj.layout}); save a dense one (tensor.to_dense())")
    if obj.is_meta:
        raise SpherecodesError(f"{path} holds a meta tensor, which has a shape but no values; save the values")
    if obj.is_complex():
        raise SpherecodesError(f"{path} holds complex numbers ({obj.dtype}); give real numbers")
    if not (obj.is_floating_point() or str(obj.dtype) in _TORCH_INTEGERS):
        raise SpherecodesError(f"{path} holds {obj.dtype} values; give real numbers (floating-point or integer)")
    # An expanded tensor (tensor.expand) stores one row for many: a small file can stand for terabytes.
    # The tensor, then the float64 copy of it that is checked, must fit before either is made.
    require_memory(obj.numel() * (obj.element_size() + 8.0), f"{path} (a tensor of shape {tuple(obj.shape)})",
                   limit=max_memory, hint="check the file")
    # NumPy has no bfloat16: it goes through float32, which holds it exactly.
    tensor = obj.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.float().numpy(), "bfloat16"
    return tensor.numpy(), tensor.numpy().dtype.name
