"""Kerdock codes (and other Z4-linear codes), one orbit of Z4 translations: structure, statistics, certificate, bank."""

import numpy as np
import pytest

from spherecodes.certificate import certificate_estimate, one_vs_rest_distances, verify_witness
from spherecodes.errors import SpherecodesError
from spherecodes.orbit import ORBIT_MIN_K, resolve_orbit
from spherecodes.stats import separation_statistics
from spherecodes.structured import kerdock_code
from spherecodes.z4orbit import Z4Orbit, z4_orbit

#: The Gray map: symbol z in Z4 becomes this pair of signs (Hammons, Kumar, Calderbank, Sloane & Solé 1994).
GRAY = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0]])


def kerdock(n: int, k: int, pad: int = 0) -> np.ndarray:
    w = kerdock_code(n).construction.points(k)
    return np.hstack([w, np.zeros((k, pad))])


def random_z4(k: int, digits, pairs: int = 12, seed: int = 1) -> np.ndarray:
    """Rows m = Gray(c + Σ_b m_b g_b) of random generators, c a random word (a coset), on the sphere.

    ``digits`` lists (low bit, high bit) of the quaternary digits (g_high = 2 g_low); the other bits get
    random generators in {0, 2}.  Random generators give nearest cosines that differ from row to row.
    """
    rng = np.random.default_rng(seed)
    t = (k - 1).bit_length()
    generators = 2 * rng.integers(0, 2, size=(t, pairs))
    for low, high in digits:
        generators[low] = rng.integers(0, 4, size=pairs)
        generators[low, 0] = 1  # of order 4
        generators[high] = 2 * generators[low] % 4
    bits = (np.arange(k)[:, None] >> np.arange(t)) & 1
    symbols = (bits @ generators + rng.integers(0, 4, size=pairs)) % 4
    return GRAY[symbols].reshape(k, 2 * pairs) / np.sqrt(2 * pairs)


def all_pairs(w):
    g = w @ w.T
    np.fill_diagonal(g, -np.inf)
    nearest = g.max(axis=1)
    np.fill_diagonal(g, np.inf)
    return nearest, g.min()


@pytest.mark.parametrize("n, k, pad", [(16, 256, 0), (16, 200, 3), (64, 300, 0), (64, 1000, 5), (64, 4096, 0)])
def test_kerdock_codes_are_proved_and_their_other_words_are_the_codes_words(n, k, pad):
    w = kerdock(n, k, pad)
    orbit = z4_orbit(w)
    assert isinstance(orbit, Z4Orbit) and orbit.rank == (k - 1).bit_length()
    # "auto" proves it from ORBIT_MIN_K rows on (below, the scans of all pairs are as fast).
    assert isinstance(resolve_orbit(w), Z4Orbit) if k >= ORBIT_MIN_K else resolve_orbit(w) is None
    # The construction's own words beyond K are what the translations make of the rows.
    words = np.arange(orbit.words)
    full = kerdock(n, orbit.words, pad)
    assert np.array_equal(orbit.rows_of(w, words), full)
    assert np.array_equal(orbit.cosines(w), full @ full[0])
    # Translating word u by word v (pair j turned by v's symbol j) is the construction's word u + v.
    u, v = np.random.default_rng(n + k).integers(0, orbit.words, size=(2, 500))
    assert np.array_equal(np.array([orbit.turned(full[a], orbit.symbols([b])[0]) for a, b in zip(u, v)]),
                          full[orbit.add(u, v)])
    moved = orbit.moved(words, 5)  # an isometry: every cosine between words is kept
    assert np.array_equal(full[moved[:50]] @ full[moved[:50]].T, full[:50] @ full[:50].T)


def test_index_addition_is_the_addition_of_the_words():
    n, k = 64, 1000
    orbit = z4_orbit(kerdock(n, k))
    words = np.arange(orbit.words)
    symbols = orbit.symbols(words)
    i, j = np.random.default_rng(0).integers(0, orbit.words, size=(2, 5000))
    assert np.array_equal(orbit.symbols(orbit.add(i, j)), (symbols[i].astype(int) + symbols[j]) % 4)
    assert np.array_equal(orbit.symbols(orbit.negated(i)), (4 - symbols[i].astype(int)) % 4)


@pytest.mark.parametrize("code", ["kerdock-1000", "kerdock-2100", "random"])
def test_which_moved_witnesses_stay_among_the_rows(code):
    # Word sets over several blocks too: a carry from the bits above the blocks' into a class's block counts.
    w = {"kerdock-1000": lambda: kerdock(64, 1000), "kerdock-2100": lambda: kerdock(64, 2100),
         "random": lambda: random_z4(1337, [(0, 5), (6, 1), (7, 2), (8, 3), (9, 4)])}[code]()
    orbit, classes = z4_orbit(w), np.arange(len(w))
    rng = np.random.default_rng(3)
    for _ in range(100):
        words = rng.integers(1, orbit.words, size=rng.integers(1, 6))
        one_block = (rng.integers(0, orbit.words) >> orbit.block_bits << orbit.block_bits) | rng.integers(
            1, 1 << orbit.block_bits, size=3)
        for chosen in (words, one_block):
            expected = (orbit.add(classes[:, None], chosen[None, :]) < len(w)).all(axis=1)
            assert np.array_equal(orbit.fits(classes, chosen), expected)


@pytest.mark.parametrize("n, k, pad", [(16, 256, 0), (16, 200, 2), (64, 300, 0), (64, 1000, 3), (64, 2100, 0)])
def test_kerdock_statistics_equal_the_scan_of_all_pairs(n, k, pad):
    w = kerdock(n, k, pad)
    fast, slow = separation_statistics(w), separation_statistics(w, orbit=None)
    assert fast.max_cos == slow.max_cos == 1 / np.sqrt(n) and fast.min_cos == slow.min_cos == -1
    assert np.array_equal(fast.nearest_cos, slow.nearest_cos)
    assert (fast.nearest_index != np.arange(k)).all()
    assert np.array_equal(np.einsum("kd,kd->k", w, w[fast.nearest_index]), slow.nearest_cos)
    assert fast.mean_cos == slow.mean_cos and np.array_equal(fast.rattlers, slow.rattlers)


# Digit layouts: Kerdock's (the low bit of ε at 0 below its high bit, the λ digits' low bits above their high
# bits), none, one digit only, a digit over the top bit, a digit from the top bit down; the pairs chosen so that
# the rows' nearest cosines differ.
@pytest.mark.parametrize("k, digits, pairs", [(1337, [(0, 5), (6, 1), (7, 2), (8, 3), (9, 4)], 24), (1337, [], 16),
                                              (700, [(3, 1)], 16), (2049, [(1, 2), (8, 4)], 16), (511, [(0, 8)], 12),
                                              (1025, [(10, 0)], 16), (300, [(2, 7)], 16)])
def test_statistics_of_z4_codes_with_different_nearest_cosines(k, digits, pairs):
    w = random_z4(k, digits, pairs)
    orbit = z4_orbit(w)
    assert isinstance(orbit, Z4Orbit)
    # With two digits of order 4 the Gray image is no linear binary code, and "auto" finds this structure.
    assert isinstance(resolve_orbit(w), Z4Orbit) or len(digits) < 2
    nearest, low = all_pairs(w)
    assert len(np.unique(nearest.round(12))) > 1  # the trees must tell the rows apart
    fast = separation_statistics(w, orbit=orbit)
    assert np.abs(fast.nearest_cos - nearest).max() < 1e-15 and abs(fast.min_cos - low) < 1e-15
    assert np.abs(np.einsum("kd,kd->k", w, w[fast.nearest_index]) - nearest).max() < 1e-15
    assert (fast.nearest_index != np.arange(k)).all() and (fast.nearest_index < k).all()


def test_rows_that_break_the_structure_are_not_taken_for_it():
    w = kerdock(64, 1000)
    orbit = z4_orbit(w)
    swapped = w.copy()
    swapped[[5, 6]] = swapped[[6, 5]]
    flipped = w.copy()
    flipped[700, 3] *= -1  # one sign: row 700 is then no sum of the generators
    scaled = w.copy()
    scaled[10] = np.where(np.arange(64) < 32, 1.0, 2.0) * scaled[10] / np.sqrt(2.5)
    for bad in (swapped, flipped, scaled):
        assert z4_orbit(bad) is None and resolve_orbit(bad) is None
    # Given generators and pairs are checked, not trusted.
    wrong = orbit.generators.copy()
    wrong[4, 0] = (wrong[4, 0] + 1) % 4
    assert z4_orbit(w, orbit.generators, orbit.pairs).rank == 10
    assert z4_orbit(w, wrong, orbit.pairs) is None and z4_orbit(w, orbit.generators[:9], orbit.pairs) is None
    assert z4_orbit(w, orbit.generators, orbit.pairs[:, ::-1]) is None  # pairs turned the other way
    # Two digits whose low bits lie below their high bits: not a structure the trees handle.
    assert z4_orbit(random_z4(1000, [(0, 5), (1, 6)])) is None


@pytest.mark.parametrize("n, k, pad", [(16, 256, 0), (64, 300, 2), (64, 700, 0), (64, 1000, 0)])
def test_certificate_holds_the_generic_certificates_intervals(n, k, pad):
    w = kerdock(n, k, pad)
    fast = one_vs_rest_distances(w, device="cpu")
    slow = one_vs_rest_distances(w, device="cpu", orbit=None)
    assert isinstance(fast.orbit, Z4Orbit) and slow.certified
    # Every class is certified; rho = 1 − 1/√n (n/2 + 1 mutually unbiased bases: balanced nearest shells).
    assert fast.certified and fast.classes_certified == k
    assert abs(fast.rho_lower - (1 - 1 / np.sqrt(n))) < 1e-15 and abs(fast.rho_upper - (1 - 1 / np.sqrt(n))) < 1e-15
    assert (fast.lo <= slow.hi + 1e-12).all() and (slow.lo <= fast.hi + 1e-12).all()
    assert np.abs(fast.hi - slow.hi).max() < 1e-12
    lo, hi = verify_witness(w, fast)
    assert np.array_equal(hi, fast.hi) and np.array_equal(lo, fast.lo)
    # Each class's witness, moved from class 0's, is a point of the hull of its others at distance hi.
    for c in (0, 1, k // 2, k - 1):
        indices, weights = fast.weights_of(c)
        assert (indices < k).all() and (indices != c).all() and abs(weights.sum() - 1) < 1e-12
        assert abs(np.linalg.norm(w[c] - weights @ w[indices]) - fast.hi[c]) < 1e-14
    with pytest.raises(SpherecodesError, match="whole orbit"):
        fast.expanded(w)
    estimate = certificate_estimate(w, device="cpu")
    assert "Z4 translations" in estimate.what and "QP" not in estimate.what


def test_classes_whose_witnesses_leave_the_rows_are_bounded_by_their_nearest_row():
    # A basis of n = 16 (32 rows) and 8 rows of the next: the classes of the second basis take the witness
    # moved into the first; those of the first would need 16 words of the second, which has 8 rows.
    w = kerdock(16, 40)
    cert = one_vs_rest_distances(w, device="cpu", orbit=z4_orbit(w))
    assert isinstance(cert.orbit, Z4Orbit) and cert.rho_certified and not cert.certified
    bounded = np.flatnonzero(cert.nearest >= 0)
    assert len(bounded) and (cert.hi[bounded] > cert.rho_upper).all()
    slow = one_vs_rest_distances(w, device="cpu", orbit=None)
    assert (cert.lo <= slow.lo + 1e-12).all() and (slow.hi <= cert.hi + 1e-12).all()
    assert abs(cert.rho_lower - slow.rho_lower) < 1e-12


def test_a_tampered_z4_certificate_does_not_check():
    from dataclasses import replace

    w = kerdock(64, 1000)
    cert = one_vs_rest_distances(w, device="cpu")
    assert (cert.nearest == -1).any() and (cert.nearest == -2).any()
    claimed = cert.nearest.copy()
    claimed[np.flatnonzero(cert.nearest == -2)[0]] = -1  # witness 0 claimed where it leaves the rows
    higher = cert.lo.copy()
    higher[3] += 1e-6
    word = cert.support_indices.copy()
    word[0, 0] = (word[0, 0] + 2) % 1024  # another word of the orbit
    unknown = cert.nearest.copy()
    unknown[0] = -3  # a witness the certificate does not hold
    for bad, match in ((replace(cert, nearest=claimed), "leaves the rows"),
                       (replace(cert, lo=higher), "does not check"),
                       (replace(cert, support_indices=word), "does not check|leaves the rows"),
                       (replace(cert, nearest=unknown), "does not hold")):
        with pytest.raises(SpherecodesError, match=match):
            verify_witness(w, bad)
    flipped = w.copy()
    flipped[999] = -flipped[999]
    with pytest.raises(SpherecodesError, match="not the first K words"):
        verify_witness(flipped, cert)


def test_the_bank_keeps_the_generators_and_refuses_rows_or_generators_that_do_not_hold(tmp_path):
    import h5py

    from spherecodes.bank import Z4_SCHEMA_VERSION, read_code, write_code
    from spherecodes.code import make_code, prototype_checksum

    code = make_code(kerdock(64, 1000, 6), method="external", name="kerdock")
    assert isinstance(code.orbit, Z4Orbit)
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    bank = tmp_path / "b.h5"
    write_code(bank, code)
    with h5py.File(bank, "r") as f:
        assert f.attrs["schema_version"] == Z4_SCHEMA_VERSION == 4
        assert f["codes/kerdock/orbit/generators"].shape == (10, 32)
        assert f["codes/kerdock/orbit/pairs"][()].tolist() == np.arange(64).reshape(32, 2).tolist()
    again = read_code(bank)
    assert isinstance(again.orbit, Z4Orbit) and np.array_equal(again.orbit.generators, code.orbit.generators)
    assert again.certificate.certified and again.certificate.rho_lower == 1 - 1 / 8
    assert np.array_equal(again.certificate.nearest, code.certificate.nearest)
    assert np.array_equal(again.stats.nearest_cos, code.stats.nearest_cos)

    generators = tmp_path / "generators.h5"
    write_code(generators, code)
    with h5py.File(generators, "r+") as f:
        stored = f["codes/kerdock/orbit/generators"]
        changed = stored[()]
        changed[9, 0] = (changed[9, 0] + 1) % 4
        stored[...] = changed
    with pytest.raises(SpherecodesError, match="Z4 translations"):
        read_code(generators)

    row = tmp_path / "row.h5"
    write_code(row, code)
    with h5py.File(row, "r+") as f:  # one row's sign changed, its checksum made to match: the structure fails
        prototypes = f["codes/kerdock/prototypes"]
        changed = prototypes[()]
        changed[500, 7] *= -1
        prototypes[...] = changed
        f["codes/kerdock"].attrs["sha256"] = prototype_checksum(changed)
        f["codes/kerdock/certificate"].attrs["prototypes_sha256"] = prototype_checksum(changed)
    with pytest.raises(SpherecodesError, match="Z4 translations"):
        read_code(row)


def test_generate_and_report_certify_a_kerdock_prefix_through_its_translations(tmp_path):
    from click.testing import CliRunner

    from spherecodes.cli import main

    bank = tmp_path / "k.h5"
    runner = CliRunner()
    made = runner.invoke(main, ["generate", "--d", "70", "--k", "3000", "--method", "structured", "--rotation",
                                "none", "--out", str(bank)])
    assert made.exit_code == 0, made.output
    assert "Z4 translations" in made.output and "QP" not in made.output
    shown = runner.invoke(main, ["report", str(bank)])
    assert shown.exit_code == 0, shown.output
    assert "orbit of the stored Z4 translations" in shown.output and "[0.875, 0.875]" in shown.output
    assert "certified, width" in shown.output


def test_a_turned_kerdock_code_is_exported_certified_through_the_rotation_with_the_same_cosines():
    from spherecodes.code import make_code
    from spherecodes.export import rotate_code
    from spherecodes.rotated import Rotated

    code = make_code(kerdock(64, 600), method="external", name="kerdock")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    turned = rotate_code(code, 3)
    # The rotation hides the translations; they are carried through it, and with them the certificate.
    assert isinstance(turned.orbit, Rotated) and turned.certificate.rho_certified
    assert abs(turned.certificate.rho_lower - 7 / 8) < 1e-10  # Kerdock n = 64: rho = 1 - 1/8
    assert abs(turned.stats.max_cos - code.stats.max_cos) < 1e-14
    # A second method: every class of the turned rows certified as for any code.
    generic = one_vs_rest_distances(turned.prototypes, device="cpu", orbit=None)
    assert abs(generic.rho_lower - turned.certificate.rho_lower) < 1e-10


@pytest.mark.parametrize("k, digits", [(1337, [(0, 5), (6, 1), (7, 2), (8, 3), (9, 4)]), (700, [(3, 1)]),
                                       (2049, [(1, 2), (8, 4)]), (1025, [(10, 0)])])
def test_pairs_per_difference_and_the_plots_counts(k, digits):
    from spherecodes.plots import cosine_histogram, distinct_cosines

    w = random_z4(k, digits)
    orbit = z4_orbit(w)
    i, j = np.triu_indices(k, 1)
    difference = orbit.add(j, orbit.negated(i))  # pair {i, j} is counted at the smaller of j − i and i − j
    expected = np.bincount(np.minimum(difference, orbit.negated(difference)), minlength=orbit.words)
    assert np.array_equal(orbit.pair_counts(), expected) and expected.sum() == k * (k - 1) // 2
    bins = (np.arange(-25, 25) + 0.5) / 24  # between the cosines m/12 of words of 12 pairs (24 coordinates)
    assert np.array_equal(cosine_histogram(w, bins, orbit=orbit), cosine_histogram(w, bins))
    few = kerdock(64, k)  # five cosine values: one bar each
    fast, slow = distinct_cosines(few, orbit=z4_orbit(few)), distinct_cosines(few)
    assert np.array_equal(fast[1], slow[1]) and np.allclose(fast[0], slow[0], atol=1e-12)
