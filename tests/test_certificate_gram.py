"""The Gram-matrix pass of the certificate (codes with K <= d): closed forms, the QP as a second method, fallbacks."""

import math

import numpy as np
import pytest

from spherecodes.certificate import _gram as cert_gram
from spherecodes.certificate import certificate_estimate, one_vs_rest_distances, verify_witness
from spherecodes.certificate._gram import GramPass, gram_applies

from conftest import random_code
from test_certificate import brute_force_distance


def near_orthonormal(k: int, d: int, noise: float, seed: int) -> np.ndarray:
    """K rows of a random orthogonal matrix in R^d, perturbed by ``noise`` and renormalised."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    w = q[:k] + noise * rng.standard_normal((k, d))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def qp_only(monkeypatch, w):
    """The certificate without the Gram pass (the QP solver settles what the nearest shells leave)."""
    with monkeypatch.context() as patch:
        patch.setattr(cert_gram, "GRAM_MAX_K", 0)
        return one_vs_rest_distances(w, device="cpu")


@pytest.mark.parametrize("k, d", [(3, 3), (7, 7), (50, 64), (200, 200)])
def test_orthonormal_rows_are_at_distance_sqrt_one_plus_one_over_k_minus_one(k, d):
    # The nearest point of the hull of K − 1 orthonormal vectors to the K-th
    # is their centroid: ‖e_k − (1/(K−1)) Σ e_j‖² = 1 + 1/(K − 1).
    w = np.eye(d)[:k]
    cert = one_vs_rest_distances(w, device="cpu")
    exact = math.sqrt(1 + 1 / (k - 1))
    assert cert.certified
    assert np.allclose(cert.lo, exact, atol=1e-12) and np.allclose(cert.hi, exact, atol=1e-12)
    assert (cert.support_indices >= 0).sum(axis=1).tolist() == [k - 1] * k


@pytest.mark.parametrize("seed", [0, 1])
def test_small_codes_match_face_enumeration(seed):
    w = near_orthonormal(5, 6, 0.3, seed)
    found = GramPass(w).bounds(np.arange(5), tol=1e-9, block_bytes=2**20)
    assert found.rows.tolist() == [0, 1, 2, 3, 4]
    for row, lo, hi in zip(found.rows, found.lo, found.hi):
        exact = brute_force_distance(w, int(row))
        assert lo - 1e-12 <= exact <= hi + 1e-12 and hi - lo <= 1e-9


@pytest.mark.parametrize("k, d, noise", [(120, 120, 1e-2), (80, 150, 3e-2), (150, 150, 1e-3)])
def test_agrees_with_the_qp_solver(monkeypatch, k, d, noise):
    w = near_orthonormal(k, d, noise, seed=k)
    fast = one_vs_rest_distances(w, device="cpu")
    slow = qp_only(monkeypatch, w)
    assert fast.certified and slow.certified
    # Both intervals hold dist_k, so they overlap; both are at rounding width.
    assert (fast.lo <= slow.hi + 1e-12).all() and (slow.lo <= fast.hi + 1e-12).all()
    assert np.abs(fast.hi - slow.hi).max() < 1e-9
    # The QP was not needed: every witness is the Gram pass's (wide supports).
    assert fast.rounds == 1 and fast.support_indices.shape[1] > d // 4


def test_witnesses_check_again_from_the_prototypes():
    w = near_orthonormal(300, 300, 1e-3, seed=5)
    cert = one_vs_rest_distances(w, device="cpu")
    lo, hi = verify_witness(w, cert)
    assert cert.certified and (hi - lo).max() <= 1e-9
    assert np.allclose(cert.support_weights.sum(axis=1), 1.0, atol=1e-12)


def test_ill_conditioned_codes_go_to_the_qp(monkeypatch):
    # Two nearly parallel rows: λ_min(G) ≈ 1e-4, so the pass declines, and
    # the QP still certifies the code, as it does without the pass.
    w = near_orthonormal(30, 30, 1e-3, seed=2)
    w[1] = w[0] + 1e-2 * w[1]
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert not GramPass(w).usable
    cert = one_vs_rest_distances(w, device="cpu")
    slow = qp_only(monkeypatch, w)
    assert cert.certified and np.array_equal(cert.hi, slow.hi) and np.array_equal(cert.lo, slow.lo)


def test_applies_only_where_k_is_at_most_d():
    assert gram_applies(100, 100) and not gram_applies(101, 100) and not gram_applies(2, 5)
    assert not GramPass(random_code(40, 30)).usable  # K > d: G is singular


def test_the_estimate_names_the_gram_pass_and_no_qp():
    w = near_orthonormal(200, 200, 1e-3, seed=3)
    est = certificate_estimate(w, device="cpu")
    assert "Gram matrix, no QP" in est.what and est.seconds > 0


def test_deterministic():
    w = near_orthonormal(100, 100, 1e-2, seed=4)
    a, b = one_vs_rest_distances(w, device="cpu"), one_vs_rest_distances(w, device="cpu")
    assert np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)
    assert np.array_equal(a.support_weights, b.support_weights)


def test_witness_check_in_small_tiles_gives_the_same_bounds(monkeypatch):
    # The re-check streams tiles of rows and of columns (bounded memory at any
    # K); tiles that split the code anywhere, the diagonal included, give the
    # same numbers as one tile, and the hull distances of orthonormal rows.
    from spherecodes.certificate import witness

    w = np.eye(40)[:37]
    cert = one_vs_rest_distances(w, device="cpu")
    whole = verify_witness(w, cert)
    monkeypatch.setattr(witness, "_TILE", 5)
    monkeypatch.setattr(witness, "_COLUMN_TILE", 7)
    tiled = verify_witness(w, cert)
    assert np.array_equal(whole[0], tiled[0]) and np.array_equal(whole[1], tiled[1])
    assert np.allclose(tiled[0], math.sqrt(1 + 1 / 36), atol=1e-12)
