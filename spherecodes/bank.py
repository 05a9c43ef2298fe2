"""Banks: self-describing HDF5 files that hold one or more codes.

Layout (schema version 2; ``docs/bank-format.md`` is the full reference)::

    /                        attrs: format="spherecodes-bank", schema_version=1 or 2, created_by
    /codes/<name>/           attrs: method, k, d, seed, settings (JSON), package_version,
                                    device, wall_time_s, created_utc, sha256
    /codes/<name>/prototypes float64 (K, d), unit rows
    /codes/<name>/labels     UTF-8 strings (K,), optional
    /codes/<name>/stats/     attrs: the scalar statistics and bounds
                             datasets: nearest_cos (K,), nearest_index (K,), rattlers (n,)
    /codes/<name>/orbit/     optional: generators (⌈log2 K⌉, d) of the sign changes of which the code is one
                             orbit (K = 2^r) or the first K words of one; or, with attribute group="Z4
                             translations", quaternary generators (⌈log2 K⌉, N) and the column pairs (N, 2)
    /codes/<name>/certificate/  optional: lo, hi (K,), the witnesses (K, s), or class 0's (1, s) for an orbit

A bank is written as schema version 2 only when one of its certificates keeps
class 0's witness alone (which a version-1 reader would take for damage).

Every change goes to a temporary file in the bank's directory that is renamed
over the bank only once complete, so an interrupted write leaves the old bank
as it was.  Changes hold an advisory lock on the bank from reading it to the
rename, so that concurrent writers (two ``generate --out`` into one bank, an
``rm`` beside them) take turns and none undoes another's change.  Reading
checks the format, the schema version, shapes, finiteness, unit rows and the
SHA-256 of the prototype bytes, and refuses anything else.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import resource
import stat
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .atomic import check_name_fits, exclusive_lock, output_directory, replace_atomically, resolve_output
from .bounds import known_optimal, max_cos_lower_bound, theorem_3_9
from .certificate import (
    SHELL_BLOCK_BYTES, OneVsRestCertificate, prefix_bytes, support_residuals, verify_witness, z4_bytes,
)
from .checks import SEED_LIMIT
from .code import Code, check_labels, prototype_checksum
from .errors import SpherecodesError
from .inputs import read_json
from .memory import Estimate, format_bytes, memory_limit, process_peak, require_memory
from .orbit import OrbitPrefix, SignOrbit, orbit_prefix, resolve_orbit, sign_orbit
from .rotated import ROTATION_KIND, Rotated, rotated_structure
from .stats import SeparationStats, validate_prototypes
from .z4orbit import Z4Orbit, z4_orbit

FORMAT_NAME = "spherecodes-bank"
SCHEMA_VERSION = 5

#: The schema version of a bank with an orbit of Z4 translations, and no structured code turned by a rotation.
Z4_SCHEMA_VERSION = 4

#: The schema version of a bank none of whose certificates keeps class 0's witness alone.
PLAIN_SCHEMA_VERSION = 1

#: The schema version of a bank with a certificate that keeps class 0's witness of an orbit, and no prefix.
ORBIT_SCHEMA_VERSION = 2

#: The schema version of a bank with the first K words of an orbit of sign changes, and no orbit of Z4 translations.
PREFIX_SCHEMA_VERSION = 3

#: ``orbit`` attribute ``group`` of a code that is (the first K words of) an orbit of Z4 translations (a Kerdock code).
Z4_GROUP = "Z4 translations"

#: ``certificate`` attribute ``witness`` of a certificate that keeps class 0's
#: witness alone, every other class's being its image under the code's orbit.
ORBIT_WITNESS = "class 0, moved by the orbit"

#: ``certificate`` attribute ``witness`` of the certificate of the first K
#: words of an orbit: the whole orbit's class 0's witness (words of the
#: orbit), moved to each class where it stays among the rows, else the
#: class's ``nearest`` row.
PREFIX_WITNESS = "class 0 of the whole orbit, moved where it stays among the rows, else the nearest row"

#: ``certificate`` attribute ``witness`` of the certificate of (the first K
#: words of) an orbit of Z4 translations: witnesses of the whole orbit's
#: class 0, each class taking one moved (``nearest`` −1 − j) or its nearest row.
Z4_WITNESS = "witnesses of class 0 of the whole orbit of Z4 translations, moved where they stay among the rows, else " \
             "the nearest row"

#: The structure each kind of certificate that keeps class 0's witness needs, and its name in messages.
_WITNESS_STRUCTURES = {ORBIT_WITNESS: (SignOrbit, "one orbit of sign changes"),
                       PREFIX_WITNESS: (OrbitPrefix, "the first K words of an orbit of sign changes"),
                       Z4_WITNESS: (Z4Orbit, "(the first K words of) an orbit of Z4 translations")}

#: Rows checked at a time when a code is read (unit norms, nearest cosines): 64 MiB at d = 128.
_READ_ROWS = 65536

# Gzip with byte shuffling shrinks float64 prototypes well; beyond this size the
# compression time outweighs the disk saved, so large codes are stored plain.
_COMPRESS_UP_TO_BYTES = 512 * 2**20


# --------------------------------------------------------------------------- reading


def _open_bank(path) -> h5py.File:
    """Open an existing bank read-only after checking that it is one this version reads."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SpherecodesError(f"no such bank file: {path}") from None
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if stat.S_ISDIR(info.st_mode):
        raise SpherecodesError(f"{path} is a directory, not a bank file")
    if not stat.S_ISREG(info.st_mode):
        raise SpherecodesError(f"{path} is not a regular file (a fifo, device or socket); a bank is an HDF5 file")
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
    try:
        fmt = _as_str(fh.attrs.get("format"))
        version = fh.attrs.get("schema_version")
    except (OSError, TypeError, ValueError, UnicodeDecodeError):
        fmt, version = None, None
    if fmt != FORMAT_NAME:
        raise SpherecodesError(
            f"{path} is an HDF5 file but not a spherecodes bank (root attribute "
            f"format={fmt!r}, expected {FORMAT_NAME!r})"
        )
    if version is None or not np.issubdtype(np.asarray(version).dtype, np.integer) or np.ndim(version) != 0:
        raise SpherecodesError(f"{path} has no integer schema_version attribute; the bank is damaged")
    if int(version) < 1:
        raise SpherecodesError(f"{path} has schema_version {int(version)}; versions start at 1, the bank is damaged")
    if int(version) > SCHEMA_VERSION:
        raise SpherecodesError(
            f"{path} uses bank schema version {int(version)}, newer than the version {SCHEMA_VERSION} "
            f"this spherecodes ({__version__}) reads; upgrade spherecodes"
        )
    if not isinstance(fh.get("codes", getlink=True), h5py.HardLink) or not isinstance(fh["codes"], h5py.Group):
        raise SpherecodesError(f"{path} has no /codes group; the bank is damaged")


@contextlib.contextmanager
def _reading(path):
    """Turn what HDF5 raises on a damaged file (structures it cannot parse, bytes that are not text) into one line."""
    try:
        yield
    except SpherecodesError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as err:
        first = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise SpherecodesError(f"{path} is damaged: HDF5 cannot read it ({first})") from None


def _as_str(value) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return None if value is None else str(value)


def _shown(value) -> str:
    """A stored value as one short line, for messages."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "..."


#: Marks an attribute without a default (it must be present).
_REQUIRED = object()
_KIND_NAMES = {"f": "floating-point numbers", "iu": "integers", "OSU": "text"}


class _Fields:
    """Reads the datasets and attributes of one code, each checked; errors name the one at fault.

    A bank may come from anywhere, so nothing is taken on trust: every member
    must be stored in the bank file itself (no soft or external link, no
    external or virtual storage), have the type and shape it should, and hold
    finite numbers where numbers are meant.
    """

    def __init__(self, group: h5py.Group, where: str, prefix: str = ""):
        self.group = group
        self.where = where
        self.prefix = prefix  # the group's path inside the code, for messages

    def damaged(self, field: str, problem: str) -> SpherecodesError:
        return SpherecodesError(f"{self.where}: {field} {problem}; the bank is damaged")

    def member(self, name: str):
        link = self.group.get(name, getlink=True)
        if link is None:
            raise self.damaged(self.prefix + name, "is missing")
        if not isinstance(link, h5py.HardLink):
            raise self.damaged(self.prefix + name, "is a link to elsewhere, not stored in the bank")
        return self.group[name]

    def has(self, name: str) -> bool:
        return self.group.get(name, getlink=True) is not None

    def subgroup(self, name: str) -> "_Fields":
        obj = self.member(name)
        if not isinstance(obj, h5py.Group):
            raise self.damaged(self.prefix + name, "is not a group")
        return _Fields(obj, self.where, f"{name}/")

    def array(self, name: str, kinds: str, shape: tuple, copies: int = 2, *,
              compressed_up_to: float = math.inf) -> np.ndarray:
        """Dataset ``name`` with a dtype kind in ``kinds`` and ``shape`` (``None`` entries: any length).

        Its declared size is checked before anything is read (:meth:`dataset`)
        and against the memory free (``copies`` arrays of its size: how many
        the caller's use of it needs; a caller that counted its memory already
        passes 1).
        """
        field = self.prefix + name
        obj = self.dataset(name, kinds, shape, compressed_up_to=compressed_up_to)
        require_memory(copies * obj.size * obj.dtype.itemsize, f"reading {field} of {self.where}")
        try:
            data = obj[()]
        except (OSError, ValueError, TypeError) as err:
            raise self.damaged(field, f"cannot be read ({str(err).splitlines()[0][:120]})") from None
        if data.dtype.kind == "f" and not all(np.isfinite(data[start : start + _READ_ROWS]).all()
                                              for start in range(0, max(1, len(data)), _READ_ROWS)):
            raise self.damaged(field, "holds NaN or infinity")
        return data

    def dataset(self, name: str, kinds: str, shape: tuple, *, compressed_up_to: float = math.inf) -> h5py.Dataset:
        """Dataset ``name``, unread, after checking where it is stored, its dtype kind and shape (as :meth:`array`),
        and its declared size against the bytes the file really stores for it and, stored compressed, against
        ``compressed_up_to`` bytes."""
        field = self.prefix + name
        obj = self.member(name)
        if not isinstance(obj, h5py.Dataset):
            raise self.damaged(field, "is not a dataset")
        if obj.is_virtual or obj.external:
            raise self.damaged(field, "is stored outside the bank file (external or virtual storage)")
        if obj.dtype.kind not in kinds:
            raise self.damaged(field, f"holds {obj.dtype} values; expected {_KIND_NAMES[kinds]}")
        if len(obj.shape) != len(shape) or any(want is not None and got != want for got, want in zip(obj.shape, shape)):
            expected = "(" + ", ".join("n" if n is None else str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
            raise self.damaged(field, f"has shape {obj.shape}; expected {expected}")
        nbytes = obj.size * obj.dtype.itemsize
        if obj.id.get_create_plist().get_nfilters() > 0:
            # A few kilobytes of gzip can stand for gigabytes of zeros: decompressing them is the cost.
            if nbytes > compressed_up_to:
                raise self.damaged(field, f"are stored compressed although they take {format_bytes(nbytes)}; "
                                   f"spherecodes stores them uncompressed beyond {format_bytes(compressed_up_to)}, "
                                   "so they are not decompressed")
        elif obj.dtype.kind in "iuf" and obj.id.get_storage_size() < nbytes:
            # Never written: HDF5 would hand out its fill value for the missing bytes, a sparse file's trick.
            raise self.damaged(field, f"declare shape {obj.shape} ({format_bytes(nbytes)}) but the file stores only "
                               f"{format_bytes(obj.id.get_storage_size())} of them")
        return obj

    def attr(self, key: str, kind: str, default=_REQUIRED):
        """Attribute ``key`` as a float (finite), int or str; ``default`` when it is absent (else required)."""
        field = self.prefix + key
        if key not in self.group.attrs:
            if default is _REQUIRED:
                raise self.damaged(f"attribute {field}", "is missing")
            return default
        try:
            value = self.group.attrs[key]
        except (OSError, TypeError, ValueError) as err:
            raise self.damaged(f"attribute {field}", f"cannot be read ({err})") from None
        if kind == "str":
            if isinstance(value, (bytes, str)):
                try:
                    return _as_str(value)
                except UnicodeDecodeError:
                    pass
            raise self.damaged(f"attribute {field}", f"must be UTF-8 text, found {_shown(value)}")
        if np.ndim(value) != 0 or isinstance(value, (bool, np.bool_, str, bytes)):
            raise self.damaged(f"attribute {field}", f"must be a number, found {_shown(value)}")
        if kind == "int":
            if not isinstance(value, (int, np.integer)):
                raise self.damaged(f"attribute {field}", f"must be an integer, found {_shown(value)}")
            return int(value)
        if not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
            raise self.damaged(f"attribute {field}", f"must be a finite number, found {_shown(value)}")
        return float(value)


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
    with _reading(path), _open_bank(path) as fh:
        rows = []
        for name in fh["codes"]:
            fields = _code_fields(fh["codes"], name, path)
            rows.append(
                {
                    "name": name,
                    "method": fields.attr("method", "str"),
                    "d": fields.attr("d", "int"),
                    "k": fields.attr("k", "int"),
                    "max_cos": fields.subgroup("stats").attr("max_cos", "float"),
                    "created_utc": fields.attr("created_utc", "str", ""),
                }
            )
    return sorted(rows, key=lambda row: row["name"])


def _code_fields(codes: h5py.Group, name: str, path) -> _Fields:
    """The checked group of the code ``name``: stored in the bank, a group, each member under one name."""
    try:
        return _code_group(codes, name, path)
    except SpherecodesError as err:
        # The entry itself is damaged: say how to get the rest of the bank back.
        raise SpherecodesError(f"{err} ('spherecodes rm {path} --code {name}' removes that code and keeps the "
                               "others; repeat --code to remove several)") from None


def _code_group(codes: h5py.Group, name: str, path) -> _Fields:
    fields = _Fields(codes, f"code {name!r} in {path}")
    group = fields.member(name)
    if not isinstance(group, h5py.Group):
        raise fields.damaged("its entry in /codes", "is not a group")
    # HDF5 hard links: one stored group or dataset under many names, which a rewrite of the bank would copy once
    # each (a 1 MB bank naming one code 10,000 times became 180 MB).
    members = [("its group", group)]
    group.visititems(lambda member, obj: members.append((member, obj)) and None)
    for field, obj in members:
        names = h5py.h5o.get_info(obj.id).rc
        if names > 1:
            raise fields.damaged(field, f"is stored once under {names} names (hard links); each code has its own data")
    return _Fields(group, fields.where)


def read_code(path, name: str | None = None, *, verify_certificate: bool = True,
              max_memory: float | None = None) -> Code:
    """Read and validate one code of a bank.

    Every dataset and attribute is checked before it is used, the prototypes
    against their SHA-256, the statistics against the prototypes, and a stored
    certificate against its witness
    (:func:`spherecodes.certificate.verify_witness`): the intervals must
    follow from the stored prototypes and supports.

    Parameters
    ----------
    path : str or Path
        The bank file.
    name : str, optional
        The code; may be omitted when the bank holds exactly one.
    verify_certificate : bool
        Check a stored certificate against its witness (one pass over all
        pairs of prototypes; for a code that is one orbit of sign changes,
        one class against all).  Turn off only to replace the certificate.
    max_memory : float, optional
        Bytes that reading and checking may use (``--max-memory``);
        :func:`read_estimate` says how many it takes.

    Raises
    ------
    SpherecodesError
        The file is missing, not a bank, from a newer schema, the code is
        absent, a field is missing or damaged (the message names it), the
        prototypes fail validation or the checksum, or the certificate does
        not check.

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
    with _reading(path), _open_bank(path) as fh:
        fields = _select(fh["codes"], name, path)
        name = fields.group.name.rsplit("/", 1)[-1]
        code = _read_group(fields, name, max_memory)
    if verify_certificate and code.certificate is not None:
        verify_witness(code.prototypes, code.certificate, where=f"code {name!r} in {path}", orbit=code.orbit)
    return code


#: How a bank of several codes asks for a name; the command line names its own option for it.
CHOOSE_BY_NAME = "choose one with a name"


def _select(codes: h5py.Group, name: str | None, path) -> _Fields:
    """The fields of the code ``name`` (or of the only code) in a bank's /codes group."""
    if name is None:
        if not len(codes):
            raise SpherecodesError(f"{path} holds no codes ('spherecodes generate --out {path}' adds one)")
        if len(codes) != 1:
            available = ", ".join(sorted(codes)) or "none"
            raise SpherecodesError(
                f"{path} holds {len(codes)} codes; choose one with a name (available: {available})",
                flags={CHOOSE_BY_NAME: "choose one with --code NAME"},
            )
        name = next(iter(codes))
    if name not in codes:
        available = ", ".join(sorted(codes)) or "none"
        raise SpherecodesError(f"no code {name!r} in {path} (available: {available})")
    return _code_fields(codes, name, path)


def _read_group(fields: _Fields, name: str, max_memory: float | None = None) -> Code:
    where = fields.where
    k, d = _shape(fields)
    require_memory(_read_bytes(fields, k, d), f"reading {where} (K={k}, d={d})", limit=max_memory)
    prototypes = fields.array("prototypes", "f", (k, d), copies=1, compressed_up_to=_COMPRESS_UP_TO_BYTES)
    if prototypes.dtype != np.float64:
        raise fields.damaged("prototypes", f"must be float64, found {prototypes.dtype}")
    stored = fields.attr("sha256", "str")
    actual = prototype_checksum(prototypes)
    if stored != actual:
        raise SpherecodesError(
            f"{where} failed its checksum: the prototypes were modified after writing "
            f"(stored sha256 {str(stored)[:12]}..., computed {actual[:12]}...)"
        )
    try:
        validate_prototypes(prototypes, copy=False)
    except SpherecodesError as err:
        raise SpherecodesError(f"{where} is invalid: {err}") from None
    orbit = _read_orbit(fields, prototypes)
    labels = None
    if fields.has("labels"):
        raw = fields.array("labels", "OSU", (k,))
        try:
            labels = [_as_str(x) for x in raw]
        except UnicodeDecodeError:
            raise fields.damaged("labels", "must be UTF-8 text") from None
        try:
            check_labels(labels, k)
        except SpherecodesError as err:
            raise fields.damaged("labels", f"are invalid ({err})") from None
    seed = fields.attr("seed", "int", -1)
    if not -1 <= seed < SEED_LIMIT:
        raise fields.damaged("attribute seed", f"is {seed}; a seed lies in [0, 2**63) (-1: none)")
    try:  # settings may record NaN or infinity (a run's energy, say): JSON as Python writes it
        settings = read_json(fields.attr("settings", "str", "{}"), "its settings", finite=False)
    except SpherecodesError as err:
        raise fields.damaged("attribute settings", f"is not readable JSON ({err})") from None
    if not isinstance(settings, dict):
        raise fields.damaged("attribute settings", f"must be a JSON object, found {type(settings).__name__}")
    wall_time = fields.attr("wall_time_s", "float", 0.0)
    certificate = _read_certificate(fields.subgroup("certificate"), prototypes, actual, orbit) \
        if fields.has("certificate") else None
    return Code(
        name=name,
        prototypes=prototypes,
        method=fields.attr("method", "str"),
        stats=_read_stats(fields.subgroup("stats"), prototypes),
        sha256=actual,
        labels=labels,
        settings=settings,
        seed=None if seed < 0 else seed,
        package_version=fields.attr("package_version", "str", ""),
        device=fields.attr("device", "str", ""),
        wall_time=wall_time,
        created_utc=fields.attr("created_utc", "str", ""),
        certificate=certificate,
        orbit=orbit,
    )


def _read_bytes(fields: _Fields, k: int, d: int) -> float:
    """Peak bytes of reading one code and checking it, from the shapes stored (nothing is read).

    The prototypes, the statistics and the blocks of rows checked at a
    time; for a certificate its witnesses and the features they give (for
    a generic code also the residuals and directions its check takes, each
    (K, d)); for an orbit the packed sign patterns and the coordinates; and
    the lists of per-class numbers a report holds.
    """
    rows = min(k, _READ_ROWS)
    nbytes = 8.0 * k * d + 8.0 * 6 * k + 4.0 * 8 * rows * d + 128.0 * k
    words = 8.0 * k * (-(-d // 64))
    nbytes += 3 * words + 8.0 * 3 * k  # the orbit's sign patterns, their combination, coordinates
    if fields.has("certificate"):
        certificate = fields.subgroup("certificate")
        support = certificate.member("support_indices")
        s = support.shape[-1] if isinstance(support, h5py.Dataset) and support.ndim == 2 else 0
        witness = certificate.attr("witness", "str", "")
        if witness == ORBIT_WITNESS:
            nbytes += 8.0 * 4 * k + 16.0 * s + 8.0 * 2 * d
        elif witness == PREFIX_WITNESS:
            # The tree of nearest rows over the 2^t words (< 2K), the per-class bounds, and their blocks.
            nbytes += prefix_bytes(k, d, 2 * k, None)
        elif witness == Z4_WITNESS:
            nbytes += z4_bytes(k, d, 2 * k, SHELL_BLOCK_BYTES) + 16.0 * k * s + 4.0 * k * d  # and the rows' symbols
        else:
            nbytes += 16.0 * k * s + 8.0 * 4 * k * d + 8.0 * 4 * k
    return nbytes


def read_estimate(path, name: str | None = None, *, max_memory: float | None = None,
                  statistics: bool = False) -> Estimate:
    """Memory and time that :func:`read_code` of a code (checks and certificate included) is expected to take.

    With ``statistics``, also recomputing its statistics from the rows
    (:func:`spherecodes.claims.check_claims`): through the stored orbit in
    O(K·d), else over all pairs.

    The memory follows from the stored shapes (nothing large is read); the
    time is measured on a sample: a block of rows read, hashed and checked,
    scaled to K and, for a generic certificate, one tile of the product with
    all K prototypes that its check takes, scaled to K².  A code that does
    not fit ``max_memory`` (or a safe fraction of the free memory) is
    refused here, before anything large is read.

    Examples
    --------
    The E8 root system (240 classes, no certificate stored), read within 1 GiB:

    >>> from pathlib import Path
    >>> from tempfile import mkdtemp
    >>> from spherecodes.code import make_code
    >>> from spherecodes.constructions import e8_roots
    >>> bank = Path(mkdtemp()) / "e8.h5"
    >>> write_code(bank, make_code(e8_roots(), method="e8"))
    >>> expected = read_estimate(bank, max_memory=2**30)
    >>> expected.what, expected.limit == 2**30
    ("reading code 'e8-d8-k240' (K = 240, d = 8): checksum, unit rows and statistics", True)
    """
    with _reading(path), _open_bank(path) as fh:
        fields = _select(fh["codes"], name, path)
        k, d = _shape(fields)
        # Checked as the reader will check it: a damaged bank is refused before its size is estimated (or sampled).
        prototypes = fields.dataset("prototypes", "f", (k, d), compressed_up_to=_COMPRESS_UP_TO_BYTES)
        needed = _read_bytes(fields, k, d)
        nbytes = process_peak(needed)
        limit = memory_limit("cpu", max_memory)
        what = (f"reading code {fields.group.name.rsplit('/', 1)[-1]!r} (K = {k}, d = {d}): checksum, unit rows "
                "and statistics")
        certified = fields.has("certificate")
        witness = fields.subgroup("certificate").attr("witness", "str", "") if certified else ""
        by_orbit = witness in (ORBIT_WITNESS, PREFIX_WITNESS, Z4_WITNESS)
        if certified:
            what += (", the orbit's generators and the certificate (class 0 against all K)" if witness == ORBIT_WITNESS
                     else ", the orbit's generators and the certificate (class 0 of the whole orbit against its "
                     "words, O(K·d))" if by_orbit else ", and the certificate (every class against all K)")
        require_memory(needed, what, limit=max_memory)
        rows = min(k, _READ_ROWS)
        started = time.perf_counter()
        sample = prototypes[:rows]
        prototype_checksum(sample)
        np.linalg.norm(sample, axis=1)
        # The rows are read, hashed and checked, then passed over again by the orbit's and statistics' checks.
        seconds = 3.0 * (time.perf_counter() - started) * k / rows
        columns = min(k, 4096)
        started = time.perf_counter()
        _ = sample[: min(rows, 512)] @ sample[:columns].T
        all_pairs = (time.perf_counter() - started) * (k / min(rows, 512)) * (k / columns)
        if certified and not by_orbit:
            seconds += all_pairs
        if statistics:
            orbit = fields.has("orbit")
            what += ("; the statistics recomputed through the orbit, O(K·d)" if orbit
                     else "; the statistics recomputed from all pairs")
            seconds += seconds / 3 if orbit else all_pairs / 2
    return Estimate(what, "cpu", nbytes, limit, seconds)


def _shape(fields: _Fields) -> tuple[int, int]:
    """(K, d) of a code's prototypes, checked against its attributes, without reading them."""
    dataset = fields.member("prototypes")
    if not isinstance(dataset, h5py.Dataset) or dataset.ndim != 2:
        raise fields.damaged("prototypes", "must be a 2-D dataset")
    k, d = dataset.shape
    if (fields.attr("k", "int"), fields.attr("d", "int")) != (k, d):
        raise fields.damaged("prototypes", f"have shape {(k, d)} but the attributes say "
                             f"K={fields.attr('k', 'int')}, d={fields.attr('d', 'int')}")
    return k, d


def _read_orbit(fields: _Fields, prototypes: np.ndarray):
    """The code's structure: checked from the stored generators, else proved from the rows, else None.

    Stored generators are a claim like any other: the rows must be exactly
    the orbit they generate (:func:`spherecodes.orbit.sign_orbit`, O(K·d)),
    or, for K not a power of two, its first K words in the order of their
    messages (:func:`spherecodes.orbit.orbit_prefix`, O(K·d)), or the first
    K words of an orbit of Z4 translations (:func:`spherecodes.z4orbit.z4_orbit`).
    With a ``rotation_seed``, the structure is that of the rows turned back
    by that rotation (:func:`spherecodes.rotated.rotated_structure`, one
    product O(K·d²)).  A bank written before generators were stored has its
    orbit proved.
    """
    k, d = prototypes.shape
    if not fields.has("orbit"):
        return resolve_orbit(prototypes)
    group = fields.subgroup("orbit")
    if group.attr("group", "str", "") == Z4_GROUP:
        generators = group.array("generators", "iu", ((k - 1).bit_length(), None))
        pairs = group.array("pairs", "iu", (None, 2))

        def prove(rows):
            return z4_orbit(rows, generators, pairs)

        what = "first K words, in order, of the orbit of row 0 under these Z4 translations"
    else:
        whole = k & (k - 1) == 0
        # ⌈log2 K⌉ generators (r for K = 2^r): a taller (compressed) array would only cost decompressing it.
        generators = group.array("generators", "iu", ((k - 1).bit_length(), d))

        def prove(rows):
            return sign_orbit(rows, generators) if whole else orbit_prefix(rows, generators)

        what = ("orbit of row 0" if whole else "first K words, in order, of the orbit of row 0") + \
            " under these sign changes"
    seed = group.attr("rotation_seed", "int", None)
    if seed is not None:
        if not 0 <= seed < SEED_LIMIT:
            raise fields.damaged("attribute orbit/rotation_seed", f"is {seed}; a seed lies in [0, 2**63)")
        orbit = rotated_structure(prototypes, seed, prove)
        if orbit is None:
            raise fields.damaged("orbit", f"does not describe the prototypes: turned back by the rotation of seed "
                                 f"{seed}, the rows are not exactly the {what}")
        return orbit
    orbit = prove(prototypes)
    if orbit is None:
        raise fields.damaged("orbit/generators", f"do not generate the prototypes: the rows are not exactly the "
                             f"{what}")
    return orbit


def _read_certificate(fields: _Fields, prototypes: np.ndarray, sha256: str, orbit) -> OneVsRestCertificate:
    """Rebuild a stored certificate; the optimal features follow from the stored supports."""
    k = prototypes.shape[0]
    if fields.attr("prototypes_sha256", "str") != sha256:
        raise fields.damaged("certificate", "belongs to other prototypes")
    witness = fields.attr("witness", "str", "")
    if witness not in ("", ORBIT_WITNESS, PREFIX_WITNESS, Z4_WITNESS):
        raise fields.damaged("attribute certificate/witness", f"is {_shown(witness)}; the only values written are "
                             f"{ORBIT_WITNESS!r}, {PREFIX_WITNESS!r} and {Z4_WITNESS!r} (or none: every class's "
                             "witness stored)")
    by_prefix = witness in (PREFIX_WITNESS, Z4_WITNESS)
    by_orbit = witness == ORBIT_WITNESS or by_prefix
    rotated = orbit if isinstance(orbit, Rotated) else None
    if rotated is not None and by_orbit:  # the witness is the structured rows', carried through the rotation
        orbit, prototypes = rotated.structure, rotated.coordinates
    structure, what = _WITNESS_STRUCTURES.get(witness, (None, ""))
    if by_orbit and not isinstance(orbit, structure):
        raise fields.damaged("certificate", f"keeps class 0's witness alone, but the code is not {what}")
    stored = fields.member("support_indices")
    if isinstance(stored, h5py.Dataset) and stored.ndim == 2 and stored.shape[1] > k:
        # A support draws on the other K - 1 prototypes: a wider (compressed) array would only cost decompressing.
        raise fields.damaged("certificate/support_indices", f"have {stored.shape[1]} columns; a support has at most "
                             f"K = {k}")
    indices = fields.array("support_indices", "iu", (None if witness == Z4_WITNESS else 1 if by_orbit else k, None))
    if len(indices) == 0:
        raise fields.damaged("certificate/support_indices", "hold no witness")
    weights = fields.array("support_weights", "f", indices.shape)
    # A prefix's witness names words of the whole orbit, not only rows.
    bound = orbit.words if by_prefix else k
    if indices.size and (indices.min() < -1 or indices.max() >= bound):
        raise fields.damaged("certificate/support_indices", f"hold indices outside [-1, {bound})")
    nearest = fields.array("nearest", "i", (k,)).astype(np.int64) if by_prefix else None
    lo = fields.array("lo", "f", (k,)).astype(np.float64)
    hi = fields.array("hi", "f", (k,)).astype(np.float64)
    tol = fields.attr("tol", "float")
    if tol <= 0:
        raise fields.damaged("attribute certificate/tol", f"is {tol}; a tolerance is positive")
    try:
        duplicates = [tuple(int(i) for i in group)
                      for group in read_json(fields.attr("duplicates", "str", "[]"), "the list of duplicates")]
    except (SpherecodesError, TypeError, ValueError) as err:
        raise fields.damaged("attribute certificate/duplicates", f"is not a JSON list of index lists ({err})") from None
    if any(not 0 <= i < k for group in duplicates for i in group):
        raise fields.damaged("attribute certificate/duplicates", f"names indices outside [0, {k})")
    # An orbit's certificate holds class 0's witness: its residual is class 0's (class c's is its image).
    if by_prefix:  # witnesses of class 0, words of the whole orbit
        residuals = np.array([prototypes[0] - mix[row >= 0] @ orbit.rows_of(prototypes, row[row >= 0].astype(np.int64))
                              for row, mix in zip(indices, weights)])
    else:
        residuals = support_residuals(prototypes[:1] if by_orbit else prototypes, indices.astype(np.int64),
                                      weights.astype(np.float64), others=prototypes)
    if rotated is not None and by_orbit:
        residuals = rotated.turn(residuals)
        orbit = rotated
    norms = np.linalg.norm(residuals, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        features = np.where(norms > 0, residuals / norms, np.nan)
    rattler_tol = fields.attr("rattler_tol", "float")
    if rattler_tol < 0:
        raise fields.damaged("attribute certificate/rattler_tol", f"is {rattler_tol:g}; a tolerance is at least 0")
    return OneVsRestCertificate(
        lo=lo,
        hi=hi,
        tol=tol,
        rattler_tol=rattler_tol,
        support_indices=indices.astype(np.int64),
        support_weights=weights.astype(np.float64),
        features=features,
        duplicates=duplicates,
        rounds=fields.attr("rounds", "int", 0),
        device=fields.attr("device", "str", ""),
        wall_time=fields.attr("wall_time_s", "float", 0.0),
        orbit=orbit if by_orbit else None,
        nearest=nearest,
    )


#: How far a stored statistic may differ from the same quantity recomputed from the prototypes.
_STATS_SLACK = 1e-10


def _read_stats(fields: _Fields, prototypes: np.ndarray) -> SeparationStats:
    """The stored statistics, after checking them against the prototypes where that is cheap.

    Each stored nearest cosine must be the cosine of the pair it names, max-cos
    the largest of them, the rattlers exactly the classes they define; the
    full scan over all pairs is not repeated (it is what the statistics save).
    """
    k, d = prototypes.shape
    nearest_cos = fields.array("nearest_cos", "f", (k,)).astype(np.float64)
    nearest_index = fields.array("nearest_index", "iu", (k,)).astype(np.int64)
    rattlers = fields.array("rattlers", "iu", (None,)).astype(np.int64)
    max_cos, min_cos, mean_cos = (fields.attr(key, "float") for key in ("max_cos", "min_cos", "mean_cos"))
    rattler_tol = fields.attr("rattler_tol", "float")
    if rattler_tol < 0:  # a negative slack would make every class a rattler
        raise fields.damaged("attribute stats/rattler_tol", f"is {rattler_tol:g}; a tolerance is at least 0")
    if np.any((nearest_index < 0) | (nearest_index >= k) | (nearest_index == np.arange(k))):
        raise fields.damaged("stats/nearest_index", f"names a class outside [0, {k}) or the class itself")
    pair_cos = np.concatenate([np.einsum("ij,ij->i", prototypes[start : start + _READ_ROWS],
                                         prototypes[nearest_index[start : start + _READ_ROWS]])
                               for start in range(0, k, _READ_ROWS)])
    if np.abs(pair_cos - nearest_cos).max() > _STATS_SLACK:
        worst = int(np.argmax(np.abs(pair_cos - nearest_cos)))
        raise fields.damaged("stats/nearest_cos", f"does not match the prototypes (class {worst} stores "
                             f"{nearest_cos[worst]:.12g}, its pair has cosine {pair_cos[worst]:.12g})")
    if abs(max_cos - nearest_cos.max()) > _STATS_SLACK:
        raise fields.damaged("attribute stats/max_cos", f"is {max_cos:.12g} but the largest nearest cosine is "
                             f"{nearest_cos.max():.12g}")
    if not -1 - _STATS_SLACK <= min_cos <= mean_cos + _STATS_SLACK <= max_cos + 2 * _STATS_SLACK:
        raise fields.damaged("attributes stats/min_cos, mean_cos", "are not ordered min <= mean <= max-cos")
    expected = np.flatnonzero(nearest_cos < max_cos - rattler_tol)
    if not np.array_equal(np.sort(rattlers), expected):
        raise fields.damaged("stats/rattlers", "are not the classes whose nearest cosine is below max-cos - rattler_tol")
    return SeparationStats(k=k, d=d, max_cos=max_cos, min_cos=min_cos, mean_cos=mean_cos, nearest_cos=nearest_cos,
                           nearest_index=nearest_index, rattlers=rattlers, rattler_tol=rattler_tol)


# --------------------------------------------------------------------------- writing


def write_code(path, code: Code, *, overwrite: bool = False, waiting=None, lock_timeout: float | None = None) -> None:
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

    The new bank is written beside the old one, so it needs room for the old
    one's codes plus the new code (uncompressed: an upper bound).  Writing
    stops at the first byte that does not fit anyway; this check says so
    before any byte is written, in words.
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

    ``name`` is a code's name or a list of names, all removed in one
    rewrite. The codes removed are not checked, so a damaged entry (not a
    group, a link to elsewhere) can be removed; the codes kept are copied
    and must be sound. ``waiting`` is told when another spherecodes process
    is writing the bank and this one waits for it, as for :func:`write_code`.

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
    with _reading(path), _open_bank(path) as fh:
        for name in fh["codes"]:
            # What the rewrite copies must be each code stored once; the code being removed is not copied,
            # so a damaged one can be removed.
            if name not in removing:
                _code_fields(fh["codes"], name, path)
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

    HDF5 then cannot close the half-written temporary file (it is removed and
    the bank is unchanged), and the library's own clean-up at interpreter
    exit crashes on it (HDF5 1.14, h5py 3.16): a command-line tool that
    reported the failure should end with ``os._exit``, skipping that clean-up.

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
            with _open_bank(path) as src:
                for name in keep:
                    src.copy(src["codes"][name], codes, name=name)
        if add is not None:
            code, bounds = add
            _write_group(codes.create_group(code.name), code, bounds)
        # Versions 2 to 5 only where they are needed, so that older readers keep reading every other bank.
        dst.attrs["schema_version"] = np.int64(max((_schema_needed(codes[name]) for name in codes),
                                                   default=PLAIN_SCHEMA_VERSION))


def _schema_needed(group: h5py.Group) -> int:
    """The schema version one stored code needs: 5 for a structured code turned by a rotation (an ``orbit`` with
    ``rotation_seed``: a reader that does not know it would take the turned rows for the structured ones), 4 for (the
    first K words of) an orbit of Z4 translations, 3 for the first K words of an orbit of sign changes (K not a power
    of two), 2 for a certificate that keeps class 0's witness of an orbit, else 1."""
    orbit = group.get("orbit")
    if isinstance(orbit, h5py.Group) and "rotation_seed" in orbit.attrs:
        return SCHEMA_VERSION
    if isinstance(orbit, h5py.Group) and _as_str(orbit.attrs.get("group")) == Z4_GROUP:
        return Z4_SCHEMA_VERSION
    if isinstance(orbit, h5py.Group) and isinstance(group.get("prototypes"), h5py.Dataset):
        k = group["prototypes"].shape[0]
        if k & (k - 1):
            return PREFIX_SCHEMA_VERSION
    certificate = group.get("certificate")
    if isinstance(certificate, h5py.Group) and _as_str(certificate.attrs.get("witness")) == ORBIT_WITNESS:
        return ORBIT_SCHEMA_VERSION
    return PLAIN_SCHEMA_VERSION


def prototype_storage(k: int, d: int) -> dict:
    """How a bank stores K x d prototypes: the arguments of ``create_dataset`` (gzip up to 512 MiB, else plain).

    Examples
    --------
    >>> prototype_storage(1000, 64)["compression"], prototype_storage(10**6, 128)["compression"]
    ('gzip', None)
    """
    compress = 8 * k * d <= _COMPRESS_UP_TO_BYTES
    return {"dtype": np.float64, "compression": "gzip" if compress else None,
            "compression_opts": 4 if compress else None, "shuffle": compress}


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
        orbit = group.create_group("orbit")
        structure = code.orbit
        if isinstance(structure, Rotated):
            structure = structure.structure
            orbit.attrs["rotation_seed"] = np.int64(code.orbit.seed)
            orbit.attrs["rotation_kind"] = ROTATION_KIND
            orbit.attrs["rotation_meaning"] = (
                "the prototypes are these structured rows turned by the rotation of rotation_seed "
                "(spherecodes.sphere.random_rotation): snap_rows(prototypes @ Q.T) are the rows the generators describe")
        stored = {"generators": structure.generators.astype(np.uint8)}
        if isinstance(structure, Z4Orbit):
            orbit.attrs["group"] = Z4_GROUP
            orbit.attrs["meaning"] = ("row i's quaternary symbols relative to row 0's (pair j: the columns pairs[j], "
                                      "signs (+,+), (+,-), (-,-), (-,+) for 0, 1, 2, 3) are the sum mod 4 of the "
                                      "generators chosen by the bits of i: the first K words of their orbit")
            stored = structure.stored()
        elif isinstance(structure, OrbitPrefix):
            orbit.attrs["meaning"] = ("row i's signs XOR row 0's are the sum over GF(2) of the generators (1: the "
                                      "sign flips) chosen by the bits of i: the first K words of their orbit")
        else:
            orbit.attrs["meaning"] = ("row i's signs XOR row 0's are the sum over GF(2) of the generators (1: the "
                                      "sign flips) chosen by row i's signs at the generators' first flipped columns")
        for key, value in stored.items():
            orbit.create_dataset(key, data=value)
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
    a["rho_certified"] = cert.rho_certified
    a["rattler_tol"] = cert.rattler_tol
    a["duplicates"] = json.dumps([list(map(int, g)) for g in cert.duplicates])
    a["rounds"] = np.int64(cert.rounds)
    a["device"] = cert.device
    a["wall_time_s"] = float(cert.wall_time)
    if cert.orbit is not None:
        if code.orbit is None or not np.array_equal(cert.orbit.generators, code.orbit.generators):
            raise SpherecodesError("the certificate keeps class 0's witness for an orbit of sign changes that is not "
                                   "the code's")
        structure = cert.orbit.structure if isinstance(cert.orbit, Rotated) else cert.orbit
        a["witness"] = {OrbitPrefix: PREFIX_WITNESS, Z4Orbit: Z4_WITNESS}.get(type(structure), ORBIT_WITNESS)
        if isinstance(cert.orbit, Rotated):
            a["carried"] = "through the rotation of orbit/rotation_seed, from the structured rows' witness"
    if isinstance(cert.orbit.structure if isinstance(cert.orbit, Rotated) else cert.orbit, (OrbitPrefix, Z4Orbit)):
        group.create_dataset("nearest", data=cert.nearest, compression="gzip", shuffle=True)
    group.create_dataset("lo", data=cert.lo)
    group.create_dataset("hi", data=cert.hi)
    group.create_dataset("softmax_rattlers", data=np.asarray(cert.softmax_rattlers, dtype=np.int64))
    # Byte shuffling before gzip: the indices are small integers and the weights
    # are padded with zeros, so grouping the bytes saves a tenth to a third.
    group.create_dataset("support_indices", data=cert.support_indices, compression="gzip", shuffle=True)
    group.create_dataset("support_weights", data=cert.support_weights, compression="gzip", shuffle=True)


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
    a["max_cos"] = s.max_cos
    a["min_cos"] = s.min_cos
    a["mean_cos"] = s.mean_cos
    a["min_angle_deg"] = s.min_angle_deg
    for key, value in s.separation.items():
        a[f"separation_{key}"] = value
    a["rattler_tol"] = s.rattler_tol
    a["rattler_count"] = np.int64(len(s.rattlers))
    for key, value in bounds.items():
        a[key] = value
    group.create_dataset("nearest_cos", data=s.nearest_cos)
    group.create_dataset("nearest_index", data=s.nearest_index)
    group.create_dataset("rattlers", data=np.asarray(s.rattlers, dtype=np.int64))
