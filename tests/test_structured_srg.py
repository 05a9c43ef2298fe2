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
from spherecodes.structured.description import blocked_max_cos, spectrum_of_rows
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
    isotropic_orders,
    quadrangle_adjacency,
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
    adjacency = quadrangle_adjacency(q)(np.arange(v), np.arange(v))
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


def _gf2k_product(x: int, y: int, modulus: int) -> int:
    """x·y in GF(2)[t] modulo ``modulus``, elements as bit patterns (bit i: the coefficient of t^i)."""
    product = 0
    for i in range(y.bit_length()):  # carry-less: the partial products are added by XOR
        if y >> i & 1:
            product ^= x << i
    degree = modulus.bit_length() - 1
    for i in range(product.bit_length() - 1, degree - 1, -1):
        if product >> i & 1:
            product ^= modulus << (i - degree)
    return product


@pytest.mark.parametrize("e", [2, 3, 4, 5])
def test_gf_2_to_the_e_is_carry_less_multiplication_modulo_an_irreducible_polynomial(e):
    """GF(2^e) a second way: elements are bit patterns, + is XOR, × the carry-less product reduced by a
    modulus of degree e read off the table (t·t^(e−1) = t^e), which must have no factor of degree ≤ e/2."""
    q = 2**e
    f = finite_field(q)
    x, y = np.meshgrid(range(q), range(q), indexing="ij")
    assert np.array_equal(f.add, x ^ y)
    modulus = q | int(f.mul[2, q // 2])
    assert all(_gf2k_product(modulus, 1, g) != 0 for g in range(2, 1 << (e // 2 + 1)) if g.bit_length() > 1)
    expected = np.array([[_gf2k_product(a, b, modulus) for b in range(q)] for a in range(q)])
    assert np.array_equal(f.mul, expected)


def test_gq_16_256_from_gf16_on_a_sample_of_points():
    """The quadric and its collinearity over GF(16), the field of the (3856, 69649) code, checked on a few
    points: (q + 1)(q³ + 1) points, each collinear with q(q² + 1); q − 1 common neighbours for collinear
    points, q² + 1 for the others (GQ(q, q²), Brouwer & Haemers 2012, §9.6)."""
    q = 16
    v = (q + 1) * (q**3 + 1)
    assert len(elliptic_quadric_points(q)) == v == 69_649
    rows = np.arange(0, v, v // 5)[:5]
    adjacency = quadrangle_adjacency(q)(rows, np.arange(v))
    assert adjacency.sum(axis=1).tolist() == [q * (q * q + 1)] * 5
    common = adjacency[:, None, :] & adjacency[None, :, :]
    for i in range(5):
        for j in range(i + 1, 5):
            assert common[i, j].sum() == (q - 1 if adjacency[i, rows[j]] else q * q + 1)


@pytest.mark.parametrize("q", [4, 7])
def test_large_codes_are_built_in_blocks(monkeypatch, q):
    """A code whose Gram matrix is not formed (q ≥ 11) is built in blocks of rows against a basis of pivot
    points: here q = 4 and 7 that way, against the Gram matrix the graph predicts and the spectrum of Cohn &
    Kumar (2007, Table 1)."""
    params, v, m = GRAPHS[f"isotropic-{q}"][1], (q + 1) * (q**3 + 1), q * (q * q - q + 1)
    everyone = np.arange(v)
    monkeypatch.setattr(srg, "MAX_GRAM_BYTES", 0)
    monkeypatch.setattr(srg, "BLOCK_ROWS", 100)
    x = srg.eigenspace_points(quadrangle_adjacency(q), params, -q * q - 1)
    assert x.shape == (v, m)
    rows = everyone[:: v // 40]
    expected = np.where(quadrangle_adjacency(q)(rows, everyone), -1 / q, 1 / q**2)
    expected[np.arange(len(rows)), rows] = 1.0
    assert np.abs(x[rows] @ x.T - expected).max() < 1e-12
    spectra = spectrum_of_rows(x, rows)
    assert all(s == {Fraction(1): 1, Fraction(-1, q): q * (q * q + 1), Fraction(1, q * q): q**4} for s in spectra)


def test_a_wrong_graph_is_caught_by_the_block_build(monkeypatch):
    params = GRAPHS["isotropic-4"][1]
    monkeypatch.setattr(srg, "MAX_GRAM_BYTES", 0)
    with pytest.raises(ArithmeticError, match="rank"):   # another graph (the complement) is caught
        srg.eigenspace_points(lambda r, c: ~quadrangle_adjacency(4)(r, c), params, -17)


@pytest.mark.slow  # the whole catalog of R^3856 (seconds)
def test_isotropic_family_is_listed_as_far_as_memory_allows():
    """Every prime power q whose (q + 1)(q³ + 1) points in R^(q(q² − q + 1)) fit: on 24 GiB up to q = 19
    (137,200 points in R^6517, 7.2 GB of float64); q = 23 (292,032 points in R^11661, 27 GB) does not."""
    assert isotropic_orders(24 * 2**30) == [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19]
    assert isotropic_orders(3 * 2**30)[-1] == 16
    for q, d, n in ((11, 1221, 15984), (13, 2041, 30772), (16, 3856, 69649), (17, 4641, 88452)):
        if q not in isotropic_orders(srg.physical_memory_bytes()):
            continue
        code = isotropic_code(q)
        assert (code.d, code.size, code.max_cos) == (d, n, Fraction(1, q * q))
        assert best_structured_code(d, n).name == code.name
        if q >= 11:
            assert 8 * n * n > srg.MAX_GRAM_BYTES
            seconds, nbytes = code.build_cost()
            assert seconds > 0 and 8 * n * d < nbytes < 2 * 8 * n * d   # the float64 points, the basis sample
    if 16 in isotropic_orders(srg.physical_memory_bytes()):
        result = CliRunner().invoke(main, ["codes", "--d", "3856", "--k", "69649", "--json"])
        first = json.loads(result.output)["codes"][0]
        assert first["name"].startswith("isotropic subspaces q = 16") and first["size"] == 69_649
        assert first["max_cos"] == first["max_cos_k"] == "1/256"


def test_isotropic_family_refuses_what_it_does_not_list():
    with pytest.raises(SpherecodesError, match="prime power q"):
        isotropic_code(6)
    with pytest.raises(SpherecodesError, match=r"q = 31 needs about \d+\.\d GiB, over this machine's"):
        isotropic_code(31)   # 953,344 points in R^28861: 205 GiB


def test_auto_plans_say_what_building_a_large_code_takes():
    from spherecodes.best_of import describe_plan, plan_auto

    plan = plan_auto(1221, 15_984)   # isotropic subspaces q = 11: seconds to build, so the plan says so
    assert plan.structured.name.startswith("isotropic subspaces q = 11") and plan.build[1] > 8 * 15_984 * 1221
    assert "(max-cos 1/121; building it takes ~" in describe_plan(plan, 15_984)
    assert plan_auto(52, 325).build is None   # q = 4: milliseconds, nothing to say


def test_a_build_over_max_memory_is_refused_before_any_work():
    from spherecodes.best_of import plan_auto

    if 16 not in isotropic_orders(srg.physical_memory_bytes()):
        pytest.skip("this machine cannot hold the q = 16 code")
    with pytest.raises(SpherecodesError, match=r"building isotropic subspaces q = 16 .* \(--max-memory\) allows 1.0 GiB"):
        plan_auto(3856, 69649, max_memory=2**30)
    result = CliRunner().invoke(main, ["generate", "--d", "3856", "--k", "69649", "--max-memory", "1GiB"])
    assert result.exit_code != 0 and result.output.startswith("Error: ") and "--max-memory" in result.output


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
