"""Derived codes: the tabulated (d, N, max-cos) rebuilt from E8 and Leech, and the generic derivation."""

from fractions import Fraction

import numpy as np
import pytest

from spherecodes.structured import classical_derived_code, classical_derived_keys, derived_code, e8_roots
from spherecodes.structured.description import blocked_max_cos, derive_points, exact_fraction, spectrum_of_rows
from spherecodes.structured.derived import derived_bound

# (d, N, max-cos) from Conway & Sloane (1999), ch. 1 and ch. 14, Levenshtein (1992) and
# Cohn & Kumar (2007), Table 1.
LITERATURE = {
    "e8-56": (7, 56, Fraction(1, 3)),
    "e8-27": (6, 27, Fraction(1, 4)),
    "e8-16": (5, 16, Fraction(1, 5)),
    "leech-4600": (23, 4600, Fraction(1, 3)),
    "leech-891": (22, 891, Fraction(1, 4)),
    "leech-552": (23, 552, Fraction(1, 5)),
    "leech-275": (22, 275, Fraction(1, 6)),
    "leech-162": (21, 162, Fraction(1, 7)),
}


@pytest.mark.parametrize("key", classical_derived_keys())
def test_classical_derived_codes(key):
    code = classical_derived_code(key)
    assert (code.d, code.size, code.max_cos) == LITERATURE[key]
    x = code.points()
    assert x.shape == (code.size, code.d)
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-14)
    assert exact_fraction(blocked_max_cos(x)) == code.max_cos
    assert len(np.unique(np.round(x, 8), axis=0)) == code.size
    spec = code.spectrum()
    assert sum(spec.values()) == code.size and max(v for v in spec if v < 1) == code.max_cos


def test_known_spectra():
    assert classical_derived_code("e8-27").spectrum() == {Fraction(1): 1, Fraction(1, 4): 16, Fraction(-1, 2): 10}
    assert classical_derived_code("leech-891").spectrum() == {
        Fraction(1): 1, Fraction(1, 4): 336, Fraction(-1, 8): 512, Fraction(-1, 2): 42,
    }


def test_leech_levels_have_the_spectra_of_their_graphs():
    # 276 equiangular lines at 1/5 (Lemmens & Seidel 1973), each line twice; the McLaughlin graph
    # SRG(275, 112, 30, 56) and its second subconstituent SRG(162, 56, 10, 24): adjacent vertices at
    # θ/k, non-adjacent at −(1 + θ)/(v − k − 1), θ = −28 and −16 (Brouwer & Van Maldeghem 2022, ch. 10).
    assert classical_derived_code("leech-552").spectrum() == {
        Fraction(1): 1, Fraction(1, 5): 275, Fraction(-1, 5): 275, Fraction(-1): 1,
    }
    assert classical_derived_code("leech-275").spectrum() == {
        Fraction(1): 1, Fraction(-28, 112): 112, Fraction(27, 162): 162,
    }
    assert classical_derived_code("leech-162").spectrum() == {
        Fraction(1): 1, Fraction(-16, 56): 56, Fraction(15, 105): 105,
    }


def test_the_first_mclaughlin_subconstituent_is_the_isotropic_code_q3():
    from spherecodes.structured import isotropic_code

    code = derived_code(classical_derived_code("leech-275"), [Fraction(-1, 4)])
    assert (code.d, code.size, code.max_cos) == (21, 112, Fraction(1, 9))
    spectra = spectrum_of_rows(code.points(), np.arange(112))
    assert all(s == isotropic_code(3).spectrum() for s in spectra)


def test_bound_and_generic_derivation():
    assert derived_bound(Fraction(1, 3), [Fraction(1, 3)]) == Fraction(1, 4)
    code = derived_code(e8_roots(), [Fraction(0)])  # the E7 roots
    assert (code.d, code.size, code.max_cos) == (7, 126, Fraction(1, 2))
    # two fixed points at once: Gram [[1, −1/2], [−1/2, 1]], both α = 0: E6
    assert derived_bound(Fraction(1, 2), [0, 0], [[1, Fraction(-1, 2)], [Fraction(-1, 2), 1]]) == Fraction(1, 2)


def test_several_fixed_points_match_repeated_steps():
    x = e8_roots().points()
    p = x[0]
    q = x[np.flatnonzero(np.abs(x @ p - 0.5) < 1e-9)[0]]  # ⟨p, q⟩ = 1/2
    both = derive_points(x, np.stack([p, q]), [0.5, 0.5])
    # the points at 1/2 with p and q: inner product (1/2 − 1/3)/(1 − 1/3) after projection
    assert len(both) == 27
    assert exact_fraction(blocked_max_cos(both)) <= derived_bound(
        Fraction(1, 2), [Fraction(1, 2), Fraction(1, 2)], [[1, Fraction(1, 2)], [Fraction(1, 2), 1]]
    )
