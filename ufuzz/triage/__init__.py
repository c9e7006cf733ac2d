"""Triage: what is done with a campaign's failures once it has found them.

- :mod:`~ufuzz.triage.replay` — every failure rebuilt on a fresh backend and judged again (``ufuzz replay``)
- :mod:`~ufuzz.triage.minimise` — the smallest state and op sequence that still show a failure (``ufuzz minimise``)
- :mod:`~ufuzz.triage.corpusfile` and :mod:`~ufuzz.triage.corpusformat` — the regression-corpus file: failures
  exported so they replay without the run database (``ufuzz corpus export``)
- :mod:`~ufuzz.triage.check` — a regression corpus replayed and classified (``ufuzz corpus check``)
- :mod:`~ufuzz.triage.baseline` — a campaign's findings against a nightly baseline corpus (``ufuzz run --baseline``)

Every verdict here is :mod:`ufuzz.oracles.verdict`'s, as in a campaign.
"""
