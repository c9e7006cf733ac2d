"""A campaign run with --baseline that ends in error is not compared with its baseline: its JUnit file says so,
not "no --baseline" (new-user walkthrough: the night's campaign.xml denied the --baseline it was given)."""

from __future__ import annotations

import json
from pathlib import Path

from ufuzz.corpus.campaign import load_campaign
from ufuzz.reports.junit import campaign_to_junit


def _messages(tree) -> list[str]:
    return [f.get("message") for f in tree.getroot().iter("failure")]


def test_an_error_run_with_a_baseline_says_it_was_not_compared(small_campaign):
    out = Path(small_campaign.config.out)
    summary = {**json.loads((out / "summary.json").read_text()), "status": "error", "message": "BackendError: x"}
    data = load_campaign(out, None, campaign_id=summary["campaign"])
    given = _messages(campaign_to_junit(data, summary, None, campaign_dir=out, baseline_given=True))
    plain = _messages(campaign_to_junit(data, summary, None, campaign_dir=out))
    assert len(given) == len(plain) > 1
    assert all("not compared with the baseline: the campaign ended in error" in m for m in given)
    assert not any("no --baseline" in m for m in given)
    assert all("no --baseline: every behaviour is reported" in m for m in plain)
