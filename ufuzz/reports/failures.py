"""Triage: list a campaign's failures (by unique-failure key or by cause) and show one in full.

A failure's *view* (:func:`failure_views`) is everything a person needs to judge it and file it: the parent's
and the mutant's question, the state change the mutation made with the memory texts, the top-k each one got
back (ufuzz ids, the system's own ids where the backend maps them, scores, texts, and which of them the
reference needs, forbids or saw deleted), the responses, the references, the verdict and level, and the
commands that reproduce it. Views are plain JSON-able dicts: ``ufuzz failures show --json`` prints one and
the HTML report (:mod:`ufuzz.reports.html`) renders them all. Everything here only reads the corpus database.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ufuzz.corpus.campaign import CampaignData, case_of, select_failures
from ufuzz.corpus.store import CorpusStore
from ufuzz.model import Checkpoint, Execution, FuzzCase, Reference, StateOp
from ufuzz.model.execution import OVERWRITTEN
from ufuzz.oracles.classes import class_of
from ufuzz.oracles.verdict import SHORT_LIST, UNREACHABLE, normalise_id
from ufuzz.triage.baseline import BaselineVerdict, counts_as_system_failure

__all__ = ["cause_of", "failure_rows", "group_by_cause", "group_by_class", "render_list", "failure_views",
           "render_show", "baseline_of"]


# ====================================================================== keys, causes, rows


def cause_of(f: Any, ops: Iterable[StateOp] = ()) -> str:
    """The failure's cause key as the oracle recorded it; for campaigns recorded before causes were, the same
    idea from what the record holds: operator, kind, level and the normalised offending memories (or, when
    none, the state operations the mutation made)."""
    stored = getattr(f, "cause_key", "") or ""
    if stored:
        return stored
    offending = sorted({normalise_id(str(i)) for i in (f.detail.get("offending") or ())})
    what = offending or [f"{o.op}:{normalise_id(o.target or (o.memory.id if o.memory else ''))}" for o in ops]
    parts = [f.operator or "", f.kind, f.stage, ",".join(what)]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]


def _own_ops(data: CampaignData, case_id: str) -> tuple[StateOp, ...]:
    """The state operations a mutant added to its parent's recipe."""
    m = data.mutants.get(case_id)
    if m is None:
        return ()
    parent = data.mutants.get(m.parent_id) if m.parent_id else None
    return tuple(m.ops[len(parent.ops):]) if parent is not None else tuple(m.ops)


def baseline_of(campaign_dir: str | Path) -> BaselineVerdict | None:
    """The known/new marks ``ufuzz run --baseline`` wrote into summary.json, if it did."""
    try:
        summary = json.loads((Path(campaign_dir) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    b = summary.get("baseline") if isinstance(summary, dict) else None
    return BaselineVerdict.from_dict(b) if isinstance(b, dict) else None


def _origin(f: Any) -> str:
    if not counts_as_system_failure(f):
        return "reader" if (getattr(f, "responder", None) or "").startswith("reader:") else "baseline"
    return "mutant"


def failure_rows(data: CampaignData, *, operator: str | None = None, kind: str | None = None,
                 stage: str | None = None, include_all: bool = False,
                 baseline: BaselineVerdict | None = None) -> list[dict[str, Any]]:
    """One row per unique failure in discovery order (the system's mutant failures; every one with
    ``include_all``), filtered by operator, kind and level."""
    rows = []
    for f in data.failures:
        origin = _origin(f)
        if (origin != "mutant" and not include_all) or (operator and f.operator != operator) \
                or (kind and f.kind != kind) or (stage and f.stage != stage):
            continue
        m = data.mutants.get(f.case_id)
        behaviour = class_of(f.operator, f.stage, f.kind)
        rows.append({"key": f.failure_key, "cause": cause_of(f, _own_ops(data, f.case_id)), "operator": f.operator,
                     "class": behaviour.id, "class_title": behaviour.title,
                     "kind": f.kind, "stage": f.stage, "origin": origin, "seed": f.seed_id, "case": f.case_id,
                     "target": (m.target if m else None) or f.detail.get("target"),
                     "offending": list(f.detail.get("offending") or ()), "occurrences": f.count,
                     "first_seq": f.first_seq, "query": m.query.text if m and m.query else f.detail.get("query"),
                     "baseline": baseline.status_of(f.failure_key) if baseline else None})
    return rows


def group_by_cause(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows merged by cause: one bug, its unique failures and occurrences, most unique failures first."""
    groups: dict[str, dict[str, Any]] = {}
    for r in rows:
        g = groups.setdefault(r["cause"], {"cause": r["cause"], "operator": r["operator"], "kind": r["kind"],
                                           "stage": r["stage"], "unique": 0, "occurrences": 0, "keys": [],
                                           "seeds": [], "offending": sorted({normalise_id(i) for i in r["offending"]}),
                                           "example": r["key"], "query": r["query"], "first_seq": r["first_seq"]})
        g["unique"] += 1
        g["occurrences"] += r["occurrences"]
        g["keys"].append(r["key"])
        if r["seed"] not in g["seeds"]:
            g["seeds"].append(r["seed"])
        _mark(g, r)
    return sorted(groups.values(), key=lambda g: (-g["unique"], g["first_seq"] or 0, g["cause"]))


def _mark(group: dict[str, Any], row: dict[str, Any]) -> None:
    """A group's baseline marks (``ufuzz run --baseline``): the statuses of its rows, in a fixed order ("new"
    first: a group with one new behaviour in it is news)."""
    if row.get("baseline"):
        marks = set(group.get("baseline") or ()) | {row["baseline"]}
        group["baseline"] = sorted(marks, key=lambda m: (m != "new", m))


def group_by_class(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows merged by behaviour class (:mod:`ufuzz.oracles.classes`): one behaviour of the system, its causes,
    unique failures and occurrences, most causes first."""
    groups: dict[str, dict[str, Any]] = {}
    for r in rows:
        g = groups.setdefault(r["class"], {"class": r["class"], "title": r["class_title"], "causes": [],
                                           "unique": 0, "occurrences": 0, "operators": [], "seeds": [],
                                           "example": r["key"], "query": r["query"], "first_seq": r["first_seq"]})
        g["unique"] += 1
        g["occurrences"] += r["occurrences"]
        for name, value in (("causes", r["cause"]), ("operators", r["operator"] or "-"), ("seeds", r["seed"])):
            if value not in g[name]:
                g[name].append(value)
        _mark(g, r)
    return sorted(groups.values(), key=lambda g: (-len(g["causes"]), -g["unique"], g["first_seq"] or 0, g["class"]))


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return out


def _short(text: Any, n: int) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def render_list(rows: list[dict[str, Any]], by: str = "cause") -> str:
    """The plain-text table of ``ufuzz failures list``."""
    marks = any(r["baseline"] for r in rows)
    mark = (lambda g: [",".join(g.get("baseline") or ["-"])]) if marks else (lambda g: [])
    marked = ("baseline",) if marks else ()
    if by == "class":
        classes = group_by_class(rows)
        body = [(c["class"], str(len(c["causes"])), str(c["unique"]), str(c["occurrences"]), str(len(c["seeds"])),
                 ",".join(c["operators"]), c["example"][:12], *mark(c), c["title"]) for c in classes]
        lines = _table(("class", "causes", "unique", "seen", "seeds", "operators", "example", *marked, "behaviour"),
                       body)
        lines.append(f"{len(classes)} behaviour classes, {len({r['cause'] for r in rows})} causes, "
                     f"{len(rows)} unique failures")
        return "\n".join(lines)
    if by == "cause":
        groups = group_by_cause(rows)
        body = [(g["cause"][:12], g["operator"] or "-", g["stage"], g["kind"], str(g["unique"]), str(g["occurrences"]),
                 str(len(g["seeds"])), g["example"][:12], *mark(g), _short(",".join(g["offending"]), 24),
                 _short(g["query"], 50)) for g in groups]
        lines = _table(("cause", "operator", "level", "kind", "unique", "seen", "seeds", "example", *marked,
                        "offending", "query"), body)
        lines.append(f"{len(groups)} causes, {len(rows)} unique failures")
        return "\n".join(lines)
    body = [(r["key"][:12], r["cause"][:8], r["operator"] or "-", r["stage"], r["kind"], str(r["occurrences"]),
             r["case"], *([r["baseline"] or "-"] if marks else []), _short(r["query"], 50)) for r in rows]
    head = ("key", "cause", "operator", "level", "kind", "seen", "case", *(("baseline",) if marks else ()), "query")
    lines = _table(head, body)
    lines.append(f"{len(rows)} unique failures, {len({r['cause'] for r in rows})} causes")
    return "\n".join(lines)


# ====================================================================== one failure in full


def _texts(checkpoint: Checkpoint, ops: Iterable[StateOp]) -> dict[str, str]:
    """Memory id -> text of every memory a recipe ever holds (checkpoint, then added and updated ones)."""
    out = {m.id: m.text for m in checkpoint.memories}
    for o in ops:
        if o.memory is not None:
            out.setdefault(o.memory.id, o.memory.text)
    return out


def _op_view(o: StateOp, texts: dict[str, str]) -> dict[str, Any]:
    view: dict[str, Any] = {"op": o.op, "target": o.target}
    if o.target:
        view["target_text"] = texts.get(o.target)
    if o.memory is not None:
        view.update(memory_id=o.memory.id, text=o.memory.text, timestamp=o.memory.timestamp)
    return view


def _pick_execution(records: list[Any], state_key: str, before: int | None) -> Any:
    """The case's execution on its state: the last one without an error (before ``before`` when given)."""
    good = [r for r in records if r.execution.error is None and r.execution.state_key == state_key
            and (before is None or r.seq <= before)]
    return (good or [r for r in records if r.execution.error is None] or records or [None])[-1]


def _execution_view(rec: Any, ref: Reference | None, deleted: set[str], offending: set[str],
                    known: set[str] | None = None) -> dict[str, Any] | None:
    if rec is None:
        return None
    ex: Execution = rec.execution
    native = ex.native_ids or [None] * len(ex.top_ids)
    top = []
    for rank, (mid, score, text) in enumerate(zip(ex.top_ids, ex.top_scores, ex.top_texts), start=1):
        marks = []
        if ref is not None and mid in ref.supporting:
            marks.append("supporting")
        if ref is not None and mid in ref.invalidated:
            marks.append("invalidated")
        if mid in deleted:
            marks.append("deleted")
        if mid in offending:
            marks.append("offending")
        if mid.endswith(OVERWRITTEN):  # identified by its text as a version an in-place update overwrote
            marks.append("overwritten")
        elif known is not None and mid not in known and mid not in deleted:
            marks.append("unknown")  # neither its id nor its text is a memory of this case
        top.append({"rank": rank, "id": mid, "native_id": native[rank - 1] if rank - 1 < len(native) else None,
                    "score": score, "text": text, "marks": marks})
    return {"seq": rec.seq, "query": ex.query, "top": top, "response": ex.response,
            "responder": getattr(ex, "responder", None), "error": ex.error, "seconds": ex.seconds}


def _case_view(case: FuzzCase | None, ref: Reference | None, rec: Any, deleted: set[str],
               offending: set[str]) -> dict[str, Any]:
    if case is None:
        return {"id": None}
    return {"id": case.id, "operator": case.operator, "depth": case.depth, "query": case.query.text,
            "asked_at": case.query.asked_at, "fields": case.query.fields.to_dict(), "ops": len(case.ops),
            "detail": case.detail,
            "reference": ref.to_dict() if ref is not None else None,
            "execution": _execution_view(rec, ref, deleted, offending, _known_ids(case))}


def _known_ids(case: FuzzCase) -> set[str]:
    """The memories of a case's state: its checkpoint's (a case read back from the store carries the
    checkpoint's provenance) and those its recipe wrote (an update's or add's new memory is no stranger)."""
    return set(case.provenance.memory_ids) | {o.memory.id for o in case.ops if o.memory is not None}


def _commands(campaign_dir: str, key: str, backend: str, db: str | None) -> dict[str, str]:
    d = shlex.quote(str(campaign_dir))
    dbo = f" --db {shlex.quote(db)}" if db else ""
    out = {"replay": f"ufuzz replay {d} --key {key[:12]}{dbo}",
           "minimise": f"ufuzz minimise {d} {key[:12]}{dbo}",  # KEY12.min.jsonl in DIR: show --format md finds it
           "ticket": f"ufuzz failures show {d} {key[:12]}{dbo} --format md"}
    if backend == "http":
        out["reproducer"] = f"ufuzz failures show {d} {key[:12]}{dbo} --reproducer repro-{key[:12]}.py"
    return out


def failure_views(data: CampaignData, keys: list[str] | None = None, *, campaign_dir: str | Path = ".",
                  db: str | None = None, baseline: BaselineVerdict | None = None) -> list[dict[str, Any]]:
    """The full view of each failure named by ``keys`` (key prefixes; all when None), discovery order."""
    chosen = select_failures(data.failures, keys)
    cases = {f.failure_key: case_of(f.case_id, data.checkpoints, data.seeds, data.mutants) for f in chosen}
    parents = {k: (case_of(c.parent_id, data.checkpoints, data.seeds, data.mutants)
                   if isinstance(c, FuzzCase) and c.parent_id else None) for k, c in cases.items()}
    wanted = {f.case_id for f in chosen} | {p.id for p in parents.values() if isinstance(p, FuzzCase)}
    store = CorpusStore(data.url, readonly=True)
    try:
        execs = store.executions_of(data.campaign_id, wanted)
        # a parent served another case's execution of its question on its state has none of its own
        unrun = {p.id: (p.state_key, p.query.text) for p in parents.values()
                 if isinstance(p, FuzzCase) and not execs.get(p.id)}
        if unrun:
            asked = store.executions_asking(data.campaign_id, unrun.values())
            for pid, key in unrun.items():
                execs[pid] = asked.get(key, [])
    finally:
        store.close()
    return [_view(f, cases[f.failure_key], parents[f.failure_key], execs, data, campaign_dir, db, baseline)
            for f in chosen]


def _view(f: Any, case: Any, parent: Any, execs: dict[str, list[Any]], data: CampaignData,
          campaign_dir: str | Path, db: str | None, baseline: BaselineVerdict | None) -> dict[str, Any]:
    mutant = case if isinstance(case, FuzzCase) else None
    parent = parent if isinstance(parent, FuzzCase) else None
    cp = data.checkpoints.get(mutant.checkpoint_id) if mutant else None
    own = tuple(mutant.ops[len(parent.ops):]) if mutant and parent else (mutant.ops if mutant else ())
    texts = _texts(cp, mutant.ops) if cp and mutant else {}
    offending = {str(x) for x in f.detail.get("offending") or ()}
    m_rec = _pick_execution(execs.get(f.case_id, []), mutant.state_key, None) if mutant else None
    p_rec = _pick_execution(execs.get(parent.id, []), parent.state_key, m_rec.seq if m_rec else None) \
        if parent else None
    deleted_m = {o.target for o in (mutant.ops if mutant else ()) if o.op == "delete" and o.target}
    deleted_p = {o.target for o in (parent.ops if parent else ()) if o.op == "delete" and o.target}
    view = {
        "key": f.failure_key, "cause": cause_of(f, own), "operator": f.operator, "kind": f.kind, "stage": f.stage,
        "origin": _origin(f), "responder": getattr(f, "responder", None), "seed": f.seed_id, "case": f.case_id,
        "occurrences": f.count, "first_seq": f.first_seq, "offending": sorted(offending),
        "reason": f.detail.get("reason"), "mutation": f.detail.get("mutation") or (mutant.detail if mutant else ""),
        "baseline": baseline.status_of(f.failure_key) if baseline else None,
        "backend": data.backend, "backend_info": data.backend_info, "checkpoint": cp.id if cp else None,
        "checkpoint_memories": len(cp.memories) if cp else None,
        "inherited_ops": [_op_view(o, texts) for o in (parent.ops if parent else ())],
        # the question asked on the unmutated checkpoint passed: the inherited state change is what fails it
        "control": f.detail.get("control"),
        "state_change": [_op_view(o, texts) for o in own],
        # a state-level failure: what the operation's verification saw change beyond it (list/get, no retrieval)
        "side_effects": list(f.detail.get("changes") or []) if f.stage == "state" else [],
        "side_effect_reason": f.detail.get("reason") if f.stage == "state" else None,
        "parent": _case_view(parent, data.references.get(parent.id) if parent else None, p_rec, deleted_p, set()),
        "mutant": _case_view(mutant, data.references.get(f.case_id), m_rec, deleted_m, offending),
        "unbuildable": case if isinstance(case, str) else None,
        "commands": _commands(str(campaign_dir), f.failure_key, data.backend, db),
    }
    view["evidence"] = {side: _evidence_at(view[side]) for side in ("parent", "mutant")}
    return view


def control_note(control: dict[str, Any]) -> str:
    """What a passing control says of a failure on an inherited state (see :meth:`ufuzz.oracles.oracle.Oracle.check`)."""
    return (f"the same question passes on the unmutated checkpoint (seed {control.get('seed')}, at the "
            f"{control.get('level')} level): the state its ancestors changed is what fails it")


def _evidence_at(case: dict[str, Any]) -> dict[str, Any] | None:
    """Where a case's own supporting memories stood in what it retrieved: the best one's rank and score, its lead
    over the last memory retrieved (how far above the cut-off it was: a paraphrase that moves evidence from a lead
    of 0.003 to rank 6 is a boundary flip, one from rank 1 a clear loss), and, when an offending memory ranked
    above it, by how much. ``status`` says when there is nothing to place: ``no_execution``, ``error`` (the
    backend failed), ``hidden`` (nothing retrieved or visible), ``no_supporting`` (the reference names no memory,
    e.g. it abstains). None for a side that does not exist."""
    if case.get("id") is None:
        return None
    ex = case.get("execution")
    ref = case.get("reference") or {}
    status = ("no_execution" if not ex else "error" if ex.get("error") else "hidden" if not ex["top"]
              else "no_supporting" if not ref.get("supporting") else "ok")
    out: dict[str, Any] = {"status": status, "retrieved": len(ex["top"]) if ex else 0, "rank": None,
                           "score": None, "lead": None, "offending": None, "offending_by": None}
    if status != "ok":
        return out
    top = ex["top"]
    best = next((t for t in top if "supporting" in t["marks"]), None)
    if best is not None:
        out.update(rank=best["rank"], score=best["score"], lead=round(best["score"] - top[-1]["score"], 6))
        above = next((t for t in top if "offending" in t["marks"] and t["rank"] < best["rank"]), None)
        if above is not None:
            out.update(offending=above["id"], offending_by=round(above["score"] - best["score"], 6))
    return out


_NOTHING_TO_PLACE = {"no_execution": "no recorded execution", "error": "the backend failed (no top-k)",
                     "hidden": "nothing retrieved or visible", "no_supporting": "its reference names no supporting "
                     "memory (it abstains)"}


#: scores within a thousandth of the scale (1, a cosine's, or the score itself) are shown as a tie
TIE = 1e-3


def _evidence_words(e: dict[str, Any] | None) -> str:
    if e is None:
        return "-"
    if e["status"] != "ok":
        return _NOTHING_TO_PLACE[e["status"]]
    if e["rank"] is None:
        return f"supporting memories not among the {e['retrieved']} retrieved"
    words = f"rank {e['rank']} of {e['retrieved']} ({e['score']:.3f}, {e['lead']:+.3f} over the last)"
    if e["offending"] is not None:
        by = e["offending_by"]
        if abs(by) <= TIE * max(1.0, abs(e["score"])):  # say why a tie fails: it is where recency has to decide
            words += (f", tied with the offending {e['offending']} ({by:.4f} above; a tie is where the newer or "
                      "still-valid memory should come first, and it came after)")
        else:
            words += f", {by:.3f} below the offending {e['offending']}"
    return words


def _ref_line(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "(no stored reference)"
    head = "abstain" if ref.get("abstain") else f"answer {ref.get('answer')!r}"
    extra = [f"{k} {', '.join(ref[k])}" for k in ("supporting", "invalidated") if ref.get(k)]
    if ref.get("aliases"):
        extra.append(f"aliases {', '.join(map(repr, ref['aliases']))}")
    if ref.get("stale_answers"):
        extra.append(f"stale {', '.join(map(repr, ref['stale_answers']))}")
    return "; ".join([head, *extra])


def _ops_lines(ops: list[dict[str, Any]]) -> list[str]:
    out = []
    for o in ops:
        dated = f" (dated {o['timestamp']})" if o.get("timestamp") else ""
        if o["op"] == "add":
            out.append(f"  add {o.get('memory_id')}{dated}: {o.get('text')!r}")
        elif o["op"] == "update":
            out.append(f"  update {o['target']}: {o.get('target_text')!r}")
            out.append(f"      -> {o.get('memory_id')}{dated}: {o.get('text')!r}")
        else:
            out.append(f"  {o['op']} {o['target']}: {o.get('target_text')!r}")
    return out or ["  (none: the query changed, the state did not)"]


def _exec_lines(side: str, case: dict[str, Any], width: int) -> list[str]:
    asked = f" (asked {case['asked_at']})" if case.get("asked_at") else ""
    out = [f"{side} {case.get('id')} — {case.get('query')!r}{asked}"]
    if case.get("id") is None:
        return out
    out.append(f"  reference: {_ref_line(case.get('reference'))}")
    ex = case.get("execution")
    if ex is None:
        return [*out, "  (no recorded execution)"]
    if ex.get("error"):
        out.append(f"  backend error: {ex['error']}")
    native = any(t["native_id"] not in (None, t["id"]) for t in ex["top"])
    for t in ex["top"]:
        nid = f" [{t['native_id']}]" if native else ""
        marks = f" <{','.join(t['marks'])}>" if t["marks"] else ""
        out.append(f"  {t['rank']:>2}. {t['id']}{nid} {t['score']:.3f}{marks} {_short(t['text'], width)}")
    if not ex["top"]:
        out.append("  (nothing retrieved)")
    if ex.get("response") is not None:
        who = f" ({ex['responder']})" if ex.get("responder") else ""
        out.append(f"  response{who}: {_short(ex['response'], width + 20)!r}")
    return out


def _state_words(v: dict[str, Any]) -> str:
    """How a state-level failure was seen, for the mutant's evidence line."""
    if v["kind"] == "write_not_found":
        return ("its written memory was searched for by its own text right after the operation, beside a fresh "
                "copy of it (the mutant itself is judged as any other)")
    return "not executed: its operation changed more than it asked (found by the operation's verification, " \
           "before any retrieval)"


def _side_effect_lines(changes: list[dict[str, Any]], width: int) -> list[str]:
    out = []
    for c in changes:
        if c.get("change") == "not_found":  # a write its own words do not find (engine.readback)
            top = ", ".join(c.get("top_ids") or []) or "nothing"
            at = f"at rank {c['rank']}" if c.get("rank") else "not returned"
            out.append(f"  {c.get('memory')} {at} in a search for its own text "
                       f"{_short(str(c.get('after', '')), width)!r}; a fresh copy of it ({c.get('twin')}) at rank "
                       f"{c.get('twin_rank')} (the search returned: {top})")
            continue
        line = f"  {c.get('memory')} {c.get('change')}"
        if c.get("before") is not None:
            line += f"  was {_short(str(c['before']), width)!r}"
        if c.get("after") is not None:
            line += f"  now {_short(str(c['after']), width)!r}"
        out.append(line)
    return out


#: how a system probe's finding was seen (ufuzz.engine.probes), for the evidence line: no reference judges it
_PROBE_WORDS = {
    SHORT_LIST: "its question asked again for one result more (no reference judged)",
    UNREACHABLE: "probed once per checkpoint, at this seed's execution (no reference judged)",
}

#: how ``failures show`` introduces what a read-back saw, by failure kind
_SIDE_EFFECT_HEADERS = {
    "write_not_found": "read back right after the operation, beside a fresh copy of the written memory:",
    UNREACHABLE: "read back on the checkpoint's own state, beside a fresh copy of the memory:",
}


def render_show(v: dict[str, Any], width: int = 90) -> str:
    """The plain-text page of ``ufuzz failures show``."""
    lines = [f"failure {v['key']}  ({v['origin']}{', ' + v['baseline'] if v.get('baseline') else ''})",
             f"  verdict   {v['stage']}:{v['kind']}"
             + (f" — offending {', '.join(v['offending'])}" if v["offending"] else "")
             + (f" (responder {v['responder']})" if v.get("responder") else ""),
             f"  cause     {v['cause']}",
             f"  operator  {v['operator'] or '-'}  seed {v['seed']}  case {v['case']}  seen {v['occurrences']}x "
             f"(first at execution {v['first_seq']})",
             f"  backend   {v['backend']}  checkpoint {v['checkpoint']} ({v['checkpoint_memories']} memories)"]
    if v.get("reason"):
        lines.append(f"  reason    {v['reason']}")
    if v.get("unbuildable"):
        lines.append(f"  cannot rebuild: {v['unbuildable']}")
    if v.get("mutation"):
        lines.append(f"  mutation  {v['mutation']}")
    ev = v.get("evidence") or {}
    sides = [("parent", ev.get("parent"))] if v["parent"].get("id") is not None else []
    sides.append(("mutant" if sides else "case", ev.get("mutant")))
    for i, (side, e) in enumerate(sides):
        words = (_PROBE_WORDS[v["kind"]] if v["origin"] == "baseline" and v["kind"] in _PROBE_WORDS
                 else _state_words(v) if v["stage"] == "state" and side == "mutant" else _evidence_words(e))
        lines.append(f"  {'evidence' if i == 0 else '':<8}  {side} {words}")
    if v["inherited_ops"]:
        lines.append(f"state the parent already had ({len(v['inherited_ops'])} ops from its ancestors):")
        lines += _ops_lines(v["inherited_ops"])
        if v.get("control"):
            lines.append(f"  {control_note(v['control'])}")
    seed = v["parent"].get("id") is None
    if seed and not v["state_change"]:
        lines.append("state: the checkpoint's own (a seed: nothing mutated)")
    else:
        lines.append("state change made by the mutation:")
        lines += _ops_lines(v["state_change"])
    if v.get("side_effects"):
        lines.append(_SIDE_EFFECT_HEADERS.get(v["kind"], "what else changed (the state's listing before and after "
                                                        "the operation):"))
        lines += _side_effect_lines(v["side_effects"], width)
    if not seed:
        lines += _exec_lines("parent", v["parent"], width)
    lines += _exec_lines("seed" if seed else "mutant", v["mutant"], width)
    lines.append("reproduce:")
    lines += [f"  {c}" for c in v["commands"].values()]
    return "\n".join(lines)
