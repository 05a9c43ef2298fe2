"""Writing a bank: a code added, codes removed, always through a new file renamed over the old one."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..atomic import check_name_fits, exclusive_lock, output_directory, replace_atomically, resolve_output
from ..bounds import known_optimal, max_cos_lower_bound, theorem_3_9
from ..code import Code
from ..errors import SpherecodesError
from ..memory import format_bytes
from ._reading import code_fields
from ._schema import FORMAT_NAME, PLAIN_SCHEMA_VERSION, hdf5_errors, open_bank, prototype_storage, schema_needed
from ._structures import write_certificate, write_orbit

__all__ = ["check_writable_destination", "delete_code", "hdf5_left_unclosed", "write_code"]


def write_code(path, code: Code, *, overwrite: bool = False, waiting=None, lock_timeout: float | None = None) -> None:
    """Store ``code`` in the bank at ``path``, creating the bank if needed (atomically: see :mod:`spherecodes.bank`).

    Parameters
    ----------
    path : str or Path
        Bank file; its directory must exist and be writable.
    code : Code
        From :func:`spherecodes.code.make_code` or :func:`read_code`.
    overwrite : bool
        Replace a code of the same name instead of refusing.
    waiting : callable, optional
        Told in one line when another spherecodes process is writing the
        bank and this one waits for it (after a second; see
        :func:`spherecodes.atomic.exclusive_lock`).
    lock_timeout : float, optional
        Most seconds to wait for that process (a run's time limit): the code
        is then refused rather than stored late.

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
    spherecodes.errors.SpherecodesError: code 'e8-d8-k240' already exists in ...; pass overwrite=True to replace it
    """
    path = resolve_output(path)
    _names_beside(path, code.name, overwrite)  # refused before the bounds are computed
    # Everything stored is computed before the temporary file exists: Ctrl-C meanwhile leaves nothing behind.
    bounds = _bounds_of(code)
    with exclusive_lock(path, waiting, timeout=lock_timeout):
        existing = _names_beside(path, code.name, overwrite)  # again: another writer may have added it
        _check_room(path, _stored_bytes(code))
        _rewrite(path, keep=[n for n in existing if n != code.name], add=(code, bounds))


def _stored_bytes(code: Code) -> int:
    """At most the bytes a code takes in a bank (uncompressed arrays and the attributes)."""
    k, d = code.prototypes.shape
    size = 8 * k * d + 3 * 8 * k + 8 * len(code.stats.rattlers) + 2**16
    if code.labels is not None:
        size += sum(len(label.encode("utf-8")) + 16 for label in code.labels)
    if code.certificate is not None:
        cert = code.certificate
        size += 3 * 8 * k + cert.support_indices.nbytes + cert.support_weights.nbytes
    if code.orbit is not None:
        size += code.orbit.generators.size
    return size


def _check_room(path: Path, adding: int) -> None:
    """Refuse, before writing, a new bank that would not fit the disk or the file-size limit (``ulimit -f``).

    The new bank is written beside the old one, so it needs room for the old one's codes plus the new code
    (uncompressed: an upper bound).  Writing would stop at the first byte that does not fit; this says so first.
    """
    needed = (path.stat().st_size if path.exists() else 0) + adding
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and needed > limit:
        raise SpherecodesError(
            f"cannot write {path}: the new bank may take up to {format_bytes(needed)}, more than the file-size "
            f"limit of this process ({format_bytes(limit)}, ulimit -f); it is unchanged"
        )
    try:
        info = os.statvfs(path.parent)
    except OSError:
        return
    free = info.f_bavail * info.f_frsize
    if needed > free:
        raise SpherecodesError(
            f"cannot write {path}: the new bank may take up to {format_bytes(needed)} but only {format_bytes(free)} "
            f"are free in {path.parent}; it is unchanged"
        )


def _names_beside(path: Path, name: str, overwrite: bool) -> list[str]:
    """The codes of the bank at ``path``, after refusing ``name`` among them unless ``overwrite``."""
    existing = _existing_names(path)
    if name in existing and not overwrite:
        raise SpherecodesError(
            f"code {name!r} already exists in {path}; pass overwrite=True to replace it",
            flags={"overwrite=True": "--overwrite"},
        )
    return existing


def delete_code(path, name, *, waiting=None) -> None:
    """Remove a code, or several, from a bank (atomically; the file is compacted).

    ``name`` is a code's name or a list of names, all removed in one rewrite.  The codes removed are not checked,
    so a damaged entry can be removed; the codes kept are copied and must be sound.  ``waiting`` is as for
    :func:`write_code`.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import simplex_etf
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(simplex_etf(3), method="etf"))
    >>> delete_code(path, "etf-d2-k3")
    >>> from spherecodes.bank import list_codes
    >>> list_codes(path)
    []
    """
    path = resolve_output(path)
    check_writable_destination(path)
    with exclusive_lock(path, waiting):
        names = [name] if isinstance(name, str) else list(name)
        existing = _existing_names(path, must_exist=True, removing=set(names))
        for missing in (n for n in names if n not in existing):
            available = ", ".join(sorted(existing)) or "none"
            raise SpherecodesError(f"no code {missing!r} in {path} (available: {available})")
        _check_room(path, 0)
        _rewrite(path, keep=[n for n in existing if n not in names], add=None)


def check_writable_destination(path, fix: str = "choose another --out") -> Path:
    """Refuse a bank path whose directory is missing or not writable; ``fix`` ends the message.

    Examples
    --------
    >>> check_writable_destination("/no/such/dir/bank.h5")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: directory /no/such/dir does not exist; create it first or choose another --out
    """
    path = Path(path)
    directory = output_directory(path, fix)
    # Probe by creating a file: os.access answers "yes" for root even on
    # read-only mounts, and the bank is written through a temporary file anyway.
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        raise SpherecodesError(
            f"output directory {directory} is not writable ({err.strerror}); {fix}"
        ) from None
    check_name_fits(path)
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory; give a file name for the bank")
    # The bank is written beside it and renamed over it, which a read-only file does not stop: ask first.
    if path.is_file() and not os.access(path, os.W_OK):
        raise SpherecodesError(f"{path} is read-only; make it writable (chmod u+w) to change it, or {fix}")
    return path


def _existing_names(path: Path, must_exist: bool = False, removing: frozenset | set = frozenset()) -> list[str]:
    check_writable_destination(path)
    if not path.exists() and not must_exist:
        return []
    with hdf5_errors(path), open_bank(path) as fh:
        for name in fh["codes"]:
            # Copied codes must be sound, each stored once; one being removed is not copied, so a damaged one can go.
            if name not in removing:
                code_fields(fh["codes"], name, path)
        return list(fh["codes"])


def _rewrite(path: Path, keep: list[str], add: tuple[Code, dict] | None) -> None:
    """Write a new bank with the kept codes of the old one plus ``add``, then rename it over."""
    with replace_atomically(path) as tmp:
        failed = None
        open_before = h5py.h5f.get_obj_count()
        with _quiet_h5py_cleanup():
            try:
                _write_bank(tmp, path, keep, add)
            except OSError as err:
                # A full disk or the file-size limit: a fresh exception, so that no traceback keeps the
                # half-written file's objects alive; they are freed below, while their errors are silenced.
                failed = OSError(err.errno, str(err))
            if failed is not None:
                gc.collect()
        if failed is not None and h5py.h5f.get_obj_count() > open_before:
            _UNCLOSED.append(tmp)  # HDF5 could not flush, so could not close, what it had written
        if failed is not None:
            raise failed  # replace_atomically reports it in one line and leaves the bank unchanged


#: Temporary files whose writing failed inside HDF5: the library cannot close them (see hdf5_left_unclosed).
_UNCLOSED: list[Path] = []


def hdf5_left_unclosed() -> bool:
    """Whether a bank write failed inside HDF5 (a disk that filled up while it was written) in this process.

    HDF5 then cannot close the half-written temporary file (it is removed and the bank is unchanged), and its
    clean-up at interpreter exit crashes on it (HDF5 1.14, h5py 3.16): a command-line tool that reported the
    failure should end with ``os._exit``, skipping that clean-up.

    Examples
    --------
    >>> hdf5_left_unclosed()
    False
    """
    return bool(_UNCLOSED)


@contextlib.contextmanager
def _quiet_h5py_cleanup():
    """Silence what h5py prints as each object of a file whose writing failed is freed (one error per object)."""
    previous, previous_print = sys.unraisablehook, sys.excepthook

    def from_h5py(exc_type, exc_value, where) -> bool:
        return issubclass(exc_type, (OSError, RuntimeError)) and "h5py" in where

    def hook(unraisable):
        if not from_h5py(unraisable.exc_type, unraisable.exc_value, str(unraisable.object)):
            previous(unraisable)

    def print_hook(exc_type, exc_value, tb):  # h5py's freeing code prints the traceback itself first
        import traceback

        if not from_h5py(exc_type, exc_value, "".join(traceback.format_tb(tb))):
            previous_print(exc_type, exc_value, tb)

    sys.unraisablehook, sys.excepthook = hook, print_hook
    try:
        yield
    finally:
        sys.unraisablehook, sys.excepthook = previous, previous_print


def _write_bank(tmp: Path, path: Path, keep: list[str], add: tuple[Code, dict] | None) -> None:
    """The new bank in ``tmp``: the codes ``keep`` of the bank at ``path``, and ``add``."""
    with h5py.File(tmp, "w") as dst:
        dst.attrs["format"] = FORMAT_NAME
        dst.attrs["created_by"] = f"spherecodes {__version__}"
        codes = dst.create_group("codes")
        if keep:
            with open_bank(path) as src:
                for name in keep:
                    src.copy(src["codes"][name], codes, name=name)
        if add is not None:
            code, bounds = add
            _write_group(codes.create_group(code.name), code, bounds)
        # Versions 2 to 5 only where they are needed, so that older readers keep reading every other bank.
        dst.attrs["schema_version"] = np.int64(max((schema_needed(codes[name]) for name in codes),
                                                   default=PLAIN_SCHEMA_VERSION))


def _write_group(group: h5py.Group, code: Code, bounds: dict) -> None:
    w = code.prototypes
    group.create_dataset("prototypes", data=w, **prototype_storage(*w.shape))
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
    _write_stats(group.create_group("stats"), code, bounds)
    if code.orbit is not None:
        write_orbit(group.create_group("orbit"), code.orbit)
    if code.certificate is not None:
        write_certificate(group.create_group("certificate"), code)


def _bounds_of(code: Code) -> dict:
    """The bounds stored beside a code's statistics (the LP bound can take seconds: computed before writing)."""
    thm = theorem_3_9(code.d, code.k)
    bound = max_cos_lower_bound(code.d, code.k)
    optimal = known_optimal(code.d, code.k, code.stats.max_cos)
    return {
        "theorem_3_9_applicable": thm.applicable,
        "theorem_3_9_lower": np.nan if thm.lower is None else thm.lower,
        "theorem_3_9_upper": np.nan if thm.upper is None else thm.upper,
        "rho_upper_bound": thm.best_upper,
        "rho_upper_bound_by": thm.best_upper_by,
        "max_cos_lower_bound": bound.value,
        "max_cos_lower_bound_method": bound.method,
        "known_optimal": optimal.value,
        "known_optimal_reason": optimal.reason,
    }


def _write_stats(group: h5py.Group, code: Code, bounds: dict) -> None:
    s = code.stats
    a = group.attrs
    for name in ("max_cos", "min_cos", "mean_cos", "min_angle_deg"):
        a[name] = getattr(s, name)
    for key, value in s.separation.items():
        a[f"separation_{key}"] = value
    a["rattler_tol"] = s.rattler_tol
    a["rattler_count"] = np.int64(len(s.rattlers))
    for key, value in bounds.items():
        a[key] = value
    group.create_dataset("nearest_cos", data=s.nearest_cos)
    group.create_dataset("nearest_index", data=s.nearest_index)
    group.create_dataset("rattlers", data=np.asarray(s.rattlers, dtype=np.int64))
