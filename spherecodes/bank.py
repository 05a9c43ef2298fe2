"""Banks: self-describing HDF5 files that hold one or more codes.

Layout (schema version 1; ``docs/bank-format.md`` is the full reference)::

    /                        attrs: format="spherecodes-bank", schema_version=1, created_by
    /codes/<name>/           attrs: method, k, d, seed, settings (JSON), package_version,
                                    device, wall_time_s, created_utc, sha256
    /codes/<name>/prototypes float64 (K, d), unit rows
    /codes/<name>/labels     UTF-8 strings (K,), optional
    /codes/<name>/stats/     attrs: the scalar statistics and bounds
                             datasets: nearest_cos (K,), nearest_index (K,), rattlers (n,)

Every change goes to a temporary file in the bank's directory that is renamed
over the bank only once complete, so an interrupted write leaves the old bank
as it was.  Reading checks the format, the schema version, shapes, finiteness,
unit rows and the SHA-256 of the prototype bytes, and refuses anything else.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .atomic import replace_atomically
from .bounds import known_optimal, max_cos_lower_bound, theorem_3_9
from .certificate import OneVsRestCertificate, support_residuals
from .code import Code, check_labels, prototype_checksum
from .errors import SpherecodesError
from .memory import require_memory
from .stats import SeparationStats, validate_prototypes

FORMAT_NAME = "spherecodes-bank"
SCHEMA_VERSION = 1

# Gzip with byte shuffling shrinks float64 prototypes well; beyond this size the
# compression time outweighs the disk saved, so large codes are stored plain.
_COMPRESS_UP_TO_BYTES = 512 * 2**20


# --------------------------------------------------------------------------- reading


def _open_bank(path) -> h5py.File:
    """Open an existing bank read-only after checking that it is one this version reads."""
    path = Path(path)
    if not path.exists():
        raise SpherecodesError(f"no such bank file: {path}")
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory, not a bank file")
    try:
        is_hdf5 = h5py.is_hdf5(path)
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if not is_hdf5:
        raise SpherecodesError(f"{path} is not an HDF5 file; a spherecodes bank is HDF5")
    try:
        fh = h5py.File(path, "r")
    except OSError:
        raise SpherecodesError(
            f"{path} cannot be opened as HDF5: the file is truncated or damaged"
        ) from None
    try:
        _check_root(fh, path)
    except BaseException:
        fh.close()
        raise
    return fh


def _check_root(fh: h5py.File, path) -> None:
    fmt = _as_str(fh.attrs.get("format"))
    if fmt != FORMAT_NAME:
        raise SpherecodesError(
            f"{path} is an HDF5 file but not a spherecodes bank (root attribute "
            f"format={fmt!r}, expected {FORMAT_NAME!r})"
        )
    version = fh.attrs.get("schema_version")
    if version is None or not np.issubdtype(np.asarray(version).dtype, np.integer):
        raise SpherecodesError(f"{path} has no integer schema_version attribute; the bank is damaged")
    if int(version) > SCHEMA_VERSION:
        raise SpherecodesError(
            f"{path} uses bank schema version {int(version)}, newer than the version {SCHEMA_VERSION} "
            f"this spherecodes ({__version__}) reads; upgrade spherecodes"
        )
    if "codes" not in fh or not isinstance(fh["codes"], h5py.Group):
        raise SpherecodesError(f"{path} has no /codes group; the bank is damaged")


def _as_str(value) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return None if value is None else str(value)


def list_codes(path) -> list[dict]:
    """Summaries of the codes in a bank, without loading their prototypes.

    Returns
    -------
    list of dict
        One per code, sorted by name, with ``name``, ``method``, ``d``, ``k``,
        ``max_cos``, ``created_utc``.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import simplex_etf
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(simplex_etf(3), method="etf"))
    >>> [c["name"] for c in list_codes(path)]
    ['etf-d2-k3']
    """
    with _open_bank(path) as fh:
        rows = []
        for name, group in fh["codes"].items():
            stats = group.get("stats")
            rows.append(
                {
                    "name": name,
                    "method": _as_str(group.attrs.get("method")),
                    "d": int(group.attrs.get("d", -1)),
                    "k": int(group.attrs.get("k", -1)),
                    "max_cos": float(stats.attrs["max_cos"]) if stats is not None else None,
                    "created_utc": _as_str(group.attrs.get("created_utc")),
                }
            )
    return sorted(rows, key=lambda row: row["name"])


def read_code(path, name: str | None = None) -> Code:
    """Read and validate one code of a bank.

    Parameters
    ----------
    path : str or Path
        The bank file.
    name : str, optional
        The code; may be omitted when the bank holds exactly one.

    Raises
    ------
    SpherecodesError
        The file is missing, not a bank, from a newer schema, the code is
        absent, or its prototypes fail validation or the checksum.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import cell_600
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(cell_600(), method="600-cell"))
    >>> code = read_code(path)
    >>> code.name, code.prototypes.shape
    ('600-cell-d4-k120', (120, 4))
    """
    with _open_bank(path) as fh:
        codes = fh["codes"]
        if name is None:
            if len(codes) != 1:
                available = ", ".join(sorted(codes)) or "none"
                raise SpherecodesError(
                    f"{path} holds {len(codes)} codes; choose one with a name (available: {available})"
                )
            name = next(iter(codes))
        if name not in codes:
            available = ", ".join(sorted(codes)) or "none"
            raise SpherecodesError(f"no code {name!r} in {path} (available: {available})")
        return _read_group(codes[name], name, path)


def _read_group(group: h5py.Group, name: str, path) -> Code:
    where = f"code {name!r} in {path}"
    if "prototypes" not in group or not isinstance(group["prototypes"], h5py.Dataset):
        raise SpherecodesError(f"{where} has no prototypes dataset; the bank is damaged")
    dataset = group["prototypes"]
    if dataset.ndim != 2 or dataset.dtype != np.float64:
        raise SpherecodesError(
            f"{where}: prototypes must be a 2-D float64 array, found {dataset.ndim}-D {dataset.dtype}"
        )
    k, d = dataset.shape
    if (group.attrs.get("k"), group.attrs.get("d")) != (k, d):
        raise SpherecodesError(
            f"{where}: prototypes have shape {(k, d)} but the attributes say "
            f"K={group.attrs.get('k')}, d={group.attrs.get('d')}; the bank is damaged"
        )
    require_memory(8.0 * k * d * 3, f"reading {where} (K={k}, d={d})")
    prototypes = dataset[()]
    stored = _as_str(group.attrs.get("sha256"))
    actual = prototype_checksum(prototypes)
    if stored != actual:
        raise SpherecodesError(
            f"{where} failed its checksum: the prototypes were modified after writing "
            f"(stored sha256 {str(stored)[:12]}..., computed {actual[:12]}...)"
        )
    try:
        validate_prototypes(prototypes)
    except SpherecodesError as err:
        raise SpherecodesError(f"{where} is invalid: {err}") from None
    labels = None
    if "labels" in group:
        labels = [_as_str(x) for x in group["labels"][()]]
        check_labels(labels, k)
    seed = group.attrs.get("seed")
    certificate = None
    if "certificate" in group:
        certificate = _read_certificate(group["certificate"], prototypes, actual, where)
    return Code(
        name=name,
        prototypes=prototypes,
        method=_as_str(group.attrs.get("method")),
        stats=_read_stats(group["stats"], k, d),
        sha256=actual,
        labels=labels,
        settings=json.loads(_as_str(group.attrs.get("settings")) or "{}"),
        seed=None if seed is None or int(seed) < 0 else int(seed),
        package_version=_as_str(group.attrs.get("package_version")),
        device=_as_str(group.attrs.get("device")),
        wall_time=float(group.attrs.get("wall_time_s", 0.0)),
        created_utc=_as_str(group.attrs.get("created_utc")),
        certificate=certificate,
    )


def _read_certificate(group: h5py.Group, prototypes: np.ndarray, sha256: str, where: str):
    """Rebuild a stored certificate; the optimal features follow from the stored supports."""
    a = group.attrs
    if _as_str(a.get("prototypes_sha256")) != sha256:
        raise SpherecodesError(f"{where}: the stored certificate belongs to other prototypes; the bank is damaged")
    indices = group["support_indices"][()]
    weights = group["support_weights"][()]
    residuals = support_residuals(prototypes, indices, weights)
    norms = np.linalg.norm(residuals, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        features = np.where(norms > 0, residuals / norms, np.nan)
    return OneVsRestCertificate(
        lo=group["lo"][()],
        hi=group["hi"][()],
        tol=float(a["tol"]),
        rattler_tol=float(a["rattler_tol"]),
        support_indices=indices,
        support_weights=weights,
        features=features,
        duplicates=[tuple(g) for g in json.loads(_as_str(a["duplicates"]))],
        rounds=int(a["rounds"]),
        device=_as_str(a["device"]),
        wall_time=float(a["wall_time_s"]),
    )


def _read_stats(group: h5py.Group, k: int, d: int) -> SeparationStats:
    a = group.attrs
    return SeparationStats(
        k=k,
        d=d,
        max_cos=float(a["max_cos"]),
        min_cos=float(a["min_cos"]),
        mean_cos=float(a["mean_cos"]),
        nearest_cos=group["nearest_cos"][()],
        nearest_index=group["nearest_index"][()],
        rattlers=group["rattlers"][()],
        rattler_tol=float(a["rattler_tol"]),
    )


# --------------------------------------------------------------------------- writing


def write_code(path, code: Code, *, overwrite: bool = False) -> None:
    """Store ``code`` in the bank at ``path``, creating the bank if needed.

    The bank is rewritten into a temporary file beside it and renamed into
    place, so the old bank survives an interruption intact.

    Parameters
    ----------
    path : str or Path
        Bank file; its directory must exist and be writable.
    code : Code
        From :func:`spherecodes.code.make_code` or :func:`read_code`.
    overwrite : bool
        Replace a code of the same name instead of refusing.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import e8_roots
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(e8_roots(), method="e8"))
    >>> write_code(path, make_code(e8_roots(), method="e8"))
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: code 'e8-d8-k240' already exists in ...; pass overwrite=True (--overwrite) to replace it
    """
    path = Path(path)
    existing = _existing_names(path)
    if code.name in existing and not overwrite:
        raise SpherecodesError(
            f"code {code.name!r} already exists in {path}; pass overwrite=True (--overwrite) to replace it"
        )
    _rewrite(path, keep=[n for n in existing if n != code.name], add=code)


def delete_code(path, name: str) -> None:
    """Remove a code from a bank (atomically; the file is compacted).

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import simplex_etf
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(simplex_etf(3), method="etf"))
    >>> delete_code(path, "etf-d2-k3")
    >>> list_codes(path)
    []
    """
    path = Path(path)
    existing = _existing_names(path, must_exist=True)
    if name not in existing:
        available = ", ".join(sorted(existing)) or "none"
        raise SpherecodesError(f"no code {name!r} in {path} (available: {available})")
    _rewrite(path, keep=[n for n in existing if n != name], add=None)


def check_writable_destination(path) -> Path:
    """Refuse a bank path whose directory is missing or not writable.

    Examples
    --------
    >>> check_writable_destination("/no/such/dir/bank.h5")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: output directory /no/such/dir does not exist; create it first or choose another --out
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SpherecodesError(
            f"output directory {directory} does not exist; create it first or choose another --out"
        )
    # Probe by creating a file: os.access answers "yes" for root even on
    # read-only mounts, and the bank is written through a temporary file anyway.
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        raise SpherecodesError(
            f"output directory {directory} is not writable ({err.strerror}); choose another --out"
        ) from None
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory; give a file name for the bank")
    return path


def _existing_names(path: Path, must_exist: bool = False) -> list[str]:
    check_writable_destination(path)
    if not path.exists() and not must_exist:
        return []
    with _open_bank(path) as fh:
        return list(fh["codes"])


def _rewrite(path: Path, keep: list[str], add: Code | None) -> None:
    """Write a new bank with the kept codes of the old one plus ``add``, then rename it over."""
    with replace_atomically(path) as tmp:
        with h5py.File(tmp, "w") as dst:
            dst.attrs["format"] = FORMAT_NAME
            dst.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
            dst.attrs["created_by"] = f"spherecodes {__version__}"
            codes = dst.create_group("codes")
            if keep:
                with _open_bank(path) as src:
                    for name in keep:
                        src.copy(src["codes"][name], codes, name=name)
            if add is not None:
                _write_group(codes.create_group(add.name), add)


def _write_group(group: h5py.Group, code: Code) -> None:
    w = code.prototypes
    compress = w.nbytes <= _COMPRESS_UP_TO_BYTES
    group.create_dataset(
        "prototypes",
        data=w,
        dtype=np.float64,
        compression="gzip" if compress else None,
        compression_opts=4 if compress else None,
        shuffle=compress,
    )
    if code.labels is not None:
        group.create_dataset("labels", data=code.labels, dtype=h5py.string_dtype("utf-8"))
    a = group.attrs
    a["method"] = code.method
    a["k"] = np.int64(code.k)
    a["d"] = np.int64(code.d)
    a["seed"] = np.int64(-1 if code.seed is None else code.seed)
    a["settings"] = json.dumps(code.settings, sort_keys=True)
    a["package_version"] = code.package_version
    a["device"] = code.device
    a["wall_time_s"] = float(code.wall_time)
    a["created_utc"] = code.created_utc
    a["sha256"] = code.sha256
    _write_stats(group.create_group("stats"), code)
    if code.certificate is not None:
        _write_certificate(group.create_group("certificate"), code)


def _write_certificate(group: h5py.Group, code: Code) -> None:
    cert = code.certificate
    if cert.k != code.k:
        raise SpherecodesError(f"the certificate has {cert.k} classes but the code has {code.k}")
    a = group.attrs
    a["prototypes_sha256"] = code.sha256
    a["rho_lower"] = cert.rho_lower
    a["rho_upper"] = cert.rho_upper
    a["width"] = cert.width
    a["tol"] = cert.tol
    a["certified"] = cert.certified
    a["rattler_tol"] = cert.rattler_tol
    a["duplicates"] = json.dumps([list(map(int, g)) for g in cert.duplicates])
    a["rounds"] = np.int64(cert.rounds)
    a["device"] = cert.device
    a["wall_time_s"] = float(cert.wall_time)
    group.create_dataset("lo", data=cert.lo)
    group.create_dataset("hi", data=cert.hi)
    group.create_dataset("softmax_rattlers", data=np.asarray(cert.softmax_rattlers, dtype=np.int64))
    # Byte shuffling before gzip: the indices are small integers and the weights
    # are padded with zeros, so grouping the bytes saves a tenth to a third.
    group.create_dataset("support_indices", data=cert.support_indices, compression="gzip", shuffle=True)
    group.create_dataset("support_weights", data=cert.support_weights, compression="gzip", shuffle=True)


def _write_stats(group: h5py.Group, code: Code) -> None:
    s = code.stats
    a = group.attrs
    a["max_cos"] = s.max_cos
    a["min_cos"] = s.min_cos
    a["mean_cos"] = s.mean_cos
    a["min_angle_deg"] = s.min_angle_deg
    for key, value in s.separation.items():
        a[f"separation_{key}"] = value
    a["rattler_tol"] = s.rattler_tol
    a["rattler_count"] = np.int64(len(s.rattlers))
    thm = theorem_3_9(code.d, code.k)
    a["theorem_3_9_applicable"] = thm.applicable
    a["theorem_3_9_lower"] = np.nan if thm.lower is None else thm.lower
    a["theorem_3_9_upper"] = np.nan if thm.upper is None else thm.upper
    bound = max_cos_lower_bound(code.d, code.k)
    a["max_cos_lower_bound"] = bound.value
    a["max_cos_lower_bound_method"] = bound.method
    optimal = known_optimal(code.d, code.k, s.max_cos)
    a["known_optimal"] = optimal.value
    a["known_optimal_reason"] = optimal.reason
    group.create_dataset("nearest_cos", data=s.nearest_cos)
    group.create_dataset("nearest_index", data=s.nearest_index)
    group.create_dataset("rattlers", data=np.asarray(s.rattlers, dtype=np.int64))
