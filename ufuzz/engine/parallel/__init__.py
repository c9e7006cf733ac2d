"""Where a campaign's jobs run: the :class:`~ufuzz.engine.parallel.lane.Lane` interface
(:mod:`~ufuzz.engine.parallel.lane`), lanes in this process or in worker processes (:mod:`~ufuzz.engine.parallel.lanes`),
as threads for work that waits (:mod:`~ufuzz.engine.parallel.threadlanes`) or as Ray actors
(:mod:`~ufuzz.engine.parallel.raylanes`); which ones a campaign starts (:mod:`~ufuzz.engine.parallel.lanesetup`); and
the batch of tasks drawn before their results are seen (:mod:`~ufuzz.engine.parallel.batching`). Lanes change how fast
a campaign runs, never what it finds."""
