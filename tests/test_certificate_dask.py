"""Certificates on a Dask cluster: the QP's blocks as tasks give the certificate of one process."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.cli import main
from spherecodes.sphere import random_start


@pytest.mark.slow
def test_certify_on_a_local_cluster_of_two_workers_gives_the_same_intervals(tmp_path):
    # A random code: no class has a balanced nearest shell, so every class goes to the QP, here in several
    # blocks (the memory limit makes them small), which the cluster's two worker processes share.
    path = tmp_path / "random.npy"
    np.save(path, random_start(0, 0, 400, 24))
    runner = CliRunner()
    common = ["certify", str(path), "--json", "--quiet", "--max-memory", "48MiB"]
    alone = runner.invoke(main, common)
    spread = runner.invoke(main, [*common, "--workers", "2"])
    assert alone.exit_code == 0 and spread.exit_code == 0, spread.output
    one, two = json.loads(alone.output), json.loads(spread.output)
    assert two["rho"] == one["rho"] and one["rho"]["certified"]
    assert two["one_vs_rest"]["lo"] == one["one_vs_rest"]["lo"] and two["one_vs_rest"]["hi"] == one["one_vs_rest"]["hi"]
    assert two["one_vs_rest"]["device"] == "cpu (Dask cluster)"
    # rho lies between the two bounds every code obeys: 1 - max-cos below, sqrt(2 - 2 max-cos) above.
    assert 1 - one["max_cos"] - 1e-12 <= one["rho"]["lower"] <= np.sqrt(2 - 2 * one["max_cos"])


def test_cluster_options_are_checked_before_any_work(tmp_path):
    path = tmp_path / "random.npy"
    np.save(path, random_start(0, 0, 20, 4))
    runner = CliRunner()
    both = runner.invoke(main, ["certify", str(path), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert both.exit_code == 2 and "not both" in both.output
    lines = runner.invoke(main, ["certify", str(path), "--lines", "--workers", "2"])
    assert lines.exit_code == 1 and "--lines computes no certificate" in lines.output
    cuda = runner.invoke(main, ["certify", str(path), "--workers", "1", "--device", "cuda"])
    assert cuda.exit_code == 1 and "workers' CPUs" in cuda.output
