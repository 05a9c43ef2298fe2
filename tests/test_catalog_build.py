"""Building a catalog on Dask distributed: planning, resuming, publishing, and the CLI."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.bank import read_code
from spherecodes.catalog import BankOptions, build_catalog, parse_grid, parse_methods, plan_build
from spherecodes.cli import main
from spherecodes.context import RunContext
from spherecodes.errors import SpherecodesError
from spherecodes.catalog import REGISTRY_FILE, open_catalog
from spherecodes.certificate import verify_witness

FAST = dict(context=RunContext(device="cpu"))
QUICK = BankOptions(steps=60, restarts=1)


def test_parse_grid_and_methods():
    assert parse_grid("d=3,4 k=7..8") == [(3, 7), (4, 7), (3, 8), (4, 8)]
    assert parse_grid("K=10 D=3") == [(3, 10)]
    for bad, message in [("d=3 k=1", "K must be"), ("d=3 k=9..7", "empty"), ("d=x k=3", "cannot read"),
                         ("d=3 d=4 k=5", "twice"), ("k=5", "both")]:
        with pytest.raises(SpherecodesError, match=message):
            parse_grid(bad)
    assert parse_methods("tammes, tammes") == ["tammes"]
    with pytest.raises(SpherecodesError, match="not one"):
        parse_methods("tammes,nope")
    with pytest.raises(SpherecodesError, match="'privileged' is not one"):
        parse_methods("privileged")


def test_a_grid_too_large_for_one_build_is_refused_at_once():
    # 10^10 pairs: refused from the counts, before any list of pairs exists.
    with pytest.raises(SpherecodesError, match=r"19,900 \(d, K\) pairs; one build takes at most 10,000"):
        parse_grid("d=1..100 k=2..200")
    with pytest.raises(SpherecodesError, match="too long: at most 10,000 values"):
        parse_grid("d=1..100000 k=1..100000")
    # Long lists stay linear to read; repeats keep their first place.
    assert parse_grid("d=3 k=9,5..9999,7")[:3] == [(3, 9), (3, 5), (3, 6)]
    assert len(parse_grid("d=3 k=9,5..9999,7")) == 9995


def test_plan_leaves_out_the_sizes_with_an_optimal_closed_form():
    tasks, closed = plan_build(parse_grid("d=2,3,5,16 k=10,100"), ["tammes", "maxsep"])
    assert [(t.d, t.k) for t in tasks[::2]] == [(3, 10), (3, 100), (5, 100), (16, 100)]
    assert [t.method for t in tasks[:2]] == ["tammes", "maxsep"]
    assert closed == [(2, 10, "polygon"), (5, 10, "cross-polytope"), (16, 10, "etf"), (2, 100, "polygon")]


@pytest.mark.slow
def test_build_on_a_local_cluster_resumes_and_publishes(tmp_path):
    seen = []
    report = build_catalog(parse_grid("d=3 k=5..8"), ["tammes"], tmp_path / "cat", QUICK, workers=1, processes=False,
                           context=RunContext(device="cpu",
                                              progress=lambda done, total, s: seen.append((done, total, s["status"]))))
    assert sorted(s["name"] for s in report.built) == ["tammes-d3-k7", "tammes-d3-k8"]
    assert report.closed_forms == [(3, 5, "cross-polytope"), (3, 6, "cross-polytope")]
    assert sorted(seen) == [(1, 2, "built"), (2, 2, "built")]
    files = sorted(p.name for p in (tmp_path / "cat").iterdir())
    assert files == [REGISTRY_FILE, "tammes-d3-k7.h5", "tammes-d3-k8.h5"]  # no temporary files left
    cat = open_catalog(str(tmp_path / "cat"))
    assert [e.name for e in cat.entries] == ["tammes-d3-k7", "tammes-d3-k8"]
    for entry in cat.entries:
        code = read_code(tmp_path / "cat" / entry.file)
        assert code.certificate is not None and code.settings["steps"] == 60
        verify_witness(code.prototypes, code.certificate)
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "cat").glob("*.h5")}
    # A damaged bank (an interrupted copy, say) is rebuilt; finished ones are skipped.
    (tmp_path / "cat" / "tammes-d3-k8.h5").write_bytes(b"half a bank")
    again = build_catalog(parse_grid("d=3 k=5..8"), ["tammes"], tmp_path / "cat", QUICK, workers=1, processes=False,
                          **FAST)
    assert [s["name"] for s in again.skipped] == ["tammes-d3-k7"]
    assert [s["name"] for s in again.built] == ["tammes-d3-k8"]
    assert (tmp_path / "cat" / "tammes-d3-k7.h5").stat().st_mtime_ns == stamps["tammes-d3-k7.h5"]
    assert len(again.catalog.entries) == 2


def test_failed_tasks_are_reported_after_the_others_finish(tmp_path, monkeypatch):
    from spherecodes.catalog import build as cb

    real = cb.build_bank

    def flaky(d, k, method, out, options, **kwargs):
        if k == 8:
            raise SpherecodesError("simulated failure")
        return real(d, k, method, out, options, **kwargs)

    monkeypatch.setattr(cb, "build_bank", flaky)
    with pytest.raises(SpherecodesError, match=r"1 of 2 banks failed: tammes-d3-k8: simulated failure.*kept"):
        build_catalog(parse_grid("d=3 k=7,8"), ["tammes"], tmp_path, QUICK, workers=1, processes=False, **FAST)
    assert [e.name for e in open_catalog(str(tmp_path)).entries] == ["tammes-d3-k7"]


def test_a_size_that_cannot_fit_fails_with_its_one_line_and_no_worker_traceback(tmp_path, capfd):
    with pytest.raises(SpherecodesError, match=r"1 of 1 banks failed: tammes-d3-k100000000000000: .*needs about"):
        build_catalog(parse_grid("d=3 k=100000000000000"), ["tammes"], tmp_path, QUICK, workers=1, **FAST)
    logged = capfd.readouterr().err
    assert "Traceback" not in logged and "Compute Failed" not in logged


def test_cli_build_on_an_existing_scheduler(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=logging.ERROR) as cluster:
        args = ["catalog", "build", "--grid", "d=3 k=6,9", "--methods", "tammes", "--out", str(tmp_path / "c"),
                "--scheduler", cluster.scheduler_address, "--steps", "60", "--restarts", "1", "--device", "cpu"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "[1/1] tammes-d3-k9 built" in result.output
        assert "d=3 K=6 (cross-polytope)" in result.output
        assert "tammes-d3-k9" in result.output and "registry.json: 1 codes" in result.output
        again = CliRunner().invoke(main, args)
        assert "[1/1] tammes-d3-k9 finished before, skipped" in again.output
        assert "built 0, finished before 1" in again.output
    registry = json.loads((tmp_path / "c" / REGISTRY_FILE).read_text())
    assert [e["name"] for e in registry["entries"]] == ["tammes-d3-k9"]


def test_cli_build_bad_input(tmp_path, monkeypatch):
    from spherecodes import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    runner = CliRunner()
    result = runner.invoke(main, ["catalog", "build", "--grid", "d=3", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "needs both" in result.output
    result = runner.invoke(main, ["catalog", "build", "--grid", "d=3 k=9", "--out", str(tmp_path), "--workers", "1",
                                  "--scheduler", "tcp://127.0.0.1:1"])
    assert result.exit_code == 2
    result = runner.invoke(main, ["catalog", "build", "--grid", "d=3 k=9", "--out", str(tmp_path),
                                  "--scheduler", "tcp://127.0.0.1:1"])
    assert result.exit_code == 1 and "cannot connect to the Dask scheduler" in result.output
    assert "Traceback" not in result.output


def test_effort_reaches_the_tammes_tasks_only(tmp_path, monkeypatch):
    from spherecodes.catalog import build as cb

    real = cb.generate
    seen = {}

    def recording(d, k, method, options, **kwargs):
        seen[method] = getattr(options, "effort", None)
        return real(d, k, method, options, **kwargs)

    monkeypatch.setattr(cb, "generate", recording)
    report = build_catalog(parse_grid("d=3 k=7"), ["tammes", "softmax"], tmp_path / "cat",
                           BankOptions(steps=60, restarts=1, effort="low"), workers=1, processes=False, **FAST)
    assert sorted(s["name"] for s in report.built) == ["softmax-d3-k7", "tammes-d3-k7"]
    assert seen == {"tammes": "low", "softmax": None}
    assert read_code(tmp_path / "cat" / "tammes-d3-k7.h5").settings["effort"] == "low"


def test_effort_without_a_method_that_takes_it_is_refused_before_any_work(tmp_path):
    from spherecodes.cli.main import EFFORT
    from spherecodes.solvers import EFFORTS

    assert tuple(EFFORT.choices) == tuple(EFFORTS)  # the CLI's copy of the names, kept torch-free
    with pytest.raises(SpherecodesError, match=r"effort 'high' applies to the tammes method only; none of softmax"):
        build_catalog(parse_grid("d=3 k=7"), ["softmax"], tmp_path / "cat", BankOptions(effort="high"), **FAST)
    with pytest.raises(SpherecodesError, match=r"effort must be one of low, default, high, record, got 'max'"):
        build_catalog(parse_grid("d=3 k=7"), ["tammes"], tmp_path / "cat", BankOptions(effort="max"), **FAST)
    result = CliRunner().invoke(main, ["catalog", "build", "--grid", "d=3 k=7", "--methods", "softmax,auto",
                                       "--effort", "high", "--out", str(tmp_path / "cli")])
    assert result.exit_code == 1 and "none of softmax, auto takes it" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "cat").exists() and not (tmp_path / "cli").exists()


def test_improve_searches_again_only_the_banks_short_of_their_published_value(tmp_path):
    from spherecodes.records import published_record

    folder = tmp_path / "cat"
    weak = BankOptions(steps=5, restarts=1)  # five steps from one random start: far from the record of (3, 13)
    build_catalog(parse_grid("d=3 k=13"), ["tammes"], folder, weak, workers=1, processes=False, **FAST)
    bank = folder / "tammes-d3-k13.h5"
    first = read_code(bank)
    record = published_record(3, 13).max_cos
    assert first.stats.max_cos > record + 1e-3
    # Without --improve a finished bank is skipped, whatever its gap.
    plain = build_catalog(parse_grid("d=3 k=13"), ["tammes"], folder, BankOptions(), workers=1, processes=False,
                          **FAST)
    assert [s["status"] for s in plain.skipped] == ["skipped"] and read_code(bank).sha256 == first.sha256
    # The same weak settings again find the same code: the bank is kept as it is.
    kept = build_catalog(parse_grid("d=3 k=13"), ["tammes"], folder, BankOptions(steps=5, restarts=1, improve=True),
                         workers=1, processes=False, **FAST)
    assert [s["status"] for s in kept.skipped] == ["kept"] and read_code(bank).sha256 == first.sha256
    assert kept.skipped[0]["searched_max_cos"] >= first.stats.max_cos > record
    again = CliRunner().invoke(main, ["catalog", "build", "--grid", "d=3 k=13", "--methods", "tammes", "--steps", "5",
                                      "--restarts", "1", "--improve", "--workers", "1", "--out", str(folder)])
    assert again.exit_code == 0, again.output
    assert "tammes-d3-k13 kept in" in again.output and "the search's best was" in again.output
    # A default run reaches the published value (one of the sizes it is measured to reach) and replaces the bank.
    better = build_catalog(parse_grid("d=3 k=13"), ["tammes"], folder, BankOptions(improve=True), workers=1,
                           processes=False, **FAST)
    assert [s["status"] for s in better.built] == ["improved"]
    improved = read_code(bank)
    gram = improved.prototypes @ improved.prototypes.T
    assert float((gram - 3 * np.eye(13)).max()) <= record + 1e-9
    verify_witness(improved.prototypes, improved.certificate)
    # Now at the published value, it is done: --improve skips it.
    done = build_catalog(parse_grid("d=3 k=13"), ["tammes"], folder, BankOptions(improve=True), workers=1,
                         processes=False, **FAST)
    assert [s["status"] for s in done.skipped] == ["skipped"] and read_code(bank).sha256 == improved.sha256


def test_an_improving_record_search_resumes_from_the_bank():
    start = np.eye(3)
    assert BankOptions(effort="record", improve=True).method_options("tammes", start).init is start
    assert BankOptions(effort="high", improve=True).method_options("tammes", start).init is None
    result = CliRunner().invoke(main, ["catalog", "build", "--help"])
    assert "--improve" in result.output
