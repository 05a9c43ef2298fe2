"""The nearest-shell certificate: closed forms without a QP, agreement with the QP, the float32 screen."""

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from spherecodes.certificate import _qp as cert_qp
from spherecodes.certificate import _shell, one_vs_rest_distances, verify_witness
from spherecodes.constructions import (
    cell_24,
    cell_600,
    cross_polytope,
    e8_roots,
    random_rotation,
    regular_polygon,
    simplex_etf,
)
from spherecodes.sphere import nearest_others, top_matches

from conftest import random_code


def rotated(w: np.ndarray, seed: int) -> np.ndarray:
    """A Haar-random rotation of the code, so that no coordinate pattern is left to recognise."""
    return w @ random_rotation(w.shape[1], seed).T


def d_n_roots(n: int) -> np.ndarray:
    """The D_n root system ±e_i ± e_j, normalised: 2n(n−1) points with max-cos 1/2."""
    points = []
    for i, j in itertools.combinations(range(n), 2):
        for si, sj in itertools.product((1.0, -1.0), repeat=2):
            x = np.zeros(n)
            x[i], x[j] = si, sj
            points.append(x / math.sqrt(2))
    return np.array(points)


# rho of each code from its construction: Jiang et al. (2024) Thm 3.3 for the
# simplex ETF (K/(K−1)) and the cross-polytope (1), and for codes whose nearest
# shell is balanced, rho = 1 − max-cos (the 24-cell, 600-cell, E8 and D_n have
# max-cos 1/2, 1/2, (1+√5)/4 and 1/2; the K-gon has cos(2π/K)).
CLOSED_FORMS = [
    ("etf-12-11", simplex_etf(12, 11), 12 / 11),
    ("etf-30-50", simplex_etf(30, 50), 30 / 29),
    ("cross-polytope-20-12", cross_polytope(20, 12), 1.0),
    ("cross-polytope-subset-13-8", cross_polytope(13, 8), 1.0),
    ("polygon-9", regular_polygon(9), 1 - math.cos(2 * math.pi / 9)),
    ("24-cell", cell_24(), 0.5),
    ("600-cell", cell_600(), 1 - (1 + math.sqrt(5)) / 4),
    ("e8", e8_roots(), 0.5),
    ("d6", d_n_roots(6), 0.5),
]


@pytest.mark.parametrize("name, w, rho", CLOSED_FORMS, ids=[c[0] for c in CLOSED_FORMS])
def test_symmetric_codes_in_any_rotation_are_exact_without_a_qp(name, w, rho):
    w = rotated(w, seed=len(name))
    bounds = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**20, max_support=len(w))
    assert bounds.exact.all(), name
    assert abs(bounds.lo.min() - rho) <= 1e-12 and abs(bounds.hi.min() - rho) <= 1e-12
    # Every class of these vertex-transitive codes is at the same distance.
    assert np.ptp(bounds.hi) <= 1e-12
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified and cert.width <= 1e-12
    lo, hi = verify_witness(w, cert)
    assert abs(lo.min() - rho) <= 1e-12 and abs(hi.min() - rho) <= 1e-12


@pytest.mark.parametrize("name, w, rho", CLOSED_FORMS[:6], ids=[c[0] for c in CLOSED_FORMS[:6]])
def test_shell_bounds_agree_with_the_qp(name, w, rho):
    """A second method: Wolfe's algorithm on every class gives the same intervals."""
    w = rotated(w, seed=3)
    k, d = w.shape
    bounds = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**20, max_support=k)
    wt = torch.from_numpy(w)
    m = min(k - 1, max(32, 2 * d + 2))
    qp = cert_qp.certify_block(wt, wt.float(), torch.arange(k), m, 1e-9, torch.full((k,), -1), k, None)
    assert np.abs(qp.hi - bounds.hi).max() <= 1e-9
    assert np.abs(qp.lo - bounds.lo).max() <= 1e-9


@pytest.mark.parametrize("gpu_possible", [False, True])
def test_a_balanced_shell_needs_no_torch(gpu_possible):
    """Also where a GPU may be present: "auto" is not resolved (which loads torch) when no QP is needed."""
    script = (
        "import sys\n"
        f"import spherecodes.devices; spherecodes.devices.cuda_possible = lambda: {gpu_possible}\n"
        "from spherecodes.certificate import one_vs_rest_distances\n"
        "from spherecodes.constructions import construct\n"
        "cert = one_vs_rest_distances(construct('etf', 40, 30, rotation='random', seed=1))\n"
        "assert cert.certified, cert.width\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_perturbed_symmetric_codes_fall_back_to_the_qp():
    """A tiny perturbation breaks the exact ties: the QP certifies, close to the unperturbed rho."""
    rng = np.random.default_rng(0)
    w = rotated(simplex_etf(40, 39), seed=1) + 1e-7 * rng.standard_normal((40, 39))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    bounds = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**20, max_support=40)
    assert not bounds.exact.any()
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    assert abs(cert.rho_lower - 40 / 39) < 1e-5
    verify_witness(w, cert)


def test_mixed_codes_certify_the_balanced_classes_here_and_the_rest_by_qp():
    """Cross-polytope vertices plus one generic point: only some shells stay balanced."""
    w = np.vstack([cross_polytope(10, 6), random_code(1, 6, seed=4)])
    cert = one_vs_rest_distances(w, device="cpu")
    bounds = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**20, max_support=11)
    assert bounds.exact.any() and not bounds.exact.all()
    assert cert.certified
    lo, hi = verify_witness(w, cert)
    assert np.all(lo <= hi + 1e-15)


def test_an_optimised_looking_code_is_left_to_the_qp_after_one_block(monkeypatch):
    monkeypatch.setattr(_shell, "GIVE_UP_AFTER", 8)
    w = random_code(64, 5, seed=2)
    block_bytes = 16 * (9 * 64 + 16 * 4 * 6 + 8 * 10)  # 16 classes a block (K = 64, d = 5)
    assert _shell.shell_block_rows(64, 5, block_bytes) == 16
    bounds = _shell.shell_bounds(w, tol=1e-9, block_bytes=block_bytes, max_support=64)
    assert not bounds.exact.any()
    assert (bounds.lo[16:] == 0).all()  # not examined: only the trivial bound dist >= 0


def test_the_pass_reports_progress_in_blocks_even_where_memory_allows_one(monkeypatch):
    # 64 MiB would hold all 12 classes in one block, but a block of a code in a few hundred dimensions can take
    # minutes, so blocks are at most 1/SHELL_PROGRESS_BLOCKS of the classes (here at least 4 rows).
    monkeypatch.setattr(_shell, "SHELL_MIN_BLOCK_ROWS", 4)
    calls = []
    bounds = _shell.shell_bounds(cross_polytope(12, 6), tol=1e-9, block_bytes=64 * 2**20, max_support=8,
                                 progress=calls.append)
    assert bounds.exact.all() and calls == [4, 8, 12]


def test_duplicates_are_at_distance_zero_through_the_shell():
    w = np.vstack([cross_polytope(6, 3), cross_polytope(6, 3)[:1]])
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.hi[0] == 0 and cert.hi[6] == 0 and cert.lo[0] == 0
    assert cert.duplicates == [(0, 6)]


def test_the_float32_screen_finds_the_exact_maximum_among_near_ties(monkeypatch):
    """Keys whose inner products with the query differ by less than float32 can resolve."""
    rng = np.random.default_rng(5)
    d = 16
    q = rng.standard_normal((3, d))
    keys = rng.standard_normal((200, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    # Ten keys at almost the same product with query 0, apart by 1e-12: below float32 resolution.
    base = q[0] / np.linalg.norm(q[0])
    for i in range(10):
        keys[i] = base + 1e-12 * (i + 1) * keys[100 + i]
        keys[i] /= np.linalg.norm(keys[i])
    w = torch.from_numpy(keys)
    r = torch.from_numpy(q)
    exclude = torch.full((3, 1), -1)
    exact = (r @ w.T).max(dim=1).values
    best = cert_qp._screened_max(r, w, w.float(), exclude, 64, None, None, float(w.norm(dim=1).max()))[0]
    # The near-tied keys differ by ~1e-12; float64 summation order by ~1e-15.
    assert (best - exact).abs().max() <= 1e-14
    # The float64 rescan of the near-tied row reuses the float32 scratch space (half-width tiles).
    scratch = torch.full((3 * 64 + 1,), float("nan"), dtype=torch.float32)
    rescans = []

    def recording(queries, *args, **kwargs):
        rescans.append((queries.dtype, kwargs["buffer"] is not None and kwargs["buffer"].dtype))
        return top_matches(queries, *args, **kwargs)

    monkeypatch.setattr(cert_qp, "top_matches", recording)
    reused = cert_qp._screened_max(r, w, w.float(), exclude, 64, scratch, None, float(w.norm(dim=1).max()))[0]
    assert (reused - exact).abs().max() <= 1e-14
    assert (torch.float64, torch.float64) in rescans, rescans


def test_large_supports_are_certified_exactly():
    """The simplex ETF with K = d + 1 = 257: every class's witness holds the K − 1 others."""
    w = rotated(simplex_etf(257, 256), seed=8)
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified and cert.width <= 1e-12
    assert (cert.support_indices >= 0).sum(axis=1).min() == 256
    assert abs(cert.rho_lower - 257 / 256) <= 1e-12


@pytest.mark.parametrize("noise", [1e-15, 1e-14, 1e-13])
def test_nearly_balanced_shells_store_bounds_their_witness_reproduces(noise):
    """Rounding-level noise leaves the shells almost balanced: what is stored must still check."""
    rng = np.random.default_rng(11)
    w = rotated(e8_roots(), seed=2) + noise * rng.standard_normal((240, 8))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    lo, hi = verify_witness(w, cert)  # raises if a stored end is not reproduced
    assert np.all(lo >= cert.lo - 1e-12) and np.abs(hi - cert.hi).max() <= 1e-12
    assert abs(cert.rho_lower - 0.5) <= 100 * noise + 1e-12


def reed_muller_2_4() -> np.ndarray:
    """RM(2, 4), the [16, 11, 4] code, as ±1/4 vectors: 2048 points with max-cos 1 − 2·4/16 = 1/2."""
    points = np.array(list(itertools.product((0, 1), repeat=4)))
    monomials = [np.ones(16, dtype=int)] + [points[:, i] for i in range(4)]
    monomials += [points[:, i] * points[:, j] for i, j in itertools.combinations(range(4), 2)]
    generator = np.array(monomials) % 2
    messages = np.array(list(itertools.product((0, 1), repeat=len(generator))))
    words = messages @ generator % 2
    return (1.0 - 2.0 * words) / 4.0


def test_subsets_of_a_binary_code_are_certified_from_their_unbalanced_shells():
    """A random third of RM(2, 4): shells of ~45 points that are no longer balanced.

    Every distance is at least 1 − max-cos = 1/2 (the direction w_k), and a
    non-negative combination of the shell reaches it whenever (1/2) w_k lies in
    the shell's hull; Wolfe's algorithm on every class is the second method.
    """
    full = reed_muller_2_4()
    rng = np.random.default_rng(7)
    w = rotated(full[np.sort(rng.choice(len(full), 680, replace=False))], seed=5)
    k, d = w.shape
    uniform = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**22, max_support=k)
    assert uniform.exact.mean() > 0.9
    widths = uniform.support_indices.shape[1]
    assert widths <= d + 1  # NNLS witnesses are basic: at most d + 1 points (Carathéodory)
    settled = np.flatnonzero(uniform.exact)
    assert np.abs(uniform.lo[settled] - 0.5).max() <= 1e-12 and np.abs(uniform.hi[settled] - 0.5).max() <= 1e-12
    wt = torch.from_numpy(w)
    qp = cert_qp.certify_block(wt, wt.float(), torch.arange(k), 2 * d + 2, 1e-9, torch.full((k,), -1), k, None)
    assert np.abs(qp.hi[settled] - 0.5).max() <= 1e-9
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified and abs(cert.rho_lower - 0.5) <= 1e-12 and abs(cert.rho_upper - 0.5) <= 1e-12
    verify_witness(w, cert)


def test_the_shell_scan_over_column_tiles_finds_the_same_shells(monkeypatch):
    """Shells met a tile at a time (running maximum, cut at the end) equal those of the whole Gram rows."""
    w = rotated(reed_muller_2_4()[::3], seed=2)
    gram = w @ w.T
    np.fill_diagonal(gram, -np.inf)
    monkeypatch.setattr(_shell, "SHELL_TILE", 37)
    block = np.arange(0, len(w), 5)
    best, first, _ = nearest_others(w, block, _shell.SHELL_TILE)
    shells = _shell._nearest_shells(w, block, best, np.arange(1, len(block), 2))
    for i, k in enumerate(block):
        # A tile's product may round differently from the whole row's (the
        # BLAS blocks them differently), so ties are met within rounding.
        assert abs(best[i] - gram[k].max()) <= 1e-15 and gram[k][first[i]] >= gram[k].max() - 1e-15
        members = np.flatnonzero(gram[k] >= gram[k].max() - _shell.SHELL_TOL).tolist() if i % 2 else []
        assert shells[i].tolist() == members
    tiled = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**16, max_support=len(w))
    monkeypatch.setattr(_shell, "SHELL_TILE", 4096)
    whole = _shell.shell_bounds(w, tol=1e-9, block_bytes=2**22, max_support=len(w))
    assert np.array_equal(tiled.exact, whole.exact) and tiled.exact.mean() > 0.9
    assert np.abs(tiled.hi[whole.exact] - whole.hi[whole.exact]).max() <= 1e-12


def test_the_row_lookup_finds_equal_rows_on_its_grid_and_nothing_else(monkeypatch):
    """Every row is found at its first occurrence; a moved row is not; colliding hashes are told apart."""
    w = np.vstack([cross_polytope(8, 4), cross_polytope(8, 4)[:2]])  # rows 8, 9 repeat rows 0, 1
    lookup = _shell._RowLookup(w)
    assert lookup.find(w).tolist() == list(range(8)) + [0, 1]
    moved = w[:3] + np.array([1e-6, 0.0, 0.0, 0.0])
    assert lookup.find(moved).tolist() == [-1, -1, -1]
    # With every hash equal, the words alone must tell the rows apart.
    monkeypatch.setattr(_shell, "row_hashes", lambda x, to_bits: np.zeros(len(x), dtype=np.uint64))
    colliding = _shell._RowLookup(w)
    assert colliding.find(w[[3, 9, 5]]).tolist() == [3, 1, 5]
    assert colliding.find(moved).tolist() == [-1, -1, -1]
