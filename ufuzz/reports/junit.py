"""JUnit XML for CI systems that show test reports (GitHub, GitLab, Jenkins): of a regression-corpus check
(``ufuzz corpus check --junit``) and of a campaign (``ufuzz run --junit``).

The rule is the same for both, so that the test view agrees with the exit code: what fails the night is a
``<failure>``, a known failure that still fails is ``<skipped>`` with a message saying it is known (a CI shows
it apart, neither green nor red), and what passes is a passing test case. Both have one ``<testcase>`` per
**behaviour** (:func:`ufuzz.oracles.classes.behaviour_of`, what ``--baseline`` matches on): one product bug is
one test, however many facts, records or causes show it; the case's text lists them.

**corpus check**: a behaviour's records are replayed one by one. If any got worse — changed, regressed (a guard
failing again), parent broken — the case is a ``<failure>`` naming them; else a backend fault is an
``<error>``; else records not run because the backend was unreachable make it ``<skipped>`` (beside one
``<error>`` case that says the backend could not be reached); else known failures that still reproduce make
it ``<skipped>`` ("known failure, still reproduces", with how many of its records no longer do); else it passes
(every record fixed — good news, in ``system-out`` — or a guard that still passes). Its ``time`` is the
seconds its records' replays took.

**run**: with ``--baseline`` (statuses: :mod:`ufuzz.triage.baseline`), a new, worse or regressed behaviour is
a ``<failure>``, a known one ``<skipped>`` ("known"), an unconfirmed one ``<skipped>`` ("NEW but unconfirmed");
the baseline's behaviours this campaign did not meet are skipped cases too ("not met by this campaign"). Without a baseline every behaviour is a ``<failure>``.
A case's ``time`` is the seconds its causes' examples took to execute (each mutant's and its parent's
executions); its text lists the causes with when each was first found (execution and seconds into the campaign).
"""

from __future__ import annotations

import bisect
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

__all__ = ["check_to_junit", "write_junit", "campaign_to_junit", "write_campaign_junit", "KNOWN_MESSAGE"]

KNOWN_MESSAGE = "known failure, still reproduces"
#: the outcomes that make a behaviour's corpus-check case a <failure>, worst first
_BAD = ("regressed", "changed", "parent_broken")


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


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


# ====================================================================== a corpus check


def _record_line(r: Any) -> str:
    now = f"{r.got_stage}:{r.got_kind}" if r.got_kind else ""
    got = f" (now {now})" if now and now not in r.reason else ""
    return (f"line {r.line}: {r.outcome.upper()} {r.failure_key} ({r.operator} {r.stage}:{r.kind}, case "
            f"{r.case_id}, recorded as {r.expected_status}): {r.reason}{got}")


def _behaviour_groups(report: Any, corpus: Any) -> list[tuple[Any, list[Any]]]:
    """The check's results grouped by the behaviour of their records, in corpus order."""
    from ufuzz.oracles.classes import behaviour_of
    from ufuzz.triage.baseline import record_behaviour

    by_line = {r.line: r for r in corpus.records} if corpus is not None else {}
    groups: dict[str, tuple[Any, list[Any]]] = {}
    for res in report.results:
        rec = by_line.get(res.line)
        b = record_behaviour(rec) if rec is not None else behaviour_of(res.operator, res.stage, res.kind)
        groups.setdefault(b.id, (b, []))[1].append(res)
    return list(groups.values())


def _check_case(report: Any, b: Any, results: list[Any]) -> ET.Element:
    n = len(results)
    seconds = sum(float(getattr(r, "seconds", 0.0) or 0.0) for r in results)
    ops = sorted({r.operator or "-" for r in results})
    case = _case(f"ufuzz.{b.cls.id}", f"{b.id} ({_n(n, 'record')}, {', '.join(ops)})", seconds, file=report.path,
                 line=str(results[0].line))
    by = {o: [r for r in results if r.outcome == o] for o in
          ("known", "fixed", "passes", "error", "inconclusive", "not_run", *_BAD)}
    listing = "\n".join(_record_line(r) for r in results)
    bad = [r for o in _BAD for r in by[o]]
    if bad:
        worst = next(o for o in _BAD if by[o])
        parts = ", ".join(f"{len(by[o])} {o.replace('_', ' ')}" for o in _BAD if by[o])
        ET.SubElement(case, "failure", {"type": worst, "message": f"{worst.upper()}: {parts} of {_n(n, 'record')} "
                                                                  f"— {b.title}"}).text = (
            f"{listing}\ninspect: ufuzz corpus check {report.path} --json -")
    elif by["error"]:
        ET.SubElement(case, "error", {"type": "backend_error", "message": f"{len(by['error'])} of "
                                      f"{_n(n, 'record')} ended in a backend error: {by['error'][0].reason}"}
                      ).text = listing
    elif by["not_run"] or by["inconclusive"]:
        why = (f"not run: {by['not_run'][0].reason}" if by["not_run"] else
               f"inconclusive: {by['inconclusive'][0].reason}")
        ET.SubElement(case, "skipped", {"message": why})
        ET.SubElement(case, "system-out").text = listing
    elif by["known"]:
        fixed = f"; {len(by['fixed'])} no longer reproduce (FIXED: good news)" if by["fixed"] else ""
        ET.SubElement(case, "skipped", {"message": f"{KNOWN_MESSAGE}: {b.title} ({len(by['known'])} of "
                                                   f"{_n(n, 'record')}{fixed})"})
        ET.SubElement(case, "system-out").text = listing
    else:
        words = []
        if by["fixed"]:
            words.append(f"FIXED: {len(by['fixed'])} of {_n(n, 'record')} no longer reproduce (good news; run "
                         "`ufuzz corpus accept` to keep them as guards)")
        if by["passes"]:
            words.append(f"{len(by['passes'])} of {_n(n, 'record')}: fixed before, still pass")
        ET.SubElement(case, "system-out").text = "; ".join(words) + "\n" + listing
    return case


def check_to_junit(report: Any, corpus: Any = None) -> ET.ElementTree:
    """The JUnit tree of a :class:`ufuzz.triage.check.CheckReport` of ``corpus`` (its
    :class:`~ufuzz.triage.corpusfile.RegressionCorpus`, which says each record's behaviour; without it records
    are grouped by class)."""
    cases = []
    if report.unreachable:
        case = _case("ufuzz.backend", "backend reachable", 0.0)
        ET.SubElement(case, "error", {"type": "unreachable", "message": report.unreachable}).text = (
            f"the {report.backend} backend could not be reached: {report.unreachable}")
        cases.append(case)
    cases += [_check_case(report, b, results) for b, results in _behaviour_groups(report, corpus)]
    suites = ET.Element("testsuites")
    oc = report.outcomes()
    props = [("file", report.path), ("backend", report.backend),
             ("backend_options", json.dumps(report.backend_options, sort_keys=True, default=str)),
             ("exit_code", report.exit_code), ("records", len(report.results)),
             *((o, oc[o]) for o in oc if oc[o]), *((f"note{i}", n) for i, n in enumerate(report.notes))]
    _suite(suites, f"ufuzz corpus check {Path(report.path).name}", cases, report.seconds, props)
    ET.indent(suites)
    return ET.ElementTree(suites)


def _write(tree: ET.ElementTree, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tree.write(p, encoding="utf-8", xml_declaration=True)
    return p


def write_junit(report: Any, path: str | Path, corpus: Any = None) -> Path:
    return _write(check_to_junit(report, corpus), path)


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


def _campaign_behaviours(data: Any, rows: list[dict[str, Any]]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The campaign's failure rows grouped by behaviour, in order of first discovery."""
    from ufuzz.oracles.classes import behaviour_of

    groups: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    for r in rows:
        m = data.mutants.get(r["case"])
        b = behaviour_of(r["operator"], r["stage"], r["kind"], r["offending"], m.ops if m is not None else ())
        groups.setdefault(b.id, (b, []))[1].append(r)
    return list(groups.values())


def _cause_lines(causes: list[dict[str, Any]], examples: dict[str, dict[str, Any]], plot: list[dict[str, float]],
                 campaign_dir: str | Path) -> str:
    lines = []
    for g in causes:
        at = _found_at(plot, g["first_seq"])
        offending = f" on {','.join(g['offending'])}" if g["offending"] else ""
        lines.append(f"cause {g['cause'][:12]}: {g['operator'] or '-'} {g['stage']}:{g['kind']}{offending}; "
                     f"{_n(g['unique'], 'unique failure')}, seen {g['occurrences']}x, first found at execution "
                     f"{g['first_seq']}" + (f" ({at:.1f} s into the campaign)" if at is not None else "")
                     + f"; example {g['example']}: {(examples.get(g['example']) or {}).get('mutation') or ''}")
    first = causes[0]["example"][:12]
    lines.append(f"inspect: ufuzz failures show {campaign_dir} {first} --format md")
    return "\n".join(lines)


def _status(b: Any, verdict: Any) -> str:
    if verdict is None:
        return "failure"
    row = verdict.behaviours.get(b.id)
    return row["status"] if row is not None else "new"


def campaign_to_junit(data: Any, summary: dict[str, Any], verdict: Any = None, *,
                      campaign_dir: str | Path = ".", baseline_given: bool = False) -> ET.ElementTree:
    """The JUnit tree of a finished campaign (``data``: its :class:`~ufuzz.corpus.campaign.CampaignData`;
    ``verdict``: its :class:`~ufuzz.triage.baseline.BaselineVerdict` when it ran with ``--baseline``)."""
    from ufuzz.engine.plotdata import read_plot_data
    from ufuzz.reports.failures import failure_rows, failure_views, group_by_cause
    from ufuzz.triage.baseline import STATUSES

    behaviours = _campaign_behaviours(data, failure_rows(data, baseline=verdict))
    causes = {b.id: group_by_cause(rows) for b, rows in behaviours}
    wanted = [g["example"] for gs in causes.values() for g in gs]
    examples = {v["key"]: v for v in failure_views(data, wanted, campaign_dir=campaign_dir)} if wanted else {}
    plot = read_plot_data(Path(campaign_dir) / "plot_data.csv")
    cases = []
    if summary.get("status") == "error":
        case = _case("ufuzz.campaign", "campaign ran", 0.0)
        ET.SubElement(case, "error", {"type": "campaign_error", "message": str(summary.get("message") or "")})
        cases.append(case)
    for b, rows in behaviours:
        gs = causes[b.id]
        status = _status(b, verdict)
        ops = sorted({r["operator"] or "-" for r in rows})
        case = _case(f"ufuzz.{b.cls.id}", f"{b.id} ({', '.join(ops)})",
                     sum(_case_seconds(examples.get(g["example"], {})) for g in gs))
        size = f"{_n(len(rows), 'unique failure')}, {_n(len(gs), 'cause')}"
        text = _cause_lines(gs, examples, plot, campaign_dir)
        row = verdict.behaviours.get(b.id, {}) if verdict is not None else {}
        if status in ("known", "unconfirmed"):
            message = (f"known failure (a behaviour of the baseline {verdict.corpus}), still fails" if status == "known"
                       else "NEW but unconfirmed: a behaviour the baseline lacks, met so seldom that the baseline's "
                            f"campaign may have missed it by chance ({row.get('chance') or 0:.0%}); it does not fail "
                            "the night")
            ET.SubElement(case, "skipped", {"message": f"{message}: {b.title} ({size})"})
            ET.SubElement(case, "system-out").text = text
        else:
            message = {"regressed": "REGRESSED: fixed before (a guard of the baseline), fails again",
                       "new": "NEW behaviour (not in the baseline)",
                       "worse": f"WORSE: a known behaviour met far more often than in the baseline "
                                f"({row.get('causes')} causes against {row.get('baseline_causes')}; by chance: "
                                f"{row.get('chance') or 0:.2%})",
                       "failure": ("failure (not compared with the baseline: the campaign ended in error)"
                                   if baseline_given else "failure (no --baseline: every behaviour is reported)")}[status]
            ET.SubElement(case, "failure", {"type": status, "message": f"{message}: {b.title} ({size})"}).text = text
        cases.append(case)
    if verdict is not None:
        for bid in verdict.unseen:
            row = verdict.baseline_behaviours.get(bid, {})
            case = _case(f"ufuzz.{row.get('class', bid)}", f"{bid} (baseline)", 0.0)
            ET.SubElement(case, "skipped", {
                "message": f"known failure of the baseline, not met by this campaign: {row.get('title', bid)} "
                           f"(`ufuzz corpus check` replays its {_n(int(row.get('records', 0)), 'record')})"})
            cases.append(case)
    seconds = plot[-1]["elapsed_s"] if plot else 0.0
    props = [("campaign", summary.get("campaign")), ("backend", data.backend), ("seed", data.config.get("seed")),
             ("budget", data.config.get("budget")), ("executions", summary.get("executions")),
             ("status", summary.get("status")), ("unique_failures", summary.get("unique_failures")),
             ("behaviours", len(behaviours)), ("causes", sum(len(g) for g in causes.values()))]
    if verdict is not None:
        n = verdict.behaviour_counts()
        props += [("baseline", verdict.corpus), ("matching", "behaviour"),
                  *((f"{k}_behaviours", v) for k, v in n.items()),
                  *((k, len(getattr(verdict, k))) for k in STATUSES)]
    suites = ET.Element("testsuites")
    _suite(suites, f"ufuzz run {summary.get('campaign')}", cases, seconds, props)
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_campaign_junit(out_dir: str | Path, db: str | None, summary: dict[str, Any], verdict: Any,
                         path: str | Path, *, baseline_given: bool = False) -> Path:
    """Load the campaign in ``out_dir`` and write its JUnit file to ``path`` (``baseline_given``: it ran with
    ``--baseline``, whether or not its end let it be compared)."""
    from ufuzz.corpus.campaign import load_campaign

    data = load_campaign(Path(out_dir), db, campaign_id=summary["campaign"])
    return _write(campaign_to_junit(data, summary, verdict, campaign_dir=out_dir, baseline_given=baseline_given),
                  path)
