"""Classes that arrive later: extend a code keeping its rows, and reserve rows ahead."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes import extend, generate, read_code, write_code
from spherecodes.cli.main import main
from spherecodes.code import make_code
from spherecodes.errors import SpherecodesError
from spherecodes.extension import farthest_points, new_old_max_cos, next_points
from spherecodes.options import TammesOptions
from spherecodes.nn import HPNLoss, PrototypeClassifier
from spherecodes.solvers import tammes
from spherecodes.stats import max_cos

from conftest import random_code


def test_the_bch_prefix_extends_to_the_whole_code_at_one_eighth():
    old = generate(d=64, k=1000)
    bigger = extend(old, 24)
    assert bigger.k == 1024 and np.array_equal(bigger.prototypes[:1000], old.prototypes)
    # The whole extended BCH [64,10,28] code: 1024 distinct ±1/8 sign vectors, every pair at Hamming distance
    # >= 28, so max-cos = 1 − 2·28/64 = 1/8 exactly (checked from the signs, not from the code's statistics).
    signs = np.sign(bigger.prototypes).astype(int)
    assert np.all(np.abs(bigger.prototypes) == 0.125)
    distances = (64 - signs @ signs.T) // 2
    np.fill_diagonal(distances, 64)
    assert distances.min() == 28 and len(np.unique(signs, axis=0)) == 1024
    assert bigger.max_cos == 0.125 and bigger.settings["placed_by"] == "next points of extended BCH [64,10,28]"
    assert bigger.settings["parent_sha256"] == old.sha256 and bigger.method == "extend"


def test_a_cross_polytope_subset_extends_by_the_remaining_axes():
    old = generate(d=8, k=10)
    assert old.method == "cross-polytope"
    bigger = extend(old, 6)
    assert np.array_equal(bigger.prototypes[:10], old.prototypes) and bigger.max_cos == 0.0
    assert sorted(map(tuple, np.abs(bigger.prototypes[10:]).tolist())) == sorted(map(tuple, np.eye(8)[2:].tolist()))
    with pytest.raises(SpherecodesError, match="not the first 10 points of a construction with 17"):
        extend(old, 7, method="next-points")


DEVICES = ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")])]


@pytest.mark.parametrize("device", DEVICES)
def test_frozen_rows_of_the_optimiser_stay_bit_for_bit(device, one_torch_thread):
    old = tammes(4, 12, seed=1, device="cpu").prototypes
    init = np.vstack([old, farthest_points(old, 3, seed=0)])
    frozen = np.arange(15) < 12
    result = tammes(4, 15, init=init, frozen=frozen, seed=0, device=device, restarts=4, steps=300)
    assert np.array_equal(result.prototypes[:12], old)
    assert result.max_cos == max_cos(result.prototypes) <= max_cos(init)
    assert not np.array_equal(result.prototypes[12:], init[12:])  # the free rows moved
    with pytest.raises(SpherecodesError, match="give init"):
        tammes(4, 15, frozen=frozen, device="cpu")
    with pytest.raises(SpherecodesError, match="every row is frozen"):
        tammes(4, 15, init=init, frozen=np.ones(15, bool), device="cpu")


def test_an_optimised_code_extends_with_its_rows_and_labels_kept(one_torch_thread):
    old = make_code(random_code(20, 5, seed=4), method="external", labels=[f"c{i}" for i in range(20)])
    bigger = extend(old, 4, labels=["new0", "new1", "new2", "new3"], options=TammesOptions(restarts=4, steps=400))
    assert np.array_equal(bigger.prototypes[:20], old.prototypes)
    assert bigger.labels == old.labels + ["new0", "new1", "new2", "new3"]
    new = bigger.prototypes[20:]
    assert bigger.settings["new_old_max_cos"] == pytest.approx((new @ old.prototypes.T).max(), abs=0)
    assert new_old_max_cos(bigger.prototypes, 20) == bigger.settings["new_old_max_cos"]
    # Better than the farthest-point start it was refined from.
    start = np.vstack([old.prototypes, farthest_points(old.prototypes, 4)])
    assert bigger.max_cos <= max_cos(start)
    unlabelled = extend(old, 2, method="tammes", options=TammesOptions(restarts=2, steps=100))
    assert unlabelled.labels[20:] == ["", ""]
    with pytest.raises(SpherecodesError, match="already name old classes"):
        extend(old, 1, labels=["c3"])
    with pytest.raises(SpherecodesError, match="integer >= 1"):
        extend(old, 0)
    with pytest.raises(SpherecodesError, match="init does not apply"):
        extend(old, 2, options=TammesOptions(init=old.prototypes))


def test_next_points_are_refused_when_the_rows_are_not_the_construction():
    code = generate(d=64, k=1000)
    moved = make_code(code.prototypes[::-1].copy(), method="auto", settings=code.settings)
    assert next_points(moved, 24) is None
    assert next_points(code, 25) is None  # the BCH code has 1024 words


def test_a_trained_head_keeps_its_predictions_for_old_classes_after_the_extension(tmp_bank, one_torch_thread):
    torch.manual_seed(0)
    old = generate(d=6, k=8, method="tammes", seed=0)
    write_code(tmp_bank, old)
    head = PrototypeClassifier.from_bank(tmp_bank)
    centres = torch.randn(8, 10) * 3
    x = centres[torch.arange(400) % 8] + torch.randn(400, 10)
    y = torch.arange(400) % 8
    backbone = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 6))
    optimiser = torch.optim.Adam(backbone.parameters(), lr=1e-2)
    criterion = HPNLoss(head)
    for _ in range(150):
        loss = criterion(backbone(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    write_code(tmp_bank, extend(read_code(tmp_bank), 3, seed=0))
    extended = PrototypeClassifier.from_bank(tmp_bank, "tammes-d6-k8-s0+3")
    with torch.no_grad():
        z = backbone(x)
        assert torch.equal(extended(z)[:, :8], head(z))  # the old classes' logits, bit for bit
        assert torch.equal(extended.predict(z), head.predict(z))
        assert (head.predict(z) == y).float().mean() > 0.95


def test_cli_extend_stores_a_certified_code_beside_the_old_one(tmp_path):
    bank = tmp_path / "bank.h5"
    (tmp_path / "new.txt").write_text("zebra\nyak\n")
    runner = CliRunner()
    made = runner.invoke(main, ["generate", "--d", "8", "--k", "10", "--out", str(bank), "-q"])
    assert made.exit_code == 0, made.output
    done = runner.invoke(main, ["extend", str(bank), "--classes", str(tmp_path / "new.txt"), "--k-new", "3",
                                "--json"])
    assert done.exit_code == 0, done.output
    stored = read_code(bank, "cross-polytope-d8-k10+3")
    assert stored.certificate is not None and stored.rho == pytest.approx(1.0, abs=1e-9)
    assert np.array_equal(stored.prototypes[:10], read_code(bank, "cross-polytope-d8-k10").prototypes)
    assert stored.labels is None or stored.labels[10:] == ["zebra", "yak", ""]
    again = runner.invoke(main, ["extend", str(bank), "--code", "cross-polytope-d8-k10", "--k-new", "3"])
    assert again.exit_code != 0 and "already exists" in again.output


@pytest.mark.parametrize("args, message", [
    (["--k-new", "0"], "Invalid value for '--k-new'"),
    ([], "give --k-new"),
    (["--k-new", "2", "--method", "next-points", "--code", "tammes-d3-k5-s0"], "not the first 5 points"),
])
def test_cli_extend_errors_are_one_line(tmp_path, args, message):
    bank = tmp_path / "bank.h5"
    write_code(bank, generate(d=3, k=5, method="tammes", seed=0))
    result = subprocess.run([sys.executable, "-m", "spherecodes", "extend", str(bank), *args],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Error:")


def test_reserve_ahead_labels_the_first_rows_and_leaves_the_rest_for_later(tmp_path):
    names = tmp_path / "names100.txt"
    names.write_text("".join(f"class {i}\n" for i in range(100)))
    bank = tmp_path / "bank.h5"
    result = CliRunner().invoke(main, ["generate", "--d", "64", "--k", "200", "--classes", str(names), "--out",
                                       str(bank), "--no-certify", "-q"])
    assert result.exit_code == 0, result.output
    code = read_code(bank)
    assert code.k == 200 and code.labels[:100] == [f"class {i}" for i in range(100)]
    assert code.labels[100:] == [""] * 100
    head = PrototypeClassifier(code)
    assert head.decode([0, 150]) == ["class 0", ""]
    too_many = CliRunner().invoke(main, ["generate", "--d", "64", "--k", "50", "--classes", str(names), "--out",
                                         str(tmp_path / "other.h5")])
    assert too_many.exit_code != 0 and "at most one name per prototype" in too_many.output
