"""Codes that are one orbit of sign changes: detection, statistics and certificates from one class."""

import itertools

import h5py
import numpy as np
import pytest

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


def test_same_numbers_as_the_scans_of_all_pairs():
    w = words_on_sphere(even_weight(11), pad=2, seed=3)
    fast_cert, fast_stats = one_vs_rest_distances(w, device="cpu"), separation_statistics(w)
    assert fast_cert.orbit is not None and fast_cert.support_indices.shape[0] == 1
    slow_cert = one_vs_rest_distances(w, device="cpu", orbit=None)
    slow_stats = separation_statistics(w, orbit=None)
    assert slow_cert.orbit is None and slow_cert.support_indices.shape[0] == len(w)
    assert abs(fast_stats.max_cos - slow_stats.max_cos) < 1e-15 and abs(fast_stats.min_cos - slow_stats.min_cos) < 1e-15
    assert np.abs(fast_stats.nearest_cos - slow_stats.nearest_cos).max() < 1e-15
    assert abs(fast_stats.mean_cos - slow_stats.mean_cos) < 1e-15
    # Both intervals hold dist_k = 4/11 (the even-weight code's closed form), at rounding width.
    for cert in (fast_cert, slow_cert):
        assert cert.certified and (cert.lo <= 4 / 11 + 1e-14).all() and (cert.hi >= 4 / 11 - 1e-14).all()
        assert cert.width < 1e-12
    # The scan of all pairs re-checks the orbit's certificate too, expanded to every class's witness.
    full = fast_cert.expanded(w)
    lo, hi = verify_witness(w, full, orbit=None)
    assert (hi - lo).max() < 1e-13 and np.allclose(lo, fast_cert.lo, atol=1e-14)
    assert np.allclose(full.features, slow_cert.features, atol=1e-12)
    for c in (0, 5, 1000):  # class c's witness is class 0's moved: its weights mix to the same point
        idx, wt = fast_cert.weights_of(c)
        assert np.linalg.norm(w[c] - wt @ w[idx]) == pytest.approx(4 / 11, abs=1e-14)


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
    full = cert.expanded(w)
    indices = full.support_indices.copy()
    indices[[3, 4]] = indices[[4, 3]]
    swapped = type(cert)(**{**vars(full), "support_indices": indices})
    with pytest.raises(SpherecodesError, match="does not check|not a point of the simplex"):
        verify_witness(w, swapped)


def test_stored_generators_are_checked_not_trusted():
    w = words_on_sphere(even_weight(10), pad=2)
    orbit = sign_orbit(w)
    again = sign_orbit(w, orbit.generators)
    assert again is not None and np.array_equal(again.coordinates, orbit.coordinates)
    # The even-weight words are spanned by e_0 + e_j: a generator flipping one column is no generator.
    wrong = orbit.generators.copy()
    wrong[0] = False
    wrong[0, np.flatnonzero(orbit.generators[0])[0]] = True
    assert sign_orbit(w, wrong) is None
    # Generators of the whole cube do not describe half of it; the right ones fail on a changed row.
    assert sign_orbit(w, np.eye(10, 12, dtype=bool)[:9]) is None
    bent = w.copy()
    bent[17, :2] *= -1
    assert sign_orbit(bent, orbit.generators) is None
    # A certificate of class 0 with the orbit is re-checked against the rows: on other rows it fails.
    cert = one_vs_rest_distances(w, device="cpu", orbit=orbit)
    with pytest.raises(SpherecodesError, match="do not map the prototypes onto themselves"):
        verify_witness(bent, cert)


def counted_searches(monkeypatch):
    """How many times the generators are searched for by elimination (a proof from the rows alone)."""
    import spherecodes.orbit as orbit_module

    calls = []
    search = orbit_module._echelon_basis

    def counting(words, rank):
        calls.append(rank)
        return search(words, rank)

    monkeypatch.setattr(orbit_module, "_echelon_basis", counting)
    return calls


def test_generate_proves_the_orbit_once_and_the_bank_keeps_its_generators(tmp_path, monkeypatch):
    from spherecodes.bank import ORBIT_SCHEMA_VERSION, read_code, write_code
    from spherecodes.generation import code_name
    from spherecodes.run import generate

    searches = counted_searches(monkeypatch)
    # The extended Golay code [24,12,8] embedded in R^30: auto turns it into every dimension, so its name
    # holds the seed, decided from the construction before any row exists; kept in its coordinates here.
    assert code_name(30, 4096, "structured", 0, "auto") == ("structured-d30-k4096-s0", 0)
    assert code_name(30, 4096, "structured", 0, "none") == ("structured-d30-k4096", None)
    assert searches == []
    code = generate(30, 4096, "structured", rotation="none")
    assert code.orbit is not None and code.orbit.rank == 12 and searches == [12]
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    verify_witness(code.prototypes, code.certificate, orbit=code.orbit)
    assert searches == [12]
    # Golay: nearest words at distance 8, cosine 1/3; the 759 of them are balanced: rho = 1 − 1/3.
    assert code.certificate.support_indices.shape[0] == 1
    assert abs(code.certificate.rho_lower - 2 / 3) < 1e-14 and code.certificate.width < 1e-14
    write_code(tmp_path / "b.h5", code)
    with h5py.File(tmp_path / "b.h5", "r") as f:
        assert f.attrs["schema_version"] == ORBIT_SCHEMA_VERSION
        stored = f["codes/structured-d30-k4096/orbit/generators"][()]
        assert stored.shape == (12, 30) and not stored[:, 24:].any()
    again = read_code(tmp_path / "b.h5")
    assert searches == [12]  # read: the stored generators were checked, no search
    assert np.array_equal(again.orbit.coordinates, code.orbit.coordinates)
    assert again.certificate.orbit is not None and again.certificate.rho_lower == code.certificate.rho_lower


@pytest.mark.parametrize("damage", ["generator", "row", "orbit dropped"])
def test_a_bank_whose_stored_orbit_does_not_hold_is_refused(tmp_path, damage):
    from spherecodes.bank import read_code, write_code
    from spherecodes.code import make_code, prototype_checksum

    w = words_on_sphere(even_weight(10), pad=2)
    code = make_code(w, method="external", name="even")
    code.certificate = one_vs_rest_distances(w, device="cpu", orbit=code.orbit)
    write_code(tmp_path / "b.h5", code)
    with h5py.File(tmp_path / "b.h5", "r+") as f:
        group = f["codes/even"]
        if damage == "generator":
            generators = group["orbit/generators"][()]
            generators[3, -3] ^= 1  # a zero column flipped: no longer the rows' group
            group["orbit/generators"][...] = generators
        elif damage == "row":
            rows = group["prototypes"][()]
            rows[7, :2] *= -1  # an even change of weight: row 7 now repeats another row
            group["prototypes"][...] = rows
            group.attrs["sha256"] = prototype_checksum(rows)
        else:
            del group["orbit"]  # as a bank written before generators were stored: proved again from the rows
    if damage == "orbit dropped":
        assert read_code(tmp_path / "b.h5").orbit is not None
        return
    with pytest.raises(SpherecodesError, match="orbit/generators do not generate|damaged"):
        read_code(tmp_path / "b.h5")


def test_the_plots_count_the_pairs_of_an_orbit_from_one_row():
    from math import comb

    from spherecodes.plots import cosine_histogram, distinct_cosines

    w = words_on_sphere(even_weight(10))
    orbit = sign_orbit(w)
    values, counts = distinct_cosines(w, orbit=orbit)
    # Words at distance 2j: cosine 1 − 4j/10, and each word has C(10, 2j) of them: K/2 · C(10, 2j) pairs.
    assert np.allclose(values, [1 - 4 * j / 10 for j in (5, 4, 3, 2, 1)], atol=1e-12)
    assert counts.tolist() == [256 * comb(10, 2 * j) for j in (5, 4, 3, 2, 1)]
    bins = np.linspace(-1.05, 1.05, 22)
    assert cosine_histogram(w, bins, orbit=orbit).tolist() == cosine_histogram(w, bins).tolist()
