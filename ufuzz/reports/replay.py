"""Failure replay: rebuild every unique failure of a campaign on a fresh backend and judge it again.

For each failure recorded by the oracle side (:class:`~ufuzz.corpus.failures.FailureStore`), the failing
mutant and its parent (a seed, or a retained mutant that may itself descend from mutants) are rebuilt from
the corpus alone — checkpoint, ordered native ops, query — on a *fresh* instance of the campaign's backend
with the campaign's own options:

* the parent's state is the checkpoint with the parent's ops replayed;
* the mutant's state is built independently: the checkpoint again with the mutant's full op recipe;

both queries are executed (top-k ids and a response) and judged with the stored references. A failure is
*reproduced* when the parent passes and the mutant fails with the recorded kind and stage. ``same_key``
additionally says whether the recomputed unique-failure key (offending memory ids included) matches.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.protocol import BackendError, MemoryBackend
from ufuzz.engine.executor import Executor
from ufuzz.model import Checkpoint, Execution, FuzzCase, MutationDescriptor, Provenance, Reference
from ufuzz.oracles.expectations import evaluate
from ufuzz.oracles.expectations import failure_key as compute_failure_key

__all__ = ["ReplayResult", "ReplayReport", "CampaignData", "load_campaign", "case_of", "replay_pair",
           "replay_campaign", "resolve_campaign", "render_replay", "fresh_backend"]


@dataclass(frozen=True)
class ReplayResult:
    failure_key: str
    case_id: str
    parent_id: str | None
    seed_id: str
    operator: str | None
    kind: str  # recorded kind and stage
    stage: str
    reproduced: bool
    reason: str
    got_kind: str | None = None  # what the replayed mutant did (None: passed or not executed)
    got_stage: str | None = None
    same_key: bool = False
    #: reproduced | fixed (mutant passes) | changed (fails differently) | parent_broken | error (backend fault)
    #: | unbuildable (the corpus cannot rebuild the pair)
    status: str = ""


@dataclass
class ReplayReport:
    campaign_id: str
    backend: str
    backend_options: dict[str, Any]
    results: list[ReplayResult] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def reproduced(self) -> int:
        return sum(1 for r in self.results if r.reproduced)

    @property
    def rate(self) -> float | None:
        return self.reproduced / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign_id, "backend": self.backend, "backend_options": self.backend_options,
                "reproduced": self.reproduced, "total": self.total, "rate": self.rate,
                "results": [asdict(r) for r in self.results]}


def _default_db(campaign_dir: Path) -> str:
    path = campaign_dir / "corpus.sqlite"
    if not path.is_file():
        raise FileNotFoundError(f"{campaign_dir}: no corpus.sqlite in this directory (is it a campaign "
                                "directory? pass --db URL if the corpus is elsewhere)")
    return f"sqlite:///{path.resolve()}"


def _check_sqlite_exists(url: str) -> None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        u = make_url(url)
    except ArgumentError:
        return  # open_engine gives the clear message
    if u.get_backend_name() == "sqlite" and u.database and u.database != ":memory:" \
            and not u.database.startswith("file:") and not Path(u.database).is_file():
        raise FileNotFoundError(f"corpus database file {u.database} does not exist")


def resolve_campaign(store: Any, campaign_dir: Path) -> str:
    """The campaign of ``campaign_dir``: the id in its summary.json, else the latest one in the store whose
    configured ``out`` is this directory, else the only/latest campaign of the store."""
    summary = campaign_dir / "summary.json"
    if summary.is_file():
        try:
            cid = json.loads(summary.read_text(encoding="utf-8")).get("campaign")
        except (OSError, ValueError):
            cid = None
        if cid and store.campaign(cid) is not None:
            return str(cid)
    camps = store.campaigns()
    if not camps:
        raise ValueError(f"the corpus database {store.url} holds no campaign")
    here = campaign_dir.resolve()
    mine = [c for c in camps if c.config.get("out") and Path(c.config["out"]).resolve() == here]
    return (mine or camps)[-1].id


def _backend_options(config: dict[str, Any]) -> dict[str, Any]:
    # options starting with "_" are engine-side objects (e.g. a realizer), not backend settings
    return {k: v for k, v in dict(config.get("backend_options") or {}).items() if not str(k).startswith("_")}


def _deleted(case: FuzzCase) -> tuple[str, ...]:
    return tuple(op.target for op in case.ops if op.op == "delete" and op.target)


@dataclass
class CampaignData:
    """Everything a replay needs from a campaign's corpus database (read once, then closed)."""

    campaign_id: str
    url: str
    config: dict[str, Any]
    backend_info: dict[str, Any]  # the campaign backend's ``describe()``
    backend: str
    backend_options: dict[str, Any]
    k: int
    checkpoints: dict[str, Checkpoint]
    seeds: dict[str, Any]
    mutants: dict[str, Any]
    failures: list[Any]  # FailureRecord, discovery order
    references: dict[str, Reference]


def load_campaign(campaign_dir: str | Path, db: str | None = None, *,
                  campaign_id: str | None = None) -> CampaignData:
    """Read the campaign in ``campaign_dir`` (corpus and oracle side). ``db`` is the corpus's SQLAlchemy URL
    (default: the directory's corpus.sqlite). Raises ``FileNotFoundError``/``ValueError`` naming the
    directory, file or URL for bad input."""
    from ufuzz.corpus.failures import FailureStore
    from ufuzz.corpus.store import CorpusStore

    cdir = Path(campaign_dir)
    if not cdir.is_dir():
        raise FileNotFoundError(f"{cdir}: no such campaign directory")
    if db is None:
        url = _default_db(cdir)
    else:
        _check_sqlite_exists(db)
        url = db
    store = CorpusStore(url)
    try:
        cid = campaign_id or resolve_campaign(store, cdir)
        record = store.campaign(cid)
        if record is None:
            raise ValueError(f"unknown campaign {cid!r} in {store.url}")
        checkpoints = store.checkpoints(cid)
        seeds = {s.id: s for s in store.seeds(cid)}
        mutants = {m.case_id: m for m in store.mutants(cid)}
    finally:
        store.close()
    with FailureStore(url, cid) as fstore:
        failures = fstore.failures()
        refs = fstore.references()
    config = record.config
    return CampaignData(campaign_id=cid, url=url, config=config, backend_info=dict(record.backend),
                        backend=str(config.get("backend") or record.backend.get("backend") or ""),
                        backend_options=_backend_options(config), k=int(config.get("k") or 5),
                        checkpoints=checkpoints, seeds=seeds, mutants=mutants, failures=failures,
                        references=refs)


def replay_campaign(campaign_dir: str | Path, db: str | None = None, *, campaign_id: str | None = None,
                    workdir: str | Path | None = None) -> ReplayReport:
    """Replay every unique failure of the campaign in ``campaign_dir`` (see the module docstring).

    ``db`` is the corpus's SQLAlchemy URL (default: the directory's corpus.sqlite). The fresh backend works
    in ``workdir`` (default: a temporary directory, removed afterwards). Raises ``FileNotFoundError`` or
    ``ValueError`` (with a message naming the directory, file or URL) for bad input; backend faults during
    the replay of one failure make that failure "not reproduced", with the fault as the reason.
    """
    data = load_campaign(campaign_dir, db, campaign_id=campaign_id)
    checkpoints, seeds, mutants, refs, k = data.checkpoints, data.seeds, data.mutants, data.references, data.k
    failures = data.failures
    backend_name, options = data.backend, data.backend_options
    report = ReplayReport(campaign_id=data.campaign_id, backend=backend_name, backend_options=options)
    if not failures:
        return report

    with fresh_backend(backend_name, options, workdir) as backend:
        for f in failures:
            report.results.append(_replay_one(f, backend, checkpoints, seeds, mutants, refs, k))
    return report


@contextmanager
def fresh_backend(name: str, options: dict[str, Any], workdir: str | Path | None = None, *,
                  prefix: str = "ufuzz-replay-") -> Iterator[MemoryBackend]:
    """A new ``name`` backend with ``options``, working in ``workdir``/backend (default: a temporary
    directory named ``prefix…``, removed afterwards). Closed on exit; a fault while closing is ignored.
    Raises what ``registry.create`` raises when the backend cannot start."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix=prefix)
        wd = Path(tmp)
    else:
        wd = Path(workdir)
    try:
        backend = registry.create(name, wd / "backend", options)
        try:
            yield backend
        finally:
            try:
                backend.close()
            except BackendError:
                pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def case_of(case_id: str, checkpoints: dict[str, Checkpoint], seeds: dict[str, Any],
             mutants: dict[str, Any]) -> FuzzCase | str:
    """The FuzzCase of a seed or a recorded mutant, or a string saying why it cannot be rebuilt."""
    if case_id in mutants:
        m = mutants[case_id]
        if m.query is None:
            return f"case {case_id} was rejected before a mutant existed"
        seed = seeds.get(m.seed_id)
        cp_id = m.checkpoint_id or (seed.checkpoint_id if seed else None)
        if cp_id not in checkpoints:
            return f"checkpoint {cp_id!r} of case {case_id} is not in the corpus"
        descriptor = seed.descriptor if seed else MutationDescriptor()
        return FuzzCase(id=m.case_id, seed_id=m.seed_id, checkpoint_id=cp_id, query=m.query,
                        descriptor=descriptor, provenance=Provenance.of(checkpoints[cp_id]), ops=m.ops,
                        parent_id=m.parent_id, operator=m.operator, depth=m.depth, detail=m.detail)
    if case_id in seeds:
        s = seeds[case_id]
        if s.checkpoint_id not in checkpoints:
            return f"checkpoint {s.checkpoint_id!r} of seed {case_id} is not in the corpus"
        return FuzzCase(id=s.id, seed_id=s.id, checkpoint_id=s.checkpoint_id, query=s.query,
                        descriptor=s.descriptor, provenance=Provenance.of(checkpoints[s.checkpoint_id]))
    return f"case {case_id} is neither a recorded mutant nor a seed"


_case_of = case_of


def _run_isolated(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], case: FuzzCase,
                  k: int) -> Execution:
    """Build the checkpoint on its own, replay the case's ops, execute its query; release the state."""
    executor = Executor(backend, checkpoints, k=k)
    try:
        state = executor.state_of(case)
        return executor.execute(case, state)
    finally:
        executor.close()


def _replay_one(f: Any, backend: MemoryBackend, checkpoints: dict[str, Checkpoint], seeds: dict[str, Any],
                mutants: dict[str, Any], refs: dict[str, Any], k: int) -> ReplayResult:
    base = {"failure_key": f.failure_key, "case_id": f.case_id, "seed_id": f.seed_id, "operator": f.operator,
            "kind": f.kind, "stage": f.stage, "status": "unbuildable"}
    mutant = case_of(f.case_id, checkpoints, seeds, mutants)
    if isinstance(mutant, str):
        return ReplayResult(parent_id=None, reproduced=False, reason=mutant, **base)
    base["parent_id"] = mutant.parent_id
    if mutant.parent_id is None:
        return ReplayResult(reproduced=False, reason=f"case {f.case_id} has no parent", **base)
    parent = case_of(mutant.parent_id, checkpoints, seeds, mutants)
    if isinstance(parent, str):
        return ReplayResult(reproduced=False, reason=f"parent: {parent}", **base)
    for cid in (parent.id, mutant.id):
        if cid not in refs:
            return ReplayResult(reproduced=False, reason=f"no stored reference for case {cid}", **base)
    m = mutants.get(f.case_id)
    target = (m.target if m is not None else None) or ""
    return replay_pair(backend, checkpoints, parent, mutant, refs[parent.id], refs[mutant.id], k=k,
                       failure_key=f.failure_key, kind=f.kind, stage=f.stage, target=target,
                       seed_id=f.seed_id, operator=f.operator)


def replay_pair(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], parent: FuzzCase, mutant: FuzzCase,
                parent_ref: Reference, mutant_ref: Reference, *, k: int, failure_key: str, kind: str, stage: str,
                target: str, seed_id: str | None = None, operator: str | None = None) -> ReplayResult:
    """Rebuild ``parent`` and ``mutant`` each on its own fresh state of ``backend`` (checkpoint + full op
    recipe), execute both and judge them with their references against the recorded verdict (``kind``,
    ``stage``, ``failure_key``; ``target`` is the obligation target the key was computed with)."""
    base = {"failure_key": failure_key, "case_id": mutant.id, "parent_id": parent.id,
            "seed_id": seed_id or mutant.seed_id, "operator": operator if operator is not None else mutant.operator,
            "kind": kind, "stage": stage}
    try:
        parent_ex = _run_isolated(backend, checkpoints, parent, k)
        mutant_ex = _run_isolated(backend, checkpoints, mutant, k)
    except BackendError as exc:  # replaying the op recipe failed
        return ReplayResult(reproduced=False, reason=f"backend error while rebuilding: {exc}", status="error",
                            **base)
    for who, ex in (("parent", parent_ex), ("mutant", mutant_ex)):
        if ex.error is not None:
            return ReplayResult(reproduced=False, reason=f"backend error executing the {who}: {ex.error}",
                                status="error", **base)
    hidden = not backend.capabilities.visible_retrieval
    p_out = evaluate(parent_ref, parent_ex, _deleted(parent), hidden)
    m_out = evaluate(mutant_ref, mutant_ex, _deleted(mutant), hidden)
    got = {"got_kind": m_out.kind, "got_stage": m_out.stage}
    if not p_out.passed:
        return ReplayResult(reproduced=False, reason=f"parent {parent.id} no longer passes "
                            f"({p_out.stage}:{p_out.kind})", status="parent_broken", **got, **base)
    if m_out.passed:
        return ReplayResult(reproduced=False, reason="mutant passes", status="fixed", **got, **base)
    if (m_out.kind, m_out.stage) != (kind, stage):
        return ReplayResult(reproduced=False, reason=f"mutant fails differently ({m_out.stage}:{m_out.kind})",
                            status="changed", **got, **base)
    key = compute_failure_key(mutant.seed_id, mutant.operator or "", target, m_out.kind or "", m_out.stage or "",
                              m_out.offending)
    same = key == failure_key
    reason = "parent passes, mutant fails the same way" + ("" if same else " (other offending ids)")
    return ReplayResult(reproduced=True, reason=reason, same_key=same, status="reproduced", **got, **base)


def render_replay(report: ReplayReport, *, width: int = 60) -> str:
    """A plain-text table of the replay and a closing ``N/M reproduced`` line."""
    head = ("failure", "case", "parent", "operator", "recorded", "ok", "reason")
    rows = [(r.failure_key[:12], r.case_id, r.parent_id or "-", r.operator or "-", f"{r.stage}:{r.kind}",
             "yes" if r.reproduced else "NO", r.reason[:width]) for r in report.results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = [f"campaign {report.campaign_id} on {report.backend} "
             f"{json.dumps(report.backend_options, sort_keys=True)}",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.append(f"{report.reproduced}/{report.total} reproduced")
    return "\n".join(lines)
