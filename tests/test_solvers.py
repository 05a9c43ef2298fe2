"""The optimisers: quality against known optima, determinism, budgets, errors.

Every expected value below is an independent fact from the literature or a
closed form, never a number this code produced.
"""

import json
import math
import os

import numpy as np
import pytest
import torch

from spherecodes import solvers
from spherecodes.errors import SpherecodesError
from spherecodes.devices import resolve_device
from spherecodes.stats import max_cos as stats_max_cos
from spherecodes.solvers import Progress, SolverResult, maxsep, tammes
from spherecodes.sphere import random_start

pytestmark = pytest.mark.usefixtures("one_torch_thread")


#: The slow tests repeat the benchmark targets (tens of seconds on a busy
#: 2-core machine); they run when this variable is set.
run_slow = pytest.mark.skipif(not os.environ.get("SPHERECODES_SLOW_TESTS"), reason="set SPHERECODES_SLOW_TESTS=1")


def _tribonacci() -> float:
    """The real root of t^3 = t^2 + t + 1."""
    return float(max(r.real for r in np.roots([1, -1, -1, -1]) if abs(r.imag) < 1e-12))


#: Optimal max-cos of N points on the 2-sphere (the Tammes problem), with sources.
#: Angles in radians are the OEIS decimal expansions, truncated to 20 digits.
TAMMES_3D = {
    # Schuette & van der Waerden (1951): 90 degrees, e.g. two poles and three equator points.
    5: 0.0,
    # Fejes Toth (1943): the octahedron.
    6: 0.0,
    # Schuette & van der Waerden (1951); OEIS A383859: cos = s / (1 - s), s = sin(pi/18)
    # (angle 1.35907989763266014188 rad = 77.8695 degrees).
    7: math.sin(math.pi / 18) / (1 - math.sin(math.pi / 18)),
    # Schuette & van der Waerden (1951), the square antiprism; OEIS A381756: cos = 1/(1 + 2^(3/2)).
    8: 1 / (1 + 2**1.5),
    # Schuette & van der Waerden (1951); 70.5288 degrees = arccos(1/3).
    9: 1 / 3,
    # Danzer (1963); exact form by Sugimoto & Tanemura (arXiv:1509.01768); OEIS A340918.
    10: math.cos(math.atan(math.sqrt(4 / math.sqrt(3) * math.cos(math.atan(math.sqrt(3 * 229) / 9) / 3) + 3))),
    # Danzer (1963) for 11, Fejes Toth (1943) for 12 (icosahedron): arccos(1/sqrt 5), OEIS A105199.
    11: 1 / math.sqrt(5),
    12: 1 / math.sqrt(5),
    # Musin & Tarasov (2012), "The strong thirteen spheres problem"; OEIS A217695.
    13: math.cos(0.99722359243811916365),
    # Musin & Tarasov (2015), "The Tammes problem for N = 14"; OEIS A383860.
    14: math.cos(0.97163474288622407594),
    # Robinson (1961): the snub cube.  With unit edge its circumradius is
    # R = sqrt((3 - t) / (4 (2 - t))), t the tribonacci constant, so
    # cos = 1 - 1/(2 R^2) = 1 - 2 (2 - t) / (3 - t)  (43.6908 degrees).
    24: 1 - 2 * (2 - _tribonacci()) / (3 - _tribonacci()),
}

SIX_HUNDRED_CELL = (1 + math.sqrt(5)) / 4  # cos 36 degrees


def _check_code(res: SolverResult, d: int, k: int) -> None:
    """Shape, dtype, unit rows and a max-cos that matches the returned prototypes."""
    w = res.prototypes
    assert w.dtype == np.float64 and w.shape == (k, d)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0, rtol=0, atol=1e-14)
    gram = w @ w.T
    np.fill_diagonal(gram, -np.inf)
    assert res.max_cos == pytest.approx(gram.max(), abs=1e-15)
    assert res.history.ndim == 2 and res.history.shape[1] == 3
    json.dumps(res.settings)


# --------------------------------------------------------------------------- quality


@pytest.mark.parametrize("n", sorted(TAMMES_3D))
def test_tammes_reaches_the_3d_optimum(n):
    res = tammes(3, n, seed=0, device="cpu", closed_form=False)
    _check_code(res, 3, n)
    optimum = TAMMES_3D[n]
    assert res.max_cos >= optimum - 1e-9, "better than a proven optimum: the check itself is wrong"
    assert res.max_cos <= optimum + 1e-6
    assert res.stop_reason == "converged"


@pytest.mark.slow
def test_tammes_finds_the_600_cell_from_random_starts():
    res = tammes(4, 120, seed=0, restarts=2, device="cpu")
    _check_code(res, 4, 120)
    assert abs(res.max_cos - SIX_HUNDRED_CELL) <= 1e-6


@pytest.mark.parametrize("d,k", [(10, 11), (6, 5)])
def test_tammes_optimises_to_the_simplex(d, k):
    res = tammes(d, k, seed=2, device="cpu", closed_form=False)
    assert res.max_cos == pytest.approx(-1 / (k - 1), abs=1e-6)


@pytest.mark.parametrize(
    "d,k,optimum",
    [(100, 100, -1 / 99), (5, 8, 0.0), (2, 7, math.cos(2 * math.pi / 7)), (1, 2, -1.0), (1, 5, 1.0)],
    ids=["simplex", "cross-polytope", "heptagon", "antipodal", "line"],
)
def test_tammes_returns_provably_optimal_closed_forms(d, k, optimum):
    res = tammes(d, k, device="cpu")
    _check_code(res, d, k)
    assert res.max_cos == pytest.approx(optimum, abs=1e-12)
    assert res.stop_reason == "converged" and res.steps == 0


def test_tammes_beats_the_reference_procedure():
    reference = maxsep(16, 200, seed=0, device="cpu")
    res = tammes(16, 200, seed=0, restarts=1, steps=500, device="cpu")
    assert res.max_cos < reference.max_cos - 0.05


@pytest.mark.slow
@run_slow
def test_tammes_meets_the_64_by_1000_target():
    res = tammes(64, 1000, seed=0, device="cpu")
    _check_code(res, 64, 1000)
    assert res.max_cos <= 0.146


@pytest.mark.slow
@run_slow
def test_tammes_finds_the_600_cell_with_default_settings():
    assert abs(tammes(4, 120, seed=1, device="cpu").max_cos - SIX_HUNDRED_CELL) <= 1e-6


# --------------------------------------------------------------------------- reproducibility


def test_tammes_is_deterministic():
    first = tammes(3, 10, seed=3, steps=300, restarts=4, device="cpu")
    again = tammes(3, 10, seed=3, steps=300, restarts=4, device="cpu")
    other = tammes(3, 10, seed=4, steps=300, restarts=4, device="cpu")
    assert np.array_equal(first.prototypes, again.prototypes)
    assert np.array_equal(first.history, again.history)
    assert not np.array_equal(first.prototypes, other.prototypes)


def test_maxsep_is_deterministic():
    first = maxsep(8, 30, seed=1, steps=100, device="cpu")
    again = maxsep(8, 30, seed=1, steps=100, device="cpu")
    other = maxsep(8, 30, seed=2, steps=100, device="cpu")
    assert np.array_equal(first.prototypes, again.prototypes)
    assert not np.array_equal(first.prototypes, other.prototypes)


def test_settings_reproduce_the_run():
    res = tammes(4, 11, seed=7, steps=200, restarts=3, device="cpu", t_spread=10.0)
    settings = dict(res.settings)
    d, k, seed, steps, restarts = (settings.pop(key) for key in ("d", "k", "seed", "steps", "restarts"))
    settings.pop("method")
    again = tammes(d, k, seed=seed, steps=steps, restarts=restarts, **{
        "device": settings.pop("device"), "time_limit": settings.pop("time_limit"), **settings,
    })
    assert np.array_equal(res.prototypes, again.prototypes)


def test_restarts_do_not_depend_on_batching():
    together = tammes(3, 9, seed=5, steps=200, restarts=4, device="cpu", polish=False)
    one_by_one = tammes(3, 9, seed=5, steps=200, restarts=4, device="cpu", polish=False, batch_size=1)
    assert together.best_restart == one_by_one.best_restart
    np.testing.assert_allclose(together.prototypes, one_by_one.prototypes, atol=1e-12)


# --------------------------------------------------------------------------- the reference procedure


def _published_hpn_steps(start: np.ndarray, steps: int, lr: float) -> np.ndarray:
    """A transcription of github.com/psmmettes/hpn prototypes.py, in float64.

    Autograd through max-pooling of the Gram matrix, then a fresh
    ``SGD(lr, momentum=0.9)`` per step, as in the authors' loop.
    """
    prototypes = torch.nn.Parameter(torch.tensor(start))
    optimizer = torch.optim.SGD([prototypes], lr=lr, momentum=0.9)
    for _ in range(steps):
        product = prototypes @ prototypes.t() + 1
        product = product - 2.0 * torch.diag(torch.diag(product))
        loss = product.max(dim=1)[0].mean()
        loss.backward()
        optimizer.step()
        prototypes = torch.nn.Parameter(torch.nn.functional.normalize(prototypes.detach(), p=2, dim=1))
        optimizer = torch.optim.SGD([prototypes], lr=lr, momentum=0.9)
    return prototypes.detach().numpy()


@pytest.mark.slow
def test_maxsep_follows_the_published_procedure():
    d, k, seed, steps = 5, 12, 3, 40
    res = maxsep(d, k, seed=seed, steps=steps, device="cpu", dtype="float64")
    expected = _published_hpn_steps(random_start(seed, 0, k, d), steps, lr=0.1)
    np.testing.assert_allclose(res.prototypes, expected, atol=1e-12)


def test_maxsep_lowers_lhp():
    res = maxsep(10, 60, seed=0, steps=600, device="cpu", log_every=1)
    _check_code(res, 10, 60)
    lhp = res.history[:, 1]
    windows = lhp[: len(lhp) // 6 * 6].reshape(6, -1).mean(axis=1)
    assert np.all(np.diff(windows) < 0), windows
    # L_HP is the mean nearest-neighbour cosine, so it never exceeds max-cos.
    assert np.all(res.history[:, 1] <= res.history[:, 2] + 1e-12)
    assert res.stop_reason == "steps" and res.steps == 600


def test_maxsep_accepts_none_for_its_defaults():
    res = maxsep(4, 6, steps=None, restarts=None, device="cpu")
    assert res.steps == 1000 and res.restarts == 1


def test_maxsep_restarts_keep_the_best():
    res = maxsep(6, 20, seed=0, steps=50, restarts=3, device="cpu")
    singles = [maxsep(6, 20, seed=0, steps=50, restarts=r + 1, device="cpu", batch_size=1) for r in range(3)]
    assert res.restarts == 3
    assert res.max_cos == pytest.approx(min(s.max_cos for s in singles), abs=1e-6)


# --------------------------------------------------------------------------- budgets and progress


@pytest.mark.parametrize("solve", [tammes, maxsep], ids=["tammes", "maxsep"])
def test_time_limit_is_honoured(solve):
    limit = 0.5
    res = solve(48, 800, seed=0, steps=100_000, restarts=3, time_limit=limit, device="cpu")
    # Stopped by the clock, far short of the steps asked for (how soon after the limit is a benchmark's question).
    assert res.stop_reason == "time_limit"
    assert res.steps < 3 * 100_000
    _check_code(res, 48, 800)


def test_time_limit_compresses_the_schedule():
    # Under a limit the annealing still runs its whole schedule: it ends at the
    # final sharpness, so the code is a sharp local optimum rather than the
    # smooth energy's minimiser where a cut-off schedule would leave it.  A run
    # given as many steps as fitted in the time must do about as well.
    limit = 2.0
    res = tammes(16, 200, seed=0, steps=1_000_000, restarts=1, time_limit=limit, polish=False, device="cpu")
    assert res.stop_reason == "time_limit"
    assert res.stages[0]["compressed"]
    assert "compressed" in res.stop_detail and "time limit" in res.stop_detail
    fitted = tammes(16, 200, seed=0, steps=res.steps, restarts=1, polish=False, device="cpu")
    assert res.max_cos < fitted.max_cos + 0.01


def test_progress_reports_are_sensible():
    reports = []
    res = tammes(3, 8, seed=0, steps=200, restarts=2, device="cpu", log_every=20, progress=reports.append)
    assert reports and all(isinstance(p, Progress) for p in reports)
    assert [p.elapsed for p in reports] == sorted(p.elapsed for p in reports)
    assert all(p.restarts == 2 for p in reports)
    assert min(p.max_cos for p in reports) >= res.max_cos - 1e-9
    with pytest.raises(Exception):
        reports[0].step = 3  # frozen


def test_interrupt_restores_threads():
    def interrupt(report):
        raise KeyboardInterrupt

    # tammes keeps the best code so far (tests/test_large_k.py); maxsep lets Ctrl-C through.
    assert tammes(3, 8, steps=100, device="cpu", log_every=10, threads=2, progress=interrupt).stop_reason == "interrupted"
    assert torch.get_num_threads() == 1
    with pytest.raises(KeyboardInterrupt):
        maxsep(3, 8, steps=100, device="cpu", log_every=10, threads=2, progress=interrupt)
    assert torch.get_num_threads() == 1


def test_history_columns():
    res = tammes(3, 7, seed=1, steps=100, restarts=2, device="cpu", log_every=10)
    steps = res.history[:, 0]
    assert np.all(np.diff(steps) > 0)
    assert steps[-1] == res.steps
    annealing = res.history[steps <= 200]
    # The smoothed maximum is an upper bound of the maximum it smooths.
    assert np.all(annealing[:, 1] >= annealing[:, 2] - 1e-12)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call",
    [
        lambda: tammes(0, 5),
        lambda: tammes(3, 1),
        lambda: tammes(3, 2.5),
        lambda: tammes(True, 5),
        lambda: tammes(3, 8, seed=-1),
        lambda: tammes(3, 8, steps=0),
        lambda: tammes(3, 8, restarts=0),
        lambda: tammes(3, 8, time_limit=0),
        lambda: tammes(3, 8, time_limit=float("nan")),
        lambda: tammes(3, 8, device="tpu"),
        lambda: tammes(3, 8, device="cuda:x"),
        lambda: tammes(3, 8, progress=3),
        lambda: tammes(3, 8, learning_rate=0.1),
        lambda: tammes(3, 8, dtype="float16"),
        lambda: tammes(3, 8, beta1=1.0),
        lambda: tammes(3, 8, t_spread=0.5),
        lambda: tammes(3, 8, sharp_share=1.5),
        lambda: tammes(3, 8, sharp_share=float("nan")),
        lambda: tammes(3, 8, sharp_share="half"),
        lambda: tammes(3, 10**9, device="cpu"),  # 3.3 TiB of neighbour lists: refused on any machine
        lambda: maxsep(3, 8, lr=0),
        lambda: maxsep(3, 8, steps=-5),
        lambda: maxsep(3, 8, momentum=1.5),
        lambda: maxsep(3, 8, polish=True),
    ],
)
def test_bad_input_raises(call):
    with pytest.raises(SpherecodesError):
        call()


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(SpherecodesError, match="no CUDA"):
            resolve_device("cuda")


# --------------------------------------------------------------------------- CUDA


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_solvers():
    res = tammes(3, 12, seed=0, device="cuda")
    again = tammes(3, 12, seed=0, device="cuda")
    assert res.device.startswith("cuda")
    assert res.max_cos == pytest.approx(1 / math.sqrt(5), abs=1e-6)
    assert np.array_equal(res.prototypes, again.prototypes)
    _check_code(res, 3, 12)
    reference = maxsep(16, 100, seed=0, steps=200, device="cuda")
    assert reference.device.startswith("cuda") and reference.settings["dtype"] == "float32"
    _check_code(reference, 16, 100)


# --------------------------------------------------------------------------- warm starts


def test_warm_start_refines_a_perturbed_optimum():
    # The icosahedron, moved by a small perturbation, is refined back to the
    # optimum 1/sqrt(5) (Fejes Toth 1943) by a warm start of one start only.
    golden = (1 + 5**0.5) / 2
    ico = np.array([(0, s1, s2 * golden) for s1 in (-1, 1) for s2 in (-1, 1)], dtype=float)
    ico = np.concatenate([ico, np.roll(ico, 1, axis=1), np.roll(ico, 2, axis=1)])
    ico /= np.linalg.norm(ico, axis=1, keepdims=True)
    assert abs(stats_max_cos(ico) - 1 / 5**0.5) < 1e-15
    moved = ico + 0.02 * np.random.default_rng(5).standard_normal(ico.shape)
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    res = tammes(3, 12, seed=0, restarts=1, closed_form=False, device="cpu", init=moved)
    assert abs(res.max_cos - 1 / 5**0.5) < 1e-12
    assert res.settings["init"] == "array"
    assert res.settings["t_start"] == pytest.approx(res.settings["t_end"] / 25)


def test_warm_start_is_never_worse_than_its_start():
    # The snub cube is optimal for N = 24 (Robinson 1961): no start can beat
    # it, and the solver must hand it back rather than anything worse.
    start = tammes(3, 24, seed=0, device="cpu", closed_form=False).prototypes
    value = stats_max_cos(start)
    assert abs(value - TAMMES_3D[24]) < 1e-9
    res = tammes(3, 24, seed=3, restarts=4, steps=50, polish=False, closed_form=False, device="cpu",
                 init=start)
    assert res.max_cos <= value


@pytest.mark.parametrize("solve", [tammes, maxsep], ids=["tammes", "maxsep"])
def test_init_is_checked(solve):
    with pytest.raises(SpherecodesError, match=r"init has shape \(4, 3\); expected"):
        solve(3, 5, init=np.random.default_rng(0).standard_normal((4, 3)), device="cpu")
    with pytest.raises(SpherecodesError, match="^init: "):
        solve(3, 3, init=np.array([[1.0, 0, 0], [0, 1, 0], [np.nan, 0, 0]]), device="cpu")
    # Rows 1 and 3 point the same way (one is 3 times the other): no step could separate them.
    twins = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1], [1.8, 2.4, 0], [0, -1, 0]])
    with pytest.raises(SpherecodesError, match="^init: rows 1 and 3 point the same way"):
        solve(3, 5, init=twins, device="cpu")


def test_init_noise_needs_init():
    with pytest.raises(SpherecodesError, match="init_noise applies to a warm start"):
        tammes(3, 8, init_noise=0.1, device="cpu")


def test_maxsep_starts_from_init():
    # With zero steps allowed in effect (a tiny learning rate), the result is the start itself.
    start = np.linalg.qr(np.random.default_rng(0).standard_normal((8, 8)))[0]
    res = maxsep(8, 8, steps=1, lr=1e-300, device="cpu", dtype="float64", init=start)
    assert np.allclose(res.prototypes, start, atol=1e-15)
    assert abs(res.max_cos) < 1e-12  # an orthonormal basis: every cosine is 0


def test_softmax_starts_from_init():
    from spherecodes.solvers import softmax_code

    start = np.random.default_rng(0).standard_normal((8, 3))
    with pytest.raises(SpherecodesError, match="not both"):
        softmax_code(3, 8, init=start, start="random", device="cpu")
    # The result is never worse than its start, whose rho a second method (the certificate) gives.
    from spherecodes.certificate import one_vs_rest_distances

    res = softmax_code(3, 8, init=start, steps=3, polish=False, device="cpu")
    assert res.settings["start"] == "array"
    unit = start / np.linalg.norm(start, axis=1, keepdims=True)
    assert res.settings["rho_start"] == pytest.approx(one_vs_rest_distances(unit).rho_lower, abs=1e-12)
    assert res.settings["rho"] >= res.settings["rho_start"]


def test_tammes_precision_and_sharp_starts_follow_the_run():
    """float32 annealing only where float64 refines it; sharp starts only for cold runs."""
    cold = solvers.TammesSettings.resolve(3, 12, device="cpu")
    assert (cold.dtype, cold.sharp_share) == ("float32", 0.5)
    # Nothing refines an unpolished small code, and a warm start is already sharp.
    assert solvers.TammesSettings.resolve(3, 12, device="cpu", polish=False).dtype == "float64"
    assert (solvers.TammesSettings.resolve(5, 43, device="cpu").dtype,
            solvers.TammesSettings.resolve(5, 43, device="cpu").sharp_share) == ("float64", 0.0)
    assert solvers.TammesSettings.resolve(3, 12, device="cpu", warm=True).sharp_share == 0.0
    # Whatever the schedule mix, a run ends at the proven optimum of N = 12 (the icosahedron, 1/sqrt(5)).
    for share in (0.0, 1.0):
        res = solvers.tammes(3, 12, seed=1, steps=300, restarts=4, device="cpu", sharp_share=share)
        assert abs(res.max_cos - 1 / math.sqrt(5)) < 1e-12
