"""Codes that are one orbit of sign changes: detection, statistics and certificates from one class."""

import itertools

import numpy as np
import pytest

import spherecodes.certificate as certificate_module
import spherecodes.certificate.witness as witness_module
import spherecodes.stats as stats_module
from spherecodes.certificate import one_vs_rest_distances, verify_witness
from spherecodes.errors import SpherecodesError
from spherecodes.orbit import moved_vectors, sign_orbit
from spherecodes.stats import separation_statistics


def words_on_sphere(words: np.ndarray, pad: int = 0, seed: int = 0) -> np.ndarray:
    """Binary words as rows (−1)^c/√n, padded with zero columns, in a random row order."""
    n = words.shape[1]
    rows = (1.0 - 2.0 * words) / np.sqrt(n)
    rows = np.hstack([rows, np.zeros((len(rows), pad))])
    return rows[np.random.default_rng(seed).permutation(len(rows))]


def hypercube(n: int) -> np.ndarray:
    return np.array(list(itertools.product([0, 1], repeat=n)))


def even_weight(n: int) -> np.ndarray:
    cube = hypercube(n)
    return cube[cube.sum(axis=1) % 2 == 0]


def without_orbits(monkeypatch):
    for module in (certificate_module, witness_module, stats_module):
        monkeypatch.setattr(module, "ORBIT_MIN_K", 10**12)


@pytest.mark.parametrize("n, pad", [(8, 0), (9, 3), (10, 0)])
def test_hypercube_has_rho_two_over_n(n, pad):
    # A vertex's n neighbours (one sign flipped, cosine 1 − 2/n) average to
    # (1 − 2/n) w_k, so dist_k = 1 − (1 − 2/n) = 2/n, for every vertex.
    w = words_on_sphere(hypercube(n), pad)
    assert sign_orbit(w).rank == n
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified and np.allclose(cert.lo, 2 / n, atol=1e-14) and np.allclose(cert.hi, 2 / n, atol=1e-14)
    stats = separation_statistics(w)
    assert abs(stats.max_cos - (1 - 2 / n)) < 1e-15 and abs(stats.min_cos + 1) < 1e-15
    assert len(stats.rattlers) == 0
    # The nearest index of every row is a neighbour at the largest cosine.
    assert np.allclose(np.einsum("kd,kd->k", w, w[stats.nearest_index]), 1 - 2 / n, atol=1e-15)


def test_even_weight_code_and_its_coset_have_rho_four_over_n():
    # Words at Hamming distance 2 are nearest (cosine 1 − 4/n) and their
    # C(n, 2) members are balanced around each word: rho = 4/n.
    n = 10
    code = even_weight(n)
    coset = code ^ np.eye(n, dtype=code.dtype)[0]  # the odd-weight words: a coset, also one orbit
    for words in (code, coset):
        w = words_on_sphere(words)
        assert sign_orbit(w).rank == n - 1
        cert = one_vs_rest_distances(w, device="cpu")
        assert cert.certified and abs(cert.rho_lower - 4 / n) < 1e-14 and abs(cert.rho_upper - 4 / n) < 1e-14
        lo, hi = verify_witness(w, cert)
        assert np.allclose(lo, 4 / n, atol=1e-14)


def test_same_numbers_as_the_scans_of_all_pairs(monkeypatch):
    w = words_on_sphere(even_weight(11), pad=2, seed=3)
    fast_cert, fast_stats = one_vs_rest_distances(w, device="cpu"), separation_statistics(w)
    without_orbits(monkeypatch)
    slow_cert, slow_stats = one_vs_rest_distances(w, device="cpu"), separation_statistics(w)
    assert abs(fast_stats.max_cos - slow_stats.max_cos) < 1e-15 and abs(fast_stats.min_cos - slow_stats.min_cos) < 1e-15
    assert np.abs(fast_stats.nearest_cos - slow_stats.nearest_cos).max() < 1e-15
    assert abs(fast_stats.mean_cos - slow_stats.mean_cos) < 1e-15
    # Both intervals hold dist_k = 4/11 (the even-weight code's closed form), at rounding width.
    for cert in (fast_cert, slow_cert):
        assert cert.certified and (cert.lo <= 4 / 11 + 1e-14).all() and (cert.hi >= 4 / 11 - 1e-14).all()
        assert cert.width < 1e-12
    # The scan re-checks the orbit's certificate too.
    lo, hi = verify_witness(w, fast_cert)
    assert (hi - lo).max() < 1e-13


@pytest.mark.parametrize("case", ["subset", "not closed", "rotated", "repeated", "unequal magnitudes"])
def test_codes_that_are_not_one_orbit_are_not_taken_for_one(case):
    w = words_on_sphere(hypercube(8))
    if case == "subset":
        w = w[:200]
    elif case == "not closed":
        w = w.copy()
        w[5, :3] *= -1  # now a repeat of another word, or a word that breaks closure
        w[6, 0] *= -1
    elif case == "rotated":
        q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((8, 8)))
        w = w @ q
    elif case == "repeated":
        w = np.vstack([w[:128], w[:128]])
    else:
        w = w.copy()
        w[3] *= 1 + 1e-12
    assert sign_orbit(w) is None


def test_moved_vectors_are_the_isometries_of_the_code():
    w = words_on_sphere(hypercube(8), pad=1)
    orbit = sign_orbit(w)
    x = np.random.default_rng(1).standard_normal(w.shape[1])
    x[-1] = 0.0
    moved = moved_vectors(w, x)
    # D_c is orthogonal and maps row j to row moved(j, c): <D_c x, w_moved(j)> = <x, w_j>.
    c, j = 77, np.arange(40)
    assert np.allclose(w[orbit.moved(j, c)] @ moved[c], w[j] @ x, atol=1e-14)
    assert np.allclose(np.linalg.norm(moved, axis=1), np.linalg.norm(x))


def test_a_tampered_orbit_certificate_does_not_check():
    w = words_on_sphere(hypercube(9))
    cert = one_vs_rest_distances(w, device="cpu")
    lo = cert.lo.copy()
    lo[100] += 1e-6
    forged = type(cert)(**{**vars(cert), "lo": lo})
    with pytest.raises(SpherecodesError, match="does not check"):
        verify_witness(w, forged)
    # A witness that is not class 0's moved one is checked by the full scan.
    indices = cert.support_indices.copy()
    indices[[3, 4]] = indices[[4, 3]]
    swapped = type(cert)(**{**vars(cert), "support_indices": indices})
    with pytest.raises(SpherecodesError, match="does not check|not a point of the simplex"):
        verify_witness(w, swapped)
