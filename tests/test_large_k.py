"""Large K: neighbour lists against the dense path, memory estimates, refusals, blocked statistics.

The neighbour-list path must give the dense path's codes where both run, its
memory estimate must bound what it really uses, impossible sizes must be
refused before any work, and every blocked computation (statistics, max-cos,
top-m search, certificate) must equal its direct form.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes import solvers
from spherecodes.certificate import _blocks as cert_blocks
from spherecodes.solvers import _neighbours as neighbours
from spherecodes.bank import read_code
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli.main import main
from spherecodes.errors import SpherecodesError
from spherecodes.memory import parse_size
from spherecodes.rows import equal_rows
from spherecodes.solvers._neighbours import neighbour_plan
from spherecodes.sphere import random_start, top_matches
from spherecodes.solvers import tammes, tammes_estimate
from spherecodes.stats import _torch_tiles, max_cos, random_code_max_cos, separation_statistics

from conftest import dense_offdiagonal_cos, random_code

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ICOSAHEDRON = 1 / math.sqrt(5)


# --------------------------------------------------------------------------- neighbour lists against the dense path


def test_all_pairs_as_lists_follow_the_dense_trajectory():
    # With m = K - 1 the lists hold every pair, so the objective is the dense
    # one; the two paths compute it differently (gathered rows and per-row
    # shifts against K x K matrices) and must agree to rounding.  (Late in
    # the annealing the dynamics amplify rounding tenfold every ~50 steps, so
    # the comparison stops at 150 of them.)
    d, k = 8, 40
    common = dict(seed=3, steps=150, restarts=1, device="cpu", closed_form=False, polish=False, dtype="float64",
                  log_every=10)
    dense = tammes(d, k, neighbours=0, **common)
    lists = tammes(d, k, neighbours=k - 1, refresh=7, **common)
    assert dense.settings["neighbours"] == 0 and lists.settings["neighbours"] == k - 1
    np.testing.assert_allclose(lists.prototypes, dense.prototypes, rtol=0, atol=1e-11)
    assert abs(lists.max_cos - dense.max_cos) < 1e-12
    np.testing.assert_allclose(lists.history[:, 1:], dense.history[:, 1:], rtol=0, atol=1e-11)
    # Lists holding every pair never need a refresh after the first (and the final measurement).
    assert lists.refreshes == 2


@pytest.mark.parametrize("k,m", [(6, 2), (8, 3), (12, 4)])
@pytest.mark.slow
def test_tiny_lists_reach_the_dense_optimum(k, m):
    # Lists of 2-4 prototypes out of K - 1, refreshed as the points move; both
    # paths are polished to convergence and must meet at the same max-cos
    # (the proven optimum on the 2-sphere: octahedron, square antiprism,
    # icosahedron).
    common = dict(seed=0, restarts=4, steps=1500, device="cpu", closed_form=False)
    dense = tammes(3, k, neighbours=0, **common)
    lists = tammes(3, k, neighbours=m, refresh=5, **common)
    assert lists.settings["neighbours"] == m and lists.refreshes > 4 * 1500 / 5 / 2
    assert dense.stop_reason == lists.stop_reason == "converged"
    assert abs(lists.max_cos - dense.max_cos) < 1e-6
    assert abs(lists.max_cos - {6: 0.0, 8: 1 / (1 + 2**1.5), 12: ICOSAHEDRON}[k]) < 1e-6


@pytest.mark.slow
def test_neighbour_path_is_deterministic():
    run = dict(steps=60, device="cpu", neighbours=12, refresh=5)
    first = tammes(12, 3000, seed=1, **run)
    again = tammes(12, 3000, seed=1, **run)
    other = tammes(12, 3000, seed=2, **run)
    assert np.array_equal(first.prototypes, again.prototypes)
    assert np.array_equal(first.history, again.history)
    assert not np.array_equal(first.prototypes, other.prototypes)


@pytest.mark.slow
def test_large_k_chooses_neighbour_lists_and_beats_random_vectors():
    d, k = 8, 12_000
    res = tammes(d, k, seed=0, steps=60, device="cpu")
    cfg = solvers.tammes_defaults(d, k)
    assert res.settings["neighbours"] == cfg["neighbours"] == 32 and res.settings["refresh"] == cfg["refresh"]
    assert res.refreshes >= 2
    assert res.max_cos < random_code_max_cos(d, k, seed=0) - 0.05
    assert res.max_cos == pytest.approx(max_cos(res.prototypes), abs=1e-15)


def test_large_dense_codes_report_progress_every_few_steps():
    from spherecodes.solvers._options import LOG_WORK

    # A dense step of (64, 10^4) passes 6.4e9 pairs x coordinates (0.4 s on a CPU core): waiting 50 steps for
    # the first report would leave a user 20 s without progress, so reports come every 3 steps there.
    assert solvers.tammes_defaults(3, 100)["log_every"] == solvers.tammes_defaults(64, 1000)["log_every"] == 50
    big = solvers.tammes_defaults(64, 10_000)
    assert big["neighbours"] == 0 and big["log_every"] == int(LOG_WORK // (64 * 10_000**2)) == 3
    assert solvers.tammes_defaults(128, 10_000)["log_every"] == 1
    # The neighbour-list path's step is K m d, not K^2 d: it keeps 50.
    assert solvers.tammes_defaults(64, 100_000)["log_every"] == 50
    # One row of history per report, and the last step's.
    res = tammes(64, 10_000, steps=7, device="cpu", polish=False)
    assert [int(step) for step in res.history[:, 0]] == [3, 6, 7]


def test_memory_limit_switches_to_neighbour_lists():
    # (16, 4000) is dense by size; a limit below its two K x K matrices
    # (256 MiB in float64) sends it to the neighbour lists.
    assert solvers.tammes_defaults(16, 4000)["neighbours"] == 0
    assert solvers.tammes_defaults(16, 4000, max_memory=64 * 2**20)["neighbours"] == 32
    res = tammes(16, 4000, steps=20, device="cpu", max_memory=64 * 2**20)
    assert res.settings["neighbours"] == 32 and res.settings["max_memory"] == 64 * 2**20


@pytest.mark.parametrize("where", ["annealing", "lists"])
@pytest.mark.slow
def test_ctrl_c_keeps_the_best_code_so_far(where):
    reports = []

    def interrupt(report):
        reports.append(report)
        if len(reports) == 3:
            raise KeyboardInterrupt

    options = {"neighbours": 8} if where == "lists" else {}
    res = tammes(6, 300, seed=0, steps=500, restarts=1, device="cpu", log_every=10, progress=interrupt,
                 threads=2, **options)
    assert torch.get_num_threads() == 1  # restored
    assert res.stop_reason == "interrupted" and res.steps == 30
    assert res.max_cos < random_code_max_cos(6, 300)
    assert res.max_cos == pytest.approx(max_cos(res.prototypes), abs=1e-15)


@pytest.mark.slow
def test_time_limit_on_neighbour_lists():
    res = tammes(8, 12_000, steps=100_000, time_limit=2.0, device="cpu")
    assert res.stop_reason == "time_limit" and 0 < res.steps < 100_000


# --------------------------------------------------------------------------- the pieces of the neighbour lists


@pytest.mark.parametrize("width, m", [(5000, 4), (5000, 64), (3001, 300), (40, 9)])
def test_top_m_through_group_maxima_equals_a_full_sort(width, m):
    # Wide rows take the group-maxima path (narrow ones plain topk); rounded
    # scores make many exact ties, including at the m-th value.
    from spherecodes.sphere import _row_topk

    generator = torch.Generator().manual_seed(width + m)
    for scores in (torch.randn(7, width, generator=generator, dtype=torch.float64),
                   (torch.randn(7, width, generator=generator, dtype=torch.float64) * 4).round()):
        values, indices = _row_topk(scores, m)
        expected = torch.sort(scores, dim=1, descending=True).values[:, :m]
        assert torch.equal(values, expected)
        assert torch.equal(scores.gather(1, indices), values)
        assert all(len(set(row.tolist())) == m for row in indices)  # m distinct columns


def test_streamed_top_matches_equal_a_full_sort():
    w = torch.from_numpy(random_code(500, 6, seed=2))
    queries = w[100:140]
    exclude = torch.stack([torch.arange(100, 140), torch.arange(40)], dim=1)
    values, indices = top_matches(queries, w, 9, exclude=exclude, tile=37)
    scores = queries @ w.T
    scores[torch.arange(40)[:, None], exclude] = -math.inf
    expected = torch.sort(scores, dim=1, descending=True)
    # (Products of differently shaped blocks may differ in the last bit.)
    np.testing.assert_allclose(values.numpy(), expected.values[:, :9].numpy(), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(indices.numpy(), expected.indices[:, :9].numpy())  # no near-ties here


def test_symmetric_lists_are_the_union_of_both_directions():
    rng = np.random.default_rng(0)
    k, m = 30, 4
    forward = torch.from_numpy(np.stack([rng.choice(np.delete(np.arange(k), i), m, replace=False) for i in range(k)]))
    offsets, flat, degree = neighbours._symmetric(forward)
    for i in range(k):
        expected = set(forward[i].tolist()) | {j for j in range(k) if i in forward[j].tolist()}
        row = flat[offsets[i] : offsets[i + 1]].tolist()
        assert row == sorted(expected) and degree[i] == len(expected)
    lists = neighbours._chunks(offsets, flat, degree, 3, 3 * 9, torch.zeros(k))
    seen = {}
    for rows, index, valid in zip(lists.rows, lists.index, lists.valid):
        for r, idx, ok in zip(rows.tolist(), index.tolist(), valid.tolist()):
            seen[r] = sorted(j for j, keep in zip(idx, ok) if keep)
    assert seen == {i: flat[offsets[i] : offsets[i + 1]].tolist() for i in range(k)}


# --------------------------------------------------------------------------- memory: estimates and refusals

MEASURE_PEAK = textwrap.dedent(
    """
    import json, sys, torch
    torch.set_num_threads(1)
    from spherecodes.memory import resident_bytes
    from spherecodes.solvers import tammes, tammes_estimate

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    d, k, m = 32, 10_000, 32
    # The estimate is of the process's peak; what the run adds to the
    # resident size is compared (torch's CUDA build alone is ~0.5 GB resident).
    estimate = tammes_estimate(d, k, steps=12, device="cpu", neighbours=m, refresh=5).nbytes - resident_bytes()
    tammes(4, 3000, steps=2, device="cpu", neighbours=4)  # first use of every code path
    open("/proc/self/clear_refs", "w").write("5")  # reset the high-water mark
    base = status("VmRSS:")
    tammes(d, k, steps=12, device="cpu", neighbours=m, refresh=5)
    print(json.dumps({"estimate": estimate, "peak": status("VmHWM:") - base}))
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc to measure peak memory")
@pytest.mark.slow
def test_memory_estimate_bounds_the_measured_peak():
    out = subprocess.run([sys.executable, "-c", MEASURE_PEAK], capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    # The estimate is an upper bound, and not a wild one.
    assert figures["peak"] <= 1.1 * figures["estimate"], figures
    assert figures["estimate"] <= 2.5 * figures["peak"] + 64 * 2**20, figures


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_memory_estimate_bounds_the_gpu_peak():
    d, k, m = 64, 50_000, 32
    estimate = tammes_estimate(d, k, steps=12, device="cuda", neighbours=m, refresh=5).nbytes
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    res = tammes(d, k, steps=12, device="cuda", neighbours=m, refresh=5)
    peak = torch.cuda.max_memory_allocated() - base
    assert peak <= 1.1 * estimate and estimate <= 2.5 * peak + 64 * 2**20
    again = tammes(d, k, steps=12, device="cuda", neighbours=m, refresh=5)
    assert np.array_equal(res.prototypes, again.prototypes)  # deterministic on the GPU too


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_neighbour_lists_on_the_gpu_follow_the_cpu():
    common = dict(seed=3, steps=150, restarts=1, closed_form=False, polish=False, dtype="float64", neighbours=39,
                  refresh=7)
    cpu = tammes(8, 40, device="cpu", **common)
    gpu = tammes(8, 40, device="cuda", **common)
    np.testing.assert_allclose(gpu.prototypes, cpu.prototypes, rtol=0, atol=1e-9)
    stats = separation_statistics(gpu.prototypes, device="cuda")
    assert stats.max_cos == pytest.approx(separation_statistics(gpu.prototypes).max_cos, abs=1e-15)


def test_impossible_size_is_refused_before_any_work():
    with pytest.raises(SpherecodesError, match=r"needs about .*GiB on cpu, but max_memory \(--max-memory\) allows "
                                               r"4.0 GiB; raise it or lower neighbours"):
        tammes_estimate(512, 1_000_000, device="cpu", max_memory=4 * 2**30)
    with pytest.raises(SpherecodesError, match="can safely be allocated there"):
        tammes(512, 10**9, steps=1, device="cpu")
    with pytest.raises(SpherecodesError, match="use neighbour lists"):
        tammes(64, 5000, neighbours=0, device="cpu", max_memory=2**20)


def test_cli_refuses_an_impossible_size_with_one_line(tmp_path):
    out = tmp_path / "bank.h5"
    result = CliRunner().invoke(
        main, ["generate", "--d", "512", "--k", "1000000", "--method", "tammes", "--max-memory", "4GiB", "--device", "cpu",
               "--out", str(out)]
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the neighbour-list working set (K=1000000, d=512")
    assert "raise it or lower neighbours (--neighbours)" in lines[0]
    assert not out.exists()


@pytest.mark.slow
def test_cli_prints_the_estimate_and_keeps_json_clean(tmp_path):
    runner = CliRunner()  # click >= 8.2 keeps stderr apart from stdout
    args = ["generate", "--d", "8", "--k", "3000", "--neighbours", "16", "--steps", "20", "--device", "cpu",
            "--max-memory", "512MiB"]
    text = runner.invoke(main, args + ["--out", str(tmp_path / "a.h5")])
    assert text.exit_code == 0, text.output
    assert "candidates   tammes with neighbour lists (m = 16, refresh every 10 steps), 1 x 20 steps" in text.stderr
    assert "(its arrays within the 512.0 MiB allowed)" in text.stderr
    assert "certificate  K = 3000 classes in d = 8" in text.stderr
    as_json = runner.invoke(main, args + ["--out", str(tmp_path / "b.h5"), "--json"])
    assert as_json.exit_code == 0 and as_json.stderr == ""  # not a terminal: nothing but the report
    report = json.loads(as_json.stdout)
    assert report["settings"]["neighbours"] == 16 and report["settings"]["max_memory"] == 512 * 2**20
    assert report["rho"]["certified"]


def test_cli_ctrl_c_writes_the_best_code_so_far(tmp_path, monkeypatch):
    calls = []

    def interrupt_on_third(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(solvers.Clock, "report", interrupt_on_third)
    out = tmp_path / "bank.h5"
    result = CliRunner().invoke(main, ["generate", "--d", "8", "--k", "3000", "--neighbours", "16", "--steps", "500",
                                       "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 130
    assert "Interrupted; kept the best code so far as tammes-d8-k3000-s0" in result.output
    code = read_code(out)
    assert code.settings["stop_reason"] == "interrupted" and code.certificate is None
    assert code.stats.max_cos < random_code_max_cos(8, 3000)


def test_memory_sizes_parse():
    assert parse_size("4GiB") == 4 * 2**30
    assert parse_size("1.5 GB") == 1_500_000_000
    assert parse_size("512mib") == 512 * 2**20
    with pytest.raises(SpherecodesError, match="memory size"):
        parse_size("lots")
    result = CliRunner().invoke(main, ["certify", "x.npy", "--max-memory", "0"])
    assert result.exit_code == 2 and "at least 1 byte" in result.output


def test_neighbour_plan_shrinks_its_blocks_to_the_limit():
    roomy = neighbour_plan(64, 100_000, 64, 4)
    tight = neighbour_plan(64, 100_000, 64, 4, limit=900 * 2**20)
    assert tight.refresh_rows < roomy.refresh_rows and tight.nbytes <= 900 * 2**20 < roomy.nbytes


# --------------------------------------------------------------------------- blocked statistics and certificate


@pytest.mark.parametrize("k,d,tile", [(2, 3, 1), (301, 16, 64), (257, 5, 2048)])
def test_device_tiles_equal_the_dense_statistics(k, d, tile):
    # The torch path used on a GPU, run here on the CPU.
    w = random_code(k, d, seed=k)
    g = w @ w.T
    np.fill_diagonal(g, -np.inf)
    off = dense_offdiagonal_cos(w)
    nearest_cos, nearest_index, min_cos = _torch_tiles(w, tile, torch.device("cpu"), nearest=True)
    np.testing.assert_allclose(nearest_cos, g.max(axis=1), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(nearest_index, g.argmax(axis=1))
    assert min_cos == pytest.approx(off.min(), abs=1e-15)
    assert _torch_tiles(w, tile, torch.device("cpu"), nearest=False) == pytest.approx(off.max(), abs=1e-15)
    assert max_cos(w, tile=tile) == pytest.approx(off.max(), abs=1e-15)


def test_statistics_fit_a_small_memory_limit():
    w = random_code(3000, 8, seed=1)
    roomy = separation_statistics(w)
    tight = separation_statistics(w, max_memory=4 * 2**20)  # tiles of 256 instead of 2048
    assert tight.max_cos == roomy.max_cos and np.array_equal(tight.nearest_index, roomy.nearest_index)
    with pytest.raises(SpherecodesError, match="max_memory"):
        separation_statistics(w, max_memory=2**16)


def test_random_baseline_is_the_first_start_measured_exactly():
    start = random_start(5, 0, 400, 7)
    assert random_code_max_cos(7, 400, seed=5) == pytest.approx(dense_offdiagonal_cos(start).max(), abs=1e-15)


def test_certificate_streams_over_prototype_tiles(monkeypatch):
    w = random_code(700, 5, seed=4)
    whole = one_vs_rest_distances(w, device="cpu")
    monkeypatch.setattr(cert_blocks, "COLUMN_TILE", {"cpu": 64, "cuda": 64})
    reports = []
    tiled = one_vs_rest_distances(w, device="cpu", max_memory=64 * 2**20, progress=reports.append)
    assert tiled.certified
    np.testing.assert_allclose(tiled.lo, whole.lo, atol=1e-13)
    np.testing.assert_allclose(tiled.hi, whole.hi, atol=1e-13)
    assert reports[-1].step == reports[-1].steps == 700


def test_equal_rows_are_found_by_hashing():
    w = random_code(50, 4, seed=3)
    w[7] = w[2]
    w[30] = w[2]
    w[11] = w[40]
    w[41, 0] = 0.0
    w[42] = w[41]
    w[42, 0] = -0.0  # equal to w[41]: -0.0 == 0.0
    groups, twin = equal_rows(w)
    assert groups == [(2, 7, 30), (11, 40), (41, 42)]
    assert twin[2] in (7, 30) and twin[11] == 40 and twin[0] == -1


def test_progress_bar_shows_rate_and_time_left(monkeypatch, capsys):
    from spherecodes.certificate import CertificateProgress
    from spherecodes.cli._common import ProgressBar
    from spherecodes.solvers import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with ProgressBar(enabled=True) as bar:
        bar(Progress(0, 1, 100, 1000, 0.5, 10.0))
        bar.last_draw = 0.0
        bar(Progress(0, 1, 300, 1000, 0.4, 20.0))  # 200 steps in 10 s: 20 steps/s, 700 left: 35 s
        bar.last_draw = 0.0
        bar(CertificateProgress(250, 1000, 5.0))
        bar.last_draw = 0.0
        bar(CertificateProgress(500, 1000, 10.0))  # a new stage: 50 classes/s, 10 s left
    err = capsys.readouterr().err
    assert "start 1/1  max-cos 0.400000  20 steps/s" in err and "35 s left" in err
    assert "classes 500/1000  50 classes/s" in err and "10 s left" in err
