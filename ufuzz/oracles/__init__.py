"""The oracles: what a right execution is, and the one place that decides failures.

- :mod:`~ufuzz.oracles.verdict` — the verdict, called by campaigns, replay and corpus checks alike
- :mod:`~ufuzz.oracles.checks` — one module per check (missing evidence, a stale answer, ...); the failure kinds are
  the checks' own
- :mod:`~ufuzz.oracles.expectations` — the checks of each level run against one execution's reference
- :mod:`~ufuzz.oracles.oracle` — a campaign's references and verdicts, kept apart from the scheduler
- :mod:`~ufuzz.oracles.judging` (responders and judges), :mod:`~ufuzz.oracles.matching` (answers and abstentions in
  text), :mod:`~ufuzz.oracles.classes` (behaviour classes: failures counted as a developer fixes them),
  :mod:`~ufuzz.oracles.accuracy` (the benchmark's own accuracy)
"""
