"""Two-distance codes of strongly regular graphs and the isotropic-subspaces family, against the literature.

Independent facts used here: the parameters (v, k, λ, μ) of the Petersen,
Clebsch, Gewirtz and Higman–Sims graphs (Brouwer & Van Maldeghem 2022,
ch. 10); the collinearity graph of a generalised quadrangle GQ(s, t) is
SRG((s + 1)(st + 1), s(t + 1), s − 1, t + 1) with eigenvalues s − 1 and −t − 1 of
multiplicities st(s + 1)(t + 1)/(s + t) and s²(st + 1)/(s + t) (Brouwer &
Haemers 2012, §9.6), here with s = q, t = q²; Cohn & Kumar (2007), Table 1: the
Higman–Sims code (22, 100) has inner products −4/11, 1/11 and the
isotropic-subspaces code (q(q² − q + 1), (q + 1)(q³ + 1)) has −1/q, 1/q². The
eigenvalues are checked a second way with numpy's symmetric eigensolver.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.cli import main

from spherecodes.errors import SpherecodesError
from spherecodes.structured import best_structured_code
from spherecodes.structured.code import blocked_max_cos, spectrum_of_rows
from spherecodes.structured import srg
from spherecodes.structured.gfq import finite_field, prime_power
from spherecodes.structured.srg import (
    GRAPHS,
    clebsch_graph,
    elliptic_quadric_points,
    gewirtz_graph,
    higman_sims_graph,
    mclaughlin_graph,
    mclaughlin_subconstituent_graph,
    schlafli_graph,
    isotropic_code,
    petersen_graph,
    quadrangle_adjacency_rows,
    srg_code,
    srg_codes,
    srg_parameters,
    steiner_heptads,
    steiner_hexads,
)

# (v, k, λ, μ), eigenvalues r, s and their multiplicities (Brouwer & Van Maldeghem 2022, ch. 10).
LITERATURE = {
    "petersen": (petersen_graph, (10, 3, 0, 1), (1, -2), (5, 4)),
    "clebsch": (clebsch_graph, (16, 5, 0, 2), (1, -3), (10, 5)),
    "gewirtz": (gewirtz_graph, (56, 10, 0, 2), (2, -4), (35, 20)),
    "higman-sims": (higman_sims_graph, (100, 22, 0, 6), (2, -8), (77, 22)),
    "schlafli": (schlafli_graph, (27, 16, 10, 8), (4, -2), (6, 20)),
    "mclaughlin-2": (mclaughlin_subconstituent_graph, (162, 56, 10, 24), (2, -16), (140, 21)),
    "mclaughlin": (mclaughlin_graph, (275, 112, 30, 56), (2, -28), (252, 22)),
}


@pytest.mark.parametrize("q", [2, 3, 4, 5, 7, 8, 9, 16, 25])
def test_finite_fields_satisfy_the_axioms(q):
    f = finite_field(q)
    a, b, c = np.meshgrid(range(q), range(q), range(q), indexing="ij")
    assert np.array_equal(f.mul[a, f.add[b, c]], f.add[f.mul[a, b], f.mul[a, c]])
    assert np.array_equal(f.mul[a, f.mul[b, c]], f.mul[f.mul[a, b], c])
    assert np.array_equal(f.add[a, f.add[b, c]], f.add[f.add[a, b], c])
    assert all((f.mul[x] == 1).sum() == 1 for x in range(1, q))  # every nonzero element has one inverse
    assert all(f.add[x, f.neg[x]] == 0 for x in range(q))
    # The multiplicative group is cyclic of order q − 1: some element has that order.
    orders = []
    for x in range(1, q):
        y, n = x, 1
        while y != 1:
            y, n = f.mul[y, x], n + 1
        orders.append(n)
    assert max(orders) == q - 1


def test_prime_powers():
    assert [q for q in range(2, 30) if prime_power(q)] == [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 27, 29]
    with pytest.raises(SpherecodesError, match="prime power"):
        finite_field(6)


def test_steiner_system_s_3_6_22():
    h = steiner_hexads()
    # every 3 of the 22 points lie in exactly one hexad
    triples = np.einsum("bi,bj,bk->ijk", h, h, h)
    i, j, k = np.meshgrid(range(22), range(22), range(22), indexing="ij")
    distinct = (i != j) & (j != k) & (i != k)
    assert set(triples[distinct].tolist()) == {1}


def test_steiner_system_s_4_7_23():
    h = steiner_heptads().astype(np.int64)
    assert h.shape == (253, 23)
    # every 4 of the 23 points lie in exactly one heptad: C(23, 4) = 253·C(7, 4), and no 4 points lie in two
    # heptads (two heptads meet in at most 3 points)
    meet = h @ h.T
    assert 253 * 35 == 8855 and set(meet[~np.eye(253, dtype=bool)].tolist()) <= {1, 3}


def test_mclaughlin_codes_are_the_leech_derived_ones():
    """Two constructions, one code: the graph from S(4, 7, 23) and the Leech chain give the same Gram matrix.

    The inner product −1/4 (resp. −2/7) graph of the Leech-derived code is SRG(275, 112, 30, 56) (resp.
    SRG(162, 56, 10, 24)); both are unique for their parameters (Brouwer & Van Maldeghem 2022, ch. 10), so the
    codes agree up to an isometry; here their spectra and graph parameters are compared.
    """
    from spherecodes.structured import classical_derived_code

    for graph, key, adjacent in (("mclaughlin", "leech-275", -0.25), ("mclaughlin-2", "leech-162", -2 / 7)):
        mine, leech = srg_code(graph), classical_derived_code(key)
        assert (mine.d, mine.size, mine.max_cos) == (leech.d, leech.size, leech.max_cos)
        assert mine.spectrum() == leech.spectrum()
        x = leech.points()
        assert srg_parameters(np.abs(x @ x.T - adjacent) < 1e-9).as_tuple() == GRAPHS[graph][1].as_tuple()


@pytest.mark.parametrize("key", list(LITERATURE))
def test_named_graphs_have_their_parameters_and_spectrum(key):
    build, params, eigenvalues, multiplicities = LITERATURE[key]
    adjacency = build()
    assert srg_parameters(adjacency).as_tuple() == params
    tabulated = GRAPHS[key][1]
    assert tabulated.as_tuple() == params
    assert tabulated.eigenvalues() == eigenvalues and tabulated.multiplicities() == multiplicities
    # a second method: the eigenvalues of the adjacency matrix
    values = np.round(np.linalg.eigvalsh(adjacency.astype(float)), 8)
    found = dict(zip(*np.unique(values, return_counts=True)))
    assert found == {params[1]: 1, eigenvalues[0]: multiplicities[0], eigenvalues[1]: multiplicities[1]}


@pytest.mark.parametrize("q", [2, 3, 4, 5])
def test_quadrangle_graphs_are_gq_q_q2_collinearity_graphs(q):
    s, t = q, q * q
    v = (s + 1) * (s * t + 1)
    points = elliptic_quadric_points(q)
    assert len(points) == v
    adjacency = quadrangle_adjacency_rows(q)(0, v)
    assert srg_parameters(adjacency).as_tuple() == (v, s * (t + 1), s - 1, t + 1)
    params = GRAPHS[f"isotropic-{q}"][1]
    assert params.eigenvalues() == (s - 1, -t - 1)
    assert params.multiplicities() == (s * t * (s + 1) * (t + 1) // (s + t), s * s * (s * t + 1) // (s + t))


@pytest.mark.parametrize("key", list(LITERATURE))
def test_both_eigenspace_codes_have_the_predicted_gram_matrix(key):
    build, (v, k, _, _), eigenvalues, multiplicities = LITERATURE[key]
    adjacency = build()
    for theta, m in zip(eigenvalues, multiplicities):
        code = srg_code(key, theta)
        x = code.points()
        assert x.shape == (v, m) and code.d == m
        expected = np.where(adjacency, theta / k, -(1 + theta) / (v - k - 1))
        np.fill_diagonal(expected, 1.0)
        assert np.abs(x @ x.T - expected).max() < 1e-12
        assert code.max_cos == max(Fraction(theta, k), Fraction(-(1 + theta), v - k - 1))


def test_higman_sims_code_matches_cohn_kumar():
    code = srg_code("higman-sims")
    assert (code.d, code.size, code.max_cos) == (22, 100, Fraction(1, 11))
    assert code.spectrum() == {Fraction(1): 1, Fraction(-4, 11): 22, Fraction(1, 11): 77}
    assert abs(blocked_max_cos(code.points()) - 1 / 11) < 1e-12


@pytest.mark.parametrize("q", [2, 3, 4, 5])
def test_isotropic_subspaces_codes(q):
    code = isotropic_code(q)
    n, d = (q + 1) * (q**3 + 1), q * (q * q - q + 1)
    assert (code.d, code.size, code.max_cos) == (d, n, Fraction(1, q * q))
    x = code.points()
    assert x.shape == (n, d)
    assert abs(blocked_max_cos(x) - 1 / q**2) < 1e-12
    # every point sees q(q² + 1) points at −1/q and q⁴ at 1/q² (the GQ(q, q²) collinearity graph)
    spectra = spectrum_of_rows(x, np.arange(0, n, max(1, n // 20)))
    assert all(s == {Fraction(1): 1, Fraction(-1, q): q * (q * q + 1), Fraction(1, q * q): q**4} for s in spectra)


def test_large_codes_are_factored_column_by_column(monkeypatch):
    """A code whose Gram matrix is not formed (q ≥ 11) is factored one pivot column at a time: here q = 4
    both ways, against the Gram matrix the graph predicts."""
    from spherecodes.structured import srg

    params, v = GRAPHS["isotropic-4"][1], 325
    adjacency = quadrangle_adjacency_rows(4)(0, v)
    expected = np.where(adjacency, -1 / 4, 1 / 16)
    np.fill_diagonal(expected, 1.0)
    monkeypatch.setattr(srg, "MAX_GRAM_BYTES", 0)
    x = srg.eigenspace_points(quadrangle_adjacency_rows(4), params, -17)
    assert x.shape == (v, 52) and np.abs(x @ x.T - expected).max() < 1e-12
    with pytest.raises(ArithmeticError, match="rank"):   # another graph (the complement) is caught
        srg.eigenspace_points(lambda a, b: ~quadrangle_adjacency_rows(4)(a, b), params, -17)


def test_isotropic_codes_beyond_the_gram_limit_are_listed():
    for q, d, n in ((11, 1221, 15984), (13, 2041, 30772)):   # q(q² − q + 1), (q + 1)(q³ + 1)
        code = isotropic_code(q)
        assert (code.d, code.size, code.max_cos) == (d, n, Fraction(1, q * q))
        assert 8 * n * n > srg.MAX_GRAM_BYTES
        assert best_structured_code(d, n).name == code.name


def test_isotropic_family_refuses_what_it_does_not_list():
    with pytest.raises(SpherecodesError, match="prime power"):
        isotropic_code(6)
    with pytest.raises(SpherecodesError, match="q in 2, 3, 4, 5, 7, 8, 9, 11, 13; got q = 16"):
        isotropic_code(16)


def test_srg_codes_are_described_without_building():
    codes = srg_codes()
    assert {(c.d, c.size) for c in codes} >= {(22, 100), (21, 112), (20, 56), (52, 325), (657, 7300)}
    assert all(c.family == "srg" and c.transitive for c in codes)


@pytest.mark.parametrize("d,k,value,family", [(22, 100, Fraction(1, 11), "srg"), (21, 112, Fraction(1, 9), "srg"),
                                              (52, 325, Fraction(1, 16), "srg"), (20, 56, Fraction(1, 15), "srg")])
def test_best_structured_code_picks_the_two_distance_sets(d, k, value, family):
    code = best_structured_code(d, k)
    assert code.family == family and code.max_cos_bound(k) == value


def test_codes_lists_the_two_distance_sets_best_first():
    result = CliRunner().invoke(main, ["codes", "--d", "22", "--k", "100", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)["codes"]
    assert rows[0]["name"].startswith("Higman–Sims graph") and rows[0]["max_cos_k"] == "1/11"
    assert {"McLaughlin graph SRG(275,112,30,56), eigenspace -28", "Leech-derived (22, 891)"} <= {r["name"] for r in rows}
    assert not any(r["name"].startswith("Leech-derived (22, 275)") for r in rows)  # the same code, listed once
