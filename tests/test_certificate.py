"""Certified one-vs-rest distances: closed forms, independent solvers, invariances."""

import itertools
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from spherecodes.certificate import _qp as cert_qp
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.constructions import cell_600, cross_polytope, e8_roots, random_rotation, regular_polygon, simplex_etf
from spherecodes.errors import SpherecodesError

from conftest import random_code


def brute_force_distance(w: np.ndarray, k: int) -> float:
    """dist_k by enumerating faces: the projection onto the hull of the others is
    the affine-hull minimiser of some set of at most d+1 of them whose weights
    are all non-negative (Carathéodory), so the smallest such distance is dist_k."""
    others = np.delete(w, k, axis=0)
    n, d = others.shape
    best = math.inf
    for size in range(1, min(n, d + 1) + 1):
        for subset in itertools.combinations(range(n), size):
            pts = others[list(subset)]
            # min ‖w_k − ptsᵀ v‖² s.t. Σ v = 1, through its KKT system
            kkt = np.zeros((size + 1, size + 1))
            kkt[:size, :size] = 2 * pts @ pts.T
            kkt[:size, size] = 1.0
            kkt[size, :size] = 1.0
            rhs = np.concatenate([2 * pts @ w[k], [1.0]])
            v = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:size]
            if abs(v.sum() - 1) > 1e-9 or v.min() < -1e-12:
                continue
            best = min(best, float(np.linalg.norm(w[k] - pts.T @ v)))
    return best


def slsqp_distance(w: np.ndarray, k: int) -> float:
    """dist_k from SciPy's general-purpose SLSQP, its answer moved onto the simplex."""
    others = np.delete(w, k, axis=0)
    n = len(others)
    result = minimize(
        lambda v: float(np.sum((w[k] - others.T @ v) ** 2)),
        np.full(n, 1.0 / n),
        jac=lambda v: -2 * others @ (w[k] - others.T @ v),
        bounds=[(0, 1)] * n,
        constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1, "jac": lambda v: np.ones(n)}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    v = np.clip(result.x, 0, None)
    v /= v.sum()
    return float(np.linalg.norm(w[k] - others.T @ v))


def nnls_distance(w: np.ndarray, k: int, weight: float = 1e4) -> float:
    """dist_k from SciPy's NNLS (Lawson–Hanson), the simplex's Σ v = 1 as a heavily weighted extra row,
    its answer moved onto the simplex (so an upper bound, close to dist_k)."""
    from scipy.optimize import nnls

    others = np.delete(w, k, axis=0)
    a = np.vstack([others.T, np.full((1, len(others)), weight)])
    v = nnls(a, np.append(w[k], weight))[0]
    v /= v.sum()
    return float(np.linalg.norm(w[k] - others.T @ v))


def assert_contains(cert, exact, slack=1e-12):
    exact = np.broadcast_to(exact, cert.lo.shape)
    assert np.all(cert.lo <= exact + slack)
    assert np.all(exact <= cert.hi + slack)


# ---------------------------------------------------------------- closed forms


@pytest.mark.parametrize("k,d", [(2, 1), (3, 2), (5, 4), (12, 11), (7, 30), (50, 49)])
def test_simplex_etf_has_rho_k_over_k_minus_1(k, d):
    w = simplex_etf(k, d) @ random_rotation(d, seed=k).T
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    assert_contains(cert, k / (k - 1))
    assert cert.softmax_rattlers.size == 0


@pytest.mark.parametrize("d,k,seed", [(3, 5, 0), (3, 6, 1), (6, 8, 2), (6, 12, 3), (10, 17, 4)])
def test_any_cross_polytope_subset_has_rho_one(d, k, seed):
    rng = np.random.default_rng(seed)
    vertices = np.vstack([np.eye(d), -np.eye(d)])
    w = vertices[rng.choice(2 * d, size=k, replace=False)] @ random_rotation(d, seed=seed).T
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    assert cert.rho_lower <= 1 + 1e-12 and 1 <= cert.rho_upper + 1e-12


def test_canonical_cross_polytope_every_class_at_distance_one():
    cert = one_vs_rest_distances(cross_polytope(10, 6), device="cpu")
    assert cert.certified
    assert_contains(cert, 1.0)


@pytest.mark.parametrize("k", [3, 4, 7, 60])
def test_regular_polygon_has_rho_one_minus_cos(k):
    angles = 2 * np.pi * np.arange(k) / k + 0.3
    w = np.column_stack([np.cos(angles), np.sin(angles)])
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    assert_contains(cert, 1 - math.cos(2 * math.pi / k))
    # By symmetry the optimal feature of each class is its own prototype.
    np.testing.assert_allclose(cert.features, w, atol=1e-9)


def test_constructions_module_polygon_agrees():
    cert = one_vs_rest_distances(regular_polygon(9), device="cpu")
    assert_contains(cert, 1 - math.cos(2 * math.pi / 9))


@pytest.mark.parametrize("w", [cell_600(), e8_roots()], ids=["600-cell", "E8"])
def test_symmetric_codes_are_certified_with_equal_distances(w):
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    # vertex-transitive: every class has the same distance, so no rattlers
    assert cert.hi.max() - cert.lo.min() < 1e-9
    assert cert.softmax_rattlers.size == 0


# ------------------------------------------------------- independent solvers


@pytest.mark.parametrize("k,d,seed", [(6, 2, 0), (7, 3, 1), (9, 3, 2), (8, 4, 3)])
def test_matches_brute_force_face_enumeration(k, d, seed):
    w = random_code(k, d, seed=seed)
    cert = one_vs_rest_distances(w, device="cpu")
    exact = np.array([brute_force_distance(w, i) for i in range(k)])
    assert cert.certified
    assert_contains(cert, exact, slack=1e-10)


def test_matches_slsqp_on_a_larger_code():
    w = random_code(30, 6, seed=5)
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    for k in range(0, 30, 10):
        independent = slsqp_distance(w, k)
        # Any point of the simplex is an upper bound, so lo must stay below it
        # whatever SLSQP's accuracy; and SLSQP should come close to hi.
        assert cert.lo[k] <= independent + 1e-12
        assert independent <= cert.hi[k] + 1e-6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(3, 8), d=st.integers(2, 4))
def test_interval_contains_brute_force_distance(seed, k, d):
    w = random_code(k, d, seed=seed)
    cert = one_vs_rest_distances(w, device="cpu")
    exact = np.array([brute_force_distance(w, i) for i in range(k)])
    assert np.all(cert.widths <= 1e-9)
    assert_contains(cert, exact, slack=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(3, 40), d=st.integers(2, 8))
def test_invariant_under_rotation_and_permutation(seed, k, d):
    w = random_code(k, d, seed=seed)
    perm = np.random.default_rng(seed).permutation(k)
    base = one_vs_rest_distances(w, device="cpu")
    moved = one_vs_rest_distances(w[perm] @ random_rotation(d, seed=seed % 1000).T, device="cpu")
    # Both intervals contain the same distances, so they overlap within rounding.
    assert np.all(moved.lo <= base.hi[perm] + 1e-12)
    assert np.all(base.lo[perm] <= moved.hi + 1e-12)
    assert abs(moved.rho_upper - base.rho_upper) <= 1e-9


def test_tiny_candidate_sets_are_repaired_by_the_global_check():
    w = random_code(120, 6, seed=7)
    default = one_vs_rest_distances(w, device="cpu")
    narrow = one_vs_rest_distances(w, device="cpu", candidates=1)
    assert narrow.rounds > 1
    assert narrow.certified
    np.testing.assert_allclose(narrow.hi, default.hi, atol=1e-9)


@pytest.mark.parametrize(
    "quick,band,extra,normal_per_dim",
    [(1, -1.0, 8.0, 1.7), (10_000, -1.0, 8.0, 1.7), (12, math.inf, 8.0, 1.7), (12, math.inf, 0.0, 100.0),
     (12, math.inf, math.inf, 0.0)],
    ids=["wolfe-then-interior-point", "wolfe-only", "interior-point-first", "interior-point-nearest-d-m-by-m",
         "interior-point-all-candidates-woodbury"],
)
def test_every_solver_path_gives_the_same_certificate(monkeypatch, quick, band, extra, normal_per_dim):
    # The interior point works on the nearest d candidates or on all of them,
    # its Newton systems solved with the m × m matrix or through the Woodbury
    # identity: every path must end at the same certified distances, which
    # SciPy's NNLS confirms.
    w = random_code(200, 12, seed=11)
    default = one_vs_rest_distances(w, device="cpu")
    monkeypatch.setattr(cert_qp, "WOLFE_QUICK_ITERATIONS", quick)
    monkeypatch.setattr(cert_qp, "JAMMED_BAND", band)
    monkeypatch.setattr(cert_qp, "IPM_EXTRA_PER_ROOT_DIM", extra)
    monkeypatch.setattr(cert_qp, "IPM_NORMAL_PER_DIM", normal_per_dim)
    other = one_vs_rest_distances(w, device="cpu")
    assert other.certified
    np.testing.assert_allclose(other.hi, default.hi, atol=1e-9)
    np.testing.assert_allclose(other.lo, default.lo, atol=1e-9)
    for k in range(0, 200, 20):
        independent = nnls_distance(w, k)
        assert other.lo[k] <= independent + 1e-12
        assert independent <= other.hi[k] + 1e-6


# --------------------------------------------------- the certificate's parts


def test_weights_and_features_reproduce_the_bounds_independently():
    w = random_code(150, 10, seed=8)
    cert = one_vs_rest_distances(w, device="cpu")
    for k in range(0, 150, 7):
        idx, weight = cert.weights_of(k)
        assert k not in idx
        assert np.all(weight > 0) and abs(weight.sum() - 1) < 1e-12
        assert len(idx) <= 10 + 1  # Carathéodory
        residual = w[k] - weight @ w[idx]
        assert abs(np.linalg.norm(residual) - cert.hi[k]) < 1e-12
        h = cert.features[k]
        assert abs(np.linalg.norm(h) - 1) < 1e-12
        others = np.delete(w, k, axis=0)
        assert abs(np.min((w[k] - others) @ h) - cert.lo[k]) < 1e-12


def test_softmax_rattlers_match_brute_force():
    # Three prototypes within 20 degrees and one opposite: the lone one is far
    # from the hull of the others, the clustered ones are not.
    angles = np.radians([0.0, 10.0, 20.0, 180.0, 100.0])
    w = np.column_stack([np.cos(angles), np.sin(angles)])
    cert = one_vs_rest_distances(w, device="cpu")
    exact = np.array([brute_force_distance(w, i) for i in range(len(w))])
    expected = np.flatnonzero(exact > exact.min() + cert.rattler_tol)
    assert expected.size > 0
    assert cert.softmax_rattlers.tolist() == expected.tolist()
    assert cert.rattlers_undecided.size == 0


def test_duplicates_give_distance_zero_and_are_reported():
    w = random_code(30, 5, seed=9)
    w[7] = w[3]
    w[20] = w[3]
    w[11] = w[12]
    cert = one_vs_rest_distances(w, device="cpu")
    assert sorted(cert.duplicates) == [(3, 7, 20), (11, 12)]
    for k in (3, 7, 20, 11, 12):
        assert cert.lo[k] == cert.hi[k] == 0.0
        assert np.all(np.isnan(cert.features[k]))
    assert cert.rho_upper == 0.0
    assert cert.certified
    rest = np.setdiff1d(np.arange(30), [3, 7, 20, 11, 12])
    assert np.all(cert.lo[rest] > 0)


def test_to_dict_is_json_ready():
    cert = one_vs_rest_distances(simplex_etf(5), device="cpu")
    data = json.loads(json.dumps(cert.to_dict(per_class=True)))
    assert data["certified"] is True
    assert len(data["lo"]) == 5 and len(data["support"]) == 5
    assert data["rho_lower"] <= 5 / 4 <= data["rho_upper"] + 1e-12


def test_accepts_torch_tensors():
    w = torch.from_numpy(simplex_etf(4))
    assert one_vs_rest_distances(w, device="cpu").certified


# -------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad,words",
    [
        (np.array([1.0, 0.0]), "2-D"),
        (np.array([[1.0, 0.0]]), "at least 2 rows"),
        (np.array([[1.0, 0.0], [np.nan, 1.0]]), "finite"),
        (np.array([[1.0, 0.0], [0.0, 1.1]]), "largest deviation"),
    ],
)
def test_bad_codes_are_refused(bad, words):
    with pytest.raises(SpherecodesError, match=words):
        one_vs_rest_distances(bad, device="cpu")


@pytest.mark.parametrize(
    "kwargs",
    [{"tol": 0.0}, {"tol": float("nan")}, {"candidates": 0}, {"device": "tpu"}, {"rattler_tol": -1.0}],
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(SpherecodesError):
        one_vs_rest_distances(simplex_etf(4), **{"device": "cpu", **kwargs})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cuda_without_gpu_is_refused():
    with pytest.raises(SpherecodesError, match="no CUDA"):
        one_vs_rest_distances(simplex_etf(4), device="cuda")


def test_memory_refusal_shows_the_estimate(monkeypatch):
    monkeypatch.setattr("spherecodes.memory.available_memory_bytes", lambda device="cpu": 1000)
    with pytest.raises(SpherecodesError, match="needs about"):
        one_vs_rest_distances(random_code(50, 4), device="cpu")


# --------------------------------------------------------------------- CUDA


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_agrees_with_cpu():
    w = random_code(500, 16, seed=10)
    cpu = one_vs_rest_distances(w, device="cpu")
    gpu = one_vs_rest_distances(w, device="cuda")
    assert gpu.certified and gpu.device.startswith("cuda")
    np.testing.assert_allclose(gpu.lo, cpu.lo, atol=1e-9)
    np.testing.assert_allclose(gpu.hi, cpu.hi, atol=1e-9)


# ------------------------------------------- the bound on the prototypes outside the first scan


@pytest.mark.parametrize("k,d,keep,seed", [(400, 5, 20, 0), (300, 12, 48, 1), (200, 3, 6, 2)])
def test_outside_bound_holds_for_every_prototype_left_out(k, d, keep, seed):
    # For each class and an arbitrary residual direction r, every prototype
    # outside its `keep` nearest (by float32 score) has <w_j, r> below the
    # bound, checked against the exact float64 products of all of them.
    rng = np.random.default_rng(seed)
    w = random_code(k, d, seed=seed)
    wt = torch.from_numpy(w)
    r = wt * torch.from_numpy(rng.uniform(0.2, 1.0, (k, 1))) + 0.3 * torch.from_numpy(rng.standard_normal((k, d)))
    scores32 = (wt.float() @ wt.float().T).fill_diagonal_(-math.inf)
    values, indices = torch.topk(scores32, keep, dim=1)
    bound = cert_qp.outside_bound(wt, r, values[:, -1].double(), 1.0)
    exact = (r @ wt.T).numpy()
    for i in range(k):
        outside = np.setdiff1d(np.arange(k), np.append(indices[i].numpy(), i))
        assert exact[i, outside].max() <= float(bound[i])
    # It is tight for a residual along w_k: a·τ up to the rounding allowance.
    along = cert_qp.outside_bound(wt, 0.5 * wt, values[:, -1].double(), 1.0)
    assert torch.all(along - 0.5 * values[:, -1].double() < 1e-5)
    # No prototype outside: no bound.
    assert torch.all(cert_qp.outside_bound(wt, r, torch.full((k,), -math.inf, dtype=torch.float64), 1.0) == -math.inf)


@pytest.mark.parametrize("known_per_dim", [0, 1, 1000])
def test_global_check_by_bound_or_by_scan_gives_the_same_certificate(monkeypatch, known_per_dim):
    # Few known keys (the bound rarely holds: the full scan decides), the
    # default, and every prototype known (no scan at all) must certify the
    # same intervals, which contain SciPy's independent optimum.
    w = random_code(40, 4, seed=4)
    default = one_vs_rest_distances(w, device="cpu", candidates=2)
    monkeypatch.setattr(cert_qp, "KNOWN_PER_DIM", known_per_dim)
    other = one_vs_rest_distances(w, device="cpu", candidates=2)
    assert other.certified and default.certified
    np.testing.assert_allclose(other.hi, default.hi, atol=1e-9)
    np.testing.assert_allclose(other.lo, default.lo, atol=1e-9)
    for k in (0,):
        independent = slsqp_distance(w, k)
        assert other.lo[k] <= independent + 1e-12
        assert independent <= other.hi[k] + 1e-6


def test_a_failing_bound_falls_back_to_the_scan_of_all_prototypes(monkeypatch):
    w = random_code(250, 8, seed=9)
    default = one_vs_rest_distances(w, device="cpu")
    monkeypatch.setattr(cert_qp, "outside_bound", lambda wk, r, tau, n: torch.full_like(tau, math.inf))
    scanned = one_vs_rest_distances(w, device="cpu")
    assert scanned.certified
    np.testing.assert_allclose(scanned.hi, default.hi, atol=1e-9)
    np.testing.assert_allclose(scanned.lo, default.lo, atol=1e-9)


def test_workers_are_capped_and_each_keeps_a_whole_block():
    """More cores never mean more than MAX_QP_WORKERS workers, nor smaller blocks (each streams all K)."""
    import spherecodes.certificate as certificate
    from spherecodes.certificate import _blocks
    from spherecodes.devices import torch_threads

    cpu = torch.device("cpu")
    with torch_threads(2 * certificate.MAX_QP_WORKERS):
        assert certificate.qp_workers(cpu) == certificate.MAX_QP_WORKERS
    with torch_threads(1):
        assert certificate.qp_workers(cpu) == 1
    sizes = [_blocks.block_size(100_000, 64, 130, cpu, workers=n)[0] for n in (1, 2, 4)]
    assert sizes[0] == sizes[1] == sizes[2] > 100, sizes
    per_class = _blocks.per_class_bytes(100_000, 64, 130, _blocks.column_tile(100_000, cpu))
    assert sizes[0] * per_class <= _blocks.BLOCK_BUDGET_BYTES["cpu"]


def test_blocks_shared_among_threads_give_the_certificate_of_one_thread(monkeypatch):
    # Small blocks (a tight memory limit) certified by three workers at once:
    # the same intervals as one worker (whose blocks and thread count differ,
    # so up to rounding), and bit for bit the same on every run, whichever
    # worker happens to take which block.
    from spherecodes.certificate import _solve as certificate

    w = random_code(600, 6, seed=9)
    monkeypatch.setattr(certificate, "qp_workers", lambda dev: 1)
    one = one_vs_rest_distances(w, device="cpu", max_memory=24 * 2**20)
    monkeypatch.setattr(certificate, "qp_workers", lambda dev: 3)
    shared = one_vs_rest_distances(w, device="cpu", max_memory=24 * 2**20)
    again = one_vs_rest_distances(w, device="cpu", max_memory=24 * 2**20)
    assert one.certified and shared.certified
    np.testing.assert_allclose(shared.lo, one.lo, atol=1e-13)
    np.testing.assert_allclose(shared.hi, one.hi, atol=1e-13)
    assert np.array_equal(shared.lo, again.lo) and np.array_equal(shared.hi, again.hi)
    assert np.array_equal(shared.support_indices, again.support_indices)


def test_warm_bound_spares_scans_and_certifies_the_same(monkeypatch):
    # With few known keys every class needs a scan of all K in the first
    # round; the bound from that scan settles later rounds without another.
    # Turned off, the scans come back and the intervals stay the same.
    w = random_code(300, 6, seed=2)
    monkeypatch.setattr(cert_qp, "KNOWN_PER_DIM", 0)
    scanned = []
    screened = cert_qp._screened_max

    def counting(r, *args, **kwargs):
        scanned.append(r.shape[0])
        return screened(r, *args, **kwargs)

    monkeypatch.setattr(cert_qp, "_screened_max", counting)
    warm = one_vs_rest_distances(w, device="cpu", candidates=3)
    with_bound = sum(scanned)
    scanned.clear()
    monkeypatch.setattr(cert_qp, "_warm_bound", lambda r, *args: torch.full((r.shape[0],), math.inf, dtype=r.dtype))
    cold = one_vs_rest_distances(w, device="cpu", candidates=3)
    assert warm.certified and cold.certified
    assert with_bound < sum(scanned)
    np.testing.assert_allclose(warm.lo, cold.lo, atol=1e-13)
    np.testing.assert_allclose(warm.hi, cold.hi, atol=1e-13)


def test_a_deadline_stops_the_qp_inside_its_block_and_a_later_one_changes_nothing():
    import time

    from spherecodes.certificate import CertificateOutOfTime

    w = random_code(300, 8, seed=2)  # the nearest shells settle few classes of a random code: the rest is QP
    full = one_vs_rest_distances(w, device="cpu")
    with pytest.raises(CertificateOutOfTime) as stop:
        one_vs_rest_distances(w, device="cpu", deadline=0.0)
    assert stop.value.progress.step < stop.value.progress.steps == 300
    later = one_vs_rest_distances(w, device="cpu", deadline=time.perf_counter() + 3600)
    np.testing.assert_array_equal(later.lo, full.lo)
    np.testing.assert_array_equal(later.hi, full.hi)
