"""The first K words of a linear binary code (K not a power of two): structure, statistics and certificate."""

import numpy as np
import pytest

from spherecodes.errors import SpherecodesError
from spherecodes.orbit import OrbitPrefix, orbit_prefix, resolve_orbit
from spherecodes.stats import separation_statistics
from spherecodes.structured.binary import bch_code, golay_code, reed_muller_code

CODES = {
    "bch-64": lambda: bch_code(6, 21),  # extended BCH [64,16,22]
    "rm-2-6": lambda: reed_muller_code(2, 6),  # [64,22,16]
    "golay": golay_code,  # n = 24: 1/√24 is not a power of two
}


def random_linear(k: int, n: int = 48, seed: int = 1) -> np.ndarray:
    """Messages 0 … K − 1 of random generators, on the sphere: nearest cosines that differ from row to row."""
    generators = np.random.default_rng(seed).integers(0, 2, size=((k - 1).bit_length(), n))
    bits = (np.arange(k)[:, None] >> np.arange(len(generators))) & 1
    return (1.0 - 2.0 * ((bits @ generators) % 2)) / np.sqrt(n)


def subset(code: str, k: int, pad: int = 0) -> np.ndarray:
    w = random_linear(k) if code == "random" else CODES[code]().construction.points(k)
    return np.hstack([w, np.zeros((k, pad))])


@pytest.mark.parametrize("code, k, pad", [("bch-64", 300, 0), ("rm-2-6", 1000, 3), ("golay", 1500, 0),
                                          ("bch-64", 1025, 0), ("random", 1337, 2), ("random", 700, 0)])
def test_statistics_equal_the_scan_of_all_pairs(code, k, pad):
    w = subset(code, k, pad)
    prefix = resolve_orbit(w)
    assert isinstance(prefix, OrbitPrefix) and prefix.rank == (k - 1).bit_length()
    fast, slow = separation_statistics(w), separation_statistics(w, orbit=None)
    assert abs(fast.max_cos - slow.max_cos) < 1e-15 and abs(fast.min_cos - slow.min_cos) < 1e-15
    assert np.abs(fast.nearest_cos - slow.nearest_cos).max() < 1e-15
    # The nearest index may differ on ties: it is a row at the nearest cosine, not the row itself.
    assert (fast.nearest_index != np.arange(k)).all()
    assert np.abs(np.einsum("kd,kd->k", w, w[fast.nearest_index]) - slow.nearest_cos).max() < 1e-15
    assert np.array_equal(fast.rattlers, slow.rattlers)
    if code == "random":  # rows see different nearest cosines: the tree must tell them apart
        assert len(np.unique(slow.nearest_cos.round(12))) > 1


def test_rows_that_break_the_order_or_the_signs_are_not_a_prefix():
    w = subset("bch-64", 1000)
    assert orbit_prefix(w) is not None
    swapped = w.copy()
    swapped[[5, 6]] = swapped[[6, 5]]
    flipped = w.copy()
    flipped[700, 3] *= -1  # one sign: row 700 is then no sum of the generators
    scaled = w.copy()
    scaled[10] = np.where(np.arange(64) < 32, 1.0, 2.0) * scaled[10] / np.sqrt(2.5)  # unequal magnitudes
    for bad in (swapped, flipped, scaled):
        assert orbit_prefix(bad) is None
        assert resolve_orbit(bad) is None
    # Given generators are checked, not trusted; K = 2^t is a whole orbit, not a prefix.
    prefix = orbit_prefix(w)
    wrong = prefix.generators.copy()
    wrong[2, 0] ^= True
    assert orbit_prefix(w, prefix.generators).rank == 10 and orbit_prefix(w, wrong) is None
    assert orbit_prefix(w, prefix.generators[:9]) is None
    assert orbit_prefix(subset("bch-64", 1024)) is None


def test_the_orbit_words_beyond_k_are_the_code_words():
    # Words K … 2^t − 1 built from the rows (x_u = D_h x_{u ⊕ h}) are the code's own messages u.
    code = CODES["rm-2-6"]()
    w = code.construction.points(600)
    full = code.construction.points(1024)
    prefix = orbit_prefix(w)
    words = np.arange(600, 1024)
    assert np.array_equal(prefix.rows_of(w, words), full[words])
    assert np.allclose(prefix.cosines(w), full @ full[0], atol=1e-15)


def test_the_run_proves_the_prefix_once_and_the_bank_checks_its_generators(tmp_path, monkeypatch):
    import h5py

    import spherecodes.orbit as orbit_module
    from spherecodes.bank import read_code, write_code
    from spherecodes.run import plan_run

    proofs = []
    prove = orbit_module.orbit_prefix
    monkeypatch.setattr(orbit_module, "orbit_prefix", lambda *a, **kw: proofs.append(1) or prove(*a, **kw))
    plan = plan_run(24, 3000, "structured")  # the extended Golay code
    estimate = plan.estimate(certify=False)
    statistics = estimate.phase("statistics")
    assert statistics.what.startswith("the first 3,000 of the 4,096 words")  # through the orbit, not all pairs
    code = plan.execute().code  # the code the estimate built and proved
    assert isinstance(code.orbit, OrbitPrefix) and code.orbit.rank == 12 and len(proofs) == 1
    write_code(tmp_path / "b.h5", code)
    with h5py.File(tmp_path / "b.h5", "r") as f:
        assert f[f"codes/{code.name}/orbit/generators"].shape == (12, 24)
    again = read_code(tmp_path / "b.h5")
    assert isinstance(again.orbit, OrbitPrefix) and np.array_equal(again.orbit.generators, code.orbit.generators)
    with h5py.File(tmp_path / "b.h5", "r+") as f:
        generators = f[f"codes/{code.name}/orbit/generators"]
        changed = generators[()]
        changed[11, 0] ^= 1
        generators[...] = changed
    with pytest.raises(SpherecodesError, match="first K words, in order"):
        read_code(tmp_path / "b.h5")


@pytest.mark.parametrize("code, k", [("bch-64", 300), ("rm-2-6", 1000), ("random", 700)])
def test_certificate_holds_the_generic_certificates_intervals(code, k):
    from spherecodes.certificate import one_vs_rest_distances, verify_witness

    w = subset(code, k)
    fast = one_vs_rest_distances(w, device="cpu")
    slow = one_vs_rest_distances(w, device="cpu", orbit=None)
    assert slow.certified
    if code == "random":
        # An unbalanced shell: the whole orbit would bound ρ only loosely (its distance is below ρ), so
        # every class is certified against the rows instead.
        assert fast.orbit is None and fast.certified
        assert abs(fast.rho_lower - slow.rho_lower) < 1e-12 and abs(fast.rho_upper - slow.rho_upper) < 1e-12
        return
    assert isinstance(fast.orbit, OrbitPrefix) and fast.support_indices.shape[0] == 1
    # ρ and every dist_k of the generic QP lie in this certificate's intervals.
    assert fast.rho_lower <= slow.rho_lower + 1e-12 and slow.rho_upper <= fast.rho_upper + 1e-12
    assert (fast.lo <= slow.hi + 1e-12).all() and (slow.lo <= fast.hi + 1e-12).all()
    settled = fast.widths <= fast.tol
    assert np.abs(fast.hi[settled] - slow.hi[settled]).max(initial=0) < 1e-12
    # Balanced nearest shells: ρ = 1 − max-cos (the bound of w_0's own direction is met).
    assert fast.rho_certified and abs(fast.rho_lower - slow.rho_lower) < 1e-12
    assert abs(fast.rho_lower - (1 - separation_statistics(w).max_cos)) < 1e-14
    assert 0 < fast.classes_certified < k and not fast.certified
    lo, hi = verify_witness(w, fast)
    assert np.array_equal(hi, fast.hi) and np.array_equal(lo, fast.lo)
    with pytest.raises(SpherecodesError, match="expanded|whole orbit"):
        fast.expanded(w)


def test_a_tampered_prefix_certificate_does_not_check():
    from dataclasses import replace

    from spherecodes.certificate import one_vs_rest_distances, verify_witness

    w = subset("bch-64", 1000)
    cert = one_vs_rest_distances(w, device="cpu")
    moved, bounded = np.flatnonzero(cert.nearest < 0), np.flatnonzero(cert.nearest >= 0)
    assert len(moved) and len(bounded)
    claimed = cert.nearest.copy()
    claimed[bounded[-1]] = -1  # the moved witness claimed where it leaves the rows
    higher = cert.lo.copy()
    higher[moved[3]] += 1e-6
    word = cert.support_indices.copy()
    word[0, 0] = 1000 + word[0, 0] % 24  # another word of the orbit
    for bad, match in ((replace(cert, nearest=claimed), "leaves the rows"), (replace(cert, lo=higher), "does not check"),
                       (replace(cert, support_indices=word), "does not check|leaves the rows")):
        with pytest.raises(SpherecodesError, match=match):
            verify_witness(w, bad)
    flipped = w.copy()
    flipped[999] = -flipped[999]
    with pytest.raises(SpherecodesError, match="not the first K words"):
        verify_witness(flipped, cert)


def test_the_bank_keeps_and_rechecks_a_prefix_certificate(tmp_path):
    import h5py

    from spherecodes.bank import PREFIX_SCHEMA_VERSION, read_code, write_code
    from spherecodes.certificate import one_vs_rest_distances
    from spherecodes.code import make_code
    from spherecodes.report import code_report, format_code_report

    code = make_code(subset("bch-64", 1000), method="external", name="bch")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    write_code(tmp_path / "b.h5", code)
    with h5py.File(tmp_path / "b.h5", "r") as f:
        assert f.attrs["schema_version"] == PREFIX_SCHEMA_VERSION == 3
        assert f["codes/bch/certificate"].attrs["rho_certified"] and not f["codes/bch/certificate"].attrs["certified"]
    again = read_code(tmp_path / "b.h5")
    assert np.array_equal(again.certificate.nearest, code.certificate.nearest)
    assert again.certificate.rho_lower == code.certificate.rho_lower == 0.875
    text = format_code_report(code_report(again))
    assert "rho certified, width" in text and f"certified for {again.certificate.classes_certified:,} of 1,000" in text
    with h5py.File(tmp_path / "b.h5", "r+") as f:
        nearest = f["codes/bch/certificate/nearest"]
        changed = nearest[()]
        changed[np.flatnonzero(changed >= 0)[0]] = 0 if changed[np.flatnonzero(changed >= 0)[0]] != 0 else 1
        nearest[...] = changed
    with pytest.raises(SpherecodesError, match="does not check"):
        read_code(tmp_path / "b.h5")


def test_a_turned_prefix_is_exported_certified_through_the_rotation_with_the_same_cosines():
    from spherecodes.certificate import one_vs_rest_distances
    from spherecodes.code import make_code
    from spherecodes.export import rotate_code
    from spherecodes.rotated import Rotated

    code = make_code(subset("rm-2-6", 600), method="external", name="rm")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    turned = rotate_code(code, 3)
    # The rotation hides the sign changes; the structure is carried through it, and with it the certificate.
    assert isinstance(turned.orbit, Rotated) and turned.certificate.rho_certified
    assert abs(turned.stats.max_cos - code.stats.max_cos) < 1e-14
    # A second method: every class of the turned rows certified as for any code.
    generic = one_vs_rest_distances(turned.prototypes, device="cpu", orbit=None)
    assert abs(generic.rho_lower - turned.certificate.rho_lower) < 1e-10
    assert turned.certificate.rho_lower <= generic.rho_upper + 1e-12


@pytest.mark.parametrize("k", [3, 5, 300, 1337])
def test_pairs_per_xor_difference_and_the_plots_counts(k):
    from spherecodes.plots import cosine_histogram, distinct_cosines

    rows = np.arange(k)
    i, j = np.triu_indices(k, 1)
    expected = np.bincount(rows[i] ^ rows[j], minlength=1 << (k - 1).bit_length())
    w = subset("random", k) if k > 5 else random_linear(k, n=6)
    prefix = orbit_prefix(w, check_size=False)
    assert np.array_equal(prefix.pair_counts(), expected)
    if k > 5:
        bins = (np.arange(-25, 25) + 0.5) / 24  # between the cosines (24 − w)/24 of words of length 48
        assert np.array_equal(cosine_histogram(w, bins, orbit=prefix), cosine_histogram(w, bins))
        few = subset("rm-2-6", k)  # a handful of cosine values: one bar each
        fast, slow = distinct_cosines(few, orbit=orbit_prefix(few)), distinct_cosines(few)
        assert np.array_equal(fast[1], slow[1]) and np.allclose(fast[0], slow[0], atol=1e-12)
