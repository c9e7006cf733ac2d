"""The campaign's journal: its records committed window by window, each commit with a snapshot of the
campaign's state when due, and the way back — a killed, interrupted or errored campaign continues from its
last snapshot (:func:`reopen`, :meth:`Journal.restore`); on a deterministic backend the continued campaign is
the uninterrupted one (same executions, mutants and failures).

Records go to the corpus and failure stores through one write window (:mod:`ufuzz.corpus.window`), marked
at the end of every batch so that only whole batches are committed. A snapshot is the
:class:`~ufuzz.engine.state.CampaignState` (:mod:`ufuzz.engine.snapshot`), taken at a commit and written in
the same transaction. None is taken inside a run of backend errors: a campaign that ends in an outage (or is
killed or interrupted in one) resumes from the last snapshot before it and redoes those steps, so an outage
and a resume give the campaign that never had one — on a deterministic backend, record by record — rather than
one whose budget went on errors and whose scheduler learnt from them.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ufuzz.engine import dirlock, ending, signals
from ufuzz.engine.config import CampaignConfig, resolve_seeds
from ufuzz.engine.snapshot import FORMAT, SnapshotError, dump, format_of, load, signals_of
from ufuzz.engine.state import CampaignState, Progress
from ufuzz.model import FuzzCase, SeedSuite

__all__ = ["Journal", "ResumeError", "directory_campaign", "reopen"]


class ResumeError(ValueError):
    """A campaign directory that cannot be resumed (nothing there, still running, nothing left to do)."""


def directory_campaign(campaign_dir: Path) -> str | None:
    """The id of the campaign a directory holds (``campaign.json``, written when it starts), if known."""
    for name in ("campaign.json", "summary.json"):
        try:
            cid = json.loads((campaign_dir / name).read_text(encoding="utf-8")).get("campaign")
        except (OSError, ValueError, AttributeError):
            continue
        if cid:
            return str(cid)
    return None


def reopen(out: Path, db: str | None, budget: int | None, backend_options: dict[str, Any] | None,
           overrides: dict[str, Any]) -> tuple[CampaignConfig, SeedSuite | None, str]:
    """The configuration, recorded suite (None: the seed file is read again) and id of the campaign in ``out``
    (its corpus in ``db``), checked to be resumable: to its budget, or to ``budget`` when given.
    ``backend_options`` are merged over the stored ones (secrets are never stored); ``overrides`` set run-time
    fields. Only reads: the campaign writes once it opens. Raises :class:`ResumeError`."""
    from ufuzz.corpus.failures import FailureStore
    from ufuzz.corpus.store import CorpusStore

    busy = dirlock.holder(out)  # read only: the lock itself is taken when the campaign opens
    if busy is not None:
        raise dirlock.DirectoryLocked(out, busy)
    cid = directory_campaign(out)
    if db is None and not (out / "corpus.sqlite").is_file():
        raise ResumeError(f"{out}: no campaign to resume here (no corpus.sqlite; pass --db URL if the corpus "
                          "is elsewhere)")
    url = db or f"sqlite:///{(out / 'corpus.sqlite').resolve()}"
    store = CorpusStore(url, readonly=True)
    try:
        if cid is None:
            from ufuzz.corpus.campaign import resolve_campaign

            cid = resolve_campaign(store, out)
        rec = store.campaign(cid)
        if rec is None:
            raise ResumeError(f"{out}: campaign {cid!r} is not in {store.url}")
        if rec.status == ending.RUNNING and rec.pid != os.getpid() and ending.process_alive(rec.pid, rec.host):
            raise dirlock.DirectoryLocked(out, {"pid": rec.pid, "host": rec.host, "campaign": cid})
        config = CampaignConfig.from_dict(rec.config)
        config.out, config.db = str(out), db if db is not None else config.db
        config.backend_options = {**config.backend_options, **(backend_options or {})}
        config.absolute_paths()
        for name, value in overrides.items():
            if value is not None:
                setattr(config, name, value)
        snap = store.snapshot(cid)
        if snap is not None and (found := format_of(snap.data)) != FORMAT:
            raise ResumeError(f"campaign {cid}: its resume snapshot has format {found}, and this ufuzz resumes "
                              f"format {FORMAT} only (it was written by another version of ufuzz: resume it with "
                              "that version, or run the campaign again)")
        ran = signals_of(snap.data) if snap is not None else None
        if ran is not None and ran != ",".join(signals.names()):
            raise ResumeError(f"campaign {cid} ran with the feedback signals {ran.replace(',', ', ')}, and this ufuzz "
                              f"has {', '.join(signals.names())} (a signal was added or removed since): resume it "
                              "where it was run, or run the campaign again")
        done = snap.seq if snap is not None else 0
        if budget is not None:
            if budget <= done:
                raise ResumeError(f"--budget {budget}: campaign {cid} has already made {done} executions")
            config.budget = budget
        elif rec.status == ending.BUDGET_SPENT and (out / "summary.json").is_file():
            raise ResumeError(f"campaign {cid} already spent its budget of {rec.budget} executions; pass "
                              "--budget N (more than that) to go on")
        config.__post_init__()
        suite = None
        if snap is not None:  # the suite as the campaign recorded it (the seed file may have moved)
            suite = SeedSuite(name="resumed", checkpoints=store.checkpoints(cid), seeds=store.seeds(cid))
    finally:
        store.close()
    if suite is None:
        path = resolve_seeds(config.seeds)
        if not path.is_file():
            raise ResumeError(f"campaign {cid} has no snapshot yet and its seed file {path} is gone")
    with FailureStore(url, cid, readonly=True):  # the oracle side's tables exist (an old database fails here)
        pass
    return config, suite, cid


def _seed_names(cases: list[FuzzCase]) -> dict[str, FuzzCase]:
    """Seed cases by a name for snapshots: a resume rebuilds them from the recorded suite, so a snapshot holds
    their names only (their provenance is most of a large suite's state)."""
    return {f"seed:{c.id}": c for c in cases}


class Journal:
    """Commits and snapshots of one campaign, over its stores' shared write window."""

    def __init__(self, store: Any, failures: Any, campaign_id: str, config: CampaignConfig, *, executor: Any,
                 oracle: Any) -> None:
        self.store, self.failures, self.campaign_id = store, failures, campaign_id
        self.executor, self.oracle = executor, oracle  # their own parts of the state (parent cache, verdicts)
        self.snapshot_seconds = config.snapshot_seconds
        self.window = store.open_window(max_records=config.window_records, max_seconds=config.window_seconds)
        store.attach(self.window)
        failures.attach(self.window)
        #: between batches: the state is the one the committed records describe (False while a batch is drawn
        #: or applied, and while a new campaign is set up, until its first snapshot is in place)
        self.at_boundary = False
        self.mark: tuple[Progress, int] = (Progress(budget=config.budget), 0)  # at the end of the last batch
        self.committed = self.mark  # at the last commit
        self._last_snapshot = 0.0
        self._cost = 0.0  # what the last snapshot took

    def end_batch(self, state: CampaignState, force_snapshot: bool = False) -> None:
        """A batch is applied whole (its counters counted): its records may now be committed, with a snapshot
        when due (or ``force_snapshot``: a new campaign's first)."""
        self.window.mark()
        self.mark = (replace(state.search.progress), len(state.findings.failure_log))
        self.at_boundary = True
        if force_snapshot or self.window.due():
            self.commit(state, snapshot=force_snapshot or self.snapshot_due())

    def snapshot_due(self) -> bool:
        # a slow snapshot (a large suite) is taken less often: at most ~5% of the time goes to snapshots
        wait = max(self.snapshot_seconds, 20 * self._cost)
        return time.monotonic() - self._last_snapshot >= wait

    def commit(self, state: CampaignState, snapshot: bool) -> None:
        """Commit the window (whole batches only), with a snapshot of the state at its end if asked — never
        inside a run of backend errors (the last snapshot before it stays the one to resume from)."""
        extra = [self.store.heartbeat_write(self.campaign_id)]
        snapshot = snapshot and not state.search.errors.count
        cost = 0.0
        if snapshot:
            t0 = time.perf_counter()
            search, findings = self.snapshot(state)
            cost = time.perf_counter() - t0
            extra += [self.store.snapshot_write(self.campaign_id, step=state.search.step,
                                                seq=state.search.progress.executions, data=search),
                      self.failures.snapshot_write(step=state.search.step, data=findings)]
        self.window.flush(extra)
        self.committed = self.mark
        if snapshot:
            self._last_snapshot = time.monotonic()
            self._cost = cost

    def snapshot(self, state: CampaignState) -> tuple[bytes, bytes]:
        """The state's two halves, each pickled whole for its own table, with what the executor and the oracle
        hold of it brought in first."""
        search, findings = state.search, state.findings
        search.parents = self.executor.snapshot()
        findings.step, findings.oracle, findings.counts = search.step, self.oracle.snapshot(), self.failures.counts()
        seeds = _seed_names(search.cases.seeds())
        # the signals' names first (read back without unpickling by a resume: signals_of)
        ran = ",".join(s.name for s in search.feedback.signals)
        return dump({"signals": ran, "search": search}, seeds), dump({"findings": findings}, seeds)

    def restore(self, state: CampaignState, suite: SeedSuite, budget: int) -> int | None:
        """Go back to the last snapshot: ``state`` becomes it, the executor's and oracle's parts are restored
        and the records committed after it removed. Returns how many mutants' records were rolled back, or
        None when the campaign has no snapshot (it starts over)."""
        rec = self.store.snapshot(self.campaign_id)
        half = self.failures.snapshot()
        if rec is None or half is None:
            return None
        if rec.step != half[0]:
            raise SnapshotError(f"the engine's snapshot (step {rec.step}) and the oracle's (step {half[0]}) "
                                "differ: the corpus was changed by something else")
        seeds = _seed_names([FuzzCase.from_seed(s, suite.checkpoint_of(s))
                             for s in sorted(suite.seeds, key=lambda s: s.id)])
        state.search = load(rec.data, seeds)["search"]
        state.findings = load(half[1], seeds)["findings"]
        progress = state.search.progress
        progress.budget = budget
        self.executor.restore(state.search.parents)
        self.oracle.restore(state.findings.oracle)
        gone = self.store.rollback(self.campaign_id, step=state.search.step, seq=progress.executions)
        self.failures.rollback(state.findings.counts, gone)
        self.mark = self.committed = (replace(progress), len(state.findings.failure_log))
        self._last_snapshot = time.monotonic()
        self.at_boundary = True  # the state is the snapshot's
        return len(gone)

    def start_over(self) -> None:
        """A resumed campaign that had no snapshot yet: what it committed is dropped (it starts over)."""
        self.store.rollback(self.campaign_id, step=-1, seq=0)
        self.failures.reset()

    def last_commit(self, state: CampaignState) -> str | None:
        """As the campaign ends: commit what is whole — with a snapshot, when it ends between batches, so that
        the state to resume from is the committed one; cut off inside a batch, that batch's records are dropped
        and the resume redoes it from the last snapshot. Returns what went wrong (then :attr:`committed` is
        what the stores hold), or None."""
        try:
            if self.at_boundary:
                self.commit(state, snapshot=True)
            else:
                self.window.rewind()
                self.window.flush([self.store.heartbeat_write(self.campaign_id)])
                self.committed = self.mark
        except Exception as exc:  # noqa: BLE001 - e.g. a full disk or a database locked by another writer
            return ending.describe(exc)
        return None
