"""A failure as a Markdown ticket (``ufuzz failures show --format md``): what a developer files in a tracker.

It opens with one plain-language sentence naming what the product did wrong in the product's own terms
("search still returns a memory that DELETE removed; get and list confirm it was deleted"), then the minimal steps (the
memories to add, the state change, the question), what was expected and what came back, for the mutant and
for its parent (the same question before the mutation: the evidence that the mutation is the cause), and the
commands that reproduce it. When ``ufuzz minimise`` has shrunk the failure, the steps are the minimised ones
(a handful of memories instead of the whole checkpoint), taken from its one-record corpus.

The input is a failure view (:func:`ufuzz.reports.failures.failure_views`): this module only formats.
"""

from __future__ import annotations

from typing import Any

from ufuzz.operators.sideeffects import KINDS as SIDE_EFFECT_KINDS

__all__ = ["summary_sentence", "render_ticket", "minimal_steps"]

_MAX_LISTED = 12  # memories listed in full in the steps of a failure that was not minimised


def _quote(text: Any, n: int = 90) -> str:
    t = " ".join(str(text or "").split())
    return f'"{t if len(t) <= n else t[: n - 1] + "…"}"'


#: the methods that say an operation alone ("a memory that DELETE removed"); any other is said with its path
_CONVENTIONAL = {"delete": ("DELETE",), "update": ("PUT", "PATCH"), "add": ("POST",)}


def _op_word(op: str, backend: str, info: dict[str, Any]) -> str:
    """The product's own operation for ``op`` (``DELETE`` for a REST product; the method and path where the method
    alone would not say it: ``POST /v2/memories/{id}:purge``), else the op's name."""
    operations = (info.get("operations") or {}) if backend == "http" else {}
    spec = operations.get(op)
    if not spec:
        return op
    if sum(1 for other in operations.values() if other == spec) > 1:  # one endpoint for several (JSON-RPC)
        return f"{op} ({spec})"
    method = str(spec).split()[0]
    return method if method.upper() in _CONVENTIONAL.get(op, ()) else str(spec)


def _a(word: str) -> str:
    """``word`` with its indefinite article ("an update", "a PUT")."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _search_word(v: dict[str, Any]) -> str:
    return "search" if v["backend"] == "http" else "retrieval"


def _deleted_memory(v: dict[str, Any]) -> dict[str, Any] | None:
    return next((o for o in v["state_change"] if o["op"] == "delete"), None)


def _updated(v: dict[str, Any]) -> dict[str, Any] | None:
    return next((o for o in v["state_change"] if o["op"] == "update"), None)


def _offending_text(v: dict[str, Any]) -> str | None:
    ex = (v["mutant"] or {}).get("execution") or {}
    for t in ex.get("top") or ():
        if "offending" in t["marks"]:
            return t["text"]
    return None


def summary_sentence(v: dict[str, Any]) -> str:
    """One sentence a product developer understands without knowing ufuzz."""
    kind, op, be, info = v["kind"], v["operator"] or "", v["backend"], v.get("backend_info") or {}
    search = _search_word(v)
    deleted, updated = _deleted_memory(v), _updated(v)
    mutant_q = (v["mutant"] or {}).get("query")
    parent_q = (v["parent"] or {}).get("query")
    resp = ((v["mutant"] or {}).get("execution") or {}).get("response")
    ref = (v["mutant"] or {}).get("reference") or {}
    # what the delete's verification saw, in words true of a product that drops a memory and of one that flags it
    gone = "get and list confirm it was deleted"
    if kind == "deleted_evidence_retrieved":
        what = _quote(deleted["target_text"]) if deleted and deleted.get("target_text") else "it"
        return (f"{search} still returns a memory that {_op_word('delete', be, info)} removed ({what}); "
                f"{gone}.")
    if kind == "stale_ranked_above_valid":
        if updated:
            return (f"after {_a(_op_word('update', be, info))} of {_quote(updated.get('target_text'))} to "
                    f"{_quote(updated.get('text'))}, {search} ranks the old version above the new one.")
        return (f"{search} ranks a memory that does not answer {_quote(mutant_q)} ({_quote(_offending_text(v))}) "
                "above the one that does.")
    if kind == "missing_evidence":
        if op == "paraphrase":
            return (f"the reworded question {_quote(mutant_q)} no longer finds the memory that answers it, which "
                    f"the original wording {_quote(parent_q)} found.")
        if deleted or updated:
            return f"after the state change, {search} no longer returns the memory that answers {_quote(mutant_q)}."
        if op == "target_change" and parent_q:
            return (f"asked {_quote(mutant_q)} (the question {_quote(parent_q)} about another target), {search} "
                    "does not return the memory that answers it.")
        return f"{search} does not return the memory that answers {_quote(mutant_q)}."
    if kind == "write_not_found":
        c = next(iter(v.get("side_effects") or []), {})
        made = (f"after {_a(_op_word('update', be, info))} to {_quote(updated.get('text'))}" if updated
                else "after an add")
        where = f"ranks it {c['rank']}" if c.get("rank") else "does not return it"
        return (f"{made}, the memory is stored (get and list show it) but {search} for exactly its text "
                f"{where}, while a fresh memory of the same text and time comes at rank {c.get('twin_rank')}.")
    if kind == "unsupported_retrieved":
        return (f"asked {_quote(mutant_q)}, about something never stored, {search} returns "
                f"{_quote(_offending_text(v))} above the product's own relevance threshold.")
    if kind == "stale_answer":
        if deleted:
            return (f"the answer still uses a memory that {_op_word('delete', be, info)} removed: {_quote(resp)}; "
                    f"{gone}.")
        if updated:
            return (f"after {_a(_op_word('update', be, info))} to {_quote(updated.get('text'))}, the answer still "
                    f"gives the old value: {_quote(resp)}.")
        return f"the answer gives an out-of-date value: {_quote(resp)}."
    if kind == "unsupported_answer":
        return (f"asked {_quote(mutant_q)}, about something never stored, the product answers {_quote(resp)} "
                "instead of saying it does not know.")
    if kind == "false_abstention":
        return (f"asked {_quote(mutant_q)}, the product says it does not know ({_quote(resp)}) though the answer "
                f"{_quote(ref.get('answer'))} is stored.")
    if kind == "wrong_answer":
        return f"asked {_quote(mutant_q)}, the product answers {_quote(resp)}; expected {_quote(ref.get('answer'))}."
    reason = v.get("side_effect_reason")
    if v["stage"] == "state" and reason and kind in SIDE_EFFECT_KINDS:  # the verification's words (get/list)
        return f"{reason.rstrip('.')} (its get and list before and after it)."
    if v["stage"] == "state" and reason:  # a probe's finding, in its own words
        return f"{reason.rstrip('.')}."
    return f"{v['stage']}:{kind} after the {op or 'seed'} case."


def minimal_steps(v: dict[str, Any], minimised: Any = None) -> list[str]:
    """The numbered steps as Markdown lines. ``minimised``: (record, checkpoint) of ``ufuzz minimise``'s output
    for this failure, whose memories and ops replace the campaign's full checkpoint."""
    lines: list[str] = []
    if minimised is not None:
        rec, cp = minimised
        mems = [(m.id, m.text, m.timestamp) for m in cp.memories]
        these = "this memory" if len(mems) == 1 else f"these {len(mems)} memories"
        lines.append(f"1. Start from an empty {'namespace' if v['backend'] == 'http' else 'memory'} and add {these} "
                     f"(minimised by `ufuzz minimise` from {v['checkpoint_memories']}):")
        lines += [f"    - `{i}` ({ts}): {_quote(t, 200)}" for i, t, ts in mems]
        n_parent = len(rec.parent.ops)
        ops = [_record_op(o) for o in rec.mutant.ops]
        inherited, own = ops[:n_parent], ops[n_parent:]
    else:
        n = v["checkpoint_memories"]
        where = ("the ones that matter are named in the steps" if v["stage"] == "state" else
                 "the ones that matter are listed under *Evidence*")
        lines.append(f"1. Start from checkpoint `{v['checkpoint']}` ({n} memories; `ufuzz minimise` shrinks it; "
                     f"{where}).")
        inherited = [_view_op(o) for o in v["inherited_ops"]]
        own = [_view_op(o) for o in v["state_change"]]
    step = 2
    if inherited:
        lines.append(f"{step}. Apply the state the parent already had:")
        lines += [f"    - {o}" for o in inherited[:_MAX_LISTED]]
        if len(inherited) > _MAX_LISTED:
            lines.append(f"    - … and {len(inherited) - _MAX_LISTED} more (the reproducer has them all)")
        step += 1
    if v["stage"] == "state":
        return lines + _state_steps(v, own, step)
    p_q, m_q = v["parent"].get("query"), v["mutant"].get("query")
    if p_q is not None:
        lines.append(f"{step}. Ask {_quote(p_q, 200)}: this passes (the parent).")
        step += 1
    if own:
        lines.append(f"{step}. Change the state:")
        lines += [f"    - {o}" for o in own]
        step += 1
    lines.append(f"{step}. Ask {_quote(m_q, 200)}: this fails with **{v['stage']}:{v['kind']}**.")
    return lines


def _state_steps(v: dict[str, Any], own: list[str], step: int) -> list[str]:
    """The steps of a state-level failure: no question is involved — a search for the written memory's words
    around the operation (``write_not_found``), or the listing before and after it (a side effect)."""
    lines: list[str] = []
    c = next(iter(v.get("side_effects") or []), {})
    unread = v["kind"] == "write_not_found"
    if not unread:
        lines.append(f"{step}. List the memories.")
        step += 1
    lines.append(f"{step}. Change the state:")
    lines += [f"    - {o}" for o in own]
    step += 1
    if unread:
        ids = list(c.get("top_ids") or [])
        top = ", ".join(f"`{i}`" for i in ids) or "nothing"
        at = f"at rank {c['rank']}" if c.get("rank") else "not returned"
        lines.append(f"{step}. Add a second memory with exactly the text and time `{c.get('memory')}` has now "
                     f"(`{c.get('twin')}`, a control; on a copy of the state).")
        lines.append(f"{step + 1}. Search for exactly {_quote(c.get('after'), 200)}: the control comes at rank "
                     f"{c.get('twin_rank')}, `{c.get('memory')}` {at} (results: {top}) — **state:write_not_found**.")
    else:
        lines.append(f"{step}. List the memories again: {v.get('reason') or 'other memories changed'} — "
                     f"**state:{v['kind']}**.")
    return lines


def _view_op(o: dict[str, Any]) -> str:
    if o["op"] == "delete":
        return f"delete `{o['target']}` ({_quote(o.get('target_text'))})"
    if o["op"] == "update":
        return f"update `{o['target']}` ({_quote(o.get('target_text'))}) to {_quote(o.get('text'))}"
    return f"add `{o.get('memory_id')}`: {_quote(o.get('text'))}"


def _record_op(o: Any) -> str:
    if o.op == "delete":
        return f"delete `{o.target}`"
    if o.op == "update":
        return f"update `{o.target}` to {_quote(o.memory.text if o.memory else '')}"
    return f"add `{o.memory.id if o.memory else ''}`: {_quote(o.memory.text if o.memory else '')}"


def _expected(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "(no reference)"
    if ref.get("abstain"):
        out = "no answer (the product should say it does not know)"
    else:
        out = f"the answer {_quote(ref.get('answer'))}"
    if ref.get("supporting"):
        out += f", from {', '.join(f'`{i}`' for i in ref['supporting'])}"
    if ref.get("invalidated"):
        out += f"; must not use {', '.join(f'`{i}`' for i in ref['invalidated'])}"
    return out


def _side_lines(title: str, case: dict[str, Any]) -> list[str]:
    if case.get("id") is None:
        return []
    ex = case.get("execution")
    lines = [f"**{title}** — {_quote(case.get('query'), 200)}", "", f"- expected: {_expected(case.get('reference'))}"]
    if not ex:
        return [*lines, "- not executed in the campaign", ""]
    if ex.get("error"):
        return [*lines, f"- backend error: {ex['error']}", ""]
    if ex["top"]:
        lines += ["", "| rank | id | product id | score | text | marks |", "|---:|---|---|---:|---|---|"]
        for t in ex["top"]:
            text = _quote(t["text"], 120).replace("|", "\\|")
            lines.append(f"| {t['rank']} | `{t['id']}` | {t['native_id'] or ''} | {t['score']:.3f} | {text} | "
                         f"{', '.join(t['marks'])} |")
        lines.append("")
    elif not ex.get("response"):
        lines.append("- nothing retrieved")
    if ex.get("response") is not None:
        lines.append(f"- response: {_quote(ex['response'], 300)}")
    return [*lines, ""]


def render_ticket(v: dict[str, Any], minimised: Any = None) -> str:
    """The Markdown ticket of a failure view; ``minimised`` as in :func:`minimal_steps`."""
    product = (v.get("backend_info") or {}).get("product") or v["backend"]
    s = summary_sentence(v)
    lines = [f"# {product}: {s[0].upper() + s[1:]}", "",
             f"Found by ufuzz — failure `{v['key']}` "
             f"({v['operator'] or 'seed'}, {v['stage']}:{v['kind']}, seen {v['occurrences']}×"
             + (f", baseline: {v['baseline']}" if v.get("baseline") else "") + ").", "",
             "## Steps", "", *minimal_steps(v, minimised), "",
             "## Evidence", "",
             *([f"As the campaign saw it, on the whole checkpoint ({v['checkpoint_memories']} memories): the "
                "minimised steps above fail the same way (`ufuzz corpus check` on the minimised record replays "
                "them), with other memories around the ones that matter.", ""] if minimised is not None else []),
             *([] if v["stage"] == "state" else
               [*_side_lines("Before the change (parent)", v["parent"]),
                *_side_lines("After the change (mutant)", v["mutant"])])]
    if v.get("reason"):
        lines += [f"Verdict: {v['reason']}", ""]
    lines += ["## Reproduce", "", "```sh", *v["commands"].values(), "```", ""]
    return "\n".join(x for i, x in enumerate(lines) if x or i == 0 or lines[i - 1])  # no double blank lines
