"""The fuzzing engine: a campaign's loop and every part it is made of.

- the loop: :mod:`~ufuzz.engine.campaign` (started by :mod:`~ufuzz.engine.startup`, seeded by
  :mod:`~ufuzz.engine.seeding`, configured by :mod:`~ufuzz.engine.config` and :mod:`~ufuzz.engine.strategies`)
- a step: :mod:`~ufuzz.engine.step` (a task made into jobs and applied in task order), :mod:`~ufuzz.engine.proposal`
  (mutate and validate), :mod:`~ufuzz.engine.executor` (parent and mutant on independent copies of a state),
  :mod:`~ufuzz.engine.readback` (a write found by its own words), :mod:`~ufuzz.engine.probes`
- where steps run: :mod:`~ufuzz.engine.parallel` (the lane interface; process, thread and Ray lanes; the batch)
- feedback: :mod:`~ufuzz.engine.feedback` and one module per signal in :mod:`~ufuzz.engine.signals`;
  :mod:`~ufuzz.engine.rbo`, :mod:`~ufuzz.engine.identify`, :mod:`~ufuzz.engine.cover`
- choosing what to run next: :mod:`~ufuzz.engine.scheduler` (which never sees a failure) and
  :mod:`~ufuzz.engine.cases`
- what a running campaign keeps and says: :mod:`~ufuzz.engine.state` (pickled whole for a snapshot),
  :mod:`~ufuzz.engine.journal` (commits, snapshots, resume; :mod:`~ufuzz.engine.snapshot`),
  :mod:`~ufuzz.engine.monitor` and :mod:`~ufuzz.engine.plotdata`, :mod:`~ufuzz.engine.session` (resources and signals),
  :mod:`~ufuzz.engine.budget`, :mod:`~ufuzz.engine.ending` and :mod:`~ufuzz.engine.summarise`,
  :mod:`~ufuzz.engine.dirlock`, :mod:`~ufuzz.engine.preflight`, :mod:`~ufuzz.engine.llmuse`

Verdicts are not made here: :mod:`ufuzz.oracles.verdict` decides failures (the read-back and the probes only find
what it judges), and the scheduler never sees them.
"""
