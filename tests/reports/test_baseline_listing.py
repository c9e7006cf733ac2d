"""`ufuzz status` and the report name a re-asked question's baseline failure by its case and the seed it came from
(hand audit, LoCoMo: "locomo:conv-30:q85 — What is Jon's attitude …" read as q85's own question, which asks about
Gina; the case was a target change of that abstaining seed)."""

from __future__ import annotations

from ufuzz.engine.campaign import Campaign
from ufuzz.engine.config import CampaignConfig
from ufuzz.reports.status import baseline_who, campaign_status, render_status


def _row(seed: str, case: str, query: str) -> dict:
    return {"seed": seed, "case": case, "kind": "missing_evidence", "level": "selection", "query": query,
            "reason": "", "responder": None, "key": case}


def test_a_re_asked_question_is_named_by_its_case_and_seed(tmp_path):
    out = tmp_path / "c"
    # the shipped suite's default campaign records re-asked questions among its baseline failures (9 of 14 at
    # 2,000 executions); 600 are enough for some of both kinds
    Campaign(CampaignConfig(backend="embedded", budget=600, seed=1, out=str(out))).run()
    st = campaign_status(out)
    rows = st["baseline_failures"]
    assert {baseline_who(b) == b["seed"] for b in rows} == {True, False}, rows  # a seed's own, and a re-asked one
    reasked = next(b for b in rows if b["case"] != b["seed"])
    text = render_status(st)
    assert f"{reasked['case']} (re-asked, seed {reasked['seed']})" in text
    st["baseline_failures"] = [_row("s1", "s1", "Where does Ana live?"), _row("s2", "x7", "Where does Bo live?")]
    text = render_status(st)
    assert "(seeds failing their own reference; 1 of them a question re-asked on a seed's unmutated state after " \
           "it abstained; not in unique failures)" in text
    assert "  s1 " in text and "x7 (re-asked, seed s2)" in text
    assert baseline_who({"seed": "s3"}) == "s3"  # a summary written before the case was recorded
