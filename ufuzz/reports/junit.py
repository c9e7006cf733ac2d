"""JUnit XML of a regression-corpus check, for CI systems that show test reports (GitHub, GitLab, Jenkins).

One ``<testcase>`` per corpus record, named by operator, failure kind and key, so a failed job names the
failure that regressed. Known failures that still reproduce and fixed ones pass (a fixed one says so in its
``system-out``); changed, regressed and parent-broken records are ``<failure>``s, backend faults ``<error>``s,
and records not run because the backend was unreachable are ``<skipped>`` beside one ``<error>`` case that
says the backend could not be reached.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

__all__ = ["check_to_junit", "write_junit"]

_MESSAGES = {
    "known": "known failure, still reproduces",
    "fixed": "FIXED: the known failure no longer reproduces (run `ufuzz corpus accept` to keep it as a guard)",
    "passes": "fixed before, still passes",
}


def _name(r: Any) -> str:
    return f"{r.operator} {r.stage}:{r.kind} {r.failure_key[:12]} ({r.case_id}, line {r.line})"


def check_to_junit(report: Any) -> ET.ElementTree:
    """The JUnit tree of a :class:`ufuzz.engine.regression.CheckReport`."""
    results = report.results
    oc = report.outcomes()
    failures = sum(oc[o] for o in ("changed", "regressed", "parent_broken"))
    errors = oc["error"] + (1 if report.unreachable else 0)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", {
        "name": f"ufuzz corpus check {Path(report.path).name}", "tests": str(len(results) + bool(report.unreachable)),
        "failures": str(failures), "errors": str(errors), "skipped": str(oc["not_run"]),
        "time": f"{report.seconds:.3f}"})
    props = ET.SubElement(suite, "properties")
    for name, value in (("file", report.path), ("backend", report.backend),
                        ("backend_options", repr(report.backend_options)), *((f"note{i}", n)
                                                                             for i, n in enumerate(report.notes))):
        ET.SubElement(props, "property", {"name": name, "value": str(value)})
    if report.unreachable:
        case = ET.SubElement(suite, "testcase", {"classname": "ufuzz.backend", "name": "backend reachable",
                                                 "time": "0"})
        ET.SubElement(case, "error", {"type": "unreachable", "message": report.unreachable}).text = (
            f"the {report.backend} backend could not be reached: {report.unreachable}")
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": f"ufuzz.{r.operator or 'mutant'}", "name": _name(r),
                                                 "file": report.path, "line": str(r.line), "time": "0"})
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
        else:
            ET.SubElement(case, "system-out").text = _MESSAGES.get(r.outcome, r.reason)
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(report: Any, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    check_to_junit(report).write(p, encoding="utf-8", xml_declaration=True)
    return p
