"""The bank's format: its names and schema versions, opening a file as a bank, and every stored field read with
its checks (:class:`Fields`)."""

from __future__ import annotations

import contextlib
import math
import stat
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..errors import SpherecodesError
from ..memory import format_bytes, require_memory
from ..orbit import OrbitPrefix, SignOrbit
from ..z4orbit import Z4_GROUP, Z4Orbit

__all__ = [
    "COMPRESS_UP_TO_BYTES", "FORMAT_NAME", "ORBIT_SCHEMA_VERSION", "ORBIT_WITNESS", "PLAIN_SCHEMA_VERSION",
    "PREFIX_SCHEMA_VERSION", "PREFIX_WITNESS", "READ_ROWS", "SCHEMA_VERSION", "WITNESS_STRUCTURES", "Z4_GROUP",
    "Z4_SCHEMA_VERSION", "Z4_WITNESS", "Fields", "as_str", "hdf5_errors", "open_bank", "prototype_storage",
    "schema_needed", "shown",
]

FORMAT_NAME = "spherecodes-bank"
#: The newest schema version: that of a bank with a structured code turned by a rotation (an ``orbit`` with
#: ``rotation_seed``), which a reader that does not know it would take for the structured rows.
SCHEMA_VERSION = 5

#: The schema version of a bank with an orbit of Z4 translations, and no structured code turned by a rotation.
Z4_SCHEMA_VERSION = 4

#: The schema version of a bank none of whose certificates keeps class 0's witness alone.
PLAIN_SCHEMA_VERSION = 1

#: The schema version of a bank with a certificate that keeps class 0's witness of an orbit, and no prefix.
ORBIT_SCHEMA_VERSION = 2

#: The schema version of a bank with the first K words of an orbit of sign changes, and no orbit of Z4 translations.
PREFIX_SCHEMA_VERSION = 3

#: ``certificate`` attribute ``witness`` of a certificate that keeps class 0's witness alone, every other class's
#: being its image under the code's orbit.
ORBIT_WITNESS = SignOrbit.certificate_witness

#: The same for the first K words of an orbit: the whole orbit's class 0's witness (words of the orbit), moved to each
#: class where it stays among the rows, else the class's ``nearest`` row.
PREFIX_WITNESS = OrbitPrefix.certificate_witness

#: The same for (the first K words of) an orbit of Z4 translations: witnesses of the whole orbit's class 0, each class
#: taking one moved (``nearest`` −1 − j) or its nearest row.
Z4_WITNESS = Z4Orbit.certificate_witness

#: What the code must be for each kind of certificate that keeps class 0's witness, in messages.
WITNESS_STRUCTURES = {ORBIT_WITNESS: "one orbit of sign changes",
                      PREFIX_WITNESS: "the first K words of an orbit of sign changes",
                      Z4_WITNESS: "(the first K words of) an orbit of Z4 translations"}

#: Rows checked at a time when a code is read (unit norms, nearest cosines): 64 MiB at d = 128.
READ_ROWS = 65536

# Gzip with byte shuffling shrinks float64 prototypes well; beyond this size the
# compression time outweighs the disk saved, so large codes are stored plain.
COMPRESS_UP_TO_BYTES = 512 * 2**20


def open_bank(path) -> h5py.File:
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
        fmt = as_str(fh.attrs.get("format"))
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
def hdf5_errors(path):
    """Turn what HDF5 raises on a damaged file (structures it cannot parse, bytes that are not text) into one line."""
    try:
        yield
    except SpherecodesError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as err:
        first = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise SpherecodesError(f"{path} is damaged: HDF5 cannot read it ({first})") from None


def as_str(value) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return None if value is None else str(value)


def shown(value) -> str:
    """A stored value as one short line, for messages."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "..."


#: Marks an attribute without a default (it must be present).
_REQUIRED = object()
_KIND_NAMES = {"f": "floating-point numbers", "iu": "integers", "OSU": "text"}


class Fields:
    """Reads the datasets and attributes of one code, each checked; errors name the one at fault.

    A bank may come from anywhere: every member must be stored in the bank file itself (no link, no external or
    virtual storage), have the type and shape it should, and hold finite numbers where numbers are meant.
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

    def subgroup(self, name: str) -> "Fields":
        obj = self.member(name)
        if not isinstance(obj, h5py.Group):
            raise self.damaged(self.prefix + name, "is not a group")
        return Fields(obj, self.where, f"{name}/")

    def array(self, name: str, kinds: str, shape: tuple, copies: int = 2, *,
              compressed_up_to: float = math.inf) -> np.ndarray:
        """Dataset ``name`` with a dtype kind in ``kinds`` and ``shape`` (``None`` entries: any length).

        Its declared size is checked (:meth:`dataset`) before anything is read, and against the memory free for
        ``copies`` arrays of its size (1 from a caller that counted its memory already).
        """
        field = self.prefix + name
        obj = self.dataset(name, kinds, shape, compressed_up_to=compressed_up_to)
        require_memory(copies * obj.size * obj.dtype.itemsize, f"reading {field} of {self.where}")
        try:
            data = obj[()]
        except (OSError, ValueError, TypeError) as err:
            raise self.damaged(field, f"cannot be read ({str(err).splitlines()[0][:120]})") from None
        if data.dtype.kind == "f" and not all(np.isfinite(data[start : start + READ_ROWS]).all()
                                              for start in range(0, max(1, len(data)), READ_ROWS)):
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
                    return as_str(value)
                except UnicodeDecodeError:
                    pass
            raise self.damaged(f"attribute {field}", f"must be UTF-8 text, found {shown(value)}")
        if np.ndim(value) != 0 or isinstance(value, (bool, np.bool_, str, bytes)):
            raise self.damaged(f"attribute {field}", f"must be a number, found {shown(value)}")
        if kind == "int":
            if not isinstance(value, (int, np.integer)):
                raise self.damaged(f"attribute {field}", f"must be an integer, found {shown(value)}")
            return int(value)
        if not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
            raise self.damaged(f"attribute {field}", f"must be a finite number, found {shown(value)}")
        return float(value)


def schema_needed(group: h5py.Group) -> int:
    """The schema version one stored code needs: the lowest of the versions above that reads it correctly."""
    orbit = group.get("orbit")
    if isinstance(orbit, h5py.Group) and "rotation_seed" in orbit.attrs:
        return SCHEMA_VERSION
    if isinstance(orbit, h5py.Group) and as_str(orbit.attrs.get("group")) == Z4_GROUP:
        return Z4_SCHEMA_VERSION
    if isinstance(orbit, h5py.Group) and isinstance(group.get("prototypes"), h5py.Dataset):
        k = group["prototypes"].shape[0]
        if k & (k - 1):
            return PREFIX_SCHEMA_VERSION
    certificate = group.get("certificate")
    if isinstance(certificate, h5py.Group) and as_str(certificate.attrs.get("witness")) == ORBIT_WITNESS:
        return ORBIT_SCHEMA_VERSION
    return PLAIN_SCHEMA_VERSION


def prototype_storage(k: int, d: int) -> dict:
    """How a bank stores K x d prototypes: the arguments of ``create_dataset`` (gzip up to 512 MiB, else plain).

    Examples
    --------
    >>> prototype_storage(1000, 64)["compression"], prototype_storage(10**6, 128)["compression"]
    ('gzip', None)
    """
    compress = 8 * k * d <= COMPRESS_UP_TO_BYTES
    return {"dtype": np.float64, "compression": "gzip" if compress else None,
            "compression_opts": 4 if compress else None, "shuffle": compress}
