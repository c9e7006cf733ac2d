"""Plain-text rendering of a regression-corpus check (:func:`ufuzz.engine.regression.check_corpus`)."""

from __future__ import annotations

import json

from ufuzz.engine.regression import CheckReport

_LABEL = {"reproduced": "ok", "fixed": "FIXED", "changed": "CHANGED", "parent_broken": "PARENT BROKEN",
          "error": "ERROR"}


def render_check(report: CheckReport, *, all_rows: bool = True, width: int = 70) -> str:
    """A table (every record, or only those that changed status) and a summary line."""
    head = ("line", "failure", "case", "operator", "expected", "status", "reason")
    shown = [r for r in report.results if all_rows or r.status != "reproduced"]
    rows = [(str(r.line), r.failure_key[:12], r.case_id, r.operator, f"{r.stage}:{r.kind}", _LABEL[r.status],
             r.reason[:width]) for r in shown]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = [f"{report.path}: {len(report.results)} records on {report.backend} "
             f"{json.dumps(report.backend_options, sort_keys=True)}"]
    lines += [f"note: {n}" for n in report.notes]
    if rows:
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    c = report.counts()
    summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in c.items() if n or s == "reproduced")
    verdict = "OK: every record still reproduces" if report.ok else \
        f"CHANGED: {len(report.results) - c['reproduced']} of {len(report.results)} records changed status"
    lines.append(f"{summary} ({report.seconds:.1f} s) — {verdict}")
    return "\n".join(lines)
