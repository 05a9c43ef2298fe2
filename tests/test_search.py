"""Spending more work well: effort presets, symmetric starts, perturb-and-repolish.

Expected values are independent facts (closed forms, the orders of the
rotation groups, Sloane's tables of spherical codes), never this code's output.
"""

import dataclasses
import math

import numpy as np
import pytest
from spherecodes.solvers._basin import perturb
from spherecodes.errors import SpherecodesError
from spherecodes.solvers import EFFORTS, tammes
from spherecodes.stats import max_cos
from spherecodes.solvers._symmetric import orbit_choices, symmetric_start

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- symmetric starts


def _images_are_the_set(points: np.ndarray, rotation: np.ndarray) -> bool:
    """Whether ``rotation`` maps the point set onto itself."""
    moved = points @ rotation.T
    return bool(np.abs(moved[:, None, :] - points[None, :, :]).max(axis=2).min(axis=1).max() < 1e-9)


def test_orbit_sizes_of_the_polyhedral_groups():
    # Orbits of the rotation groups of the Platonic solids (e.g. Coxeter, Regular Polytopes):
    # I: 12 vertices, 20 faces, 30 edges of the icosahedron and 60 generic points;
    # O: 6, 8, 12 and 24; T: 4, 4, 6 and 12.
    assert ("I", (0,), 0) in orbit_choices(12)  # the icosahedron
    assert ("I", (1,), 0) in orbit_choices(20)  # the dodecahedron
    assert ("I", (2,), 0) in orbit_choices(30)  # the icosidodecahedron
    assert ("I", (), 1) in orbit_choices(60)
    assert ("O", (0, 1, 2), 1) in orbit_choices(6 + 8 + 12 + 24)
    assert ("T", (0, 1), 0) in orbit_choices(8)  # the cube as two tetrahedra
    # D_n and C_n: the poles and generic orbits of 2n and n points.
    assert ("D7", (0,), 1) in orbit_choices(2 + 14)
    assert ("C5", (0, 1), 2) in orbit_choices(1 + 1 + 10)


def test_symmetric_starts_are_symmetric():
    # The icosahedron (the only way to make 12 points from one orbit of I) has
    # max-cos 1/sqrt(5) (Fejes Toth 1943).
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(30):
        points, what = symmetric_start(12, rng)
        assert points.shape == (12, 3) and np.allclose(np.linalg.norm(points, axis=1), 1)
        seen.add(what)
        if what == "I: 12":
            assert max_cos(points) == pytest.approx(1 / math.sqrt(5), abs=1e-12)
    assert "I: 12" in seen
    # Twelve generic orbits of C5, randomly oriented: the centroid lies on the
    # axis, and a turn of 72 degrees about it maps the set onto itself.
    points, what = symmetric_start(60, np.random.default_rng(0), [("C5", (), 12)])
    assert what == "C5: 5x12"
    axis = points.mean(axis=0)
    assert np.linalg.norm(axis) > 1e-3
    axis /= np.linalg.norm(axis)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    turn = np.eye(3) + math.sin(2 * math.pi / 5) * cross + (1 - math.cos(2 * math.pi / 5)) * cross @ cross
    assert _images_are_the_set(points, turn)
    assert not _images_are_the_set(points, turn @ turn.T @ np.diag([1.0, 1.0, 1.0]) @ _quarter(axis))


def _quarter(axis: np.ndarray) -> np.ndarray:
    """A turn by 90 degrees about ``axis``: no symmetry of a C5-invariant generic set."""
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + cross + cross @ cross


def test_perturbation_keeps_unit_rows_and_moves_the_code():
    w = tammes(3, 12, device="cpu").prototypes
    moved = perturb(w, np.random.default_rng(0), math.acos(1 / math.sqrt(5)))
    assert np.allclose(np.linalg.norm(moved, axis=1), 1)
    assert np.abs(moved - w).max() > 1e-3


# --------------------------------------------------------------------------- effort


def test_effort_sets_the_starts_and_the_rounds():
    low = tammes(3, 13, seed=0, effort="low", closed_form=False, device="cpu")
    assert low.stages[0]["starts"] == round(64 * EFFORTS["low"]["restarts"])
    assert [st["stage"] for st in low.stages] == ["anneal", "polish"]
    # Musin & Tarasov (2012): the optimum for 13 points.
    assert abs(low.max_cos - math.cos(0.99722359243811916365)) < 1e-9
    with pytest.raises(SpherecodesError, match="effort must be one of low, default, high"):
        tammes(3, 13, effort="max", device="cpu")


def test_perturbation_rounds_are_recorded_and_deterministic():
    runs = [tammes(3, 20, seed=1, restarts=4, steps=300, perturb_rounds=3, symmetric_starts=2, device="cpu")
            for _ in range(2)]
    assert np.array_equal(runs[0].prototypes, runs[1].prototypes)
    stages = runs[0].stages
    assert [st["stage"] for st in stages] == ["anneal", "polish", "perturb"]
    assert stages[2]["starts"] == 3
    # The rounds only ever keep a better code.
    assert stages[2]["max_cos"] <= stages[1]["max_cos"]
    assert runs[0].max_cos == stages[2]["max_cos"]
    # More rounds continue the same ones (round r draws from (seed, r, 3)):
    # after its third round a longer run holds the shorter run's code, so
    # rounds added to an effort can only lower max-cos.
    longer = tammes(3, 20, seed=1, restarts=4, steps=300, perturb_rounds=6, symmetric_starts=2, device="cpu")
    assert longer.stages[2]["starts"] == 6
    rounds = longer.history[-6:, 2]
    assert rounds[2] == runs[0].max_cos and longer.max_cos == rounds[-1] <= runs[0].max_cos


def test_time_limit_stops_the_rounds_and_says_so():
    # The limit leaves room for the annealing, sharpening and polish before
    # the rounds (up to ~3 s on the shared 2-core machine under load).
    res = tammes(3, 30, seed=0, restarts=2, steps=200, perturb_rounds=10_000, time_limit=8.0, device="cpu")
    assert res.stop_reason == "time_limit"
    assert res.stages[-1]["stage"] == "perturb" and res.stages[-1]["starts"] < 10_000
    assert "perturbation rounds" in res.stop_detail


@pytest.mark.slow
def test_high_effort_reaches_sloanes_record_for_88_points():
    # N. J. A. Sloane, R. H. Hardin, W. D. Smith et al., Tables of spherical
    # codes: pack.3.88.txt, max-cos 0.9240939126261072 (min angle 22.46788 degrees).
    res = tammes(3, 88, seed=0, effort="high", device="cpu")
    assert res.max_cos < 0.9240939126261072 + 1e-9


def test_ctrl_c_during_the_rounds_keeps_the_best_code():
    # Interrupt from the progress callback once the rounds have started: the
    # result is the best code so far (never worse than after the polish).
    def interrupt(report):
        if report.steps == 50 and report.step >= 2:
            raise KeyboardInterrupt

    res = tammes(3, 20, seed=2, restarts=4, steps=200, perturb_rounds=50, device="cpu", progress=interrupt)
    assert res.stop_reason == "interrupted"
    assert [st["stage"] for st in res.stages] == ["anneal", "polish", "perturb"]
    assert res.stages[2]["starts"] < 50
    assert res.max_cos == pytest.approx(max_cos(res.prototypes), abs=0) and res.max_cos <= res.stages[1]["max_cos"]
    assert "interrupted" in res.stop_detail


def test_high_effort_runs_at_least_512_starts_on_the_sphere_up_to_130_points():
    from spherecodes.solvers import TammesSettings

    def starts(d, k, **options):
        return TammesSettings.resolve(d, k, device="cpu", **options).restarts

    # From 82 points the default's K^2 d work per start gives 16 starts.
    assert starts(3, 100) == 16 and starts(3, 100, effort="low") == 4
    assert starts(3, 100, effort="high") == 512 and starts(3, 130, effort="high") == 512
    assert starts(3, 131, effort="high") == 4 * starts(3, 131)
    assert starts(5, 100, effort="high") == 4 * starts(5, 100)
    assert starts(3, 100, effort="high", restarts=8) == 8
    assert TammesSettings.resolve(3, 100, device="cpu", effort="high").symmetric_starts == 256


def test_high_effort_searches_the_sphere_longer_up_to_130_points():
    from spherecodes.solvers import TammesSettings
    from spherecodes.solvers._basin import PATIENCE
    from spherecodes.solvers._options import SPHERE_PATIENCE

    def rounds(d, k, **options):
        opts = TammesSettings.resolve(d, k, device="cpu", **options)
        return opts.perturb_rounds, opts.perturb_patience

    # In R^3 up to 130 points: min(300, 9.19e6 / (K^2 d) - 172) rounds, at
    # least 40, stopped after 150 without a gain.
    assert rounds(3, 64, effort="high") == (300, SPHERE_PATIENCE) == (300, 150)
    assert rounds(3, 81, effort="high")[0] == 9_190_000 // (81**2 * 3) - 172 == 294
    assert rounds(3, 103, effort="high")[0] == 9_190_000 // (103**2 * 3) - 172 == 116
    assert rounds(3, 120, effort="high")[0] == 40
    assert rounds(3, 130, effort="high") == (40, 150)
    # Elsewhere the effort's 40 rounds and their patience; other efforts none.
    for d, k in ((3, 131), (5, 42), (22, 100)):
        assert rounds(d, k, effort="high") == (40, PATIENCE)
    assert rounds(3, 100) == (0, PATIENCE) and rounds(3, 100, effort="low")[0] == 0
    # Rounds asked for by count all run.
    assert rounds(3, 100, effort="high", perturb_rounds=7) == (7, 0)


def test_a_record_chain_runs_its_rounds_until_they_stop_gaining():
    from spherecodes.solvers import TammesSettings
    from spherecodes.solvers._basin import PATIENCE
    from spherecodes.solvers.record_search import CHAIN_EFFORT

    def settings(d, k, effort):
        return TammesSettings.resolve(d, k, device="cpu", effort=effort)

    assert CHAIN_EFFORT == "record"
    # In R^3 up to 130 points the rounds are not cut to two minutes of work (40 at N = 120 for
    # "high"): at most 1000, ended by 150 rounds in a row without a gain.
    for k in (64, 103, 120, 130):
        record, high = settings(3, k, "record"), settings(3, k, "high")
        assert (record.perturb_rounds, record.perturb_patience) == (1000, 150)
        assert high.perturb_rounds < 1000
        # Everything else is the "high" run's.
        assert (record.restarts, record.symmetric_starts, record.steps) == (high.restarts, high.symmetric_starts,
                                                                            high.steps)
    # Past the published tables and outside R^3 a chain is a "high" run.
    for d, k in ((3, 131), (5, 42)):
        record = settings(d, k, "record")
        assert dataclasses.replace(record, effort="high") == settings(d, k, "high") and record.perturb_rounds == 40
    assert settings(5, 42, "record").perturb_patience == PATIENCE
