"""Feedback signals are modules: a signal added as one module (an entry point) is read on every execution of a
campaign, recorded, kept for, weighed by the scheduler and ablated by ``--strategy no-NAME``, with nothing else
changed; the scheduler sees what the signals make of an execution, never a signal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ufuzz import plugins
from ufuzz.engine import signals
from ufuzz.engine.feedback import FeedbackState
from ufuzz.engine.strategies import ablated_signals, apply_strategy, describe, strategy_names
from ufuzz.model import Execution

ROOT = Path(__file__).resolve().parents[2]

_EVERY_ANSWER = '''
from ufuzz.engine.signals import Observation, Reading, Signal


class EveryAnswer(Signal):
    """Keeps every mutant that got retrieved something, with three units of energy: a signal no built-in is."""
    name = "every_answer"
    order = 50

    def __init__(self):
        self.seen = 0

    def observe(self, obs: Observation) -> Reading:
        self.seen += 1
        return Reading(value=self.seen, retain=bool(obs.execution.top_ids), energy=3.0)
'''


def _install(tmp_path, monkeypatch) -> None:
    """The module above installed as an entry point of group ``ufuzz.signals``."""
    (tmp_path / "ufuzz_test_every_answer.py").write_text(_EVERY_ANSWER)
    monkeypatch.syspath_prepend(str(tmp_path))
    real = plugins.entry_point_specs
    monkeypatch.setattr(plugins, "entry_point_specs", lambda group: {
        **real(group), **({"every_answer": "ufuzz_test_every_answer:EveryAnswer"} if group == "ufuzz.signals" else {})})
    signals.registered.cache_clear()  # the signals are looked up once per process


@pytest.fixture
def with_signal(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch)
    yield
    signals.registered.cache_clear()


def _ex(top: list[str], response: str | None = "ok") -> Execution:
    return Execution(case_id="c", state_key="s", query="q", top_ids=top, top_scores=[0.5] * len(top),
                     response=response)


def test_a_signal_added_as_one_module_is_read_kept_for_weighed_and_ablated(with_signal):
    names = signals.names()
    assert {"coverage", "unexpected", "novelty", "divergence", "every_answer"} <= set(names)
    assert names.index("every_answer") > names.index("divergence")  # its order
    others = set(names) - {"coverage", "unexpected", "novelty", "divergence", "every_answer"}
    fs = FeedbackState(others)
    fs.observe("s", "cp", _ex(["m1"]))
    again = fs.observe("s", "cp", _ex(["m1"]))  # nothing new for any built-in
    assert again.values["every_answer"] == 2 and again.retained and again.energy == 4.0
    assert "no-every-answer" in strategy_names()  # written as an operator's ablation is
    assert describe("no-every-answer") == ("ablation", "the full method without the every_answer feedback signal")

    class Cfg:
        ablation: dict = {}
        strategy = ""

    ablated = FeedbackState(others | ablated_signals(apply_strategy(Cfg(), "no-every-answer").ablation))
    ablated.observe("s", "cp", _ex(["m1"]))
    quiet = ablated.observe("s", "cp", _ex(["m1"]))
    assert "every_answer" not in quiet.values and not quiet.retained and quiet.energy == 1.0
    assert next(sig for sig in ablated.signals if sig.name == "every_answer").seen == 2  # still observed


def test_a_campaign_reads_records_and_keeps_for_a_signal_added_as_one_module(with_signal, tmp_path):
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    c = Campaign(CampaignConfig(backend="embedded", budget=60, seed=3, out=str(tmp_path / "run")))
    c.run()
    rows = c.store.feedback(c.campaign_id)
    assert rows and all("every_answer" in r.signals for r in rows)
    # the embedded backend retrieves for every question: every mutant within depth is kept, for this signal alone
    depth = {m.case_id: m.depth for m in c.store.mutants(c.campaign_id)}
    assert all(r.retained for r in rows if depth[r.case_id] < c.config.max_depth)


def test_a_campaign_run_before_a_signal_was_added_is_not_resumed_as_if_it_had_it(tmp_path, monkeypatch):
    """A snapshot holds the signals' own state: resumed under another set of signals, the campaign would go on as none
    that ever ran. The resume is refused before the campaign opens, naming both sets."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.journal import ResumeError

    out = tmp_path / "run"
    Campaign(CampaignConfig(backend="embedded", budget=30, seed=3, out=str(out))).run()
    _install(tmp_path, monkeypatch)
    try:
        with pytest.raises(ResumeError, match=r"ran with the feedback signals coverage, .*divergence, and this ufuzz "
                                              r"has .*every_answer"):
            Campaign.resume(out, budget=60)
    finally:
        monkeypatch.undo()  # the signal uninstalled again
        signals.registered.cache_clear()
    assert Campaign.resume(out, budget=60).run()["executions"] == 60  # with the signals it ran with: goes on


def test_an_entry_point_that_is_not_the_signal_it_names_is_refused(with_signal, monkeypatch):
    monkeypatch.setattr(plugins, "entry_point_specs", lambda group: {
        "misnamed": "ufuzz_test_every_answer:EveryAnswer"} if group == "ufuzz.signals" else {})
    with pytest.raises(TypeError, match="not a signal"):
        signals.active()


def test_an_unknown_signal_to_switch_off_is_refused():
    with pytest.raises(ValueError, match="unknown feedback signal"):
        FeedbackState({"relevance"})


def test_the_scheduler_names_no_signal():
    """It takes energy, effect and instability; which signal made them is not its business."""
    src = (ROOT / "ufuzz" / "engine" / "scheduler.py").read_text()
    tree = ast.parse(src)
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | \
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not names & {"coverage_gain", "divergence", "meaning_preserving", "asks_anew", "unexpected", "novelty"}


def test_each_built_in_signal_module_defines_one_signal():
    for info in sorted((ROOT / "ufuzz" / "engine" / "signals").glob("*.py")):
        if info.stem in ("__init__", "base"):
            continue
        tree = ast.parse(info.read_text())
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        assert len(classes) == 1, info.name
