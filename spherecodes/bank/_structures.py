"""The structures a bank stores beside a code's rows, read back with their proofs: the code's orbit (its generators,
a rotation's seed) and its certificate (the witnesses, their intervals)."""

from __future__ import annotations

import json

import h5py
import numpy as np

from ..certificate import OneVsRestCertificate, support_residuals
from ..checks import SEED_LIMIT
from ..code import Code
from ..errors import SpherecodesError
from ..inputs import read_json
from ..orbit import orbit_prefix, resolve_orbit, sign_orbit
from ..rotated import rotated_structure
from ..z4orbit import z4_orbit
from ._schema import ORBIT_WITNESS, PREFIX_WITNESS, WITNESS_STRUCTURES, Z4_GROUP, Z4_WITNESS, Fields, shown

__all__ = ["read_certificate", "read_orbit", "write_certificate", "write_orbit"]


def read_orbit(fields: Fields, prototypes: np.ndarray):
    """The code's structure: checked from the stored generators, else proved from the rows, else None.

    Stored generators are a claim like any other: the rows must be exactly the orbit they generate, or its first
    K words (:func:`spherecodes.orbit.sign_orbit`, :func:`~spherecodes.orbit.orbit_prefix`,
    :func:`spherecodes.z4orbit.z4_orbit`; O(K·d)), after turning them back by the rotation of a ``rotation_seed``
    (:func:`spherecodes.rotated.rotated_structure`, O(K·d²)).  A bank written before generators were stored has
    its orbit proved.
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


def read_certificate(fields: Fields, prototypes: np.ndarray, sha256: str, orbit) -> OneVsRestCertificate:
    """Rebuild a stored certificate; the optimal features follow from the stored supports."""
    k = prototypes.shape[0]
    if fields.attr("prototypes_sha256", "str") != sha256:
        raise fields.damaged("certificate", "belongs to other prototypes")
    witness = fields.attr("witness", "str", "")
    if witness not in ("", ORBIT_WITNESS, PREFIX_WITNESS, Z4_WITNESS):
        raise fields.damaged("attribute certificate/witness", f"is {shown(witness)}; the only values written are "
                             f"{ORBIT_WITNESS!r}, {PREFIX_WITNESS!r} and {Z4_WITNESS!r} (or none: every class's "
                             "witness stored)")
    by_prefix = witness in (PREFIX_WITNESS, Z4_WITNESS)
    by_orbit = witness == ORBIT_WITNESS or by_prefix
    rotated = orbit if orbit is not None and orbit.unturned is not orbit else None
    if rotated is not None and by_orbit:  # the witness is the structured rows', carried through the rotation
        orbit, prototypes = rotated.structure, rotated.coordinates
    if by_orbit and (orbit is None or orbit.certificate_witness != witness):
        raise fields.damaged("certificate", f"keeps class 0's witness alone, but the code is not "
                             f"{WITNESS_STRUCTURES[witness]}")
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
    bound = orbit.witness_words if by_orbit else k
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


def write_orbit(orbit: h5py.Group, structure) -> None:
    """Store a code's proved structure (:class:`spherecodes.symmetry.Symmetry`) in its ``orbit`` group: what its
    arrays mean (and for a turned code the rotation's seed) and the arrays a reader proves it again from."""
    for key, value in structure.stored_attributes().items():
        orbit.attrs[key] = value
    for key, value in structure.stored().items():
        orbit.create_dataset(key, data=value)


def write_certificate(group: h5py.Group, code: Code) -> None:
    cert = code.certificate
    if cert.k != code.k:
        raise SpherecodesError(f"the certificate has {cert.k} classes but the code has {code.k}")
    a = group.attrs
    a["prototypes_sha256"] = code.sha256
    for name in ("rho_lower", "rho_upper", "width", "tol", "certified", "rho_certified", "rattler_tol"):
        a[name] = getattr(cert, name)
    a["duplicates"] = json.dumps([list(map(int, g)) for g in cert.duplicates])
    a["rounds"] = np.int64(cert.rounds)
    a["device"] = cert.device
    a["wall_time_s"] = float(cert.wall_time)
    if cert.orbit is not None:
        if code.orbit is None or not np.array_equal(cert.orbit.generators, code.orbit.generators):
            raise SpherecodesError("the certificate keeps class 0's witness for an orbit of sign changes that is not "
                                   "the code's")
        a["witness"] = cert.orbit.unturned.certificate_witness
        if cert.orbit.unturned is not cert.orbit:
            a["carried"] = "through the rotation of orbit/rotation_seed, from the structured rows' witness"
    if cert.orbit is not None and cert.orbit.unturned.whole_orbit_bounds:
        group.create_dataset("nearest", data=cert.nearest, compression="gzip", shuffle=True)
    group.create_dataset("lo", data=cert.lo)
    group.create_dataset("hi", data=cert.hi)
    group.create_dataset("softmax_rattlers", data=np.asarray(cert.softmax_rattlers, dtype=np.int64))
    # Byte shuffling before gzip: the indices are small integers and the weights are padded with zeros.
    group.create_dataset("support_indices", data=cert.support_indices, compression="gzip", shuffle=True)
    group.create_dataset("support_weights", data=cert.support_weights, compression="gzip", shuffle=True)
