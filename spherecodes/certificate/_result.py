"""What a certificate of one-vs-rest distances holds (NumPy only, no torch).

:class:`OneVsRestCertificate` is returned by
:func:`spherecodes.certificate.one_vs_rest_distances` and rebuilt from a bank
without solving anything; :class:`CertificateProgress` is what the
certificate's ``progress`` callable receives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import SpherecodesError
from ..orbit import moved_vectors
from ..symmetry import Symmetry

__all__ = ["CertificateOutOfTime", "CertificateProgress", "OneVsRestCertificate"]


@dataclass(frozen=True)
class CertificateProgress:
    """A progress report passed to the ``progress`` callable of :func:`one_vs_rest_distances`.

    Attributes
    ----------
    step : int
        Classes certified so far.
    steps : int
        Classes in all (K).
    elapsed : float
        Seconds since the call.
    """

    step: int
    steps: int
    elapsed: float


class CertificateOutOfTime(Exception):
    """The ``deadline`` of :func:`one_vs_rest_distances` passed during the QP; ``progress`` says how far it got.

    Attributes
    ----------
    progress : CertificateProgress
        The classes settled (whole blocks) when the certificate stopped.
    """

    def __init__(self, progress: CertificateProgress):
        super().__init__(f"the certificate's deadline passed with {progress.step:,} of {progress.steps:,} classes "
                         "settled")
        self.progress = progress


@dataclass(frozen=True)
class OneVsRestCertificate:
    """Certified one-vs-rest distances of a code and what follows from them.

    Attributes
    ----------
    lo, hi : ndarray, shape (K,)
        float64 bounds with ``lo[k] <= dist_k <= hi[k]``.
    tol : float
        The width that was asked for: the certificate is :attr:`certified` when
        every ``hi[k] − lo[k] <= tol``.
    rattler_tol : float
        Margin in the definition of a Softmax-Code rattler (see
        :attr:`softmax_rattlers`).
    support_indices : ndarray of int64, shape (K, s), or (1, s) with an orbit
        For each class the prototypes with positive weight in the primal point
        ``v`` that gives ``hi``, padded with −1.
    support_weights : ndarray, shape (K, s), or (1, s) with an orbit
        Their weights (they sum to 1 in each row), padded with 0.
    features : ndarray, shape (K, d), or (1, d) with an orbit
        Optimal features ``h_k = r_k/‖r_k‖`` (Jiang et al. 2024, Thm 3.5 Eq. 9).  A row
        is NaN where ``r_k = 0``, i.e. where ``w_k`` duplicates another
        prototype and no direction separates them.
    duplicates : list of tuple of int
        Groups of indices of identical prototypes; their classes have
        ``dist = 0`` exactly.
    rounds : int
        Global optimality checks (one matrix product against all K prototypes
        per block and round) that were needed.
    device : str
        Where the solver ran.
    wall_time : float
        Seconds spent.
    orbit : Symmetry or None
        The code's symmetry (:class:`spherecodes.symmetry.Symmetry`) where
        the certificate holds class 0's witnesses.  One orbit of sign changes
        (:mod:`spherecodes.orbit`): class 0's witness, weights and feature
        only, class c's being class 0's moved by the sign change that takes
        ``w_0`` to ``w_c`` (:meth:`weights_of`, :meth:`expanded`).  The first
        K words of such an orbit (:class:`spherecodes.orbit.OrbitPrefix`): the
        whole orbit's class 0's witness (its indices words of the orbit,
        possibly not rows), whose dual bound bounds every class from below
        (:func:`spherecodes.certificate.prefix_bounds`); of an orbit of Z4
        translations (:class:`spherecodes.z4orbit.Z4Orbit`): L such
        witnesses, (L, s) and (L, d), the first one's dual bound bounding
        every class.
    nearest : ndarray of int64, shape (K,), or None
        With an :class:`~spherecodes.orbit.OrbitPrefix`: −1 for the classes
        whose moved witness (words ``c ⊕ u``) are all rows, whose ``hi`` is
        the orbit's; else the row whose segment to the class gives ``hi``.
        With a :class:`~spherecodes.z4orbit.Z4Orbit`: ``−1 − j`` for the
        classes c that take witness j moved (words ``c + u``), else that row.
    """

    lo: np.ndarray
    hi: np.ndarray
    tol: float
    rattler_tol: float
    support_indices: np.ndarray
    support_weights: np.ndarray
    features: np.ndarray
    duplicates: list
    rounds: int
    device: str
    wall_time: float
    orbit: Symmetry | None = None
    nearest: np.ndarray | None = None

    @property
    def k(self) -> int:
        """Number of classes."""
        return int(self.lo.shape[0])

    @property
    def rho_lower(self) -> float:
        """Lower end of the certified interval for ρ: ``min_k lo_k``."""
        return float(self.lo.min())

    @property
    def rho_upper(self) -> float:
        """Upper end of the certified interval for ρ: ``min_k hi_k``."""
        return float(self.hi.min())

    @property
    def widths(self) -> np.ndarray:
        """Per-class interval widths ``hi − lo``."""
        return self.hi - self.lo

    @property
    def width(self) -> float:
        """Largest per-class width; ρ's own interval is never wider."""
        return float(self.widths.max())

    @property
    def certified(self) -> bool:
        """Whether every class's interval is at most :attr:`tol` wide."""
        return self.width <= self.tol

    @property
    def classes_certified(self) -> int:
        """Classes whose interval is at most :attr:`tol` wide."""
        return int((self.widths <= self.tol).sum())

    @property
    def rho_certified(self) -> bool:
        """Whether ρ's own interval ``[rho_lower, rho_upper]`` is at most :attr:`tol` wide.

        Implied by :attr:`certified`; for the first K words of an orbit it
        can hold while classes whose moved witness leaves the rows keep
        wider intervals (bounded below by ``rho_lower`` all the same).
        """
        return self.rho_upper - self.rho_lower <= self.tol

    @property
    def softmax_rattlers(self) -> np.ndarray:
        """Classes that are certainly Softmax-Code rattlers (Jiang et al. 2024, Def. 3.4).

        A rattler is a class whose distance exceeds ρ.  With a margin
        ``rattler_tol`` (exact optima have equal distances only up to the
        accuracy of the optimiser that produced them), class k is reported
        when ``lo_k > rho_upper + rattler_tol``: then ``dist_k − ρ >
        rattler_tol`` for every value the intervals allow.
        """
        return np.flatnonzero(self.lo > self.rho_upper + self.rattler_tol)

    @property
    def rattlers_undecided(self) -> np.ndarray:
        """Classes the intervals cannot classify as rattler or non-rattler.

        Those with ``hi_k > rho_lower + rattler_tol`` (possibly a rattler) that
        are not in :attr:`softmax_rattlers`; empty whenever the widths are far
        below ``rattler_tol`` and no distance sits right at ``ρ + rattler_tol``.
        """
        maybe = self.hi > self.rho_lower + self.rattler_tol
        return np.flatnonzero(maybe & ~(self.lo > self.rho_upper + self.rattler_tol))

    def weights_of(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and weights of the primal point ``v`` of class ``k``.

        Examples
        --------
        >>> from spherecodes.certificate import one_vs_rest_distances
        >>> from spherecodes.constructions import regular_polygon
        >>> cert = one_vs_rest_distances(regular_polygon(6), device="cpu")
        >>> idx, w = cert.weights_of(0)
        >>> sorted(idx.tolist()), w.round(12).tolist()
        ([1, 5], [0.5, 0.5])
        """
        structure = None if self.orbit is None else self.orbit.unturned
        if structure is not None and structure.whole_orbit_bounds and self.nearest[k] >= 0:
            return np.array([self.nearest[k]]), np.array([1.0])
        # The witness this class takes: its own, class 0's, or for the first K words of an orbit the one it names.
        row = k if structure is None else -1 - self.nearest[k] if structure.whole_orbit_bounds else 0
        keep = self.support_indices[row] >= 0
        indices = self.support_indices[row][keep]
        if structure is not None:
            indices = structure.moved(indices, k)  # words of the orbit, all rows for this class
        return indices, self.support_weights[row][keep]

    def expanded(self, prototypes: np.ndarray) -> "OneVsRestCertificate":
        """The same certificate with every class's witness and feature held: (K, s) and (K, d) arrays.

        For code that needs the arrays themselves (a gradient through every
        witness, a rotated copy of the code); itself when it has no orbit.
        A certificate of the first K words of an orbit has no such form (its
        lower bounds come from the whole orbit, not from each class's own
        witness): refused.

        Examples
        --------
        >>> import itertools
        >>> from spherecodes.certificate import one_vs_rest_distances
        >>> w = np.array(list(itertools.product([-1.0, 1.0], repeat=8))) / np.sqrt(8)
        >>> cert = one_vs_rest_distances(w, device="cpu")
        >>> cert.support_indices.shape, cert.expanded(w).support_indices.shape
        ((1, 8), (256, 8))
        """
        if self.orbit is None:
            return self
        if self.orbit.unturned is not self.orbit:
            # Turned by a rotation: class c's witness is class 0's moved by the structure of the rows before the rotation.
            inner = replace(self, orbit=self.orbit.structure, features=self.features @ self.orbit.rotation.T)
            inner = inner.expanded(self.orbit.coordinates)
            return replace(inner, features=self.orbit.turn(inner.features))
        if self.orbit.whole_orbit_bounds:
            raise SpherecodesError("the certificate of the first K words of an orbit bounds its classes through the "
                                   "whole orbit and has no witness per class; certify the changed code again")
        k = self.k
        indices = np.where(self.support_indices[0] >= 0,
                           self.orbit.moved(np.maximum(self.support_indices[0], 0)[None, :], np.arange(k)[:, None]), -1)
        return replace(self, support_indices=indices,
                       support_weights=np.repeat(self.support_weights, k, axis=0),
                       features=moved_vectors(prototypes, self.features[0]), orbit=None)

    def to_dict(self, per_class: bool = False) -> dict:
        """A JSON-ready summary; ``per_class=True`` adds lo, hi and the supports.

        Examples
        --------
        >>> from spherecodes.certificate import one_vs_rest_distances
        >>> from spherecodes.constructions import simplex_etf
        >>> d = one_vs_rest_distances(simplex_etf(4), device="cpu").to_dict()
        >>> d["certified"], round(d["rho_lower"], 12), round(d["rho_upper"], 12)
        (True, 1.333333333333, 1.333333333333)
        """
        out = {
            "k": self.k,
            "rho_lower": self.rho_lower,
            "rho_upper": self.rho_upper,
            "width": self.width,
            "tol": self.tol,
            "certified": self.certified,
            "rho_certified": self.rho_certified,
            "classes_certified": self.classes_certified,
            "softmax_rattlers": self.softmax_rattlers.tolist(),
            "rattlers_undecided": self.rattlers_undecided.tolist(),
            "rattler_tol": self.rattler_tol,
            "duplicates": [list(group) for group in self.duplicates],
            "rounds": self.rounds,
            "device": self.device,
            "wall_time": self.wall_time,
        }
        if per_class:
            out["lo"] = self.lo.tolist()
            out["hi"] = self.hi.tolist()
            out["support"] = [
                {"indices": i.tolist(), "weights": w.tolist()}
                for i, w in (self.weights_of(k) for k in range(self.k))
            ]
        return out
