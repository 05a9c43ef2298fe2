"""Structured codes turned by a rotation: statistics and certificates carried from the construction's coordinates.

Every check compares with an independent fact: the hypercube's closed-form ρ = 2/n, the simplex's ρ = K/(K − 1),
or the same quantity computed a second way on the stored (turned) rows with no structure at all.
"""

import itertools

import h5py
import numpy as np
import pytest

from spherecodes.bank import read_code, write_code
from spherecodes.certificate import one_vs_rest_distances, verify_witness
from spherecodes.code import make_code, prototype_checksum
from spherecodes.errors import SpherecodesError
from spherecodes.generation import unused_dimensions
from spherecodes.run import generate
from spherecodes.orbit import OrbitPrefix, orbit_prefix, sign_orbit
from spherecodes.report import code_report
from spherecodes.rotated import Rotated, orthogonality_error, rotated_structure, snap_rows, turn_rows
from spherecodes.sphere import random_rotation
from spherecodes.stats import separation_statistics


def hypercube_rows(n: int, pad: int) -> np.ndarray:
    """The 2^n vertices (±1, ..., ±1)/√n, padded with zero columns: one orbit of sign changes."""
    cube = np.array(list(itertools.product([1.0, -1.0], repeat=n))) / np.sqrt(n)
    return np.hstack([cube, np.zeros((len(cube), pad))])


def test_orthogonality_error_bounds_the_true_deviation():
    # Q scaled by (1 + t) has QᵀQ − I = ((1 + t)² − 1) I exactly in real arithmetic.
    q = random_rotation(40, seed=2)
    assert orthogonality_error(np.eye(5)) == 0.0
    for t in (1e-9, 1e-6):
        assert orthogonality_error(q * (1 + t)) >= (1 + t) ** 2 - 1


def test_snap_rows_recovers_sign_rows_from_a_turned_code():
    x = hypercube_rows(6, pad=3)
    q = random_rotation(9, seed=4)
    assert np.array_equal(snap_rows((x @ q) @ q.T), snap_rows(x))


def test_the_carried_certificate_contains_the_hypercubes_closed_form():
    # The hypercube's every vertex is at one-vs-rest distance 2/n (the mean of its n neighbours is (1 − 2/n) w).
    n, pad = 9, 4
    x = hypercube_rows(n, pad)
    w, carried = turn_rows(x, 7, sign_orbit(x))
    assert isinstance(carried, Rotated) and unused_dimensions(w) == 0
    cert = one_vs_rest_distances(w, device="cpu", orbit=carried)
    assert cert.certified and cert.orbit is carried
    assert (cert.lo <= 2 / n).all() and (cert.hi >= 2 / n).all() and cert.width < 1e-11
    # The same certificate re-derived from the witness, and a generic certificate of the stored rows.
    lo, hi = verify_witness(w, cert, orbit=carried)
    generic = one_vs_rest_distances(w, device="cpu", orbit=None)
    assert np.all(generic.lo <= cert.hi + 1e-12) and np.all(cert.lo <= generic.hi + 1e-12)
    assert abs(generic.rho_lower - cert.rho_lower) < 1e-11


def test_statistics_carried_through_the_rotation_match_a_scan_of_every_pair():
    x = hypercube_rows(9, pad=5)
    w, carried = turn_rows(x, 1, sign_orbit(x))
    carried_stats = separation_statistics(w, orbit=carried)
    scanned = separation_statistics(w, orbit=None)
    assert abs(carried_stats.max_cos - scanned.max_cos) <= carried.cosine_error
    assert abs(carried_stats.min_cos - scanned.min_cos) <= carried.cosine_error
    assert np.abs(carried_stats.nearest_cos - scanned.nearest_cos).max() <= carried.cosine_error
    assert abs(carried_stats.max_cos - (1 - 2 / 9)) < 1e-15  # nearest vertices differ in one sign


def test_a_prefix_is_carried_too():
    # The first 300 of the 512 vertices of the 9-cube, in the order of their messages: a prefix of the orbit.
    x = hypercube_rows(9, pad=2)[:300]
    prefix = orbit_prefix(x)
    assert isinstance(prefix, OrbitPrefix)
    w, carried = turn_rows(x, 3, prefix)
    cert = one_vs_rest_distances(w, device="cpu", orbit=carried)
    assert cert.rho_certified and abs(cert.rho_lower - 2 / 9) < 1e-11
    generic = one_vs_rest_distances(w, device="cpu", orbit=None)
    assert abs(generic.rho_lower - cert.rho_lower) < 1e-11


def test_rows_that_are_not_the_rotation_of_the_seed_are_not_carried():
    x = hypercube_rows(8, pad=2)
    w, carried = turn_rows(x, 5, sign_orbit(x))
    assert rotated_structure(w, 6, sign_orbit(x).reprove) is None
    moved = w.copy()
    moved[3] = moved[4]  # two equal rows: the turned-back rows are no longer one orbit
    assert rotated_structure(moved, 5, sign_orbit(x).reprove) is None
    assert rotated_structure(w, 5, sign_orbit(x).reprove) is not None


def test_default_generate_turns_a_padded_closed_form_and_certifies_it():
    # The simplex of 100 points leaves 413 of 512 coordinates at zero; turned, it uses them all and keeps
    # the simplex's rho = K/(K − 1).
    code = generate(512, 100)
    assert code.name == "etf-d512-k100-s0" and unused_dimensions(code.prototypes) == 0
    cert = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    assert cert.certified and abs(cert.rho_lower - 100 / 99) < 1e-12
    report = code_report(code)
    assert report["dimensions"] == {"rank": 99, "d": 512, "zero_columns": 0, "exact": True}
    assert np.linalg.matrix_rank(code.prototypes) == 99


@pytest.fixture
def turned_bank(tmp_path):
    """A bank holding the 10-cube padded to R^13, turned by the rotation of seed 2, certified."""
    x = hypercube_rows(10, pad=3)
    w, carried = turn_rows(x, 2, sign_orbit(x))
    code = make_code(w, method="external", name="cube", orbit=carried)
    code.certificate = one_vs_rest_distances(w, device="cpu", orbit=carried)
    path = tmp_path / "bank.h5"
    write_code(path, code)
    return path, code


def test_a_turned_bank_reads_back_with_its_structure_and_certificate(turned_bank):
    path, code = turned_bank
    again = read_code(path)
    assert isinstance(again.orbit, Rotated) and again.orbit.seed == 2
    assert np.array_equal(again.orbit.coordinates, code.orbit.coordinates)
    assert again.certificate is not None and abs(again.certificate.rho_lower - 2 / 10) < 1e-11
    report = code_report(again, bank=str(path))
    assert report["dimensions"]["zero_columns"] == 0
    assert report["dimensions"]["rank"] == np.linalg.matrix_rank(again.prototypes)


def _rewrite_checksums(group, rows):
    """Store ``rows`` as a forger would: with every checksum that names them updated."""
    group["prototypes"][...] = rows
    group.attrs["sha256"] = prototype_checksum(rows)
    group["certificate"].attrs["prototypes_sha256"] = prototype_checksum(rows)


@pytest.mark.parametrize("tamper", ["rotation seed", "one row"])
def test_a_tampered_turned_bank_has_its_certificate_refused(turned_bank, tamper):
    path, code = turned_bank
    with h5py.File(path, "r+") as f:
        group = f["codes/cube"]
        if tamper == "rotation seed":
            group["orbit"].attrs["rotation_seed"] = np.int64(3)
        else:
            rows = group["prototypes"][()]
            # Row 5 replaced by another unit vector near it: the rows turned back are no longer the orbit.
            rows[5] = rows[5] + 1e-3 * rows[6]
            rows[5] /= np.linalg.norm(rows[5])
            _rewrite_checksums(group, rows)
    with pytest.raises(SpherecodesError, match="rotation of seed"):
        read_code(path)
