"""Codes in memory: the prototypes with everything needed to trust and reproduce them.

A :class:`Code` holds a (K, d) float64 matrix of unit rows, how it was made,
its float64 separation statistics and, once certified, its certificate
(NumPy only: HDF5 banks are :mod:`spherecodes.bank`'s).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .checks import check_seed
from .context import RunContext
from .errors import SpherecodesError
from .orbit import OrbitPrefix, SignOrbit, resolve_orbit
from .stats import SeparationStats, separation_statistics, validate_prototypes

if TYPE_CHECKING:  # the certificate package imports torch for its solver; load it only when needed
    from .certificate import OneVsRestCertificate

#: Characters a name may hold besides letters and digits (never first).
NAME_PUNCTUATION = "._+-"


def name_pattern(max_length: int = 128, suffix: str = "") -> "re.Pattern":
    """The one rule for names (of codes, and of catalog files): a letter or digit, then letters,
    digits and :data:`NAME_PUNCTUATION`, at most ``max_length`` characters before ``suffix``.

    Examples
    --------
    >>> bool(name_pattern().match("tammes-d64-k1000-s0")), bool(name_pattern().match("-x"))
    (True, False)
    >>> bool(name_pattern(201, ".h5").match("banks.h5"))
    True
    """
    return re.compile(rf"^[A-Za-z0-9][A-Za-z0-9{re.escape(NAME_PUNCTUATION)}]{{0,{max_length - 1}}}{re.escape(suffix)}$")


#: The names a code may have inside a bank: 1-128 characters.
CODE_NAME_PATTERN = name_pattern(128)


def prototype_checksum(prototypes: np.ndarray) -> str:
    """SHA-256 of the prototypes as little-endian float64 bytes in row-major order.

    Examples
    --------
    >>> w = np.eye(2)
    >>> prototype_checksum(w) == hashlib.sha256(w.astype("<f8").tobytes()).hexdigest()
    True
    """
    data = np.ascontiguousarray(prototypes, dtype="<f8")
    return hashlib.sha256(memoryview(data).cast("B")).hexdigest()  # the bytes in place: no copy of K·d numbers


@dataclass
class Code:
    """One code of a bank: the prototypes and everything needed to trust and reproduce them.

    Build one with :func:`make_code`; read one with :func:`read_code`.

    Attributes
    ----------
    name : str
        Name of the code inside its bank.
    prototypes : ndarray, shape (K, d)
        float64, unit rows.
    method : str
        How the code was made (``"etf"``, ``"tammes"``, ...).
    labels : list of str or None
        Class names, one per row.
    settings : dict
        Every setting needed to reproduce the code.
    seed : int or None
    package_version, device, created_utc, sha256 : str
    wall_time : float
        Seconds spent making the code.
    stats : SeparationStats
        Computed from ``prototypes`` in float64.
    certificate : OneVsRestCertificate or None
        Certified one-vs-rest distances, when the code has been certified
        (:func:`spherecodes.certificate.one_vs_rest_distances`).
    orbit : Symmetry or None
        The code's symmetry (:mod:`spherecodes.symmetry`: an orbit, or the
        first K words of one, possibly turned by a rotation), proved once
        where the code was made or read; None for any other code.  Its
        statistics and certificate then come from one class.

    The numbers most often wanted are attributes too: ``k``, ``d``,
    ``max_cos``, ``min_angle_deg``, ``rattlers`` (from :attr:`stats`), and
    ``rho``, the certified lower end of ρ, or ``None`` before certification.
    ``repr`` is one line; ``print(code.prototypes)`` shows the matrix.

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> code = make_code(simplex_etf(12, 11), method="etf")
    >>> code
    Code('etf-d11-k12': K=12 in d=11, method etf, max-cos -0.0909091, min angle 95.2 deg, not certified)
    >>> round(code.max_cos, 12), code.rho is None
    (-0.090909090909, True)
    """

    name: str
    prototypes: np.ndarray
    method: str
    stats: SeparationStats
    sha256: str
    labels: list[str] | None = None
    settings: dict = field(default_factory=dict)
    seed: int | None = None
    package_version: str = __version__
    device: str = "cpu"
    wall_time: float = 0.0
    created_utc: str = ""
    certificate: "OneVsRestCertificate | None" = None
    orbit: SignOrbit | OrbitPrefix | None = None

    @property
    def k(self) -> int:
        return int(self.prototypes.shape[0])

    @property
    def d(self) -> int:
        return int(self.prototypes.shape[1])

    @property
    def max_cos(self) -> float:
        """Largest cosine between two different prototypes (float64, from the stored rows)."""
        return self.stats.max_cos

    @property
    def min_angle_deg(self) -> float:
        """Smallest angle between two prototypes, in degrees."""
        return self.stats.min_angle_deg

    @property
    def rattlers(self) -> np.ndarray:
        """Tammes rattlers: rows whose nearest neighbour is farther than max-cos says (see the report)."""
        return self.stats.rattlers

    @property
    def rho(self) -> float | None:
        """The certified lower end of ρ, the smallest one-vs-rest distance; ``None`` if not certified."""
        return None if self.certificate is None else self.certificate.rho_lower

    def __repr__(self) -> str:
        rho = "not certified" if self.rho is None else f"rho >= {self.rho:.6g}"
        return (f"Code({self.name!r}: K={self.k} in d={self.d}, method {self.method}, "
                f"max-cos {self.max_cos:.6g}, min angle {self.min_angle_deg:.3g} deg, {rho})")


def default_code_name(method: str, d: int, k: int, seed: int | None = None) -> str:
    """The name a code gets when the user gives none: ``<method>-d<d>-k<k>[-s<seed>]``.

    Examples
    --------
    >>> default_code_name("etf", 11, 12)
    'etf-d11-k12'
    """
    name = f"{method}-d{d}-k{k}"
    return name if seed is None else f"{name}-s{seed}"


def make_code(prototypes, *, method: str, name: str | None = None, labels=None, settings: dict | None = None,
              seed: int | None = None, device: str = "cpu", wall_time: float = 0.0, orbit="auto",
              context: RunContext | None = None) -> Code:
    """Package prototypes as a :class:`Code`, computing statistics and checksum.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows (validated).
    method : str
        How they were made.
    name : str, optional
        Defaults to :func:`default_code_name`.
    labels : sequence of str, optional
        One class name per row, all different.
    settings : dict, optional
        JSON-serialisable settings of the method.
    seed : int, optional
    device : str
        Where the code was computed.
    wall_time : float
        Seconds spent computing it.
    orbit : Symmetry, None or "auto"
        The code's symmetry if the caller proved it already (None: known to
        have none); ``"auto"`` proves it here
        (:func:`spherecodes.orbit.resolve_orbit`).  Kept as :attr:`Code.orbit`.
    context : spherecodes.context.RunContext, optional
        How the float64 statistics are computed
        (:func:`spherecodes.stats.separation_statistics`): on its device,
        within its memory limit, reporting to its ``progress``.  Default: on
        the CPU, within what is free, silently.

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> code = make_code(simplex_etf(3), method="etf")
    >>> code.name, code.k, code.d, round(code.stats.max_cos, 12)
    ('etf-d2-k3', 3, 2, -0.5)
    >>> from spherecodes.context import RunContext
    >>> make_code(simplex_etf(3), method="etf", context=RunContext(device="cpu", max_memory=2**20)).stats.max_cos < 0
    True
    """
    w = np.ascontiguousarray(validate_prototypes(prototypes))
    k, d = w.shape
    name = default_code_name(method, d, k, seed) if name is None else name
    check_code_name(name)
    labels = check_labels(labels, k)
    settings = dict(settings or {})
    try:
        json.dumps(settings)
    except TypeError as err:
        raise SpherecodesError(f"settings must be JSON-serialisable: {err}") from None
    orbit = resolve_orbit(w, orbit)
    statistics = context if context is not None else RunContext(device="cpu")
    stats = separation_statistics(w, device=statistics.device, max_memory=statistics.max_memory,
                                  progress=statistics.progress, orbit=orbit)
    return Code(name=name, prototypes=w, method=str(method), stats=stats, sha256=prototype_checksum(w), labels=labels,
                settings=settings, seed=None if seed is None else check_seed(seed), device=str(device),
                wall_time=float(wall_time), orbit=orbit,
                created_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def check_code_name(name: str) -> str:
    """Refuse a code name that :data:`CODE_NAME_PATTERN` does not match.

    Examples
    --------
    >>> check_code_name("etf-d11-k12")
    'etf-d11-k12'
    """
    if not isinstance(name, str) or not CODE_NAME_PATTERN.match(name):
        shown = repr(name) if not isinstance(name, str) or len(name) <= 80 else \
            f"{name[:40]!r}... ({len(name):,} characters)"
        raise SpherecodesError(f"invalid code name {shown}: use 1-128 letters, digits, '.', '_', '+' or '-', "
                               "starting with a letter or digit")
    return name


def check_labels(labels, k: int) -> list[str] | None:
    """Class names as a list of K strings, distinct but for ``""`` (or None when there are none).

    ``""`` marks a row kept for a class that arrives later (reserve-ahead:
    ``spherecodes generate --k 200 --classes names100.txt``); any number of
    rows may be unlabelled.

    Examples
    --------
    >>> check_labels(["cat", "dog"], 2)
    ['cat', 'dog']
    >>> check_labels(["cat", "", ""], 3)
    ['cat', '', '']
    >>> check_labels(["cat", "cat"], 2)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: labels must be distinct (compared in Unicode's composed form NFC); repeated: cat
    """
    if labels is None:
        return None
    labels = [str(x) for x in labels]
    if len(labels) != k:
        raise SpherecodesError(f"got {len(labels)} labels for {k} prototypes; give one per row")
    held = next((x for x in labels if "\0" in x), None)
    if held is not None:  # HDF5 strings end at a NUL: the bank could not store it
        raise SpherecodesError(f"label {held!r} holds a NUL character, which a label cannot hold")
    seen = set()
    # Compared in Unicode's composed form: 'é' and 'e' with a combining accent print alike, so are one class.
    # An empty label is an unlabelled row (reserved for a class that comes later): any number of them.
    duplicates = sorted({x for x in labels if x and ((n := unicodedata.normalize("NFC", x)) in seen or seen.add(n))})
    if duplicates:
        raise SpherecodesError(f"labels must be distinct (compared in Unicode's composed form NFC); repeated: "
                               f"{', '.join(duplicates[:10])}")
    return labels
