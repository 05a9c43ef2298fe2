"""Prototypes out of a bank: NumPy, torch and text files, optionally rotated.

A training script needs a (K, d) matrix, not an HDF5 bank.  :func:`export_code`
writes a code's prototypes (row i is class ``labels[i]``) in one of
:data:`EXPORT_FORMATS`: a NumPy array, a torch tensor (or with ``labels=True``
a dict ``{"prototypes": tensor, "labels": [...], "name": ..., "sha256": ...}``)
or text, one row per line with enough digits to read back the same numbers.

:func:`rotate_code` applies a seeded random rotation first.  A closed form
such as the simplex ETF for (d = 512, K = 100) puts all its prototypes in the
first K − 1 coordinates; a rotation spreads them over all d while keeping
every cosine, max-cos, ρ and one-vs-rest distance (up to rounding, and the
certificate is re-verified from its witness on the rotated rows).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from . import heavy
from .atomic import output_directory, replace_atomically
from .certificate import one_vs_rest_distances
from .certificate.witness import verify_witness
from .checks import check_choice, check_seed
from .code import Code, default_code_name, make_code
from .constructions import CLOSED_FORMS, ROTATIONS
from .errors import SpherecodesError
from .rotated import turn_rows
from .sphere import random_rotation

#: File name endings :func:`export_code` writes, and what they hold.
EXPORT_FORMATS = {".npy": "NumPy array", ".pt": "torch tensor (a dict with labels when asked)",
                  ".pth": "torch tensor (a dict with labels when asked)", ".csv": "comma-separated text",
                  ".txt": "space-separated text"}

#: Number types of exported prototypes.
EXPORT_DTYPES = ("float64", "float32")

#: Digits that read back the same float: 17 for float64, 9 for float32.
_TEXT_FORMAT = {"float64": "%.17g", "float32": "%.9g"}


def export_format(path) -> str:
    """The ending of an export file, refused with the list of endings when unknown.

    Examples
    --------
    >>> export_format("protos.NPY")
    '.npy'
    >>> export_format("protos.h5")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: cannot export to protos.h5: end the file name in .npy, .pt, .pth, .csv or .txt
    """
    suffix = Path(path).suffix.lower()
    if suffix not in EXPORT_FORMATS:
        endings = ", ".join(EXPORT_FORMATS)
        endings = endings[: endings.rfind(", ")] + " or " + endings[endings.rfind(", ") + 2:]
        raise SpherecodesError(f"cannot export to {path}: end the file name in {endings}")
    return suffix


def rotate_code(code: Code, seed: int, *, name: str | None = None) -> Code:
    """The code turned by the Haar-random rotation of ``seed``: same cosines, other coordinates.

    The rows become ``prototypes @ Q`` with ``Q =``
    :func:`spherecodes.constructions.random_rotation` ``(d, seed)``, the
    rotation of ``generate --rotation random``.  The statistics are
    recomputed from the rotated rows in float64; a certificate is carried
    over (its witness re-verified on them, or a structured code certified
    again in its construction's coordinates), except that of the first K
    words of an orbit whose structure is not carried: the turned code is
    then uncertified.  ``settings`` records the rotation:
    ``{"rotation": {"seed": S, "of": name, "of_sha256": ...}}``.

    Parameters
    ----------
    code : Code
    seed : int
        Seed of the rotation, >= 0.
    name : str, optional
        Default: for a closed form the name ``generate`` gives it
        (``etf-d11-k12-s3``), else the code's name with ``-r<seed>``.

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> etf = make_code(simplex_etf(12, 11), method="etf")
    >>> turned = rotate_code(etf, seed=3)
    >>> turned.name, abs(turned.max_cos - etf.max_cos) < 1e-12
    ('etf-d11-k12-s3', True)
    >>> bool((np.abs(etf.prototypes) < 1e-15).any()), bool((np.abs(turned.prototypes) < 1e-15).any())
    (True, False)
    """
    seed = check_seed(seed)
    q = random_rotation(code.d, seed)
    # A structured code (an orbit of sign changes, or its prefix) keeps its structure through the rotation.
    structure = code.orbit if code.orbit is None or code.orbit.unturned is code.orbit else None
    rotated, carried = turn_rows(code.prototypes, seed, structure, rotation=q)
    if name is None:
        name = default_code_name(code.method, code.d, code.k, seed) if code.method in CLOSED_FORMS \
            and code.seed is None else f"{code.name}-r{seed}"
    settings = {**code.settings, "rotation": {"seed": seed, "of": code.name, "of_sha256": code.sha256}}
    out = make_code(rotated, method=code.method, name=name, labels=code.labels, settings=settings,
                    seed=code.seed, device=code.device, wall_time=code.wall_time, orbit=carried)
    if code.certificate is None:
        return out
    if carried is not None and code.certificate.orbit is not None:
        # Certified again from the structure, in the construction's coordinates (seconds), and carried.
        cert = code.certificate
        out.certificate = one_vs_rest_distances(out.prototypes, tol=cert.tol, rattler_tol=cert.rattler_tol,
                                                device="cpu", orbit=carried)
    elif code.certificate.orbit is None or not code.certificate.orbit.unturned.whole_orbit_bounds:
        cert = code.certificate.expanded(code.prototypes)  # every class's witness, checked on the turned rows
        lo, hi = verify_witness(out.prototypes, cert, where=f"code {name!r}", orbit=None)
        out.certificate = dataclasses.replace(cert, lo=lo, hi=hi, features=cert.features @ q)
    return out


def export_code(code: Code, path, *, dtype: str = "float64", labels: bool = False,
                rotation: str = "canonical", seed: int = 0, overwrite: bool = False) -> Path:
    """Write a code's prototypes to a ``.npy``, ``.pt``/``.pth``, ``.csv`` or ``.txt`` file.

    Row i of the file is class ``code.labels[i]`` (or class i of a code
    without labels).  The file is written to a temporary file and renamed
    into place, so an interrupted export leaves nothing half-written.

    Parameters
    ----------
    code : Code
    path : str or Path
        The file; its ending chooses the format (:data:`EXPORT_FORMATS`).
    dtype : {"float64", "float32"}
        Number type written (float64: the stored numbers exactly).
    labels : bool
        ``.pt`` only: write ``{"prototypes", "labels", "name", "sha256"}``
        instead of a bare tensor (``labels`` is ``None`` for a code without).
    rotation : {"canonical", "random"}
        ``"random"`` writes :func:`rotate_code` ``(code, seed)``'s prototypes.
    seed : int
        Seed of the random rotation.
    overwrite : bool
        Replace an existing file (refused otherwise).

    Returns
    -------
    Path
        The written file.

    Examples
    --------
    >>> import os, tempfile
    >>> from spherecodes.constructions import simplex_etf
    >>> code = make_code(simplex_etf(12, 11), method="etf", labels=[f"class{i}" for i in range(12)])
    >>> folder = tempfile.mkdtemp()
    >>> w = np.load(export_code(code, os.path.join(folder, "etf.npy")))
    >>> w.shape, w.dtype, bool((w == code.prototypes).all())
    ((12, 11), dtype('float64'), True)
    >>> text = np.loadtxt(export_code(code, os.path.join(folder, "etf.csv")), delimiter=",")
    >>> bool((text == code.prototypes).all())
    True
    """
    path = Path(path)
    suffix = export_format(path)
    dtype = check_choice("dtype", dtype, EXPORT_DTYPES)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    if labels and suffix not in (".pt", ".pth"):
        raise SpherecodesError(f"labels go into .pt files only ({path.name} holds just the matrix; "
                               "'spherecodes report BANK --json' lists the labels in row order)")
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory; give a file name to export to")
    if path.exists() and not overwrite:
        raise SpherecodesError(f"{path} exists; pass --overwrite to replace it")
    output_directory(path, "choose another --out")
    if rotation == "random":
        code = rotate_code(code, seed)
    matrix = np.ascontiguousarray(code.prototypes, dtype=dtype)
    with replace_atomically(path, suffix=suffix) as tmp:
        if suffix == ".npy":
            with open(tmp, "wb") as handle:
                np.save(handle, matrix)
        elif suffix in (".csv", ".txt"):
            np.savetxt(tmp, matrix, fmt=_TEXT_FORMAT[dtype], delimiter="," if suffix == ".csv" else " ")
        else:
            torch = heavy.torch()

            tensor = torch.from_numpy(matrix)
            payload = {"prototypes": tensor, "labels": code.labels, "name": code.name, "sha256": code.sha256} \
                if labels else tensor
            torch.save(payload, tmp)
    return path
