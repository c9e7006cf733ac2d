"""The oracles: what a right execution is, and the one place that decides failures.

- :mod:`~ufuzz.oracles.verdict` — the verdict, called by campaigns, replay and corpus checks alike
- :mod:`~ufuzz.oracles.checks` — one module per check of the selection and response levels (missing evidence, a
  stale answer, ...), whose kinds are the checks' own; the state level's kinds are what a state operation did
  besides its claim (:mod:`ufuzz.operators.sideeffects`) or a write its own words do not find
  (:mod:`ufuzz.engine.readback`), and the system probes' are in :mod:`~ufuzz.oracles.verdict`, which decides them all
- :mod:`~ufuzz.oracles.expectations` — the checks of each level run against one execution's reference
- :mod:`~ufuzz.oracles.oracle` — a campaign's references and verdicts, kept apart from the scheduler
- :mod:`~ufuzz.oracles.judging` (responders and judges), :mod:`~ufuzz.oracles.matching` (answers and abstentions in
  text), :mod:`~ufuzz.oracles.classes` (behaviour classes: failures counted as a developer fixes them),
  :mod:`~ufuzz.oracles.accuracy` (the benchmark's own accuracy)
"""
