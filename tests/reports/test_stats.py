"""The bench's statistics (ufuzz.reports.stats): Mann-Whitney U and Vargha-Delaney A12, against values computed
by hand, against scipy where it is installed, and their invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.reports.stats import a12, mann_whitney_u, midranks


def test_hand_computed_values():
    # five runs each, every x below every y: U = 0, and 2 of the C(10, 5) = 252 splits are as extreme
    u, p = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert u == 0 and p == pytest.approx(2 / 252)
    assert a12([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == 0.0
    assert a12([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == 1.0
    # x = [1, 3], y = [2]: pairs (1<2), (3>2): U = 1 = n1 n2 / 2, A12 = 0.5, p = 1
    assert mann_whitney_u([1, 3], [2]) == (1.0, 1.0) and a12([1, 3], [2]) == 0.5
    # ties: x = [1, 2], y = [2, 2]: pooled midranks 1, 3, 3, 3; U = (1 + 3) - 3 = 1; A12 = (0 + 0.5·2 + 0)/4 = 0.25
    u, p = mann_whitney_u([1, 2], [2, 2])
    assert u == 1.0 and a12([1, 2], [2, 2]) == 0.25
    # the 6 splits give rank sums 4, 4, 4, 6, 6, 6 (U 1, 1, 1, 3, 3, 3): |U - 2| >= 1 for all: p = 1
    assert p == 1.0
    # every run equal: no evidence of a difference
    assert mann_whitney_u([0] * 5, [0] * 5) == (12.5, 1.0)
    # 0/1 outcomes, all of full found it, none of the baseline did: as extreme as U = 0 with five each
    assert mann_whitney_u([1] * 5, [0] * 5)[1] == pytest.approx(2 / 252)


def test_midranks():
    assert list(midranks(np.array([10, 20, 20, 5]))) == [2.0, 3.5, 3.5, 1.0]


def test_asymptotic_for_large_samples_is_close_to_exact():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=8), rng.normal(size=8) + 1.0
    exact = mann_whitney_u(x, y, "exact")[1]
    approx = mann_whitney_u(x, y, "asymptotic")[1]
    assert abs(exact - approx) < 0.02
    with pytest.raises(ValueError):
        mann_whitney_u([], [1])
    with pytest.raises(ValueError):
        mann_whitney_u([1], [2], "bootstrap")


def test_agrees_with_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        pooled = rng.choice(1000, size=11, replace=False)  # no ties: scipy's exact test assumes none
        x, y = pooled[:5], pooled[5:] + 0.5
        ours, theirs = mann_whitney_u(x, y, "exact"), scipy_stats.mannwhitneyu(x, y, method="exact")
        assert ours[0] == theirs.statistic and ours[1] == pytest.approx(theirs.pvalue)
        xi, yi = rng.integers(0, 4, size=9), rng.integers(0, 5, size=7)  # ties: the normal approximation
        ours, theirs = mann_whitney_u(xi, yi, "asymptotic"), scipy_stats.mannwhitneyu(xi, yi, method="asymptotic")
        assert ours[0] == theirs.statistic and ours[1] == pytest.approx(theirs.pvalue)


values = st.lists(st.integers(0, 6), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(values, values)
def test_invariants(x, y):
    u, p = mann_whitney_u(x, y)
    u2, p2 = mann_whitney_u(y, x)
    assert u + u2 == pytest.approx(len(x) * len(y))
    assert p == pytest.approx(p2) and 0.0 < p <= 1.0
    assert a12(x, y) == pytest.approx(u / (len(x) * len(y)))  # A12 is U scaled
    assert a12(x, y) + a12(y, x) == pytest.approx(1.0)
    assert mann_whitney_u(x, x)[1] == 1.0 and a12(x, x) == 0.5
    assert math.isfinite(mann_whitney_u(x, y, "asymptotic")[1])
