"""Plain-text rendering of a regression-corpus check (:func:`ufuzz.triage.check.check_corpus`)."""

from __future__ import annotations

import json

from ufuzz.triage.check import CheckReport

_LABEL = {"known": "ok", "passes": "ok (fixed)", "fixed": "FIXED", "changed": "CHANGED", "regressed": "REGRESSED",
          "parent_broken": "PARENT BROKEN", "error": "ERROR", "inconclusive": "INCONCLUSIVE", "not_run": "NOT RUN"}


def render_check(report: CheckReport, *, all_rows: bool = True, width: int = 70) -> str:
    """A table (every record, or only those that did not behave as recorded) and a summary line."""
    head = ("line", "failure", "case", "operator", "expected", "status", "reason")
    # records not run because the backend is down all say the same: the summary line says it once
    shown = [r for r in report.results if (all_rows or r.outcome not in ("known", "passes")) and r.outcome != "not_run"]
    rows = [(str(r.line), r.failure_key[:12], r.case_id, r.operator, f"{r.stage}:{r.kind}", _LABEL[r.outcome],
             r.reason[:width]) for r in shown]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = [f"{report.path}: {len(report.results)} records on {report.backend} "
             f"{json.dumps(report.backend_options, sort_keys=True)}"]
    lines += [f"note: {n}" for n in report.notes]
    if rows:
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    oc = report.outcomes()
    lines.append(f"{outcome_counts(report)} ({report.seconds:.1f} s) — {verdict_line(report)}")
    if oc["fixed"]:
        lines.append(f"good news: {oc['fixed']} known failure(s) no longer reproduce; `ufuzz corpus accept "
                     f"{report.path}` keeps them as guards that must keep passing")
    return "\n".join(lines)


#: how each CI outcome is counted in the summary line (the same words as the verdict after it)
_COUNTED = (("known", "known failures reproduce"), ("fixed", "fixed (no longer reproduce)"),
            ("passes", "guards of fixed failures still pass"), ("changed", "changed"),
            ("regressed", "regressed (fixed before, fail again)"), ("parent_broken", "parent broken"),
            ("error", "backend errors"), ("inconclusive", "inconclusive (cannot be compared now)"),
            ("not_run", "not run"))


def outcome_counts(report: CheckReport) -> str:
    """The records by CI outcome, e.g. "10 known failures reproduce, 21 guards of fixed failures still pass":
    one count per record, so the numbers add up to the corpus and agree with the verdict."""
    oc = report.outcomes()
    parts = [f"{oc[o]} {words}" for o, words in _COUNTED if oc[o]]
    return f"{len(report.results)} records: " + (", ".join(parts) if parts else "none")


def verdict_line(report: CheckReport) -> str:
    oc = report.outcomes()
    n = len(report.results)
    if report.unreachable is not None:
        return f"UNREACHABLE: the backend could not be reached ({report.unreachable}); {oc['not_run']} of {n} " \
               "records not run"
    bad = report.regressions
    if bad:
        parts = ", ".join(f"{oc[o]} {o.replace('_', ' ')}" for o in ("changed", "regressed", "parent_broken", "error")
                          if oc[o])
        return f"REGRESSION: {len(bad)} of {n} records got worse or changed ({parts})"
    if oc["inconclusive"]:  # nothing regressed, but not every record could be compared: said, never hidden
        return (f"OK: nothing regressed; {oc['inconclusive']} of {n} records inconclusive (a write read back that "
                "cannot be compared now: see their reasons)")
    if oc["fixed"]:
        return f"OK: nothing regressed; {oc['fixed']} known failure(s) fixed (good news)"
    if oc["passes"] and not oc["known"]:
        return "OK: nothing regressed; every guard still passes"
    if oc["passes"]:
        return "OK: nothing regressed; every known failure reproduces and every guard still passes"
    return "OK: every record still reproduces"
