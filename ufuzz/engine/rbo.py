"""Rank-biased overlap (Webber, Moffat & Zobel, "A similarity measure for indefinite rankings", TOIS 2010).

Our own implementation, so the fuzzer does not depend on the ``rbo`` package (which pins ``numpy<2``).

Notation (the paper's): ``S`` is the shorter list with ``s = len(S)``, ``L`` the longer with ``l = len(L)``
(for equal lengths either). ``X_d = |S[:d] ∩ L[:d]|`` is the overlap at depth ``d``; for ``d > s`` the short
list contributes only its ``s`` seen items. The agreement at depth ``d`` is ``A_d = X_d / d`` and

    RBO(S, L, p) = (1 - p) * sum_{d >= 1} p^(d-1) * A_d.

Over the seen prefix this sum is only partly known; the paper gives three ways to close it:

* ``rbo_min`` (the paper's lower bound, section 4): the unseen items never match, so ``X_d = X_l`` for
  ``d > l``::

      RBO_min = (1-p)/p * ( sum_{d=1}^{l} (X_d - X_l) p^d / d  -  X_l ln(1 - p) )

* ``rbo_res`` (the paper's residual, section 4): the residual up to the largest value any continuation
  could reach. With ``f = l + s - X_l`` (the depth from which a continuation can agree fully)::

      RBO_res = p^s + p^l - p^f - (1-p)/p * ( sum_{d=s+1}^{f} s p^d / d + sum_{d=l+1}^{f} l p^d / d
                                             + X_l ( ln(1/(1-p)) - sum_{d=1}^{f} p^d / d ) )

  It follows from the largest overlap any continuation can have: ``X_d + (d - s)`` for ``s < d <= l``,
  ``X_l + 2d - s - l`` for ``l < d <= f`` and ``d`` beyond ``f``.

* ``rbo_ext`` (eq. 32): the point estimate that assumes the agreement seen
  so far continues. Each unseen item of the short list at depths ``s+1 .. l`` is counted as matching with
  probability ``X_s / s``, and beyond ``l`` the agreement stays at its extrapolated value at ``l``::

      RBO_ext = (1-p)/p * ( sum_{d=1}^{l} X_d p^d / d + sum_{d=s+1}^{l} X_s (d - s) p^d / (s d) )
                + ( (X_l - X_s) / l + X_s / s ) * p^l

Always ``rbo_min <= rbo_ext <= rbo_min + rbo_res`` and all lie in [0, 1].

Conventions: both lists empty → 1.0 (identical); exactly one empty → 0.0 (nothing in common). Lists are
rankings: an item may appear at most once in a list (``ValueError`` otherwise). ``p`` must lie in (0, 1).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence

__all__ = ["rbo_ext", "rbo_min", "rbo_res", "rbo_bounds", "rbo_divergence", "overlaps"]


def _check(S: Sequence[Hashable], T: Sequence[Hashable], p: float) -> None:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not (0.0 < float(p) < 1.0):
        raise ValueError(f"RBO persistence p must lie strictly between 0 and 1, got {p!r}")
    for name, lst in (("first", S), ("second", T)):
        seen: set[Hashable] = set()
        for i, item in enumerate(lst):
            if item in seen:
                raise ValueError(f"RBO needs rankings without duplicates: the {name} list repeats {item!r} "
                                 f"(again at rank {i + 1})")
            seen.add(item)


def _order(S: Sequence[Hashable], T: Sequence[Hashable]) -> tuple[list[Hashable], list[Hashable]]:
    """(short, long); RBO is symmetric so which is which for equal lengths does not matter."""
    S, T = list(S), list(T)
    return (S, T) if len(S) <= len(T) else (T, S)


def overlaps(S: Sequence[Hashable], T: Sequence[Hashable]) -> list[int]:
    """``[X_1, ..., X_l]``: the overlap of the two prefixes at each depth up to the longer length.

    For depths past the shorter list's end, the shorter list contributes only its seen items.
    """
    short, long_ = _order(S, T)
    seen_short: set[Hashable] = set()
    seen_long: set[Hashable] = set()
    x = 0
    out: list[int] = []
    for d in range(len(long_)):
        b = long_[d]
        if d < len(short):
            a = short[d]
            if a == b:
                x += 1
            else:
                x += (a in seen_long) + (b in seen_short)
            seen_short.add(a)
        else:
            x += b in seen_short
        seen_long.add(b)
        out.append(x)
    return out


def _empty_case(S: Sequence[Hashable], T: Sequence[Hashable]) -> float | None:
    if not S and not T:
        return 1.0
    if not S or not T:
        return 0.0
    return None


def _clamp(v: float) -> float:
    # Float round-off can push a value a hair outside [0, 1]; the true value never is.
    return min(1.0, max(0.0, v))


def rbo_ext(S: Sequence[Hashable], T: Sequence[Hashable], p: float = 0.9) -> float:
    """Extrapolated RBO (eq. 32 of the paper)."""
    _check(S, T, p)
    e = _empty_case(S, T)
    if e is not None:
        return e
    s, lg = sorted((len(S), len(T)))
    X = overlaps(S, T)
    xs, xl = X[s - 1], X[lg - 1]
    total = 0.0
    pd = 1.0
    for d in range(1, lg + 1):
        pd *= p
        term = X[d - 1] / d
        if d > s:
            term += xs * (d - s) / (s * d)
        total += term * pd
    return _clamp((1 - p) / p * total + ((xl - xs) / lg + xs / s) * pd)


def rbo_min(S: Sequence[Hashable], T: Sequence[Hashable], p: float = 0.9) -> float:
    """Lower bound of RBO over every continuation of the lists."""
    _check(S, T, p)
    e = _empty_case(S, T)
    if e is not None:
        return e
    lg = max(len(S), len(T))
    X = overlaps(S, T)
    xl = X[lg - 1]
    total = 0.0
    pd = 1.0
    for d in range(1, lg + 1):
        pd *= p
        total += (X[d - 1] - xl) * pd / d
    return _clamp((1 - p) / p * (total - xl * math.log1p(-p)))


def rbo_res(S: Sequence[Hashable], T: Sequence[Hashable], p: float = 0.9) -> float:
    """Residual: how much RBO could still grow over ``rbo_min`` (the best continuation minus the worst).

    Zero when both lists are empty or exactly one is (the conventions above are exact).
    """
    _check(S, T, p)
    if _empty_case(S, T) is not None:
        return 0.0
    s, lg = sorted((len(S), len(T)))
    xl = overlaps(S, T)[lg - 1]
    f = lg + s - xl
    # Sum the residual agreement (max X_d - min X_d) / d depth by depth up to f, then the tail in closed form.
    total = 0.0
    head = 0.0  # sum_{d=1}^{f} p^d / d
    pd = 1.0
    for d in range(1, f + 1):
        pd *= p
        head += pd / d
        if s < d <= lg:
            total += (d - s) * pd / d
        elif d > lg:
            total += (2 * d - s - lg) * pd / d
    # Tail d > f: agreement 1 - X_l/d; (1-p)/p * sum_{d>f} p^d = p^f.
    tail_log = -math.log1p(-p) - head  # sum_{d>f} p^d / d
    res = (1 - p) / p * (total - xl * tail_log) + pd
    return min(1.0, max(0.0, res))


def rbo_bounds(S: Sequence[Hashable], T: Sequence[Hashable], p: float = 0.9) -> tuple[float, float, float]:
    """``(rbo_min, rbo_ext, rbo_min + rbo_res)``."""
    lo = rbo_min(S, T, p)
    return lo, rbo_ext(S, T, p), min(1.0, lo + rbo_res(S, T, p))


def rbo_divergence(S: Sequence[Hashable], T: Sequence[Hashable], p: float = 0.9) -> float:
    """``1 - rbo_ext``: 0 for identical rankings, 1 for disjoint ones."""
    return 1.0 - rbo_ext(S, T, p)
