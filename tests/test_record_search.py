"""The record search: chains of high-effort tammes runs, on one process or on a Dask cluster."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes import generate, read_code
from spherecodes.catalog import BankOptions, build_bank, build_catalog, parse_grid
from spherecodes.context import RunContext
from spherecodes.cli import main
from spherecodes.errors import SpherecodesError
from spherecodes.options import LinesOptions, TammesOptions
from spherecodes.records import published_record
from spherecodes.solvers import record_search, tammes
from spherecodes.solvers.record_search import ADJACENT_HOLES, adjacent_starts, chain_seed
from spherecodes.stats import max_cos

#: Short chains, so that a search takes seconds: the machinery is the same as the long ones'.
SHORT = {"restarts": 8, "steps": 200, "perturb_rounds": 2}


def test_each_chain_is_a_high_effort_tammes_run_with_its_own_seed_and_the_best_is_kept():
    res = record_search(3, 13, chains=3, **SHORT)
    chains = res.settings["record_search"]["chains"]
    assert [c["chain"] for c in chains] == [0, 1, 2] and len({c["seed"] for c in chains}) == 3
    # Chain 1, run again on its own as a tammes call with its seed, gives the value the search recorded.
    again = tammes(3, 13, seed=chain_seed(0, 1), effort="high", device="cpu", **SHORT)
    assert again.max_cos == chains[1]["max_cos"]
    best = min(chains, key=lambda c: (c["max_cos"], c["chain"]))
    assert res.best_restart == best["chain"] and res.max_cos == best["max_cos"] == max_cos(res.prototypes)
    assert res.stop_reason == "steps"


def test_a_resumed_search_starts_from_its_code_and_is_never_worse():
    first = record_search(3, 20, chains=1, restarts=4, steps=100, perturb_rounds=0)
    resumed = record_search(3, 20, chains=2, init=first.prototypes, restarts=4, steps=100, perturb_rounds=0)
    chains = resumed.settings["record_search"]["chains"]
    assert [c["start"] for c in chains] == ["init", "scratch"]
    assert resumed.max_cos <= first.max_cos
    # New chains, not the ones that made the start code: the seeds depend on it.
    assert chains[1]["seed"] != chain_seed(0, 1)


def _icosahedron() -> np.ndarray:
    phi = (1 + 5**0.5) / 2
    rows = [np.roll([0.0, s, t * phi], shift) for shift in range(3) for s in (1, -1) for t in (1, -1)]
    return np.array(rows) / np.linalg.norm(rows[0])


def test_starts_from_the_adjacent_sizes_leave_out_a_point_or_fill_a_deep_hole():
    ico = _icosahedron()
    starts = [start for _, start in adjacent_starts([ico], 11, seed=0)]
    # Each of the 12 points left out once: every start is the icosahedron less one row.
    assert len(starts) == 12
    left_out = sorted(next(i for i in range(12) if not np.any(np.all(np.isclose(s, ico[i]), axis=1))) for s in starts)
    assert left_out == list(range(12))
    # The octahedron's deepest holes are its 8 face centres, at cosine 1/sqrt(3) to the nearest vertices.
    octahedron = np.vstack([np.eye(3), -np.eye(3)])
    filled = [start for _, start in adjacent_starts([octahedron], 7, seed=0)]
    assert len(filled) == ADJACENT_HOLES and all(np.array_equal(s[:6], octahedron) for s in filled)
    depths = sorted(float((s[6] @ octahedron.T).max()) for s in filled)
    assert all(abs(v - 3**-0.5) < 0.02 for v in depths[:8]) and depths[8] > 3**-0.5 + 0.02


def test_starts_from_two_points_away_leave_out_a_contact_pair_or_fill_two_deep_holes():
    ico = _icosahedron()
    # Ten points from twelve: each of the icosahedron's 30 edges (its contact pairs, cosine 1/sqrt(5)) left out once.
    starts = [start for _, start in adjacent_starts([ico], 10, seed=0)]
    assert len(starts) == 30
    pairs = {tuple(i for i in range(12) if not np.any(np.all(np.isclose(s, ico[i]), axis=1))) for s in starts}
    assert len(pairs) == 30 and all(abs(ico[i] @ ico[j] - 5**-0.5) < 1e-12 for i, j in pairs)
    # Eight points from the octahedron: a point in a deep hole, then one in the deepest hole left, which is
    # another face centre (adding points never makes a hole deeper than the octahedron's, cosine 1/sqrt(3)).
    octahedron = np.vstack([np.eye(3), -np.eye(3)])
    filled = [start for _, start in adjacent_starts([octahedron], 8, seed=0)]
    assert len(filled) == ADJACENT_HOLES and all(s.shape == (8, 3) and np.array_equal(s[:6], octahedron)
                                                 for s in filled)
    assert all((s[7] @ s[:7].T).max() < 3**-0.5 + 0.02 for s in filled)
    # The codes take turns: a square (K - 1) and a pentagonal bipyramid (K + 2, contacts: the pentagon's 5 edges).
    square = np.array([[1.0, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]])
    angles = 2 * np.pi * np.arange(5) / 5
    bipyramid = np.vstack([[[0, 0, 1.0], [0, 0, -1]], np.column_stack([np.cos(angles), np.sin(angles), 0 * angles])])
    mixed = adjacent_starts([square, bipyramid], 5, seed=0)
    assert [size for size, _ in mixed] == [4, 7] * 5 + [4] * 5
    assert all(np.array_equal(s[:4], square) == (size == 4) for size, s in mixed)


def test_a_chain_from_the_adjacent_sizes_is_never_worse_than_its_best_derived_start():
    # Eleven points: the icosahedron less one point is optimal (Danzer 1963; max-cos 1/sqrt(5), as for 12).
    res = record_search(3, 11, chains=2, adjacent=[_icosahedron()], restarts=1, steps=20, perturb_rounds=0)
    chains = res.settings["record_search"]["chains"]
    assert [c["start"] for c in chains] == ["adjacent", "scratch"]
    assert res.settings["record_search"]["adjacent_sizes"] == [12]
    assert chains[0]["screen"] == {"from_size": 12, "screened": 12, "starts": 12} and "screen" not in chains[1]
    assert chains[0]["max_cos"] <= 5**-0.5 + 1e-12
    assert published_record(3, 11).max_cos - 1e-9 <= chains[0]["max_cos"]


def test_a_time_budget_ends_the_search_after_the_chain_under_way():
    res = record_search(3, 13, time_budget=0.5, seed=3, **SHORT)
    assert res.restarts >= 1 and res.stop_reason == "time_limit"
    assert "in the budget of 0.5 s" in res.stop_detail


@pytest.mark.slow
def test_the_dask_path_gives_the_same_best_code_as_one_process():
    alone = record_search(3, 13, chains=3, seed=5, **SHORT)
    spread = record_search(3, 13, chains=3, seed=5, workers=2, **SHORT)
    assert spread.restarts == 3
    assert np.array_equal(spread.prototypes, alone.prototypes) and spread.best_restart == alone.best_restart
    assert ([c["max_cos"] for c in spread.settings["record_search"]["chains"]]
            == [c["max_cos"] for c in alone.settings["record_search"]["chains"]])


def test_bad_search_settings_are_refused_in_one_line():
    with pytest.raises(SpherecodesError, match="give a time budget"):
        record_search(3, 13)
    with pytest.raises(SpherecodesError, match="not both"):
        record_search(3, 13, chains=1, workers=1, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(SpherecodesError, match="effort of the chains|the search's own"):
        record_search(3, 13, chains=1, effort="low")
    with pytest.raises(SpherecodesError, match="effort 'record' runs the record search of method 'tammes'"):
        generate(3, 13, "lines", LinesOptions(effort="record", restarts=1))
    with pytest.raises(SpherecodesError, match="workers and scheduler spread the chains"):
        generate(3, 13, "tammes", TammesOptions(workers=2))
    with pytest.raises(SpherecodesError, match="adjacent codes start chains of a record search"):
        TammesOptions(adjacent=[_icosahedron()])
    with pytest.raises(SpherecodesError, match=r"adjacent codes hold K ± 1 or K ± 2 points in R\^3 \(11, 12, 14, 15 rows"):
        record_search(3, 13, chains=1, adjacent=[_icosahedron()[:10]])
    with pytest.raises(SpherecodesError, match="give --time-limit SECONDS"):
        build_catalog(parse_grid("d=3 k=13"), ["tammes"], "unused", BankOptions(effort="record"))


@pytest.mark.slow
def test_generate_runs_the_record_search_and_the_bank_lists_its_chains(tmp_path):
    out = tmp_path / "search.h5"
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "13", "--method", "tammes", "--effort", "record",
                                       "--restarts", "2", "--steps", "200", "--out", str(out), "--no-certify"])
    assert result.exit_code == 0, result.output
    assert "chain 1: max-cos" in result.output and "best known" in result.output
    code = read_code(out)
    chains = code.settings["record_search"]["chains"]
    assert len(chains) == 2 and code.settings["effort"] == "record"
    assert code.stats.max_cos == min(c["max_cos"] for c in chains)
    # 13 points: the chains reach the published value (Lai et al. 2023) within its precision.
    assert code.stats.max_cos - published_record(3, 13).max_cos < 1e-9


def test_a_record_build_starts_chains_from_the_finished_banks_of_the_adjacent_sizes(tmp_path):
    quick = BankOptions(steps=50, restarts=2)
    for k in (10, 12):
        assert build_bank(3, k, "tammes", tmp_path, quick, context=RunContext(device="cpu"))["status"] == "built"
    summary = build_bank(3, 11, "tammes", tmp_path, BankOptions(steps=50, restarts=2, effort="record"),
                         context=RunContext(device="cpu", time_limit=4))
    search = read_code(tmp_path / summary["file"]).settings["record_search"]
    assert search["adjacent_sizes"] == [10, 12]
    assert search["chains"][0]["start"] == "adjacent"
