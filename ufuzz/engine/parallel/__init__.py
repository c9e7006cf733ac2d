"""Where a campaign's jobs run. Lanes change how fast a campaign runs, never what it finds.

- :mod:`~ufuzz.engine.parallel.lane` — the :class:`~ufuzz.engine.parallel.lane.Lane` interface, and the lane in the
  campaign's own thread (``--workers 1``)
- :mod:`~ufuzz.engine.parallel.core` — a lane's work, whatever runs it (:class:`~ufuzz.engine.parallel.core.LaneCore`)
- :mod:`~ufuzz.engine.parallel.pool` — the queue of jobs that feeds every kind of lane
- :mod:`~ufuzz.engine.parallel.process` (child processes, ``--workers``), :mod:`~ufuzz.engine.parallel.threadlanes`
  (threads for work that waits, ``--max-concurrency``), :mod:`~ufuzz.engine.parallel.raylanes` (Ray actors,
  ``--ray-address``)
- :mod:`~ufuzz.engine.parallel.lanesetup` — which lanes a campaign starts
- :mod:`~ufuzz.engine.parallel.batching` — the batch of tasks drawn before their results are seen (``--batch``)
"""
