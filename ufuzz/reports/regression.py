"""Plain-text rendering of a regression-corpus check (:func:`ufuzz.engine.regression.check_corpus`)."""

from __future__ import annotations

import json

from ufuzz.engine.regression import CheckReport

_LABEL = {"known": "ok", "passes": "ok (fixed)", "fixed": "FIXED", "changed": "CHANGED", "regressed": "REGRESSED",
          "parent_broken": "PARENT BROKEN", "error": "ERROR", "not_run": "NOT RUN"}


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
    c = report.counts()
    summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in c.items() if n or s == "reproduced")
    lines.append(f"{summary} ({report.seconds:.1f} s) — {verdict_line(report)}")
    if oc["fixed"]:
        lines.append(f"good news: {oc['fixed']} known failure(s) no longer reproduce; `ufuzz corpus accept "
                     f"{report.path}` keeps them as guards that must keep passing")
    return "\n".join(lines)


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
    if oc["fixed"] or oc["passes"]:
        return (f"OK: nothing regressed ({oc['known']} known failures reproduce, {oc['fixed']} fixed, "
                f"{oc['passes']} fixed ones still pass)")
    return "OK: every record still reproduces"
