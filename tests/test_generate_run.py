"""The generate run as a user meets it: one estimate first, time limits, rotations, matrix output, checks first."""

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.best_of import best_of, plan_auto
from spherecodes.cli import main
from spherecodes.constructions import random_rotation
from spherecodes.generation import generate, planned_code_name, unused_dimensions
from spherecodes.run_estimate import Phase, RunEstimate, estimate_run
from spherecodes.stats import separation_statistics


@pytest.fixture
def run(tmp_path, monkeypatch):
    """The command line in an empty directory: ``run("generate", "--d", 8, ...)``."""
    monkeypatch.chdir(tmp_path)
    return lambda *args: CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_an_embedded_structured_code_is_turned_into_every_dimension_by_default():
    # The 240 roots of E8 in R^10: two zero columns as built; max-cos 1/2 (Conway & Sloane, ch. 4).
    sparse = generate(10, 240, "structured", rotation="none")
    assert unused_dimensions(sparse.prototypes) == 2 and sparse.name == "structured-d10-k240"
    dense = generate(10, 240, "structured", seed=5)
    assert unused_dimensions(dense.prototypes) == 0
    assert dense.name == "structured-d10-k240-s5" == planned_code_name(10, 240, "structured", seed=5)
    assert dense.settings["rotation"]["seed"] == 5
    assert dense.stats.max_cos == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(dense.prototypes, sparse.prototypes @ random_rotation(10, 5), atol=1e-15)
    assert np.array_equal(generate(10, 240, "structured", seed=5).prototypes, dense.prototypes)


def test_a_random_rotation_is_honoured_by_an_optimiser():
    plain = generate(3, 13, "tammes", rotation="none", steps=50, restarts=2, seed=1)
    turned = generate(3, 13, "tammes", rotation="random", steps=50, restarts=2, seed=1)
    np.testing.assert_allclose(turned.prototypes, plain.prototypes @ random_rotation(3, 1), atol=1e-14)
    assert turned.settings["rotation"]["seed"] == 1
    assert turned.stats.max_cos == pytest.approx(plain.stats.max_cos, abs=1e-12)


def test_the_warm_start_never_ends_above_the_structured_code():
    # One annealing step from E8 moved off its subspace cannot get back below max-cos 1/2.
    plan = plan_auto(10, 240, steps=1, restarts=1, time_limit=60, catalog=False)
    assert any(o.kind == "tammes-warm" and not o.skip for o in plan.optimisers)
    _, candidates = best_of(10, 240, plan, seed=0, device="cpu", steps=1, restarts=1, time_limit=60, progress=None,
                            max_memory=None, neighbours=None, refresh=None)
    warm = next(c for c in candidates if c.kind == "tammes-warm")
    assert warm.max_cos <= 0.5 + 1e-12


def test_the_statistics_report_progress_up_to_every_row():
    seen = []
    w = np.random.default_rng(0).standard_normal((300, 5))
    separation_statistics(w / np.linalg.norm(w, axis=1, keepdims=True), tile=64, progress=seen.append)
    assert [u.step for u in seen] == [64, 128, 192, 256, 300] and seen[-1].steps == 300


def test_the_estimate_covers_every_phase_and_splits_the_time_limit():
    estimate, plan = estimate_run(64, 1000, device="cpu")
    assert [p.name for p in estimate.phases] == ["candidates", "statistics", "certificate"]
    assert not plan.runs_optimiser and estimate.optimiser_time_limit is None
    estimate, _ = estimate_run(8, 300, "tammes", device="cpu", time_limit=100.0, certify=False)
    after = estimate.phase("statistics").seconds
    assert 0 < estimate.optimiser_time_limit <= 100.0 - after


def test_a_dominant_certificate_is_named_and_an_absurd_run_refused():
    est = RunEstimate(64, 10**5, (Phase("candidates", "c", 1.0), Phase("statistics", "s", 9.0),
                                  Phase("certificate", "q", 90.0)))
    assert "--no-certify would finish in ~10 s" in est.describe()
    with pytest.raises(Exception, match="--no-certify"):
        RunEstimate(64, 10**5, est.phases, time_limit=50.0).check()
    with pytest.raises(Exception, match="--no-certify"):
        RunEstimate(1024, 10**5, (Phase("certificate", "q", 590_000.0),)).check()


def test_generate_refuses_a_time_limit_its_certificate_cannot_keep(run, tmp_path):
    # The statistics of 1000 points take milliseconds, the certificate of the BCH code seconds.
    result = run("generate", "--d", 64, "--k", 1000, "--time-limit", 0.2)
    assert result.exit_code != 0 and "--no-certify" in result.output
    assert not (tmp_path / "spherecodes_d64_k1000.h5").exists()


def test_generate_writes_a_float32_matrix_and_refuses_an_existing_one_first(run, tmp_path):
    result = run("generate", "--d", 64, "--k", 1000, "--no-certify", "--out", "prototypes.npy")
    assert result.exit_code == 0, result.output
    w = np.load(tmp_path / "prototypes.npy")
    assert w.shape == (1000, 64) and w.dtype == np.float32
    gram = w.astype(np.float64) @ w.T.astype(np.float64)
    np.fill_diagonal(gram, -1)
    assert gram.max() == pytest.approx(1 / 8, abs=1e-6)  # the extended BCH [64,10,28] code: 1 - 2*28/64
    again = run("generate", "--d", 64, "--k", 1000, "--out", "prototypes.npy")
    assert again.exit_code != 0 and "exists" in again.output and "estimate" not in again.output


def test_fetch_turns_an_embedded_code_unless_told_not_to(run, tmp_path):
    dense = run("fetch", "--d", 48, "--k", 500, "--out", "dense.npy")
    assert dense.exit_code == 0, dense.output
    assert unused_dimensions(np.load(tmp_path / "dense.npy")) == 0
    sparse = run("fetch", "--d", 48, "--k", 500, "--rotation", "canonical", "--out", "sparse.npy")
    assert sparse.exit_code == 0, sparse.output
    assert unused_dimensions(np.load(tmp_path / "sparse.npy")) > 0
    refused = run("fetch", "--d", 48, "--k", 500, "--out", "sparse.npy")
    assert refused.exit_code != 0 and "exists" in refused.output
