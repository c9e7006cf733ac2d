"""``ufuzz status``: what a campaign did and found, read back from its corpus store."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ufuzz.corpus.campaign import resolve_campaign
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, database_errors, default_url
from ufuzz.oracles.classes import class_of, summarise
from ufuzz.oracles.verdict import PROBE_KINDS, UNREACHABLE
from ufuzz.triage.baseline import STATUSES


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
        summary.update(_liveness(rec, Path(campaign_dir)))
        summary["backend"] = rec.backend
        summary["strategy"] = rec.config.get("strategy")
        summary["seed"] = rec.seed
        summary["budget"] = rec.budget
        summary["started_at"] = rec.started_at
        summary["finished_at"] = rec.finished_at
        summary["rejections"] = rejection_reasons(store.mutants(rec.id, valid=False))
        summary["executions_by_operator"] = store.executions_by_operator(rec.id)
        summary["execution_seconds"] = store.execution_seconds(rec.id)
        summary["short_results"] = _short_results(store.result_counts(rec.id), rec.config.get("k"))
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
        {"seed": f.seed_id, "case": f.case_id, "kind": f.kind, "level": f.stage, "query": f.detail.get("query"),
         "reason": f.detail.get("reason"), "responder": f.responder, "key": f.failure_key}
        for f in records if f.origin == "baseline" and f.counts]
    summary["system_probes"] = _probe_groups(records)
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
        if isinstance(final, dict) and final.get("campaign") == rec.id:
            if final.get("worker"):
                summary["worker"] = final["worker"]
            if final.get("search"):  # how phase 1 ran (--search auto resolves to walk or spread)
                summary["search"] = final["search"]
            if final.get("llm"):  # LLM calls, tokens and the estimated cost (only the process counted them)
                summary["llm"] = final["llm"]
            if final.get("benchmark_accuracy"):  # the benchmark's own judging of the seeds, as it ended
                summary["benchmark_accuracy"] = final["benchmark_accuracy"]
            if final.get("mutants_unjudged"):  # valid mutants not executed: none of their checks could fail
                summary["mutants"]["unjudged"] = final["mutants_unjudged"]
            if isinstance(final.get("readbacks"), dict) and isinstance(summary.get("judging"), dict):
                summary["judging"] = {**summary["judging"], "readbacks": final["readbacks"]}
            if isinstance(final.get("baseline"), dict):  # a --baseline run's verdict, as its night ended
                summary["baseline"] = final["baseline"]
    summary["failures_by_operator"] = dict(sorted(by_op.items()))
    summary["failures_by_kind"] = dict(sorted(by_kind.items()))
    summary["failure_groups"] = groups
    # the behaviours the failures show (ufuzz.oracles.classes): the unit a developer fixes
    summary["behaviour_classes"] = summarise(groups)
    summary["classes"] = len(summary["behaviour_classes"])
    return summary


_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|\S*\d\S*")


def rejection_reasons(rejected: list[Any]) -> list[dict[str, Any]]:
    """Rejected mutants counted by operator and reason, most frequent first; the parts of a reason that name
    one memory, value or id (quoted, or with a digit in them) are replaced by ``…`` so that one reason is one
    row. A reason that is a state-level failure (the operation changed more than it asked) is marked."""
    counts: Counter[tuple[str, str]] = Counter()
    for m in rejected:
        counts[(m.operator or "?", _VARIABLE.sub("…", m.rejection_reason or "(no reason recorded)"))] += 1
    return [{"operator": op, "reason": why, "count": n, "state_failure": "changed more than it asked" in why}
            for (op, why), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


#: a campaign on another host whose heartbeat is older than this is taken for dead
STALE_SECONDS = 15 * 60


def _liveness(rec: Any, campaign_dir: Path) -> dict[str, Any]:
    """How the campaign ended, or whether it still runs. The store says ``running`` until the campaign
    records its end; if its process is gone (this host) or its heartbeat stopped long ago (another host) it
    is ``dead``: killed, or its end could not be recorded — then summary.json may still say how it ended."""
    from datetime import datetime, timezone

    from ufuzz.engine.ending import RUNNING, process_alive

    facts: dict[str, Any] = {"recorded_status": rec.status, "message": rec.message, "pid": rec.pid,
                             "host": rec.host, "heartbeat_at": rec.heartbeat_at, "resumes": rec.resumes}
    if rec.status != RUNNING:
        facts["alive"] = False
        return facts
    age = (datetime.now(timezone.utc) - rec.heartbeat_at).total_seconds() if rec.heartbeat_at else None
    facts["heartbeat_age_seconds"] = None if age is None else round(age, 1)
    alive = process_alive(rec.pid, rec.host)
    if alive is None:  # another host: the heartbeat tells
        alive = age is not None and age < STALE_SECONDS
    facts["alive"] = alive
    if alive:
        return facts
    facts["status"] = "dead"
    try:
        final = json.loads((campaign_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        final = {}
    if isinstance(final, dict) and final.get("campaign") == rec.id and final.get("status") not in (None, RUNNING):
        # the process wrote how it ended but could not record it in the store (e.g. a locked database)
        facts["status"] = final["status"]
        facts["message"] = final.get("message")
        facts["recorded_status"] = f"{rec.status} (the end could not be recorded in the store)"
    return facts


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
    read = {True: "; writes read back", False: "; writes not read back"}.get(j.get("readback"), "")
    counts = j.get("readbacks") if j.get("readback") else None
    if isinstance(counts, dict):
        read += f" ({counts.get('read', 0)}"
        if counts.get("inconclusive"):
            read += (f", {counts['inconclusive']} of them inconclusive: this system does not rank two memories of "
                     "one text together, so the comparison said nothing")
        read += ")"
    return f"judging    {sel}; {resp}{read}"


def _short_results(counts: dict[int, int], k: Any) -> dict[str, int] | None:
    """Executions given back fewer than ``k`` memories, none included (None when there are none, or when no
    execution of the campaign got anything back: hidden retrieval). A relevance cut-off or a state holding fewer
    explains it; so does a product that returns one result too few whenever it has more (held-out walkthrough:
    812 of 1,000 searches gave 4 of 5, and nothing said so)."""
    if not isinstance(k, int) or not any(n for n in counts if n > 0):
        return None
    short = sum(c for n, c in counts.items() if n < k)
    return {"k": k, "short": short, "executions": sum(counts.values())} if short else None


def _probe_groups(records: list[Any]) -> list[dict[str, Any]]:
    """The system probes' findings (:mod:`ufuzz.engine.probes`) by behaviour class: how many, one example — shown
    apart from the seeds' own baseline failures, since one behaviour of the search shows on every seed alike."""
    groups: dict[str, dict[str, Any]] = {}
    for f in records:
        if f.origin != "baseline" or f.kind not in PROBE_KINDS:
            continue
        c = class_of("", f.stage, f.kind)
        g = groups.setdefault(c.id, {"class": c.id, "title": c.title, "kind": f.kind, "count": 0,
                                     "what": "memories" if f.kind == UNREACHABLE else "seeds",
                                     "example": str(f.detail.get("reason") or ""), "key": f.failure_key})
        g["count"] += 1
    return list(groups.values())


def _baseline_lines(verdict: Any) -> list[str]:
    """A ``--baseline`` run's verdict: the counts by status and, by name, every behaviour that is not known —
    what made the night red (walkthrough: only the console of the night's run said which)."""
    if not isinstance(verdict, dict) or not isinstance(verdict.get("behaviour_counts"), dict):
        return []
    n = verdict["behaviour_counts"]
    counts = ", ".join(f"{n.get(s, 0)} {s}" for s in (*STATUSES, "unseen"))
    out = [f"against baseline {verdict.get('corpus') or '?'} (by behaviour): {counts} — the night "
           f"{'fails' if verdict.get('failed') else 'passes'}"]
    for b in verdict.get("behaviours") or ():
        if isinstance(b, dict) and b.get("status") not in (None, "known"):
            out.append(f"  {str(b['status']).upper():12s} {b.get('id')}: {b.get('title')} — {b.get('unique')} unique "
                       f"failures, {b.get('causes')} causes (e.g. {str(b.get('example') or '')[:12]})")
    return out


def render_status(st: dict[str, Any]) -> str:
    lines = [
        f"campaign   {st['campaign']}  ({st['status']}, strategy {st.get('strategy')}, seed {st.get('seed')}"
        + (f", search {st['search']}" if st.get("search") else "") + ")",
        f"state      {_state_line(st)}",
        f"backend    {st['backend'].get('backend')}  " + _backend_words(st["backend"]),
        f"executions {st['executions']} of budget {st.get('budget')}  "
        f"(parents {st['parent_executions']}, mutants {st['mutant_executions']}"
        + (f", controls {st['control_executions']}" if st.get("control_executions") else "")
        + f", errored {st['failed_executions']}: executions that got no result)",
        *(["  by operator: " + ", ".join(f"{op} {n}" for op, n in st["executions_by_operator"].items())]
          if st.get("executions_by_operator") else []),
        *([f"  the system's own time per execution (its retrieval and answer calls): "
           f"{st['execution_seconds'] * 1000:.1f} ms on average"] if st.get("execution_seconds") is not None else []),
        *([f"  short results: {sr['short']} of {sr['executions']} executions got fewer than k={sr['k']} memories back "
           "(a relevance cut-off, a state holding fewer — or a search that returns too few)"]
          if (sr := st.get("short_results")) else []),
        f"mutants    {st['mutants']['valid']} valid"
        + (f" ({st['mutants']['unjudged']} not executed: no check of theirs could fail here)"
           if st["mutants"].get("unjudged") else "")
        + f", {st['mutants']['rejected']} rejected; retained {st['retained']}",
        _coverage_line(st),
        f"errors     {st['errors']} (error records: every backend fault or lost lane job, of any step — an "
        "execution, a build, a state operation, a release)",
    ]
    if st.get("worker"):
        w = st["worker"]
        lines.append(f"worker     {w['starts']} start(s), {w['recycles']} recycled, {w['crashes']} crashed, "
                     f"{w['rebuilds']} states rebuilt, peak {w['peak_rss_mb']:.0f} MB")
    if st.get("llm"):
        lines.append(llm_line(st["llm"]))
    lines.append(_judging_line(st.get("judging")))
    lines.append(f"unique failures {st['unique_failures']} ({st.get('causes', 0)} causes, "
                 f"{st.get('classes', 0)} behaviour classes)")
    if st["failure_groups"]:
        lines.append(f"  {'operator':16s} {'level':10s} {'kind':28s} {'unique':>6s} {'causes':>6s} {'seen':>6s}")
        for g in st["failure_groups"]:
            lines.append(f"  {g['operator'] or '?':16s} {g['stage']:10s} {g['kind']:28s} {g['unique']:6d} "
                         f"{g.get('causes', 0):6d} {g['occurrences']:6d}")
    if st.get("behaviour_classes"):
        lines.append(f"behaviour classes {st['classes']} (what a developer fixes: one behaviour, many facts)")
        lines.append(f"  {'class':40s} {'causes':>6s} {'unique':>6s} {'seen':>6s}  behaviour")
        for c in st["behaviour_classes"]:
            lines.append(f"  {c['class']:40s} {c['causes']:6d} {c['unique']:6d} {c['occurrences']:6d}  {c['title']}")
    lines.extend(_baseline_lines(st.get("baseline")))
    lines.extend(accuracy_lines(st.get("benchmark_accuracy")))
    rej = st.get("rejections") or []
    if rej:
        lines.append(f"rejections {sum(r['count'] for r in rej)} by reason (not tests; "
                     "'state failure' rows are also failures above)")
        for r in rej[:12]:
            mark = "  [state failure]" if r.get("state_failure") else ""
            lines.append(f"  {r['operator'] or '?':16s} {r['count']:6d}  {r['reason']}{mark}")
        if len(rej) > 12:
            lines.append(f"  ... {len(rej) - 12} more reasons (ufuzz status --json)")
    base = st.get("baseline_failures") or []
    own = [b for b in base if b["kind"] not in PROBE_KINDS]
    probed = st.get("system_probes") or []
    lines.append(f"baseline failures {len(base)} (seeds failing their own reference"
                 + (f": {len(own)}, and {len(base) - len(own)} found by the system probes" if probed else "")
                 + _reasked_words(own) + "; not in unique failures)")
    for p in probed:
        lines.append(f"  probe {p['class']:30s} {p['count']:4d} {p['what']}  {p['title']}")
        lines.append(f"    e.g. {p['example']}  (ufuzz failures show {p['key'][:12]})")
    for b in own:
        lines.append(f"  {baseline_who(b):16s} {b['level']:10s} {b['kind']:28s} {b.get('query') or ''}")
    if st.get("reader_failures"):
        lines.append(f"reader failures {st['reader_failures']} (the opt-in top-evidence reader's, not the "
                     "memory system's)")
    return "\n".join(lines)


def _reasked_words(own: list[dict[str, Any]]) -> str:
    """How many of the baseline failures are questions re-asked on a seed's unmutated state (see :func:`baseline_who`)."""
    n = reasked_count(own)
    return f"; {n} of them a question re-asked on a seed's unmutated state after it abstained" if n else ""


def _reasked(b: dict[str, Any]) -> bool:
    """Whether baseline failure ``b`` is a question re-asked on a seed's unmutated state after that seed abstained (a
    target change of a LoCoMo adversarial question), not the seed's own: its case is not the seed (a summary written
    before the case was recorded has none: the seed's)."""
    return (b.get("case") or b["seed"]) != b["seed"]


def reasked_count(rows: list[dict[str, Any]]) -> int:
    """How many baseline failures are re-asked questions (:func:`_reasked`)."""
    return sum(map(_reasked, rows))


def baseline_who(b: dict[str, Any]) -> str:
    """Whose baseline failure ``b`` is: its seed, or a re-asked question's case (:func:`_reasked`) named with the seed
    it came from, so that the question listed beside it is not read as the seed's own (hand audit, LoCoMo)."""
    return f"{b['case']} (re-asked, seed {b['seed']})" if _reasked(b) else b["seed"]


def _coverage_line(st: dict[str, Any]) -> str:
    """Memories reached, or — retrieval hidden — that coverage is not observed (never "0/418")."""
    cov, j = st["coverage"], st.get("judging") or {}
    if j and not j.get("selection"):
        return (f"coverage   not observed: retrieval {j.get('retrieval') or 'hidden'} (the campaign follows "
                "unseen responses instead)")
    return (f"coverage   {cov['reached']}/{cov['total']} memories ({100 * cov['ratio']:.1f}%)"
            + (f", +{cov['extra']} added by mutants" if cov.get("extra") else ""))


def llm_line(llm: dict[str, Any]) -> str:
    """The LLM use of a campaign in one line: calls, cache hits, tokens, estimated cost, rate limiting."""
    text = (f"llm        {llm.get('calls_made', 0)} calls ({llm.get('cache_hits', 0)} from cache, "
            f"{llm.get('errors', 0)} failed, {llm.get('retries', 0)} retried)")
    if "total_tokens" in llm:
        text += (f"; {llm['total_tokens']} tokens ({llm.get('prompt_tokens', 0)} prompt, "
                 f"{llm.get('completion_tokens', 0)} completion)")
        cost = llm.get("cost_usd")
        text += f", est. ${cost:.4f}" if cost is not None else ", cost unknown (no --llm-price)"
    if llm.get("rate_limited"):
        text += f"; {llm['rate_limited']} rate-limit answers waited out"
    return text
def _pct(cell: dict[str, Any]) -> str:
    acc = cell.get("accuracy")
    return f"{cell['correct']}/{cell['judged']}" + (f" = {100 * acc:.1f}%" if acc is not None else "")


def accuracy_lines(acc: dict[str, Any] | None) -> list[str]:
    """The benchmark's own accuracy on the seeds (their unmutated responses judged by its criterion), per
    benchmark and question type: the figure to set beside published results."""
    if not acc:
        return []
    lines = ["benchmark accuracy (the benchmark's own judging of the unmutated seeds; compare with published "
             "results)"]
    for bench, a in sorted(acc.items()):
        judged = sum(cell["judged"] for cell in a.get("by_type", {}).values())
        if not judged:  # a campaign with no response level judges no seed: no accuracy to set beside anything
            lines.append(f"  {bench:28s} not judged (no response of its {a['seeds']} seeds was judged: the "
                         "campaign has no response level)")
            continue
        lines.append(f"  {bench:28s} {_pct(a)}  ({judged} of {a['seeds']} seeds judged, by {a['judge']})")
        for qtype, cell in a.get("by_type", {}).items():
            note = "" if cell.get("in_score", True) else "  (not in the published score)"
            lines.append(f"    {qtype:26s} {_pct(cell)}{note}")
    return lines


def _state_line(st: dict[str, Any]) -> str:
    status = st["status"]
    who = f"process {st.get('pid')} on {st.get('host')}" if st.get("pid") else "its process"
    age = st.get("heartbeat_age_seconds")
    beat = f"last heartbeat {age:.0f} s ago" if age is not None else "no heartbeat"
    if status == "running":
        return f"running ({who}, {beat})"
    if status == "dead":
        return (f"dead: {who} is gone ({beat}) and the campaign never recorded an end (killed?); "
                "continue it with `ufuzz run --resume DIR`")
    text = {"budget_spent": "ended: budget spent", "exhausted": "ended: nothing left to try (exhausted)",
            "time_limit": "ended: time limit reached", "interrupted": "ended: interrupted",
            "llm_budget_spent": "ended: LLM token budget spent",
            "error": "ended in error"}.get(status, f"ended: {status}")
    if st.get("message"):
        text += f": {st['message']}"
    if status in ("interrupted", "error", "exhausted", "time_limit", "llm_budget_spent"):
        text += " (`ufuzz run --resume DIR` continues it)"
    if st.get("resumes"):
        text += f"; resumed {st['resumes']} time(s)"
    return text


#: the facts that say which system it is, first on the backend line (before it is cut): a product's name, URL and
#: operations, a library's retrieval mode and model; file paths, whose length depends on the machine, last
_IDENTITY = ("product", "base_url", "retrieval", "update_policy", "model", "write_mode", "operations")
_LAST = ("config",)


def _backend_words(facts: dict[str, Any], width: int = 160) -> str:
    """The backend's scalar facts as key=value words — the identifying ones first (:data:`_IDENTITY`), then the rest
    by name — nested ones (e.g. a product's operations) by their keys only, cut at ``width`` characters: one
    readable line (``ufuzz status --json`` has every fact)."""
    words = []
    order = {k: i for i, k in enumerate(_IDENTITY)} | {k: len(_IDENTITY) + 1 + i for i, k in enumerate(_LAST)}
    for k, v in sorted(facts.items(), key=lambda kv: (order.get(kv[0], len(_IDENTITY)), kv[0])):
        if k == "backend" or v is None:
            continue
        words.append(f"{k}=[{', '.join(map(str, v))}]" if isinstance(v, dict) else f"{k}={v}")
    line = " ".join(words)
    return line if len(line) <= width else line[: width - 1] + "… (--json for all)"

