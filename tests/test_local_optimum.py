"""The polish ends at a local optimum; energy-continuation starts find known optima.

Expected values are independent facts (the contact graphs of the icosahedron
and the snub cube, proven optima of Bachoc & Vallentin and of Levenshtein's
bound), never this code's output.
"""

import math

import numpy as np
import pytest
from spherecodes.errors import SpherecodesError
from spherecodes.solvers import TammesSettings, tammes
from spherecodes.stats import max_cos

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _contacts(w: np.ndarray, tol: float) -> np.ndarray:
    """Number of contacts of each point: pairs within ``tol`` of max-cos."""
    gram = w @ w.T
    np.fill_diagonal(gram, -np.inf)
    return (gram >= gram.max() - tol).sum(axis=1)


@pytest.mark.parametrize("n,degree", [(12, 5), (24, 5)], ids=["icosahedron", "snub cube"])
def test_polish_ends_with_the_optimums_contact_graph(n, degree):
    # The icosahedron (Danzer; Fejes Toth) and the snub cube (Robinson 1961) are
    # the 3-D optima for 12 and 24 points; both are 5-regular graphs of their
    # shortest edges (30 and 60 edges).  A polish that stops short of the
    # optimum leaves most points in no contact at 1e-9 ("rattlers").
    res = tammes(3, n, seed=0, device="cpu", closed_form=False, restarts=4, steps=500)
    assert res.stop_reason == "converged"
    assert np.array_equal(_contacts(res.prototypes, 1e-9), np.full(n, degree))


def test_sharpening_and_polish_close_the_annealings_gap():
    # The annealing ends above a local optimum (its smoothed maximum still
    # counts the pairs below the largest); at a local optimum of max-cos the
    # largest cosines are tied, so the polish must lower max-cos and bring
    # more points into contact (within 1e-6 of max-cos).
    rough = tammes(8, 40, seed=0, device="cpu", restarts=2, steps=400, polish=False)
    polished = tammes(8, 40, seed=0, device="cpu", restarts=2, steps=400)
    assert [st["stage"] for st in polished.stages] == ["anneal", "polish"]
    assert polished.max_cos < rough.max_cos - 1e-4
    touching = lambda w: int((_contacts(w, 1e-6) > 0).sum())
    assert touching(polished.prototypes) > touching(rough.prototypes)


@pytest.mark.parametrize(
    "d,k,optimum",
    # Bachoc & Vallentin (2009): the (4, 10, 1/6) code is optimal and unique.
    # The 16 points of the 5-demicube (Clebsch graph) meet Levenshtein's bound: 1/5.
    [(4, 10, 1 / 6), (5, 16, 1 / 5)],
)
def test_energy_continuation_starts_find_proven_optima(d, k, optimum):
    res = tammes(d, k, seed=0, device="cpu", closed_form=False, restarts=4, riesz_starts=4)
    assert res.settings["riesz_starts"] == 4
    assert res.max_cos >= optimum - 1e-12, "better than a proven optimum: the check itself is wrong"
    assert res.max_cos <= optimum + 1e-9


def test_energy_continuation_is_deterministic_and_high_effort_uses_it():
    runs = [tammes(6, 20, seed=3, device="cpu", restarts=3, riesz_starts=2, steps=300) for _ in range(2)]
    assert np.array_equal(runs[0].prototypes, runs[1].prototypes)
    assert runs[0].max_cos == max_cos(runs[0].prototypes)
    high = TammesSettings.resolve(6, 20, device="cpu", effort="high")
    assert high.riesz_starts == high.restarts // 2
    assert TammesSettings.resolve(6, 20, device="cpu").riesz_starts == 0
    # In R^3 the symmetric starts take that share.
    assert TammesSettings.resolve(3, 20, device="cpu", effort="high").riesz_starts == 0


@pytest.mark.parametrize(
    "options,message",
    [
        (dict(riesz_starts=5, restarts=4), "riesz_starts must be at most"),
        (dict(riesz_starts=1, init=np.eye(4)), "riesz_starts must be at most"),
        (dict(riesz_starts=-1), "riesz_starts"),
    ],
)
def test_riesz_starts_are_checked(options, message):
    with pytest.raises(SpherecodesError, match=message):
        tammes(4, 4, device="cpu", closed_form=False, **options)


def test_float32_annealing_still_reaches_an_optimum_to_round_off():
    # Above K^2 d = 2e4 the annealing runs in float32 on the CPU; the
    # sharpening and the polish run in float64, so the icosahedron (max-cos
    # 1/sqrt(5)) is still reached to round-off from a float32 annealing.
    assert TammesSettings.resolve(4, 120, device="cpu").dtype == "float32"
    res = tammes(3, 12, seed=0, device="cpu", closed_form=False, restarts=4, steps=500, dtype="float32")
    assert abs(res.max_cos - 1 / math.sqrt(5)) <= 1e-12
    assert math.isclose(res.max_cos, max_cos(res.prototypes), abs_tol=0)


def _icosahedron() -> np.ndarray:
    phi = (1 + math.sqrt(5)) / 2
    w = np.array([(0, s1, s2 * phi) for s1 in (1, -1) for s2 in (1, -1)], dtype=float)
    w = np.vstack([np.roll(w, shift, axis=1) for shift in range(3)])
    return w / np.linalg.norm(w, axis=1, keepdims=True)


@pytest.mark.parametrize("dense", [True, False], ids=["normal equations", "LSQR"])
def test_contact_solve_reaches_the_icosahedron_both_ways(monkeypatch, dense):
    # The icosahedron's max-cos is 1/sqrt(5) (Danzer; Fejes Toth); from a code
    # moved by 1e-6 both linear solvers of the Gauss-Newton steps must bring it
    # back to round-off (the dense one is damped, since rotations of the whole
    # code leave every equation unchanged).
    from spherecodes.solvers import _polish

    monkeypatch.setattr(_polish, "DENSE_CONTACTS", 10**9 if dense else 0)
    w = _icosahedron() + 1e-6 * np.random.default_rng(0).standard_normal((12, 3))
    assert max_cos(w / np.linalg.norm(w, axis=1, keepdims=True)) > 1 / math.sqrt(5) + 1e-8
    assert abs(max_cos(_polish.solve_contacts(w)) - 1 / math.sqrt(5)) <= 1e-14


def test_contact_solve_between_lp_rounds_changes_the_rounds_not_the_optimum(monkeypatch):
    # The contact solve between the LP rounds is a second method for the end of
    # the polish: with and without it the polish must end at the same local
    # optimum (to round-off), and with it in fewer LP rounds.
    from spherecodes.solvers import _polish

    rough = tammes(3, 30, seed=1, device="cpu", restarts=2, steps=400, polish=False).prototypes
    cfg = TammesSettings.resolve(3, 30, device="cpu")
    ends = {}
    for refine in (None, _polish.solve_contacts):
        clock = _polish.Clock(None, None, 1, 0.0)
        w, rounds, converged = _polish.polish(rough, _polish.PairCosines(), cfg, clock, _polish.PolishBudget(cfg),
                                              [], 0, refine=refine)
        assert converged
        ends[refine is None] = (max_cos(_polish.solve_contacts(w)), rounds)
    assert abs(ends[True][0] - ends[False][0]) <= 1e-13
    assert ends[False][1] < ends[True][1]


def test_perturbation_rounds_stop_when_they_stop_helping():
    # A polish that never improves the code: the rounds end after PATIENCE
    # rounds in a row without a gain, not after all of them.
    from spherecodes.solvers import _basin
    from spherecodes.solvers._core import Clock

    w = _icosahedron()
    cfg = TammesSettings.resolve(3, 12, device="cpu")
    calls = []

    def anneal(starts, t_start, local):
        return list(starts), 1

    def polish(code):
        calls.append(1)
        return code, 1

    best, value, record = _basin.perturbation_rounds(w, max_cos(w), 40, 0, cfg, Clock(None, None, 1, 0.0), [], 0,
                                                      anneal=anneal, polish=polish)
    assert record["rounds"] == len(calls) == _basin.PATIENCE < 40
    assert record["improvements"] == 0 and value == max_cos(w)
