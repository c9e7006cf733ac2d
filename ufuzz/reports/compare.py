"""Two campaigns side by side (``ufuzz report A --compare B``): what is new in A, what A no longer shows (fixed
since B, or not met), and what still fails — by cause, the unit of one bug, and by unique-failure key.

A cause of A is *still failing* when B has a failure with the same cause (or, for campaigns recorded before
causes were, the same key), *new* when B has none; a cause of B that A does not show is *gone* — fixed, or only
not met this time: a campaign that explored differently (another seed or budget) may not meet a bug it did not
fix, so the comparison names both campaigns' seed and budget and says when they differ.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compare_campaigns"]


def _groups(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from ufuzz.reports.failures import group_by_cause

    return {g["cause"]: g for g in group_by_cause(rows)}


def compare_campaigns(a_rows: list[dict[str, Any]], b_rows: list[dict[str, Any]], a_facts: dict[str, Any],
                      b_facts: dict[str, Any]) -> dict[str, Any]:
    """``new``, ``gone`` and ``still`` cause groups (rows of :func:`ufuzz.reports.failures.failure_rows` of A
    and of B), the key counts, and ``differs``: how the two campaigns' set-ups differ (seed, budget, backend,
    strategy) — a difference that makes "gone" mean "not met" as much as "fixed"."""
    a, b = _groups(a_rows), _groups(b_rows)
    b_keys = {r["key"] for r in b_rows}
    a_keys = {r["key"] for r in a_rows}
    differs = [f"{k}: {a_facts.get(k)} vs {b_facts.get(k)}" for k in ("backend", "product", "seed", "budget", "strategy")
               if a_facts.get(k) != b_facts.get(k)]
    return {"new": [g for c, g in a.items() if c not in b], "still": [g for c, g in a.items() if c in b],
            "gone": [g for c, g in b.items() if c not in a],
            "keys": {"new": len(a_keys - b_keys), "still": len(a_keys & b_keys), "gone": len(b_keys - a_keys)},
            "differs": differs}
