"""``ufuzz status``: what a campaign did and found, read back from its corpus store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ufuzz.corpus.campaign import resolve_campaign
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, database_errors, default_url


def campaign_status(campaign_dir: Path, db: str | None = None, campaign_id: str | None = None) -> dict[str, Any]:
    """Summary of the campaign ``campaign_dir`` holds (or the named one) in its store, read without writing
    anything (the store is opened read-only). ``FileNotFoundError``/``ValueError`` name what is wrong."""
    if db is None:
        path = Path(campaign_dir) / "corpus.sqlite"
        if not path.exists():
            raise FileNotFoundError(f"{campaign_dir}: no corpus.sqlite here (not a campaign directory?)")
        db = default_url(campaign_dir)
    with database_errors(db):
        return _status(campaign_dir, db, campaign_id)


def _status(campaign_dir: Path, db: str, campaign_id: str | None) -> dict[str, Any]:
    store = CorpusStore(db, readonly=True)
    try:
        if not store.campaigns():
            raise ValueError(f"{store.url}: holds no campaign")
        if campaign_id is None:
            campaign_id = resolve_campaign(store, Path(campaign_dir))
        rec = store.campaign(campaign_id)
        if rec is None:
            raise ValueError(f"{store.url}: no campaign {campaign_id!r}")
        summary = store.summary(rec.id)
        summary["backend"] = rec.backend
        summary["strategy"] = rec.config.get("strategy")
        summary["seed"] = rec.seed
        summary["budget"] = rec.budget
        summary["started_at"] = rec.started_at
        summary["finished_at"] = rec.finished_at
    finally:
        store.close()
    fs = FailureStore(db, rec.id, readonly=True)
    try:
        groups = fs.unique_failures()
        summary["unique_failures"] = fs.unique_failure_count()
        summary["causes"] = fs.cause_count()
        records = fs.failures()
    finally:
        fs.close()
    summary["baseline_failures"] = [
        {"seed": f.seed_id, "kind": f.kind, "level": f.stage, "query": f.detail.get("query"),
         "reason": f.detail.get("reason"), "responder": f.responder}
        for f in records if f.origin == "baseline" and f.counts]
    summary["reader_failures"] = sum(1 for f in records if not f.counts)
    summary["judging"] = _judging(Path(campaign_dir), rec.id)
    by_op: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for g in groups:
        by_op[g["operator"] or "?"] = by_op.get(g["operator"] or "?", 0) + g["unique"]
        k = f"{g['stage']}:{g['kind']}"
        by_kind[k] = by_kind.get(k, 0) + g["unique"]
    written = Path(campaign_dir) / "summary.json"  # what only the running process knew: its backend worker
    if written.exists():
        try:
            final = json.loads(written.read_text())
        except (OSError, ValueError):
            final = {}
        if isinstance(final, dict) and final.get("campaign") == rec.id and final.get("worker"):
            summary["worker"] = final["worker"]
    summary["failures_by_operator"] = dict(sorted(by_op.items()))
    summary["failures_by_kind"] = dict(sorted(by_kind.items()))
    summary["failure_groups"] = groups
    return summary


def _judging(campaign_dir: Path, campaign_id: str) -> dict[str, Any] | None:
    """How the campaign decided failures (levels, relevance threshold, responder), as it recorded at start."""
    try:
        facts = json.loads((campaign_dir / "campaign.json").read_text())
    except (OSError, ValueError):
        return None
    return facts.get("judging") if isinstance(facts, dict) and facts.get("campaign") == campaign_id else None


def _judging_line(j: dict[str, Any] | None) -> str:
    if not j:
        return "judging    (not recorded)"
    thr = j.get("relevance_threshold")
    if j.get("selection"):
        sel = "selection" + (f" (relevance threshold {thr})" if thr is not None else
                             " (no relevance threshold: no abstention check)")
    else:
        sel = f"no selection (retrieval {j.get('retrieval') or 'hidden'})"
    who = j.get("responder")
    resp = f"response by {who}, judged by {j.get('judge')}" if who else "no response level (no responder)"
    return f"judging    {sel}; {resp}"


def render_status(st: dict[str, Any]) -> str:
    cov = st["coverage"]
    lines = [
        f"campaign   {st['campaign']}  ({st['status']}, strategy {st.get('strategy')}, seed {st.get('seed')})",
        f"backend    {st['backend'].get('backend')}  "
        + " ".join(_facts(st["backend"], skip=("backend",))),
        f"executions {st['executions']} of budget {st.get('budget')}  "
        f"(parents {st['parent_executions']}, mutants {st['mutant_executions']}, errored {st['failed_executions']})",
        f"mutants    {st['mutants']['valid']} valid, {st['mutants']['rejected']} rejected; retained {st['retained']}",
        f"coverage   {cov['reached']}/{cov['total']} memories ({100 * cov['ratio']:.1f}%)"
        + (f", +{cov['extra']} added by mutants" if cov.get("extra") else ""),
        f"errors     {st['errors']}",
    ]
    if st.get("worker"):
        w = st["worker"]
        lines.append(f"worker     {w['starts']} start(s), {w['recycles']} recycled, {w['crashes']} crashed, "
                     f"{w['rebuilds']} states rebuilt, peak {w['peak_rss_mb']:.0f} MB")
    lines.append(_judging_line(st.get("judging")))
    lines.append(f"unique failures {st['unique_failures']} ({st.get('causes', 0)} causes)")
    if st["failure_groups"]:
        lines.append(f"  {'operator':16s} {'level':10s} {'kind':28s} {'unique':>6s} {'causes':>6s} {'seen':>6s}")
        for g in st["failure_groups"]:
            lines.append(f"  {g['operator'] or '?':16s} {g['stage']:10s} {g['kind']:28s} {g['unique']:6d} "
                         f"{g.get('causes', 0):6d} {g['occurrences']:6d}")
    base = st.get("baseline_failures") or []
    lines.append(f"baseline failures {len(base)} (seeds failing their own reference; not in unique failures)")
    for b in base:
        lines.append(f"  {b['seed']:16s} {b['level']:10s} {b['kind']:28s} {b.get('query') or ''}")
    if st.get("reader_failures"):
        lines.append(f"reader failures {st['reader_failures']} (the opt-in top-evidence reader's, not the "
                     "memory system's)")
    return "\n".join(lines)


def _facts(d: dict[str, Any], prefix: str = "", skip: tuple[str, ...] = ()) -> list[str]:
    """key=value words, nested mappings flattened as outer.inner=value."""
    out: list[str] = []
    for k, v in sorted(d.items()):
        if k in skip:
            continue
        if isinstance(v, dict):
            out.extend(_facts(v, f"{prefix}{k}."))
        else:
            out.append(f"{prefix}{k}={v}")
    return out
