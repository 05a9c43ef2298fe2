"""Proven-optimal codes: the sharp configurations, the exact Levenshtein bound, and what ``auto`` returns.

Independent facts: Cohn & Kumar (2007), Table 1 (the sharp configurations:
dimension, size and inner products); the cross-polytope and E8 as the classical
cases of Delsarte–Goethals–Seidel's bound (f(1)/f_0 = 2d and 240); that D4's 24
roots, a 5-design but with four inner products, are *not* sharp; and
ρ = 1 − max-cos for a code whose nearest shells are balanced.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from spherecodes import generate
from spherecodes.best_of import plan_auto
from spherecodes.bounds import known_optimal, max_cos_lower_bound, sharp_lp_size_bound, sharp_optimum
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.report import code_report, format_code_report

# Cohn & Kumar (2007), Table 1: (d, N, inner products other than 1).
TABLE_1 = [
    (5, 16, ["-3/5", "1/5"]),
    (6, 27, ["-1/2", "1/4"]),
    (7, 56, ["-1", "-1/3", "1/3"]),
    (8, 240, ["-1", "-1/2", "0", "1/2"]),
    (21, 112, ["-1/3", "1/9"]),
    (21, 162, ["-2/7", "1/7"]),
    (22, 100, ["-4/11", "1/11"]),
    (22, 275, ["-1/4", "1/6"]),
    (22, 891, ["-1/2", "-1/8", "1/4"]),
    (23, 552, ["-1", "-1/5", "1/5"]),
    (23, 4600, ["-1", "-1/3", "0", "1/3"]),
    (24, 196560, ["-1", "-1/2", "-1/4", "0", "1/4", "1/2"]),
    (52, 325, ["-1/4", "1/16"]),     # isotropic subspaces, q = 4
    (105, 756, ["-1/5", "1/25"]),    # q = 5
]


@pytest.mark.parametrize("d,n,inner", TABLE_1)
def test_levenshtein_bound_is_met_exactly_by_every_sharp_configuration(d, n, inner):
    assert sharp_lp_size_bound(d, inner) == n
    bound = sharp_optimum(d, n)
    assert bound.value == float(Fraction(inner[-1])) and "exact in rationals" in bound.method


def test_classical_cases_and_a_non_sharp_code():
    assert sharp_lp_size_bound(3, ["-1", "0"]) == 6          # the octahedron: 2d
    assert sharp_lp_size_bound(8, ["-1", "-1/2", "0", "1/2"]) == 240
    assert sharp_lp_size_bound(4, ["-1", "-1/2", "0", "1/2"]) != 24  # D4 roots: not sharp
    assert sharp_optimum(4, 24) is None


def test_known_optimal_names_the_proof():
    leech = known_optimal(24, 196560, 0.5)
    assert leech.value and "Odlyzko & Sloane 1979" in leech.reason
    assert known_optimal(22, 100, 1 / 11).value
    assert not known_optimal(22, 100, 0.1).value
    assert max_cos_lower_bound(657, 7300).value == 1 / 81   # isotropic q = 9


def test_auto_runs_no_optimiser_against_a_proven_optimum():
    plan = plan_auto(22, 100)
    assert plan.structured.name.startswith("Higman–Sims graph")
    assert not plan.runs_optimiser
    assert all("proven optimum" in o.skip for o in plan.optimisers)


@pytest.mark.parametrize("d,k,value,construction", [
    (22, 100, Fraction(1, 11), "Higman–Sims"),
    (21, 112, Fraction(1, 9), "isotropic subspaces q = 3"),
    (21, 162, Fraction(1, 7), "McLaughlin second subconstituent SRG(162,56,10,24)"),
    (22, 275, Fraction(1, 6), "McLaughlin graph SRG(275,112,30,56)"),
    (23, 552, Fraction(1, 5), "276 equiangular lines"),
])
def test_auto_returns_the_optimal_code_exactly_and_certified(d, k, value, construction):
    code = generate(d, k)
    assert abs(code.stats.max_cos - float(value)) < 1e-12
    assert code.settings["auto"]["exact_max_cos"] == str(value)
    assert construction in code.settings["auto"]["winner"]
    cert = one_vs_rest_distances(code.prototypes, device="cpu")
    assert cert.certified and abs(cert.rho_lower - (1 - float(value))) < 1e-9
    code.certificate = cert
    text = format_code_report(code_report(code))
    assert "optimal           yes (proven): attains the Levenshtein LP bound" in text
