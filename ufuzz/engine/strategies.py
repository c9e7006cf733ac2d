"""Search strategies: the full method, its baselines and its ablations (``--strategy``).

* ``full`` — obligation-first scheduling, retention on coverage gain or a new top-k signature, divergence
  prioritisation, all six operators;
* ``random`` — uniform seed × operator × target, no obligation ordering, no retention;
* ``query-only`` / ``state-only`` — the full method restricted to query or memory-state operators;
* ``no-feedback`` — obligation-first mutation of the seeds without retention;
* ``interleaved`` — the full method with retained mutants competing from the start (``explore_share`` 0.25
  unless set): for budgets smaller than the obligations;
* ``stress`` — the full method plus the opt-in operators (``stress_edit``: capacity, recency and ordering);
* ``no-<operator>`` — the full method without one operator (e.g. ``no-paraphrase``);
* ``no-<signal>`` — the full method without one feedback signal (e.g. ``no-divergence``; one per module of
  :mod:`ufuzz.engine.signals`).
"""

from __future__ import annotations

from ufuzz.operators import names as operator_names

BASE = ("full", "random", "query-only", "state-only", "no-feedback")
EXTRA = ("interleaved", "stress")
INTERLEAVED_SHARE = 0.25


def signal_names() -> list[str]:
    """The feedback signals (:mod:`ufuzz.engine.signals`): each has its ablation ``no-NAME`` (``_`` written ``-``,
    as for an operator)."""
    from ufuzz.engine.signals import names

    return names()


def _ablations() -> dict[str, tuple[str, str]]:
    """``no-NAME`` -> (``operator`` or ``signal``, NAME); a signal named as an operator is refused (one ``no-NAME``
    could not say which it drops)."""
    ops = {f"no-{op.replace('_', '-')}": ("operator", op) for op in operator_names()}
    sigs = {f"no-{s.replace('_', '-')}": ("signal", s) for s in signal_names()}
    clash = ops.keys() & sigs.keys()
    if clash:
        raise ValueError(f"a feedback signal and an operator share a name: {', '.join(sorted(clash))}")
    return {**ops, **sigs}


_KIND = {"signal": "feedback signal", "operator": "operator"}


def ablated_signals(ablation: dict[str, bool]) -> set[str]:
    """The signals a campaign's ``ablation`` switches off (``{"use_divergence": False}``: its persisted form)."""
    return {k.removeprefix("use_") for k, on in ablation.items() if not on}


def strategy_names() -> list[str]:
    return [*BASE, *EXTRA, *_ablations()]


_BASE_HELP = {
    "full": "obligations first, retention on coverage gain or a new top-k signature, divergence priority, "
            "every operator (the default)",
    "random": "baseline: uniform seed x operator x target, no obligation order, no retention",
    "query-only": "the full method with the query operators only",
    "state-only": "the full method with the memory-state operators only",
    "no-feedback": "obligation-first mutation of the seeds, no retention",
    "interleaved": f"the full method with retained mutants competing from the start (--explore-share "
                   f"{INTERLEAVED_SHARE} unless set)",
    "stress": "the full method plus the opt-in operators (stress_edit: unrelated edits that stress capacity, "
              "recency and ordering — a burst of adds as large as the checkpoint, edits of its oldest and newest "
              "memory)",
}


def describe(name: str) -> tuple[str, str]:
    """(group, one-line description) of a strategy: group is ``strategy``, ``baseline`` or ``ablation``."""
    if name in _BASE_HELP:
        group = "baseline" if name in ("random", "no-feedback") else "strategy"
        return group, _BASE_HELP[name]
    what = _ablations().get(name)
    if what is not None:
        return "ablation", f"the full method without the {what[1]} {_KIND[what[0]]}"
    raise ValueError(f"unknown strategy {name!r}; one of: {', '.join(strategy_names())}")


def apply_strategy(cfg, name: str):
    """Set ``cfg``'s scheduling fields for strategy ``name`` (a CampaignConfig); returns ``cfg``."""
    if name not in strategy_names():
        raise ValueError(f"unknown strategy {name!r}; one of: {', '.join(strategy_names())}")
    cfg.strategy = name
    if name == "random":
        cfg.obligation_first, cfg.retain = False, False
    elif name == "query-only":
        cfg.operators = operator_names("query")
    elif name == "state-only":
        cfg.operators = operator_names("state")
    elif name == "no-feedback":
        cfg.retain = False
    elif name == "interleaved":
        cfg.explore_share = cfg.explore_share or INTERLEAVED_SHARE
    elif name == "stress":
        cfg.operators = operator_names(opt_in=True)
    elif name.startswith("no-"):
        kind, what = _ablations()[name]
        if kind == "signal":
            cfg.ablation = {**cfg.ablation, f"use_{what}": False}
        else:
            cfg.operators = tuple(o for o in operator_names() if o != what)
    return cfg
