"""The measured optimiser table behind ``auto``'s decision, and the predictions made from it.

The independent facts: no code of K points in R^d has max-cos below the
Delsarte–Goethals–Seidel LP bound, so no measured value may be below it; and
the optimum is monotone (more points in fewer dimensions are never separated
better), which is what the predictions between measured sizes rely on.
"""

from __future__ import annotations

import pytest

from spherecodes.bounds import max_cos_lower_bound
from spherecodes.optimiser_table import NOISE, measurements, predict_tammes, predict_warm


def test_the_table_covers_the_best_of_grid():
    table = measurements()
    grid = [(d, k) for d in (8, 12, 16, 24, 32, 48, 63, 64, 96, 100, 127, 128, 200, 256, 384, 512)
            for k in (50, 100, 200, 500, 1000, 2000) if k > 2 * d]
    assert len(grid) >= 60 and all(size in table for size in grid)
    assert all(-1 <= m.tammes < 1 and m.seconds > 0 for m in table.values())


def test_measured_values_obey_the_monotone_order_the_predictions_rely_on():
    table = measurements()
    for (d, k), m in table.items():
        for (d2, k2), m2 in table.items():
            if d2 >= d and k2 <= k:  # (d2, k2) is easier: at most as large a max-cos
                assert m2.tammes <= m.tammes + 1e-12, ((d, k), (d2, k2))


@pytest.mark.parametrize("d,k", [(3, 30), (8, 200), (16, 100), (48, 1000), (128, 2000), (512, 5000)])
def test_no_measured_value_is_below_the_lp_bound(d, k):
    m = measurements()[(d, k)]
    assert m.tammes >= max_cos_lower_bound(d, k).value - 1e-12
    if m.warm is not None:
        assert m.warm >= max_cos_lower_bound(d, k).value - 1e-12


def test_the_bracket_contains_every_size_left_out_of_the_table():
    table = measurements()
    inside = 0
    for size, m in table.items():
        rest = {key: value for key, value in table.items() if key != size}
        p = predict_tammes(*size, table=rest)
        assert p.low is None or p.low <= m.tammes, size
        assert p.high is None or m.tammes <= p.high, size
        inside += p.low is not None and p.high is not None
    assert inside > len(table) // 3  # most sizes have measurements on both sides


def test_predictions_at_and_away_from_the_measured_sizes():
    m = measurements()[(16, 100)]
    p = predict_tammes(16, 100)
    assert p.value == m.tammes and p.low == pytest.approx(m.tammes * (1 - NOISE))
    assert not predict_tammes(4096, 10**6).known
    # Beyond every measured size only one end is known: from (3, 10) on, more points in R^3 are harder.
    assert predict_tammes(3, 10**6).high is None and predict_tammes(3, 10**6).low is not None
    assert predict_warm(16, 100, m.structured).value == m.warm
    assert not predict_warm(16, 100, "another code").known
