"""The generate run as a user meets it: one estimate first, time limits, rotations, matrix output, checks first."""

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.best_of import best_of, plan_auto
from spherecodes.cli import main
from spherecodes.constructions import random_rotation
from spherecodes.errors import SpherecodesError
from spherecodes.context import RunContext
from spherecodes.generation import code_name, unused_dimensions
from spherecodes.options import AutoOptions, TammesOptions
from spherecodes.run import generate, plan_run
from spherecodes.run_estimate import Phase, RunEstimate


def estimate_run(d, k, method="auto", options=None, *, certify=True, rotation="auto", **context):
    """The estimate of a run planned with these settings, and its plan."""
    plan = plan_run(d, k, method, options, rotation=rotation, context=RunContext(**context))
    return plan.estimate(certify=certify), plan
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
    assert dense.name == "structured-d10-k240-s5" == code_name(10, 240, "structured", 5, "auto")[0]
    assert dense.settings["rotation"]["seed"] == 5
    assert dense.stats.max_cos == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(dense.prototypes, sparse.prototypes @ random_rotation(10, 5), atol=1e-15)
    assert np.array_equal(generate(10, 240, "structured", seed=5).prototypes, dense.prototypes)


def test_a_random_rotation_is_honoured_by_an_optimiser():
    plain = generate(3, 13, "tammes", TammesOptions(steps=50, restarts=2), rotation="none", seed=1)
    turned = generate(3, 13, "tammes", TammesOptions(steps=50, restarts=2), rotation="random", seed=1)
    np.testing.assert_allclose(turned.prototypes, plain.prototypes @ random_rotation(3, 1), atol=1e-14)
    assert turned.settings["rotation"]["seed"] == 1
    assert turned.stats.max_cos == pytest.approx(plain.stats.max_cos, abs=1e-12)


def test_the_warm_start_never_ends_above_the_structured_code():
    # One annealing step from E8 moved off its subspace cannot get back below max-cos 1/2.
    plan = plan_auto(10, 240, steps=1, restarts=1, time_limit=60, catalog=False)
    assert any(o.kind == "tammes-warm" and not o.skip for o in plan.optimisers)
    _, candidates = best_of(10, 240, plan, AutoOptions(steps=1, restarts=1), seed=0,
                            context=RunContext(device="cpu", time_limit=60))
    warm = next(c for c in candidates if c.kind == "tammes-warm")
    assert warm.max_cos <= 0.5 + 1e-12


def test_the_statistics_report_progress_up_to_every_row():
    seen = []
    w = np.random.default_rng(0).standard_normal((300, 5))
    separation_statistics(w / np.linalg.norm(w, axis=1, keepdims=True), tile=64, progress=seen.append)
    assert [u.step for u in seen] == [64, 128, 192, 256, 300] and seen[-1].steps == 300


def test_the_estimate_covers_every_phase_and_splits_the_time_limit():
    estimate, plan = estimate_run(64, 1000, device="cpu")
    assert [p.name for p in estimate.phases] == ["start-up", "bound", "candidates", "statistics", "certificate",
                                                 "writing"]
    assert not plan.auto.runs_optimiser and estimate.optimiser_time_limit is None
    estimate, _ = estimate_run(8, 300, "tammes", device="cpu", time_limit=100.0, certify=False)
    after = estimate.phase("statistics").seconds
    assert 0 < estimate.optimiser_time_limit <= 100.0 - after


def test_a_padded_prefix_code_is_turned_and_keeps_its_structure_through_the_rotation():
    # (40, 300): the first 300 of 512 words of a code of length 30, padded with 10 zero columns. auto turns
    # it into every dimension; its statistics and certificate still come from the orbit, carried through the
    # rotation, in the estimate and in the run.
    turned_code = generate(40, 300, "structured")
    assert turned_code.settings["rotation"]["seed"] == 0 and unused_dimensions(turned_code.prototypes) == 0
    assert turned_code.orbit is not None and turned_code.orbit.seed == 0
    estimate, _ = estimate_run(40, 300, "structured", device="cpu", certify=False)
    assert estimate.phase("statistics").what.endswith("carried through the rotation")
    # A second method: every pair of the stored rows scanned, with no structure.
    scanned = separation_statistics(turned_code.prototypes, orbit=None)
    assert abs(scanned.max_cos - turned_code.max_cos) <= turned_code.orbit.cosine_error
    assert abs(scanned.min_cos - turned_code.stats.min_cos) <= turned_code.orbit.cosine_error
    # Kept as built (--rotation none), its statistics are read off the orbit, in the estimate and the run.
    kept, _ = estimate_run(40, 300, "structured", device="cpu", certify=False, rotation="none")
    assert "orbit of sign changes" in kept.phase("statistics").what
    assert unused_dimensions(generate(40, 300, "structured", rotation="none").prototypes) == 10


def test_a_dominant_certificate_is_named_and_an_absurd_run_refused():
    est = RunEstimate(64, 10**5, (Phase("candidates", "c", 1.0), Phase("statistics", "s", 9.0),
                                  Phase("certificate", "q", 90.0)))
    assert "--no-certify would finish in ~10 s" in est.describe()
    with pytest.raises(Exception, match="--no-certify"):
        RunEstimate(64, 10**5, est.phases, time_limit=50.0).check()
    with pytest.raises(Exception, match="--no-certify"):
        RunEstimate(1024, 10**5, (Phase("certificate", "q", 590_000.0),)).check()


def test_a_time_limit_the_certificate_breaks_names_no_certify_and_one_nothing_can_keep_a_smaller_size():
    phases = (Phase("candidates", "BCH", 0.05), Phase("statistics", "pairs", 0.1), Phase("certificate", "QP", 5.0))
    with pytest.raises(SpherecodesError, match="cannot hold this run.*--no-certify"):
        RunEstimate(64, 1000, phases, time_limit=1.0).check()
    with pytest.raises(SpherecodesError, match="cannot hold this run.*smaller size") as refused:
        RunEstimate(64, 1000, phases, time_limit=0.1).check()
    assert "--no-certify" not in str(refused.value)  # it would not be enough
    RunEstimate(64, 1000, phases, time_limit=6.0).check()


def test_generate_refuses_a_time_limit_it_cannot_keep_before_writing(run, tmp_path):
    # 1000 of the Paley ETF's 510 lines and their negatives (the structured code alone: auto would take the
    # bundled code, whose checked certificate comes with it) have no group of signed permutations to certify
    # them from one class: their certificate takes seconds; which fix is named depends on this machine's timings
    # (see the test above), the refusal does not.
    result = run("generate", "--d", 256, "--k", 1000, "--method", "structured", "--time-limit", 0.05)
    assert result.exit_code != 0 and "cannot hold this run" in result.output
    assert not (tmp_path / "spherecodes_d256_k1000.h5").exists()


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


def test_the_exact_code_is_built_once_for_the_estimate_and_the_run(run, monkeypatch):
    from spherecodes.structured import StructuredCode

    calls = []
    build = StructuredCode.points
    monkeypatch.setattr(StructuredCode, "points", lambda *a, **kw: calls.append(a) or build(*a, **kw))
    result = run("generate", "--d", 64, "--k", 1000, "--no-certify", "--out", "p.npy")
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    # The code stored is the one built for the estimate: the BCH code's exact max-cos 1 - 2*28/64.
    w = np.load("p.npy").astype(np.float64)
    gram = w @ w.T
    np.fill_diagonal(gram, -1)
    assert gram.max() == pytest.approx(1 / 8, abs=1e-6)


def test_the_certificate_estimate_stops_timing_at_its_cap(monkeypatch):
    from spherecodes.certificate import _estimate as certificate

    # A random code in R^16 needs the QP (no balanced nearest shell); with no time for it the timing is cut
    # and the estimate says that its time is a lower bound.
    w = np.random.default_rng(1).standard_normal((400, 16))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert "at least" not in certificate.certificate_estimate(w, device="cpu").what
    monkeypatch.setattr(certificate, "QP_TIMING_SECONDS", 0.0)
    cut = certificate.certificate_estimate(w, device="cpu")
    assert "QP" in cut.what and "at least this" in cut.what and cut.seconds > 0


def test_a_slow_shell_pass_is_timed_class_by_class_within_its_cap(monkeypatch):
    from spherecodes.certificate import _estimate as certificate

    # With no time for the shell timing, one class is timed and scaled: the 600-cell's nearest shells
    # settle every class (a symmetric code), so no QP either way.
    from spherecodes.constructions import construct

    monkeypatch.setattr(certificate, "SHELL_TIMING_SECONDS", 0.0)
    w = construct("600-cell", 4, 120)
    est = certificate.certificate_estimate(w, device="cpu")
    assert "no QP" in est.what and est.seconds > 0


def test_the_certificate_stops_at_the_time_limit_and_the_code_is_kept_uncertified(run, monkeypatch, tmp_path):
    from spherecodes.bank import read_code

    # The estimate would refuse a time limit this short: without that check the run goes on, and the
    # deadline passes before the certificate.
    monkeypatch.setattr(RunEstimate, "check", lambda self: None)
    result = run("generate", "--d", 64, "--k", 1000, "--time-limit", 0.01)
    assert result.exit_code == 0, result.output
    assert "--time-limit 0.01 s reached before the certificate: the code is stored uncertified" in result.output
    assert "spherecodes certify spherecodes_d64_k1000.h5 --write" in result.output
    code = read_code(tmp_path / "spherecodes_d64_k1000.h5")
    assert code.certificate is None and code.stats.max_cos == pytest.approx(1 / 8, abs=1e-12)


def test_a_certificate_past_its_deadline_stops_after_a_block():
    from spherecodes.certificate import CertificateOutOfTime
    from spherecodes.code import make_code
    from spherecodes.run import certify_within

    w = np.random.default_rng(2).standard_normal((300, 8))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    with pytest.raises(CertificateOutOfTime) as stop:
        certify_within(make_code(w, method="random"), RunContext(device="cpu", time_limit=1e-9))
    assert stop.value.progress.step < stop.value.progress.steps == 300


def test_the_memory_line_says_what_the_limit_bounds():
    # The process peak (interpreter, libraries) may exceed --max-memory; the limit bounds the phase's arrays.
    line = RunEstimate(8, 3000, (Phase("certificate", "QP", 60.0, 563 * 2**20, 512 * 2**20),)).describe()
    assert "process peak ~563.0 MiB (its arrays within the 512.0 MiB allowed)" in line
    assert "563.0 MiB of 512.0 MiB" not in line


def test_auto_plans_no_optimiser_beyond_the_measured_sizes_without_a_time_limit():
    # (128, 2^17): the whole shortened BCH [123,17] code; the table measures tammes up to K = 5000 in R^128,
    # which bounds it only from below at 2^17 points.
    plan = plan_auto(128, 2**17)
    assert not plan.runs_optimiser and plan.budget < 5
    assert "over the budget; --time-limit raises it" in plan.optimisers[0].skip
    assert plan_auto(128, 2**17, time_limit=3600).runs_optimiser
    # At a measured size where tammes beats every binary code it still runs (Table: (256, 1000), 0.0335).
    assert plan_auto(256, 1000, catalog=False).runs_optimiser


def test_auto_with_an_optimiser_builds_its_candidates_itself(run, tmp_path):
    # E8 in R^10 and one step of tammes from it: the estimate builds nothing (the optimiser's code is not known).
    result = run("generate", "--d", 10, "--k", 240, "--steps", 1, "--restarts", 1, "--time-limit", 60,
                 "--no-certify", "--out", "e8.npy")
    assert result.exit_code == 0, result.output
    assert "optimiser 1/" in result.output
    w = np.load(tmp_path / "e8.npy").astype(np.float64)
    gram = w @ w.T
    np.fill_diagonal(gram, -1)
    assert gram.max() <= 0.5 + 1e-6  # never above the E8 roots' 1/2 (Conway & Sloane, ch. 4)


def test_the_certificate_of_an_optimised_code_is_not_described_by_the_random_code_it_was_timed_on(run):
    # The estimate times the certificate on a random code (the optimiser's result is not known then); the
    # announce before the certificate must not repeat that timing's method as the code's.
    result = run("generate", "--d", 3, "--k", 12, "--method", "tammes", "--restarts", 2, "--steps", 50)
    assert result.exit_code == 0, result.output
    assert "timed on a random code of this size" in result.output  # the estimate says so
    assert "\ncertificate: K = 12 classes in d = 3\n" in result.output


def test_a_large_exact_code_is_announced_before_it_is_built(monkeypatch):
    import spherecodes.run as run_module

    # From LARGE_CODE = K·d the build takes seconds (1–2 s for the Kerdock subset at (1024, 10^5), on 2 busy cores).
    monkeypatch.setattr(run_module, "LARGE_CODE", 64 * 1000)
    said = []
    estimate_run(64, 1000, device="cpu", certify=False, announce=said.append)
    assert said[-1].startswith("estimating: building the exact codes first")
    monkeypatch.setattr(run_module, "LARGE_CODE", 64 * 1000 + 1)
    said.clear()
    estimate_run(64, 1000, device="cpu", certify=False, announce=said.append)
    assert not any("building the exact codes" in line for line in said)


@pytest.fixture
def plans(monkeypatch):
    """Every call of plan_auto, counted."""
    import spherecodes.run as run_module

    calls = []
    planned = run_module.plan_auto
    monkeypatch.setattr(run_module, "plan_auto", lambda *a, **kw: calls.append(a) or planned(*a, **kw))
    return calls


def test_auto_is_planned_once_per_run_from_python_and_from_the_command_line(plans, run):
    # The library: plan, estimate with a time limit (the optimisers' share re-budgets the plan), run.
    plan = plan_run(64, 1000, context=RunContext(device="cpu", time_limit=5))
    plan.estimate()
    assert plan.execute().code.settings["auto"]["winner_kind"] == "structured" and len(plans) == 1
    generate(64, 1000)
    assert len(plans) == 2
    # The command line: the estimate, the refusals, the run and the certificate share one plan.
    result = run("generate", "--d", 64, "--k", 1000, "--time-limit", 5, "--out", "b.h5")
    assert result.exit_code == 0, result.output
    assert len(plans) == 3


def test_the_exact_code_the_estimate_built_is_the_one_the_run_keeps(monkeypatch):
    import spherecodes.generation as generation

    builds = []
    build = generation.run_structured
    monkeypatch.setattr(generation, "run_structured", lambda *a: builds.append(a) or build(*a))
    plan = plan_run(24, 4096, "structured", rotation="none")
    plan.estimate(certify=False)
    code = plan.execute().code
    assert len(builds) == 1 and code.name == "structured-d24-k4096"
    assert code.stats.max_cos == pytest.approx(1 / 3, abs=1e-12)  # the extended Golay code: distance 8 of 24


def test_an_option_another_method_takes_is_refused_in_one_line(run):
    with pytest.raises(SpherecodesError, match="method 'softmax' takes options of type SoftmaxOptions, got Tammes"):
        plan_run(3, 7, "softmax", TammesOptions(neighbours=4))
    result = run("generate", "--d", 3, "--k", 7, "--method", "softmax", "--neighbours", 4)
    assert result.exit_code == 2 and "--neighbours applies to the tammes or auto method, not 'softmax'" in result.output


def test_a_run_cut_short_never_replaces_a_stored_code(tmp_path):
    from spherecodes.bank import read_code
    from spherecodes.run import RunResult, destination

    plan = plan_run(11, 12, context=RunContext(device="cpu"))
    finished = plan.execute(certify=True)
    assert plan.store(finished, destination(tmp_path / "b.h5", plan.name))
    with pytest.raises(SpherecodesError, match="already exists in .*; pass --overwrite"):
        destination(tmp_path / "b.h5", plan.name)
    again = destination(tmp_path / "b.h5", plan.name, overwrite=True)
    cut = RunResult(plan_run(11, 12, rotation="random", name=plan.name).execute().code, interrupted=True)
    assert not plan.store(cut, again)  # kept: the stored code is the finished run's, in canonical coordinates
    assert np.array_equal(read_code(tmp_path / "b.h5").prototypes, finished.code.prototypes)
    assert read_code(tmp_path / "b.h5").certificate.rho_certified
