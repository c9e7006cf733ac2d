"""The oracle side of a campaign: references and verdicts, kept apart from the scheduler.

References enter only here (``register``); failures leave only to the failure store (``sink``). Nothing here
returns a reference or a failure to the engine's scheduling path: ``check`` returns just the failure key
(for live counts) — the scheduler module cannot import this package (a test enforces it).
"""

from __future__ import annotations

from collections.abc import Callable

from ufuzz.model import Execution, FuzzCase, Reference
from ufuzz.oracles.expectations import Failure, JudgeFn, Outcome, evaluate, failure_key


class Oracle:
    def __init__(self, sink: Callable[[Failure, Reference], None], hidden: bool = False,
                 reference_sink: Callable[[str, Reference], None] | None = None,
                 judge: JudgeFn | None = None) -> None:
        self.judge = judge
        self._refs: dict[str, Reference] = {}
        self._reference_sink = reference_sink
        self._parent_outcomes: dict[tuple[str, str], Outcome] = {}
        self._sink = sink
        self.hidden = hidden
        self.seed_baseline_failures: dict[str, Outcome] = {}

    def register(self, case_id: str, reference: Reference) -> None:
        """Take a case's reference (and persist it to the oracle side's own table)."""
        self._refs[case_id] = reference
        if self._reference_sink is not None:
            self._reference_sink(case_id, reference)

    def forget(self, case_id: str) -> None:
        self._refs.pop(case_id, None)

    def knows(self, case_id: str) -> bool:
        return case_id in self._refs

    def reference_of(self, case_id: str) -> Reference:
        """Operators derive child references from a parent's; only the campaign's mutation path calls this."""
        return self._refs[case_id]

    def _deleted(self, case: FuzzCase) -> tuple[str, ...]:
        return tuple(op.target for op in case.ops if op.op == "delete" and op.target)

    def outcome(self, case: FuzzCase, ex: Execution) -> Outcome:
        key = (case.id, ex.state_key)
        if key not in self._parent_outcomes:
            self._parent_outcomes[key] = evaluate(self._refs[case.id], ex, self._deleted(case), self.hidden,
                                                     self.judge)
        return self._parent_outcomes[key]

    def check(self, mutant: FuzzCase, ex: Execution, parent: FuzzCase, parent_ex: Execution) -> str | None:
        """Judge a mutant against its reference, given its parent's execution. Returns a failure key or None."""
        if ex.error is not None or parent_ex.error is not None:
            return None
        parent_out = self.outcome(parent, parent_ex)
        if not parent_out.passed:
            if parent.parent_id is None:
                self.seed_baseline_failures.setdefault(parent.seed_id, parent_out)
            return None
        out = evaluate(self._refs[mutant.id], ex, self._deleted(mutant), self.hidden, self.judge)
        if out.passed:
            return None
        ob = mutant.obligation
        target = ob.target if ob else ""
        key = failure_key(mutant.seed_id, mutant.operator or "", target, out.kind or "", out.stage or "",
                          out.offending)
        failure = Failure(key=key, case_id=mutant.id, seed_id=mutant.seed_id, operator=mutant.operator or "",
                          target=target, kind=out.kind or "", stage=out.stage or "", offending=out.offending,
                          detail={**out.detail, "parent_response": parent_ex.response,
                                  "parent_top_ids": list(parent_ex.top_ids), "query": ex.query,
                                  "parent_query": parent_ex.query, "mutation": mutant.detail})
        self._sink(failure, self._refs[mutant.id])
        return key
