"""``ufuzz report``: one self-contained HTML file of a campaign.

Sections: a summary, unique failures, causes and coverage over executions (from the campaign's
``plot_data.csv``; campaigns recorded before it existed get the unique-failure curve from the failures'
first execution), yields per operator, the causes, and a browser of every failure (each a ``<details>``
element with everything ``ufuzz failures show`` prints), with filters by operator, kind, level and text.

Nothing is loaded from anywhere: charts are inline SVG (matplotlib), the style and the filter script are inline,
and a Content-Security-Policy allows no network at all and no script but the report's own (by its hash).
Every text that comes from the campaign — memory texts, queries, responses, ids — is HTML-escaped: memory text is
untrusted input, and a ``<script>`` or ``onerror=`` in a memory must show as text, never run (tested in a real
headless browser).
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ufuzz.corpus.campaign import CampaignData, case_of, load_campaign
from ufuzz.corpus.store import CorpusStore
from ufuzz.engine.plotdata import read_plot_data
from ufuzz.model import FuzzCase, Reference
from ufuzz.oracles.expectations import SELECTION, selection
from ufuzz.oracles.verdict import deleted_by
from ufuzz.reports.failures import (
    baseline_of,
    control_note,
    failure_rows,
    failure_views,
    group_by_cause,
    group_by_class,
)
from ufuzz.reports.plot import Panel, Series, bar_chart_svg, inline_svg, line_chart_svg
from ufuzz.reports.status import baseline_who, campaign_status, llm_line, reasked_count
from ufuzz.triage.baseline import STATUSES

__all__ = ["build_report", "write_report"]


def esc(value: Any) -> str:
    """HTML-escaped text of any value (quotes too: safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1180px;padding:0 18px 40px;
color:#1d1d1f;line-height:1.4}
h1{font-size:1.5em;margin:18px 0 4px}h2{font-size:1.2em;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0 12px;font-size:.9em}td,th{border:1px solid #ddd;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f4f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666}.chart svg{max-width:100%;height:auto}code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:.92em}details{border:1px solid #ddd;border-radius:4px;margin:4px 0;padding:2px 8px}
details[open]{background:#fcfcfd}summary{cursor:pointer}.tag{display:inline-block;border-radius:3px;padding:0 5px;
font-size:.8em;margin-left:3px;background:#eee}.t-supporting{background:#d8f3dc}.t-invalidated{background:#ffe5b4}
.t-deleted{background:#ffd6d6}.t-offending{background:#ff9b9b;font-weight:bold}.t-new{background:#ffd6d6}
.t-known{background:#e6e6e6}.t-unconfirmed{background:#fff1c2}.t-worse{background:#ff9b9b}.t-regressed{background:#ff9b9b}.side{display:grid;grid-template-columns:1fr 1fr;
gap:12px}.box{border-left:3px solid #ccc;padding-left:8px}.filters input,.filters select{margin-right:8px}
.kv td:first-child{color:#555;white-space:nowrap}.chart{margin:8px 0}.wide svg{width:100%}
.facts .facts{margin:0}h3{font-size:1.05em;margin:16px 0 6px}pre{white-space:pre-wrap;word-break:break-word;margin:2px 0}
"""

# The report's only script: filters the failure browser. It reads data-* attributes and the inputs' values and
# only sets `hidden` and textContent, so no campaign text is ever parsed as HTML.
_SCRIPT = """
(function(){
  var q=document.getElementById('f-text'),op=document.getElementById('f-operator'),
      kind=document.getElementById('f-kind'),lvl=document.getElementById('f-level'),
      base=document.getElementById('f-baseline'),
      count=document.getElementById('f-count'),items=document.querySelectorAll('details.failure');
  function apply(){
    var t=q.value.toLowerCase(),n=0;
    for(var i=0;i<items.length;i++){
      var d=items[i],ok=(!op.value||d.dataset.operator===op.value)&&(!kind.value||d.dataset.kind===kind.value)
        &&(!lvl.value||d.dataset.level===lvl.value)&&(!base.value||d.dataset.baseline===base.value)
        &&(!t||d.textContent.toLowerCase().indexOf(t)>=0);
      d.hidden=!ok;if(ok){n++;}
    }
    count.textContent=n+' of '+items.length+' shown';
  }
  [q,op,kind,lvl,base].forEach(function(e){e.addEventListener('input',apply);});
  document.body.setAttribute('data-report-ready','1');
  apply();
})();
"""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


# ====================================================================== sections


def _kv(rows: list[tuple[str, Any]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows) \
        + "</table>"


def _table(head: list[str], rows: list[list[Any]], numeric: set[int] = frozenset()) -> str:
    out = ["<table><tr>", *(f"<th>{esc(h)}</th>" for h in head), "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="n">{esc(c)}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _facts_table(d: dict[str, Any]) -> str:
    """A backend's facts (``describe()``) as a table; nested mappings as nested tables, lists one per line."""
    def cell(v: Any) -> str:
        if isinstance(v, dict):
            return _facts_table(v) if v else "<span class='muted'>none</span>"
        if isinstance(v, (list, tuple)):
            return "<br>".join(esc(x) for x in v) or "<span class='muted'>none</span>"
        return "<span class='muted'>none</span>" if v is None else f"<code>{esc(v)}</code>"

    return ("<table class='kv facts'>" + "".join(f"<tr><td>{esc(k)}</td><td>{cell(v)}</td></tr>"
                                                  for k, v in d.items()) + "</table>")


def _judging_text(j: dict[str, Any] | None) -> str:
    """How failures were decided: the levels judged, the responder and the judge (``status``'s judging line)."""
    from ufuzz.reports.status import _judging_line

    return _judging_line(j).removeprefix("judging").strip()


def _hidden(st: dict[str, Any]) -> bool:
    j = st.get("judging") or {}
    return bool(j) and not j.get("selection")


def distinct_responses(data: CampaignData) -> list[tuple[int, int]]:
    """(execution seq, distinct normalised responses so far) whenever the count grows: what a campaign with
    hidden retrieval observes instead of coverage (its feedback keeps mutants with unseen responses)."""
    from ufuzz.engine.feedback import response_hash

    store = CorpusStore(data.url)
    try:
        execs = store.executions(data.campaign_id)
    finally:
        store.close()
    seen: set[str] = set()
    out = []
    for r in execs:
        ex = r.execution
        if ex.error is None and (ex.response is not None or ex.abstained):
            h = response_hash(ex.response, ex.abstained)
            if h not in seen:
                seen.add(h)
                out.append((r.seq, len(seen)))
    return out


def last_new_find(plot: list[dict[str, float]]) -> tuple[float, float] | None:
    """(executions, seconds) at which the unique-failure count last grew, from plot_data.csv."""
    last = None
    prev = 0.0
    for p in plot:
        if p["unique_failures"] > prev:
            last = (p["executions"], p["elapsed_s"])
        prev = p["unique_failures"]
    return last


def _summary(st: dict[str, Any], data: CampaignData, plot: list[dict[str, float]],
             responses: list[tuple[int, int]] | None = None) -> str:
    cov = st["coverage"]
    elapsed = plot[-1]["elapsed_s"] if plot else None
    if _hidden(st):
        n = responses[-1][1] if responses else 0
        j = st.get("judging") or {}
        seen = (f"not observed: retrieval {j.get('retrieval') or 'hidden'}; {n} distinct responses seen "
                "(what the campaign's feedback follows instead)")
    else:
        seen = f"{cov['reached']}/{cov['total']} memories ({100 * cov['ratio']:.1f}%)"
    rows = [("campaign", st["campaign"]), ("status", st["status"]), ("backend", data.backend),
            ("strategy / seed", f"{st.get('strategy')} / {st.get('seed')}"),
            ("executions", f"{st['executions']} of budget {st.get('budget')} (parents {st['parent_executions']}, "
                           f"mutants {st['mutant_executions']}, errored {st['failed_executions']})"),
            ("mutants", f"{st['mutants']['valid']} valid, {st['mutants']['rejected']} rejected, "
                        f"{st['retained']} retained"),
            ("coverage", seen), ("judging", _judging_text(st.get("judging"))),
            ("unique failures", f"{st['unique_failures']} ({st.get('causes', 0)} causes)"),
            ("baseline failures", f"{len(st.get('baseline_failures') or [])} (seeds failing their own reference; "
                                  "not in unique failures)"),
            ("errors", st["errors"]), ("started", st.get("started_at")), ("finished", st.get("finished_at"))]
    if elapsed is not None:
        rate = f", {st['executions'] / elapsed:.1f} executions/s" if elapsed > 0 else ""
        rows.append(("wall time", f"{elapsed:.1f} s{rate}"))
        last = last_new_find(plot)
        rows.append(("last new find", "none" if last is None else
                     f"at execution {last[0]:.0f} ({last[1]:.1f} s); nothing new in the last "
                     f"{st['executions'] - last[0]:.0f} executions ({elapsed - last[1]:.1f} s)"))
    if st.get("llm"):
        rows.append(("LLM use", llm_line(st["llm"]).removeprefix("llm").strip()))
    facts = {k: v for k, v in data.backend_info.items() if k != "backend"}
    return ("<h2 id='summary'>Summary</h2>" + _kv(rows)
            + "<h3>Backend facts</h3>" + (_facts_table(facts) if facts else "<p class='muted'>none recorded</p>")
            + _accuracy(st.get("benchmark_accuracy")))


def _accuracy(acc: dict[str, Any] | None) -> str:
    """The benchmark's own accuracy on the seeds, per benchmark and question type (see ``ufuzz status``)."""
    if not acc:
        return ""
    rows: list[list[Any]] = []
    for bench, a in sorted(acc.items()):
        if not any(cell["judged"] for cell in a.get("by_type", {}).values()):
            rows.append([esc(bench), "none judged (no response level)", 0, 0, "", ""])
            continue
        rows.append([esc(bench), "all scored", a["correct"], a["judged"], _percent(a.get("accuracy")),
                     esc(a["judge"])])
        for qtype, cell in a.get("by_type", {}).items():
            rows.append(["", esc(qtype) + ("" if cell.get("in_score", True) else " (not in the published score)"),
                         cell["correct"], cell["judged"], _percent(cell.get("accuracy")), ""])
    return ("<h3>Benchmark accuracy on the seeds</h3><p>The benchmark's own judging of the unmutated seeds' "
            "responses, to compare with published results; the fuzzing findings are above and below.</p>"
            + _table(["benchmark", "question type", "correct", "judged", "accuracy", "judged by"], rows,
                     numeric={2, 3}))


def _percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def _baseline_failures(st: dict[str, Any]) -> str:
    """The seeds' baseline failures (a seed failing its own reference): findings about the system that no
    mutation caused, listed as ``status`` lists them."""
    base = st.get("baseline_failures") or []
    if not base:
        return ("<h2 id='baseline-failures'>Baseline failures</h2><p class='muted'>none: every seed passes its own "
                "reference</p>")
    rows = [[esc(baseline_who(b)), esc(b["level"]), esc(b["kind"]), f"<q>{esc(b.get('query'))}</q>", esc(b.get("reason"))]
            for b in base]
    reasked = reasked_count(base)
    return (f"<h2 id='baseline-failures'>Baseline failures</h2><p class='muted'>{len(base)} questions fail their own "
            "reference as asked on a checkpoint's own state: seeds before any mutation"
            + (f", and {reasked} questions re-asked on a seed's unmutated state after it abstained" if reasked else "")
            + " — findings about the system, counted apart from the unique failures (`ufuzz failures list DIR "
            "--all`).</p>" + _table(["case", "level", "kind", "question", "reason"], rows))


def _rate(plot: list[dict[str, float]], points: int = 24) -> tuple[list[float], list[float]]:
    """Executions per second over time, each point the average over one of ``points`` equal time windows
    (plot rows come every few executions or on a heartbeat, too unevenly for a per-row rate to read)."""
    if len(plot) < 2 or plot[-1]["elapsed_s"] <= plot[0]["elapsed_s"]:
        return [], []
    t0, t1 = plot[0]["elapsed_s"], plot[-1]["elapsed_s"]
    width = (t1 - t0) / points
    xs, ys = [], []
    j = 0
    for i in range(1, points + 1):
        end = t0 + i * width
        k = j
        while k + 1 < len(plot) and plot[k + 1]["elapsed_s"] <= end + 1e-9:
            k += 1
        if k > j:
            a, b = plot[j], plot[k]
            xs.append(b["elapsed_s"])
            ys.append((b["executions"] - a["executions"]) / (b["elapsed_s"] - a["elapsed_s"]))
            j = k
    return xs, ys


def _chart(panel: Panel, name: str) -> str:
    return "<div class='chart wide'>" + inline_svg(line_chart_svg([panel], panel_width=10.5, panel_height=3.3),
                                              name) + "</div>"


def _curves(plot: list[dict[str, float]], data: CampaignData, rows: list[dict[str, Any]],
            responses: list[tuple[int, int]] | None = None) -> str:
    charts = []
    if plot:
        xs = [p["executions"] for p in plot]
        ts = [p["elapsed_s"] for p in plot]
        found = Panel("Unique failures and causes over executions", "executions", "count", step=True, series=[
            Series("unique failures", xs, [p["unique_failures"] for p in plot])])
        timed = Panel("Unique failures and causes over time", "seconds", "count", step=True, series=[
            Series("unique failures", ts, [p["unique_failures"] for p in plot])])
        if any(p["causes"] for p in plot):
            found.series.append(Series("causes", xs, [p["causes"] for p in plot]))
            timed.series.append(Series("causes", ts, [p["causes"] for p in plot]))
        charts += [_chart(found, "found"), _chart(timed, "timed")]
        rx, ry = _rate(plot)
        if rx:
            charts.append(_chart(Panel("Executions per second", "seconds", "executions / s", ymin=0.0,
                                       series=[Series("executions/s", rx, ry)]), "rate"))
        note = ""
    else:
        seqs = sorted(r["first_seq"] or 0 for r in rows)
        charts.append(_chart(Panel("Unique failures", "executions", "count", step=True,
                                   series=[Series("unique failures", [0, *seqs], list(range(len(seqs) + 1)))]),
                             "found"))
        note = "<p class='muted'>No plot_data.csv in this campaign directory (recorded before it was written): " \
               "the curve comes from each failure's first execution; time and coverage over time are not " \
               "available.</p>"
    if responses is not None:
        if responses:
            charts.append(_chart(Panel("Distinct responses (retrieval hidden: no coverage)", "executions",
                                       "distinct responses", step=True,
                                       series=[Series("distinct responses", [0, *[s for s, _ in responses]],
                                                      [0, *[n for _, n in responses]])]), "responses"))
        else:
            note += "<p class='muted'>Retrieval hidden and no response recorded.</p>"
    elif plot:
        total = max(p["coverage_total"] for p in plot) or 1
        charts.append(_chart(Panel("Coverage", "executions", "memories reached / total", ymin=0.0, ymax=1.0,
                                   step=True, series=[Series("coverage", [p["executions"] for p in plot],
                                                             [p["coverage"] / total for p in plot])]), "curves"))
    return f"<h2 id='curves'>Over executions and time</h2>{note}{''.join(charts)}"


def _yields(data: CampaignData, rows: list[dict[str, Any]]) -> str:
    store = CorpusStore(data.url, readonly=True)
    try:
        mutants = store.mutants(data.campaign_id)
    finally:
        store.close()
    valid = Counter(m.operator for m in mutants if m.valid)
    rejected = Counter(m.operator for m in mutants if not m.valid)
    uf = Counter(r["operator"] for r in rows)
    causes = {op: len({r["cause"] for r in rows if r["operator"] == op}) for op in uf}
    ops = sorted(set(valid) | set(rejected) | set(uf), key=lambda o: (-(uf.get(o, 0)), o or ""))
    table = _table(["operator", "valid mutants", "rejected", "unique failures", "causes", "failures / 100 valid"],
                   [[esc(o), valid.get(o, 0), rejected.get(o, 0), uf.get(o, 0), causes.get(o, 0),
                     f"{100 * uf.get(o, 0) / valid[o]:.1f}" if valid.get(o) else "-"] for o in ops],
                   numeric={1, 2, 3, 4, 5})
    chart = ""
    if ops:
        chart = "<div class='chart'>" + inline_svg(bar_chart_svg(
            [str(o) for o in ops], {"unique failures": [uf.get(o, 0) for o in ops],
                                    "causes": [causes.get(o, 0) for o in ops]},
            xlabel="count"), "yields") + "</div>"
    return f"<h2 id='yields'>Yields per operator</h2>{table}{chart}"


def _causes(rows: list[dict[str, Any]]) -> str:
    groups = group_by_cause(rows)
    body = [[f"<span class='mono'>{esc(g['cause'][:12])}</span>", esc(g["operator"]), esc(g["stage"]), esc(g["kind"]),
             g["unique"], g["occurrences"], len(g["seeds"]), esc(", ".join(g["offending"])),
             f"<a href='#f-{esc(g['example'])}'>{esc(g['example'][:12])}</a>"] for g in groups]
    return (f"<h2 id='causes'>Causes</h2><p class='muted'>{len(groups)} causes behind {len(rows)} unique failures "
            "(one bug, however many wordings or targets showed it).</p>"
            + _table(["cause", "operator", "level", "kind", "unique", "seen", "seeds", "offending", "example"], body,
                     numeric={4, 5, 6}))


def _classes(rows: list[dict[str, Any]]) -> str:
    groups = group_by_class(rows)
    body = [[f"<span class='mono'>{esc(g['class'])}</span>", esc(g["title"]), len(g["causes"]), g["unique"],
             g["occurrences"], len(g["seeds"]), esc(", ".join(g["operators"])),
             f"<a href='#f-{esc(g['example'])}'>{esc(g['example'][:12])}</a>"] for g in groups]
    return (f"<h2 id='classes'>Behaviour classes</h2><p class='muted'>{len(groups)} behaviours of the system behind "
            f"{len({r['cause'] for r in rows})} causes (one behaviour, however many facts showed it: the unit a "
            "developer fixes).</p>"
            + _table(["class", "behaviour", "causes", "unique", "seen", "seeds", "operators", "example"], body,
                     numeric={2, 3, 4, 5}))


def _ops_html(ops: list[dict[str, Any]]) -> str:
    if not ops:
        return "<p class='muted'>none: the query changed, the state did not</p>"
    items = []
    for o in ops:
        dated = f" <span class='muted'>(dated {esc(o['timestamp'])})</span>" if o.get("timestamp") else ""
        if o["op"] == "add":
            items.append(f"<li>add <code>{esc(o.get('memory_id'))}</code>{dated}: <q>{esc(o.get('text'))}</q></li>")
        elif o["op"] == "update":
            items.append(f"<li>update <code>{esc(o['target'])}</code>: <q>{esc(o.get('target_text'))}</q> → "
                         f"<code>{esc(o.get('memory_id'))}</code>{dated}: <q>{esc(o.get('text'))}</q></li>")
        else:
            items.append(f"<li>{esc(o['op'])} <code>{esc(o['target'])}</code>: <q>{esc(o.get('target_text'))}</q></li>")
    return "<ul>" + "".join(items) + "</ul>"


def _ref_html(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "<span class='muted'>no stored reference</span>"
    parts = ["abstain" if ref.get("abstain") else f"answer <q>{esc(ref.get('answer'))}</q>"]
    for k in ("supporting", "invalidated", "aliases", "stale_answers"):
        if ref.get(k):
            parts.append(f"{esc(k)}: {esc(', '.join(map(str, ref[k])))}")
    return "; ".join(parts)


def _side_html(label: str, case: dict[str, Any], hidden: bool = False) -> str:
    if case.get("id") is None:
        return f"<div class='box'><b>{esc(label)}</b>: not rebuildable</div>"
    ex = case.get("execution")
    out = [f"<div class='box'><b>{esc(label)}</b> <code>{esc(case['id'])}</code>",
           f"<p>question: <q>{esc(case.get('query'))}</q></p>", f"<p>reference: {_ref_html(case.get('reference'))}</p>"]
    if ex is None:
        out.append("<p class='muted'>no recorded execution</p>")
    else:
        if ex.get("error"):
            out.append(f"<p>backend error: <code>{esc(ex['error'])}</code></p>")
        native = any(t["native_id"] not in (None, t["id"]) for t in ex["top"])
        head = ["#", "id", *(["product id"] if native else []), "score", "text"]
        rows = [[t["rank"], f"<code>{esc(t['id'])}</code>"
                 + "".join(f"<span class='tag t-{esc(m)}'>{esc(m)}</span>" for m in t["marks"]),
                 *([f"<code>{esc(t['native_id'])}</code>"] if native else []), f"{t['score']:.3f}", esc(t["text"])]
                for t in ex["top"]]
        empty = ("<p class='muted'>retrieval hidden: the campaign observes only the response</p>" if hidden
                 else "<p class='muted'>nothing retrieved</p>")
        out.append(_table(head, rows, numeric={0}) if rows else empty)
        if ex.get("response") is not None:
            who = f" ({esc(ex['responder'])})" if ex.get("responder") else ""
            out.append(f"<p>response{who}: <q>{esc(ex['response'])}</q></p>")
    out.append("</div>")
    return "".join(out)


def _side_effects_html(v: dict[str, Any]) -> str:
    """A state-level failure's changes beyond the operation (the state's listing before and after it)."""
    changes = v.get("side_effects") or []
    if not changes:
        return ""
    items = []
    if v.get("kind") == "write_not_found":
        for c in changes:
            top = ", ".join(c.get("top_ids") or []) or "nothing"
            at = f"at rank {c['rank']}" if c.get("rank") else "not returned"
            items.append(f"<li><code>{esc(c.get('memory'))}</code> {esc(at)} in a search for its own text "
                         f"<q>{esc(c.get('after', ''))}</q>; a fresh copy of it at rank {esc(c.get('twin_rank'))} "
                         f"(the search returned: <code>{esc(top)}</code>)</li>")
        return ("<p>read back right after the operation (get/list show the memory written; a search for its own "
                f"words, on a copy with a fresh memory of the same text and time, does not find it beside that "
                f"copy):</p><ul>{''.join(items)}</ul>")
    for c in changes:
        was = f" was <q>{esc(c['before'])}</q>" if c.get("before") is not None else ""
        now = f" now <q>{esc(c['after'])}</q>" if c.get("after") is not None else ""
        items.append(f"<li><code>{esc(c.get('memory'))}</code> {esc(c.get('change'))}{was}{now}</li>")
    return ("<p>what else changed (found by the operation's verification through list/get, before any "
            f"retrieval; the mutant was not executed):</p><ul>{''.join(items)}</ul>")


def _failure_html(v: dict[str, Any]) -> str:
    tag = f"<span class='tag t-{esc(v['baseline'])}'>{esc(v['baseline'])}</span>" if v.get("baseline") else ""
    query = (v.get("mutant") or {}).get("query") or ""
    head = (f"<summary><span class='mono'>{esc(v['key'][:12])}</span> <b>{esc(v['operator'])}</b> "
            f"{esc(v['stage'])}:{esc(v['kind'])}{tag} — <q>{esc(query[:120])}</q></summary>")
    facts = _kv([("key", v["key"]), ("cause", v["cause"]), ("verdict", f"{v['stage']}:{v['kind']}"),
                 ("offending", ", ".join(v["offending"]) or "-"), ("seed / case", f"{v['seed']} / {v['case']}"),
                 ("seen", f"{v['occurrences']}x, first at execution {v['first_seq']}"),
                 ("mutation", v.get("mutation") or "-"),
                 ("checkpoint", f"{v['checkpoint']} ({v['checkpoint_memories']} memories)")])
    inherited = ""
    if v["inherited_ops"]:
        inherited = f"<p>state the parent already had ({len(v['inherited_ops'])} ops):</p>" + _ops_html(v["inherited_ops"])
        if v.get("control"):
            inherited += f"<p class='control'>{esc(control_note(v['control']))}</p>"
    cmds = "".join(f"<pre>{esc(c)}</pre>" for c in v["commands"].values())
    return (f"<details class='failure' id='f-{esc(v['key'])}' data-operator='{esc(v['operator'])}' "
            f"data-kind='{esc(v['kind'])}' data-level='{esc(v['stage'])}' "
            f"data-baseline='{esc(v.get('baseline') or '')}'>{head}{facts}{inherited}"
            f"<p>state change made by the mutation:</p>{_ops_html(v['state_change'])}{_side_effects_html(v)}"
            f"<div class='side'>{_side_html('parent', v['parent'], v.get('retrieval_hidden', False))}"
            f"{_side_html('mutant', v['mutant'], v.get('retrieval_hidden', False))}</div>"
            f"<p>reproduce:</p>{cmds}</details>")


def _baseline_select(views: list[dict[str, Any]]) -> str:
    """The known/new/regressed filter (the marks of ``ufuzz run --baseline``); disabled without a baseline."""
    marks = [m for m in STATUSES if any(v.get("baseline") == m for v in views)]
    if not any(v.get("baseline") for v in views):
        return ("baseline <select id='f-baseline' disabled title='the campaign ran without --baseline'>"
                "<option value=''>no baseline</option></select>")
    return ("baseline <select id='f-baseline'><option value=''>all</option>"
            + "".join(f"<option value='{m}'>{m}</option>" for m in marks) + "</select>")


def _browser(views: list[dict[str, Any]], total: int) -> str:
    def options(field: str) -> str:
        vals = sorted({str(v[field]) for v in views})
        return "<option value=''>all</option>" + "".join(f"<option value='{esc(x)}'>{esc(x)}</option>" for x in vals)

    cut = f" (the first {len(views)} of {total}; `--max-failures` shows more)" if len(views) < total else ""
    filters = (f"<p class='filters'>operator <select id='f-operator'>{options('operator')}</select>"
               f"kind <select id='f-kind'>{options('kind')}</select>level <select id='f-level'>{options('stage')}"
               f"</select>{_baseline_select(views)}text <input id='f-text' type='search' placeholder='id, memory text, query…'>"
               f"<span id='f-count' class='muted'></span></p>")
    return (f"<h2 id='failures'>Failures{esc(cut)}</h2>{filters}" + "".join(_failure_html(v) for v in views))


# ====================================================================== the page


def _compare(rows: list[dict[str, Any]], st: dict[str, Any], data: CampaignData, other_dir: Path,
             other_db: str | None) -> str:
    """``--compare B``: new, still failing and gone causes between this campaign (A) and B; a gone cause is said
    fixed only where A ran the very test that failed in B (:func:`_ran_in`) and did not fail it."""
    from ufuzz.reports.compare import compare_campaigns

    other = load_campaign(other_dir, other_db)
    ost = campaign_status(other_dir, other_db, campaign_id=other.campaign_id)
    b_rows = failure_rows(other)
    cmp = compare_campaigns(rows, b_rows, _setup(st), _setup(ost))
    ran = _ran_in(data, other, {r["key"]: r["case"] for r in b_rows}, cmp["gone"])

    def table(groups: list[dict[str, Any]], link: bool) -> str:
        if not groups:
            return "<p class='muted'>none</p>"
        body = [[f"<span class='mono'>{esc(g['cause'][:12])}</span>", esc(g["operator"]), esc(g["stage"]),
                 esc(g["kind"]), g["unique"], esc(", ".join(g["offending"])),
                 f"<a href='#f-{esc(g['example'])}'>{esc(g['example'][:12])}</a>" if link
                 else f"<span class='mono'>{esc(g['example'][:12])}</span>"]
                + ([_IN_A[ran.get(g["cause"], "")]] if not link else [])
                for g in groups]
        head = ["cause", "operator", "level", "kind", "unique", "offending", "example"]
        return _table(head + ([] if link else ["in A"]), body, numeric={4})

    k = cmp["keys"]
    said = Counter(ran.get(g["cause"], "") for g in cmp["gone"])
    differs = (f"<p><b>The campaigns differ</b> ({esc('; '.join(cmp['differs']))}).</p>" if cmp["differs"] else "")
    gone = (f"<p class='muted'>Of the {len(cmp['gone'])} gone causes, {said['passes']} pass in A on the very test "
            "that failed in B (the same question on the same state, judged again with B's reference): fixed there; "
            f"{said['fails']} still fail in A on that test, though A recorded no failure of the cause; "
            f"{said['']} were not met: a product that changed changes what the search tries, whatever the seed and "
            "budget, so to know whether such a cause is fixed replay B's failure on A's product "
            f"(<code>ufuzz replay {esc(other_dir)} --key KEY</code>, with A's options).</p>" if cmp["gone"] else "")
    return (f"<h2 id='compare'>Compared with {esc(ost['campaign'])}</h2>"
            f"<p>this campaign (A) <code>{esc(st['campaign'])}</code> against B <code>{esc(other_dir)}</code>: "
            f"<b>{len(cmp['new'])} new</b>, {len(cmp['still'])} still failing, {len(cmp['gone'])} gone (fixed or "
            f"not met) causes; by key {k['new']} new, {k['still']} still, {k['gone']} gone.</p>{differs}"
            f"<h3>New in A</h3>{table(cmp['new'], True)}<h3>Still failing</h3>{table(cmp['still'], True)}"
            f"<h3>Gone since B (fixed, or not met)</h3>{gone}{table(cmp['gone'], False)}")


#: what A says of a gone cause of B (:func:`_ran_in`)
_IN_A = {"passes": "passes in A (the same test, judged again)", "fails": "the same test still fails in A",
         "": "not met in A"}


def _ran_in(a: CampaignData, b: CampaignData, b_case: dict[str, str], gone: list[dict[str, Any]]) -> dict[str, str]:
    """Per gone cause of B, from A's own executions of the very test that failed in B — the same question on the
    same state (the state key names the checkpoint and the operations that made it) — judged again with B's
    reference at the selection level, as B judged it: ``fails`` where one of them fails (A recorded no failure of
    the cause, yet it is not fixed: the oracle records a failure once, under the first case that shows it, and
    not where the parent fails too), ``passes`` where A executed the test and every execution passes, none where
    A never asked it — which says nothing of a fix: A's search went elsewhere. A response-level failure is not
    judged again (that needs the campaign's responder and judge): none."""
    b_fail = {f.failure_key: f for f in b.failures}
    wanted: dict[str, list[tuple[FuzzCase, Reference, float | None]]] = {}
    for g in gone:
        for key in g["keys"]:
            f, cid = b_fail.get(key), b_case.get(key, "")
            case = case_of(cid, b.checkpoints, b.seeds, b.mutants)
            ref = b.references.get(cid)
            if f is None or f.stage != SELECTION or isinstance(case, str) or ref is None:
                continue
            wanted.setdefault(g["cause"], []).append((case, ref, f.detail.get("threshold")))
    if not wanted:
        return {}
    store = CorpusStore(a.url, readonly=True)
    try:
        seen = store.executions_asking(a.campaign_id, sorted({_test(c) for ts in wanted.values() for c, *_ in ts}))
    finally:
        store.close()
    out = {}
    for cause, ts in wanted.items():
        verdicts = [selection(ref, rec.execution, deleted_by(case), threshold).passed
                    for case, ref, threshold in ts for rec in seen.get(_test(case), ()) if rec.execution.error is None]
        if verdicts:
            out[cause] = "passes" if all(verdicts) else "fails"
    return out


def _test(case: FuzzCase) -> tuple[str, str]:
    """The test ``case`` is, as executions record it: (state key, question)."""
    return case.state_key, case.query.text


def _setup(st: dict[str, Any]) -> dict[str, Any]:
    be = st.get("backend") if isinstance(st.get("backend"), dict) else {"backend": st.get("backend")}
    return {"backend": be.get("backend"), "product": be.get("product") or be.get("config"), "seed": st.get("seed"),
            "budget": st.get("budget"), "strategy": st.get("strategy")}


def build_report(campaign_dir: Path, *, db: str | None = None, max_failures: int = 2000,
                 compare: Path | None = None, compare_db: str | None = None) -> tuple[str, str]:
    """(HTML, one-line stats) of the campaign in ``campaign_dir`` (and, with ``compare``, how it differs from
    the campaign there)."""
    data = load_campaign(campaign_dir, db)
    st = campaign_status(campaign_dir, db, campaign_id=data.campaign_id)
    baseline = baseline_of(campaign_dir)
    rows = failure_rows(data, baseline=baseline)
    keys = [r["key"] for r in rows[:max_failures]]
    views = failure_views(data, keys, campaign_dir=campaign_dir, db=db, baseline=baseline) if keys else []
    plot = read_plot_data(Path(campaign_dir) / "plot_data.csv")
    responses = distinct_responses(data) if _hidden(st) else None
    for v in views:
        v["retrieval_hidden"] = responses is not None
    causes = len({r["cause"] for r in rows})
    classes = len({r["class"] for r in rows})
    title = f"ufuzz report — {data.campaign_id}"
    sections = (*((("compare", "comparison"),) if compare is not None else ()), ("summary", "summary"),
                ("curves", "over executions and time"), ("yields", "yields per operator"),
                ("classes", "behaviour classes"), ("causes", "causes"),
                ("baseline-failures", "baseline failures"), ("failures", "failures"))
    nav = " · ".join(f"<a href='#{a}'>{t}</a>" for a, t in sections)
    base = ""
    if baseline is not None:
        n = baseline.behaviour_counts()
        base = (f"<p>against baseline <code>{esc(baseline.corpus)}</code>, matched by behaviour: "
                + ", ".join(f"{n[m]} {m}" for m in STATUSES) + " behaviours ("
                + ", ".join(f"{len(getattr(baseline, m))} {m}" for m in STATUSES)
                + f" unique failures); the night {'fails' if baseline.failed else 'passes'}</p>")
        named = [b for m in STATUSES if m != "known" for b in baseline.behaviours_by(m)]
        if named:  # what to act on, by name (walkthrough: the counts alone named nothing)
            base += "<ul class='baseline'>" + "".join(
                f"<li><b>{esc(str(b['status']).upper())}</b> <code>{esc(b['id'])}</code>: {esc(b['title'])} — "
                f"{esc(b['unique'])} unique failures, {esc(b['causes'])} causes</li>" for b in named) + "</ul>"
        if baseline.mismatch:
            base += (f"<p><b>Not the baseline's campaign</b> ({esc('; '.join(baseline.mismatch))}): a behaviour "
                     "the baseline lacks counts as new only once met more often than the baseline's campaign could "
                     "have missed by chance (else: unconfirmed).</p>")
    body = "".join([
        f"<h1>{esc(title)}</h1><p class='muted'>{esc(len(rows))} unique failures, {causes} causes, {classes} behaviour "
        f"classes · generated {esc(time.strftime('%Y-%m-%d %H:%M:%S'))} · {nav}</p>{base}",
        _compare(rows, st, data, compare, compare_db) if compare is not None else "",
        _summary(st, data, plot, responses), _curves(plot, data, rows, responses), _yields(data, rows),
        _classes(rows), _causes(rows), _baseline_failures(st), _browser(views, len(rows)),
    ])
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_csp()}\">"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{body}<script>{_SCRIPT}</script></body></html>\n")
    stats = f"{len(rows)} unique failures, {causes} causes, {classes} behaviour classes, {len(views)} in the browser"
    return page, stats


def write_report(campaign_dir: Path, output: Path, *, db: str | None = None,
                 max_failures: int = 2000, compare: Path | None = None,
                 compare_db: str | None = None) -> tuple[Path, str]:
    """Write the report atomically (a temporary file beside ``output`` replaces it when complete)."""
    page, stats = build_report(campaign_dir, db=db, max_failures=max_failures, compare=compare,
                               compare_db=compare_db)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(output)
    return output, stats
