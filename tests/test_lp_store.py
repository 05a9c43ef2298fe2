"""The LP bounds kept with their polynomials: the table shipped with spherecodes and the per-user cache."""

import json
import random

import pytest

from spherecodes import bounds, lp_store
from spherecodes.bounds import LP_MAX_DEGREE, lp_max_cos_lower_bound, search_lp_bound, verify_lp_bound
from spherecodes.catalog import bundled_catalog

#: A size outside the table whose search takes well under a second.
FRESH = (9, 100)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache of this test's own, and no bound remembered by the process."""
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "cache"))
    lp_max_cos_lower_bound.cache_clear()
    yield tmp_path / "cache"
    lp_max_cos_lower_bound.cache_clear()


def test_the_table_covers_the_grid_and_every_entry_is_proven():
    table = lp_store.read_table()
    assert FRESH not in table
    for size in [(64, 1000), (512, 100_000), (128, 1_000_000), (3, 100), (384, 1000)]:
        assert size in table
    assert len(table) > 300
    for (d, k), record in table.items():
        assert record.degree == LP_MAX_DEGREE
        assert verify_lp_bound(d, k, record.value, record.coefficients), (d, k)


def test_a_sample_of_the_table_is_what_the_search_finds_again():
    table = lp_store.read_table()
    sizes = sorted(size for size in table if size[0] >= 16 and size[1] <= 100_000)
    for d, k in random.Random(43).sample(sizes, 3) + [(64, 1000)]:
        found = search_lp_bound(d, k)
        assert found.value == pytest.approx(table[(d, k)].value, abs=1e-7), (d, k)
        assert verify_lp_bound(d, k, found.value, found.coefficients)


def test_no_bundled_code_beats_the_table():
    # An independent fact: a real code's max-cos is never below a valid lower bound on it.
    table = lp_store.read_table()
    checked = 0
    for entry in bundled_catalog().entries:
        record = table.get((entry.d, entry.k))
        if record is not None:
            assert record.value <= entry.max_cos + 1e-12, entry.name
            checked += 1
    assert checked > 20


def test_a_computed_bound_is_cached_and_read_back_verified(cache, monkeypatch):
    fresh = lp_max_cos_lower_bound(*FRESH)
    path = lp_store.cache_path(*FRESH)
    data = json.loads(path.read_text())
    assert data["value"] == fresh.value and data["d"] == FRESH[0] and len(data["coefficients"]) == LP_MAX_DEGREE + 1
    lp_max_cos_lower_bound.cache_clear()
    searched = []
    real_search = bounds.search_lp_bound
    monkeypatch.setattr(bounds, "search_lp_bound", lambda d, k: searched.append((d, k)) or real_search(d, k))
    assert lp_max_cos_lower_bound(*FRESH) == fresh  # from the cache: no search
    assert searched == []


@pytest.mark.parametrize("damage", ["raised", "negative", "text", "degree", "truncated"])
def test_a_damaged_cache_entry_is_ignored_and_replaced(cache, damage):
    fresh = lp_max_cos_lower_bound(*FRESH)
    path = lp_store.cache_path(*FRESH)
    data = json.loads(path.read_text())
    if damage == "raised":  # a larger bound than the polynomial proves
        data["value"] += 1e-3
    elif damage == "negative":  # breaks the sign the theorem needs (f_i >= 0)
        data["coefficients"][3] = -abs(data["coefficients"][3]) - 1.0
    elif damage == "text":
        data["value"] = str(data["value"])
    elif damage == "degree":
        data["coefficients"] = data["coefficients"][:-1]
    text = json.dumps(data)
    path.write_text(text[: len(text) // 2] if damage == "truncated" else text)
    lp_max_cos_lower_bound.cache_clear()
    assert lp_max_cos_lower_bound(*FRESH) == fresh  # computed again, the same
    assert json.loads(path.read_text())["value"] == fresh.value  # and the entry replaced


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_search(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPHERECODES_CACHE", str(blocker))
    lp_max_cos_lower_bound.cache_clear()
    try:
        assert lp_max_cos_lower_bound(*FRESH).value == search_lp_bound(*FRESH).value
    finally:
        lp_max_cos_lower_bound.cache_clear()


def test_a_table_entry_that_does_not_verify_is_not_shown(cache, monkeypatch):
    d, k = 64, 1000
    real = lp_store.read_table()
    forged = dict(real)
    forged[(d, k)] = lp_store.LPRecord(d, k, LP_MAX_DEGREE, 0.2, real[(d, k)].coefficients, "table")
    monkeypatch.setattr(lp_store, "read_table", lambda: forged)
    assert lp_max_cos_lower_bound(d, k).value == pytest.approx(real[(d, k)].value, abs=1e-7)  # searched, not 0.2
