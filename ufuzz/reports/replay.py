"""Plain-text rendering of a replay (:func:`ufuzz.triage.replay.replay_campaign`)."""

from __future__ import annotations

import json

from ufuzz.triage.replay import ReplayReport


def render_replay(report: ReplayReport, *, width: int = 60) -> str:
    """A plain-text table of the replay and a closing ``N/M reproduced`` line."""
    head = ("failure", "case", "parent", "operator", "recorded", "ok", "reason")
    rows = [(r.failure_key[:12], r.case_id, r.parent_id or "-", r.operator or "-", f"{r.stage}:{r.kind}",
             "yes" if r.reproduced else "NO", r.reason[:width]) for r in report.results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = [f"campaign {report.campaign_id} on {report.backend} "
             f"{json.dumps(report.backend_options, sort_keys=True)}",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.append(f"{report.reproduced}/{report.total} reproduced")
    return "\n".join(lines)
