"""Statistics for comparing fuzzers over repeated runs, as Klees et al. ("Evaluating Fuzz Testing", CCS 2018)
ask for: the Mann-Whitney U test (two-sided p-value: is one strategy's distribution of results shifted from the
other's?) and the Vargha-Delaney A12 effect size (the probability that a run of the first strategy beats a run
of the second, ties counted half).

Written with numpy alone (scipy is not a dependency). The p-value is exact where the number of ways to split the
pooled runs is small (it is for the few runs a bench makes: 5 + 5 runs give 252 splits), computed over every
split with the pooled midranks, so ties are handled exactly (the conditional permutation test); otherwise it is
the normal approximation with the tie correction and a continuity correction.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

__all__ = ["EXACT_LIMIT", "a12", "mann_whitney_u", "midranks"]

#: at most this many splits are enumerated for the exact p-value
EXACT_LIMIT = 200_000


def midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values``, tied values sharing the mean of their ranks."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def a12(x: list[float], y: list[float]) -> float:
    """Vargha-Delaney A12: P(X > Y) + P(X = Y) / 2 over all pairs of a run of ``x`` and a run of ``y``
    (0.5: no difference; 1.0: every run of ``x`` beats every run of ``y``)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not len(xa) or not len(ya):
        raise ValueError("a12 needs at least one value on each side")
    greater = (xa[:, None] > ya[None, :]).sum()
    equal = (xa[:, None] == ya[None, :]).sum()
    return float((greater + 0.5 * equal) / (len(xa) * len(ya)))


def mann_whitney_u(x: list[float], y: list[float], method: str = "auto") -> tuple[float, float]:
    """(U of ``x``, two-sided p-value). ``method``: ``exact`` (every split of the pooled values, midranks),
    ``asymptotic`` (normal approximation, tie and continuity corrected) or ``auto`` (exact when there are at
    most :data:`EXACT_LIMIT` splits)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n1, n2 = len(xa), len(ya)
    if not n1 or not n2:
        raise ValueError("the Mann-Whitney U test needs at least one value on each side")
    pooled = np.concatenate([xa, ya])
    ranks = midranks(pooled)
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    if method not in ("auto", "exact", "asymptotic"):
        raise ValueError(f"method must be auto, exact or asymptotic, not {method!r}")
    if method == "exact" or (method == "auto" and math.comb(n1 + n2, n1) <= EXACT_LIMIT):
        return u, _exact_p(ranks, n1, u)
    return u, _asymptotic_p(ranks, n1, n2, u)


def _exact_p(ranks: np.ndarray, n1: int, u: float) -> float:
    """P(|U - mean| >= |u - mean|) over every way of drawing n1 of the pooled midranks."""
    n = len(ranks)
    mean = n1 * (n - n1) / 2.0
    sums = np.fromiter((ranks[list(c)].sum() for c in combinations(range(n), n1)), dtype=float,
                       count=math.comb(n, n1))
    us = sums - n1 * (n1 + 1) / 2.0
    observed = abs(u - mean)
    return float(np.mean(np.abs(us - mean) >= observed - 1e-9))


def _asymptotic_p(ranks: np.ndarray, n1: int, n2: int, u: float) -> float:
    n = n1 + n2
    _, counts = np.unique(ranks, return_counts=True)
    tie = float((counts ** 3 - counts).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - tie / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))
