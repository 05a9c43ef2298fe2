"""The Softmax-Code optimiser: closed-form optima, monotonicity, its gradient, the CLI.

The expected values are the closed forms of Jiang et al. 2024, Thm 3.3 (ρ = K/(K−1) for
the simplex, 1 for the cross-polytope and its subsets, 1 − cos(2π/K) for the
regular polygon), and ρ of the Tammes code each run starts from, certified
independently of the optimiser.
"""

import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes import solvers
from spherecodes.bank import read_code
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli import main
from spherecodes.errors import SpherecodesError
from spherecodes.context import RunContext
from spherecodes.options import SoftmaxOptions
from spherecodes.run import generate
from spherecodes.solvers import softmax as softmax_module
from spherecodes.solvers import softmax_code, tammes
from spherecodes.sphere import normalise_rows

from conftest import random_code

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def certified_rho(w: np.ndarray) -> float:
    cert = one_vs_rest_distances(w, device="cpu")
    assert cert.certified
    return cert.rho_lower


@pytest.mark.parametrize(
    "d, k, rho",
    [
        (2, 5, 1 - math.cos(2 * math.pi / 5)),  # regular pentagon
        (3, 4, 4 / 3),  # simplex
        (3, 5, 1.0),  # part of the octahedron
        (3, 6, 1.0),  # the octahedron: the optimal v is not unique there
    ],
)
@pytest.mark.slow
def test_random_starts_reach_the_closed_form_optimum(d, k, rho):
    res = softmax_code(d, k, seed=1, start="random", closed_form=False, device="cpu")
    assert res.method == "softmax"
    assert abs(certified_rho(res.prototypes) - rho) < 1e-9
    # What the result says it reached is what the prototypes have.
    assert res.settings["rho"] == pytest.approx(certified_rho(res.prototypes), abs=1e-15)


def test_closed_forms_are_returned_where_provably_optimal():
    res = softmax_code(5, 6, device="cpu")
    assert res.stop_reason == "converged" and res.steps == 0
    assert certified_rho(res.prototypes) == pytest.approx(6 / 5, abs=1e-12)
    res = softmax_code(4, 7, device="cpu")
    assert certified_rho(res.prototypes) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("d, k", [(3, 20), (6, 40)])
@pytest.mark.slow
def test_never_below_the_tammes_code_it_starts_from(d, k):
    start = tammes(d, k, seed=2, restarts=4, device="cpu")
    res = softmax_code(d, k, start=start.prototypes, steps=30, polish_time=1.0, device="cpu")
    assert res.settings["rho_start"] == pytest.approx(certified_rho(start.prototypes), abs=1e-15)
    assert certified_rho(res.prototypes) >= certified_rho(start.prototypes)


def test_an_explicit_start_is_used_and_improved():
    w = random_code(12, 4, seed=3)
    res = softmax_code(4, 12, start=w, steps=40, polish=False, device="cpu")
    assert res.settings["rho_start"] == pytest.approx(certified_rho(w), abs=1e-15)
    assert certified_rho(res.prototypes) > certified_rho(w) + 0.05


def test_ascent_direction_is_the_gradient_of_the_smoothed_minimum():
    # Finite differences of the certified distances against the subgradient
    # of the one-vs-rest distances (docs/optimisers.md), on a generic code (unique optimal v for every class).
    w = random_code(30, 5, seed=7)
    model = softmax_module._OneVsRestDistances(torch.device("cpu"))
    t = 40.0
    grad = model.ascent_direction(w, t)
    rng = np.random.default_rng(1)
    for _ in range(3):
        delta = rng.standard_normal(w.shape)
        delta -= (delta * w).sum(1, keepdims=True) * w  # tangent moves
        eps = 1e-6
        plus = normalise_rows(w + eps * delta)
        minus = normalise_rows(w - eps * delta)
        smooth = lambda x: model.smoothed_min(one_vs_rest_distances(x, device="cpu").hi, t)  # noqa: E731
        numeric = (smooth(plus) - smooth(minus)) / (2 * eps)
        assert numeric == pytest.approx(float((grad * delta).sum()), rel=1e-4, abs=1e-8)


def test_time_limit_returns_the_best_code_so_far():
    res = softmax_code(6, 40, seed=0, start="random", time_limit=0.5, device="cpu")
    assert res.stop_reason == "time_limit"
    assert certified_rho(res.prototypes) >= res.settings["rho_start"]


def test_ctrl_c_returns_the_best_code_so_far():
    def interrupt_after_ten_steps(update):
        if update.rho is not None and update.step >= 10:
            raise KeyboardInterrupt

    res = softmax_code(4, 12, start="random", log_every=5, progress=interrupt_after_ten_steps, device="cpu")
    assert res.stop_reason == "interrupted" and res.steps == 10
    assert res.settings["rho"] == pytest.approx(certified_rho(res.prototypes), abs=1e-15)
    assert res.settings["rho"] >= res.settings["rho_start"]


def test_bad_options_are_refused():
    with pytest.raises(SpherecodesError, match="start must be 'tammes', 'random' or a"):
        softmax_code(3, 10, start="spiral")
    with pytest.raises(SpherecodesError, match=r"expected \(K, d\) = \(10, 3\)"):
        softmax_code(3, 10, start=random_code(9, 3))
    with pytest.raises(SpherecodesError, match="unknown softmax option"):
        softmax_code(3, 10, sharpness=3)


@pytest.mark.slow
def test_generate_and_the_cli_make_a_softmax_bank(tmp_path):
    code = generate(3, 9, "softmax", SoftmaxOptions(steps=20), seed=1, context=RunContext(device="cpu"))
    assert (code.method, code.name) == ("softmax", "softmax-d3-k9-s1")
    assert code.settings["rho"] == pytest.approx(certified_rho(code.prototypes), abs=1e-15)

    out = tmp_path / "bank.h5"
    result = CliRunner().invoke(
        main, ["generate", "--d", "3", "--k", "9", "--method", "softmax", "--steps", "20", "--out", str(out),
               "--device", "cpu", "--json"]
    )
    assert result.exit_code == 0, result.output
    stored = read_code(out)
    assert stored.method == "softmax"
    assert stored.certificate.rho_lower == pytest.approx(certified_rho(stored.prototypes), abs=1e-15)
