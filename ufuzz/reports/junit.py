"""JUnit XML for CI systems that show test reports (GitHub, GitLab, Jenkins): of a regression-corpus check
(``ufuzz corpus check --junit``) and of a campaign (``ufuzz run --junit``).

The rule is the same for both, so that the test view agrees with the exit code: what fails the night is a
``<failure>``, a known failure that still fails is ``<skipped>`` with a message saying it is known (a CI shows
it apart, neither green nor red), and what passes is a passing test case.

**corpus check**: one ``<testcase>`` per corpus record, named by operator, failure kind and key. Known failures
that still reproduce are skipped ("known failure, still reproduces"); fixed ones pass (their ``system-out`` says
so: good news); guards of fixed failures that still pass, pass; changed, regressed (a guard failing again) and
parent-broken records are ``<failure>``s, backend faults ``<error>``s, and records not run because the backend
was unreachable are ``<skipped>`` beside one ``<error>`` case that says the backend could not be reached. Each
case's ``time`` is the seconds its replay took.

**run**: one ``<testcase>`` per cause (one bug, however many unique failures show it). With ``--baseline``: a
new cause is a ``<failure>``, a cause the baseline holds as failing is ``<skipped>`` ("known"), one it holds as
fixed (its guard fails again) is a ``<failure>`` (regressed); the baseline's failing records this campaign did
not meet are skipped cases too ("not met tonight"). Without a baseline every cause is a ``<failure>``. Each
case's ``time`` is the seconds the failure's example took to execute (the mutant's and its parent's
executions); its ``system-out`` says when it was first found (execution and seconds into the campaign).
"""

from __future__ import annotations

import bisect
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

__all__ = ["check_to_junit", "write_junit", "campaign_to_junit", "write_campaign_junit"]

_MESSAGES = {
    "fixed": "FIXED: the known failure no longer reproduces (run `ufuzz corpus accept` to keep it as a guard)",
    "passes": "fixed before, still passes",
}
KNOWN_MESSAGE = "known failure, still reproduces"


def _name(r: Any) -> str:
    return f"{r.operator} {r.stage}:{r.kind} {r.failure_key[:12]} ({r.case_id}, line {r.line})"


def _suite(suites: ET.Element, name: str, cases: list[ET.Element], seconds: float,
           properties: list[tuple[str, Any]]) -> ET.Element:
    counts = {tag: sum(1 for c in cases if c.find(tag) is not None) for tag in ("failure", "error", "skipped")}
    suite = ET.SubElement(suites, "testsuite", {
        "name": name, "tests": str(len(cases)), "failures": str(counts["failure"]), "errors": str(counts["error"]),
        "skipped": str(counts["skipped"]), "time": f"{seconds:.3f}"})
    props = ET.SubElement(suite, "properties")
    for pname, value in properties:
        ET.SubElement(props, "property", {"name": pname, "value": str(value)})
    suite.extend(cases)
    return suite


def _case(classname: str, name: str, seconds: float, **attrs: str) -> ET.Element:
    return ET.Element("testcase", {"classname": classname, "name": name, **attrs, "time": f"{seconds:.3f}"})


def check_to_junit(report: Any) -> ET.ElementTree:
    """The JUnit tree of a :class:`ufuzz.engine.regression.CheckReport`."""
    cases = []
    if report.unreachable:
        case = _case("ufuzz.backend", "backend reachable", 0.0)
        ET.SubElement(case, "error", {"type": "unreachable", "message": report.unreachable}).text = (
            f"the {report.backend} backend could not be reached: {report.unreachable}")
        cases.append(case)
    for r in report.results:
        case = _case(f"ufuzz.{r.operator or 'mutant'}", _name(r), float(getattr(r, "seconds", 0.0) or 0.0),
                     file=report.path, line=str(r.line))
        if r.outcome in ("changed", "regressed", "parent_broken"):
            now = f"{r.got_stage}:{r.got_kind}"
            got = f" (now {now})" if r.got_kind and now not in r.reason else ""
            ET.SubElement(case, "failure", {"type": r.outcome, "message": f"{r.outcome}: {r.reason}{got}"}).text = (
                f"failure {r.failure_key} ({r.operator}, expected {r.stage}:{r.kind}, recorded as "
                f"{r.expected_status}) {r.outcome}: {r.reason}{got}\n"
                f"inspect: ufuzz corpus check {report.path} --json -")
        elif r.outcome == "error":
            ET.SubElement(case, "error", {"type": "backend_error", "message": r.reason})
        elif r.outcome == "not_run":
            ET.SubElement(case, "skipped", {"message": r.reason})
        elif r.outcome == "known":
            ET.SubElement(case, "skipped", {"message": f"{KNOWN_MESSAGE}: {r.stage}:{r.kind}"})
        else:
            ET.SubElement(case, "system-out").text = _MESSAGES.get(r.outcome, r.reason)
        cases.append(case)
    suites = ET.Element("testsuites")
    props = [("file", report.path), ("backend", report.backend), ("backend_options", repr(report.backend_options)),
             ("exit_code", report.exit_code), *((f"note{i}", n) for i, n in enumerate(report.notes))]
    _suite(suites, f"ufuzz corpus check {Path(report.path).name}", cases, report.seconds, props)
    ET.indent(suites)
    return ET.ElementTree(suites)


def _write(tree: ET.ElementTree, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tree.write(p, encoding="utf-8", xml_declaration=True)
    return p


def write_junit(report: Any, path: str | Path) -> Path:
    return _write(check_to_junit(report), path)


# ====================================================================== a campaign


def _found_at(plot: list[dict[str, float]], seq: int | None) -> float | None:
    """Seconds into the campaign at which execution ``seq`` had run (from plot_data.csv), if recorded."""
    if seq is None or not plot:
        return None
    execs = [r["executions"] for r in plot]
    i = bisect.bisect_left(execs, seq)
    return plot[min(i, len(plot) - 1)]["elapsed_s"]


def _case_seconds(view: dict[str, Any]) -> float:
    total = 0.0
    for side in ("parent", "mutant"):
        ex = (view.get(side) or {}).get("execution") or {}
        total += float(ex.get("seconds") or 0.0)
    return total


def _cause_status(keys: list[str], verdict: Any) -> str:
    if verdict is None:
        return "new"
    marks = {verdict.status_of(k) for k in keys}
    if "regressed" in marks:
        return "regressed"
    if "new" in marks:
        return "new"
    return "known"


def campaign_to_junit(data: Any, summary: dict[str, Any], verdict: Any = None, *,
                      campaign_dir: str | Path = ".", baseline: Any = None) -> ET.ElementTree:
    """The JUnit tree of a finished campaign (``data``: its :class:`~ufuzz.corpus.campaign.CampaignData`;
    ``verdict``: its :class:`~ufuzz.corpus.baseline.BaselineVerdict` when it ran with ``--baseline``, whose
    corpus is ``baseline``)."""
    from ufuzz.engine.plotdata import read_plot_data
    from ufuzz.reports.failures import failure_rows, failure_views, group_by_cause

    groups = group_by_cause(failure_rows(data, baseline=verdict))
    examples = {v["key"]: v for v in failure_views(data, [g["example"] for g in groups],
                                                   campaign_dir=campaign_dir)} if groups else {}
    plot = read_plot_data(Path(campaign_dir) / "plot_data.csv")
    cases = []
    if summary.get("status") == "error":
        case = _case("ufuzz.campaign", "campaign ran", 0.0)
        ET.SubElement(case, "error", {"type": "campaign_error", "message": str(summary.get("message") or "")})
        cases.append(case)
    for g in groups:
        status = _cause_status(g["keys"], verdict)
        view = examples.get(g["example"], {})
        offending = f" {','.join(g['offending'])}" if g["offending"] else ""
        case = _case(f"ufuzz.{g['operator'] or 'mutant'}",
                     f"{g['operator']} {g['stage']}:{g['kind']}{offending} (cause {g['cause'][:12]})",
                     _case_seconds(view))
        at = _found_at(plot, g["first_seq"])
        found = (f"first found at execution {g['first_seq']}" + (f" ({at:.1f} s into the campaign)" if at is not None
                                                                 else ""))
        detail = (f"{g['unique']} unique failure(s), seen {g['occurrences']} time(s), {found}; example "
                  f"{g['example']}: {view.get('mutation') or ''}\n"
                  f"inspect: ufuzz failures show {campaign_dir} {g['example'][:12]} --format md")
        if status == "known":
            ET.SubElement(case, "skipped", {"message": f"known failure (in the baseline {verdict.corpus}), still "
                                                       f"fails: {g['stage']}:{g['kind']}"})
            ET.SubElement(case, "system-out").text = detail
        else:
            message = ("REGRESSED: fixed before (a guard in the baseline), fails again" if status == "regressed"
                       else "NEW failure (not in the baseline)" if verdict is not None
                       else "failure (no --baseline: every failure is reported)")
            ET.SubElement(case, "failure", {"type": status, "message": f"{message}: {g['stage']}:{g['kind']}"}).text \
                = detail
        cases.append(case)
    if verdict is not None and baseline is not None:
        unseen = set(verdict.unseen)
        for r in baseline.records:
            if r.failure_key in unseen:
                case = _case(f"ufuzz.{r.operator or 'mutant'}", f"{r.operator} {r.stage}:{r.kind} "
                             f"{r.failure_key[:12]} (baseline line {r.line})", 0.0)
                ET.SubElement(case, "skipped", {"message": "known failure of the baseline, not met by this campaign "
                                                           "(`ufuzz corpus check` replays it)"})
                cases.append(case)
    seconds = plot[-1]["elapsed_s"] if plot else 0.0
    props = [("campaign", summary.get("campaign")), ("backend", data.backend), ("seed", data.config.get("seed")),
             ("budget", data.config.get("budget")), ("executions", summary.get("executions")),
             ("status", summary.get("status")), ("unique_failures", summary.get("unique_failures")),
             ("causes", len(groups))]
    if verdict is not None:
        props += [("baseline", verdict.corpus), ("known", len(verdict.known)), ("new", len(verdict.new)),
                  ("regressed", len(verdict.regressed))]
    suites = ET.Element("testsuites")
    _suite(suites, f"ufuzz run {summary.get('campaign')}", cases, seconds, props)
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_campaign_junit(out_dir: str | Path, db: str | None, summary: dict[str, Any], verdict: Any, baseline: Any,
                         path: str | Path) -> Path:
    """Load the campaign in ``out_dir`` and write its JUnit file to ``path``."""
    from ufuzz.corpus.campaign import load_campaign

    data = load_campaign(Path(out_dir), db, campaign_id=summary["campaign"])
    return _write(campaign_to_junit(data, summary, verdict, campaign_dir=out_dir, baseline=baseline), path)
