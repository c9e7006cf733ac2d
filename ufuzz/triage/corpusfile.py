"""Committed regression corpora: a campaign's unique failures, exported so they replay without its database.

A regression corpus is one JSONL file with a versioned schema. The first line is the header, then
checkpoint and seed records (each written once), then one ``failure`` record per unique failure, in
discovery order::

    {"kind": "header", "schema": 2, "corpus": "regression", "backend": "embedded", "backend_options": {},
     "k": 5, "source_campaign": "...", "backend_info": {...}, "source": {...}, "records": 120, ...}
    {"kind": "checkpoint", "id": "p1", "memories": [...], "facts": [...], "entities": [...]}
    {"kind": "seed", "id": "p1-s3", "checkpoint_id": "p1", "descriptor": {...}}
    {"kind": "failure", "seed_id": "p1-s3", "checkpoint_id": "p1",
     "parent": {"id": ..., "operator": null, "depth": 0, "query": {...}, "ops": [...], "reference": {...}},
     "mutant": {"id": ..., "operator": "update", "depth": 1, "obligation": {"operator": ..., "target": ...},
                "query": {...}, "ops": [...], "reference": {...}, "detail": "..."},
     "expected": {"kind": "stale_answer", "stage": "response", "failure_key": "...", "offending": [...]},
     "discovery": {"first_seq": 17, "occurrences": 3}, "sha256": "..."}

``expected.status`` is ``failing`` (a known failure: the default when absent) or ``fixed`` (it was fixed and
``ufuzz corpus accept`` turned it into a guard: it must now pass, and failing again is a regression).
``expected.cause_key`` (optional) is the failure's cause, for matching a new campaign against the corpus
(``ufuzz run --baseline``). Backend options that name files (``config``) are stored relative to the corpus
file, so a corpus committed beside its product config checks from any working directory.

Every record but the header ends with ``sha256``, its content hash (:func:`ufuzz.triage.corpusformat.content_hash`),
so that a record edited after the export (a memory text, an op, a reference) is refused by name; schema 1
files, written before hashes, load without that check. ``ops`` are full recipes: the parent's and the mutant's state are each the checkpoint with their own ops
replayed (a parent that is a retained mutant carries its whole ancestry's ops). References are the oracle's
and sit inside the record only because this file is the oracle side's artefact: nothing here is fed to a
scheduler.

:func:`ufuzz.triage.check.check_corpus` replays every record on a fresh backend with
:func:`ufuzz.triage.replay.replay_pair` (the very judging ``ufuzz replay`` uses) and classifies it:
``reproduced`` (parent passes, mutant fails with the same kind, stage and failure key), ``fixed`` (the
mutant now passes), ``changed`` (it fails differently, or the same way on other offending memories),
``parent_broken`` (the parent no longer passes its own reference) or ``error`` (a backend fault).
Malformed files — including a record whose ops or reference name a memory its checkpoint and ops do not
have — raise :class:`CorpusFileError` naming ``file:line`` and the field: bad input, never a regression.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ufuzz._util.jsonl import LineError, iter_json_lines
from ufuzz._util.strict import validate_record
from ufuzz.llm.prompts import llm_record
from ufuzz.model import (
    Checkpoint,
    FuzzCase,
    MutationDescriptor,
    Obligation,
    Provenance,
    Query,
    Reference,
    StateOp,
)
from ufuzz.operators.sideeffects import KINDS as STATE_KINDS
from ufuzz.oracles.expectations import KINDS as JUDGED_KINDS
from ufuzz.oracles.judging import Judging
from ufuzz.seeds.schema import RecordError
from ufuzz.triage import corpusformat as fmt

__all__ = [
    "SCHEMA", "STATUSES", "CorpusFileError", "CaseRecipe", "RegressionRecord", "RegressionCorpus",
    "ExportResult", "build_records", "select_records", "export_campaign", "write_corpus", "load_corpus",
    "EXPECTED_STATUSES", "path_options", "portable_options", "resolve_options", "rewrite_corpus", "campaign_header",
]

SCHEMA = fmt.SCHEMA
LINE_KINDS = ("header", "checkpoint", "seed", "failure")
STAGES = ("selection", "post-selection", "response", "state")
#: a verdict's kinds, and the side effects a state operation's verification records (level "state")
FAILURE_KINDS = JUDGED_KINDS + STATE_KINDS
#: per-record outcomes of a check; only the first one means "still reproduces"
STATUSES = ("reproduced", "fixed", "changed", "parent_broken", "error", "inconclusive")
#: what a record expects: a known failure that still fails, or a fixed one that must keep passing
EXPECTED_STATUSES = ("failing", "fixed")
#: backend options that name a file: stored relative to the corpus file
def path_options(backend: str | None) -> tuple[str, ...]:
    """The options of ``backend`` that name files (declared ``Option(path=True)``: a product TOML, an LLM call
    cache, an embedding cache); none for a backend this installation does not have (its options pass as given)."""
    from ufuzz.backends import registry

    try:
        cls = registry.load(backend or "")
    except Exception:  # noqa: BLE001 - an unknown or unavailable backend: nothing to rewrite
        return ()
    return tuple(o.name for o in (cls.options_spec or ()) if o.path)

T = TypeVar("T")


class CorpusFileError(LineError):
    """A malformed regression corpus file; the message names file, line and field."""


# ====================================================================== records


@dataclass(frozen=True)
class CaseRecipe:
    """One side of a failure: a query on a state (checkpoint + ``ops``) and the reference it is judged by."""

    id: str
    query: Query
    ops: tuple[StateOp, ...]
    reference: Reference
    operator: str | None = None  # None for a seed
    depth: int = 0
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "operator": self.operator, "depth": self.depth, "query": self.query.to_dict(),
                "ops": [o.to_dict() for o in self.ops], "reference": self.reference.to_dict(),
                "detail": self.detail}


@dataclass(frozen=True)
class RegressionRecord:
    seed_id: str
    checkpoint_id: str
    parent: CaseRecipe
    mutant: CaseRecipe
    target: str  # the mutant's obligation target (part of the failure key)
    kind: str  # the expected verdict
    stage: str
    failure_key: str
    offending: tuple[str, ...] = ()
    first_seq: int | None = None
    occurrences: int = 1
    line: int = 0  # where it was read from (0: built in memory)
    cause_key: str = ""
    status: str = "failing"  # one of EXPECTED_STATUSES

    @property
    def operator(self) -> str:
        return self.mutant.operator or ""

    def to_dict(self) -> dict[str, Any]:
        mutant = self.mutant.to_dict()
        mutant["obligation"] = {"operator": self.operator, "target": self.target}
        return {"kind": "failure", "seed_id": self.seed_id, "checkpoint_id": self.checkpoint_id,
                "parent": self.parent.to_dict(), "mutant": mutant,
                "expected": {"kind": self.kind, "stage": self.stage, "failure_key": self.failure_key,
                             "offending": list(self.offending),
                             **({"cause_key": self.cause_key} if self.cause_key else {}),
                             "status": self.status},
                "discovery": {"first_seq": self.first_seq, "occurrences": self.occurrences}}

    def cases(self, checkpoint: Checkpoint, descriptor: MutationDescriptor | None = None
              ) -> tuple[FuzzCase, FuzzCase]:
        """The (parent, mutant) FuzzCases, rebuilt on ``checkpoint``."""
        prov = Provenance.of(checkpoint)
        desc = descriptor or MutationDescriptor()
        p, m = self.parent, self.mutant
        parent = FuzzCase(id=p.id, seed_id=self.seed_id, checkpoint_id=self.checkpoint_id, query=p.query,
                          descriptor=desc, provenance=prov, ops=p.ops, operator=p.operator, depth=p.depth,
                          detail=p.detail)
        mutant = FuzzCase(id=m.id, seed_id=self.seed_id, checkpoint_id=self.checkpoint_id, query=m.query,
                          descriptor=desc, provenance=prov, ops=m.ops, parent_id=p.id, operator=m.operator,
                          obligation=Obligation(self.seed_id, self.operator, self.target), depth=m.depth,
                          detail=m.detail)
        return parent, mutant


@dataclass
class RegressionCorpus:
    path: Path | None
    header: dict[str, Any]
    checkpoints: dict[str, Checkpoint]
    descriptors: dict[str, MutationDescriptor]  # by seed id
    records: list[RegressionRecord]
    header_line: int = 1  # where the header was read from (messages blaming it name the line)

    @property
    def backend(self) -> str:
        return str(self.header["backend"])

    @property
    def backend_options(self) -> dict[str, Any]:
        return dict(self.header.get("backend_options") or {})

    @property
    def k(self) -> int:
        return int(self.header["k"])

    @property
    def judging(self) -> Judging:
        """How the recorded failures were decided (responder, judge); absent in older corpora: no responder."""
        return Judging.from_dict(self.header.get("judging"))

    def by_operator(self) -> dict[str, int]:
        return dict(sorted(Counter(r.operator for r in self.records).items()))

    def by_operator_kind(self) -> dict[tuple[str, str], int]:
        return dict(sorted(Counter((r.operator, r.kind) for r in self.records).items()))


# ====================================================================== export


def build_records(data: Any) -> tuple[list[RegressionRecord], list[tuple[str, str]]]:
    """Every failure of a loaded campaign (:class:`ufuzz.corpus.campaign.CampaignData`) as a record, in
    discovery order, plus ``(failure_key, reason)`` for the failures the corpus cannot rebuild."""
    from ufuzz.corpus.campaign import case_of

    records: list[RegressionRecord] = []
    skipped: list[tuple[str, str]] = []
    refs = data.references
    # the memory system's mutant failures: baseline failures (a seed alone) and the opt-in reader's are not
    # regressions of a mutation
    for f in (f for f in data.failures if f.origin == "mutant" and f.counts):
        mutant = case_of(f.case_id, data.checkpoints, data.seeds, data.mutants)
        if isinstance(mutant, str):
            skipped.append((f.failure_key, mutant))
            continue
        if mutant.parent_id is None:
            skipped.append((f.failure_key, f"case {f.case_id} has no parent"))
            continue
        parent = case_of(mutant.parent_id, data.checkpoints, data.seeds, data.mutants)
        if isinstance(parent, str):
            skipped.append((f.failure_key, f"parent: {parent}"))
            continue
        if parent.checkpoint_id != mutant.checkpoint_id:
            skipped.append((f.failure_key, f"parent {parent.id} and mutant {mutant.id} are on different "
                            "checkpoints"))
            continue
        missing = [c for c in (parent.id, mutant.id) if c not in refs]
        if missing:
            skipped.append((f.failure_key, f"no stored reference for case {missing[0]}"))
            continue
        m = data.mutants.get(f.case_id)
        target = (m.target if m is not None else None) or str(f.detail.get("target") or "")
        records.append(RegressionRecord(
            seed_id=f.seed_id, checkpoint_id=mutant.checkpoint_id,
            parent=CaseRecipe(id=parent.id, query=parent.query, ops=tuple(parent.ops), reference=refs[parent.id],
                              operator=parent.operator, depth=parent.depth, detail=parent.detail),
            mutant=CaseRecipe(id=mutant.id, query=mutant.query, ops=tuple(mutant.ops), reference=refs[mutant.id],
                              operator=mutant.operator or f.operator, depth=mutant.depth, detail=mutant.detail),
            target=target, kind=f.kind, stage=f.stage, failure_key=f.failure_key,
            offending=tuple(str(x) for x in f.detail.get("offending") or ()), first_seq=f.first_seq,
            occurrences=int(f.count), cause_key=str(getattr(f, "cause_key", "") or "")))
    return records, skipped


def select_records(items: Sequence[T], group: Callable[[T], Hashable], max_n: int | None) -> list[T]:
    """The first ``max_n`` items (all when None) plus the first item of every group the prefix misses,
    in the original order."""
    if max_n is None or max_n >= len(items):
        return list(items)
    keep = set(range(max(max_n, 0)))
    seen = {group(items[i]) for i in keep}
    for i, item in enumerate(items):
        g = group(item)
        if g not in seen:
            seen.add(g)
            keep.add(i)
    return [items[i] for i in sorted(keep)]


@dataclass
class ExportResult:
    path: Path
    records: list[RegressionRecord]
    checkpoints: int
    unique_failures: int  # in the campaign
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def by_operator(self) -> dict[str, int]:
        return dict(sorted(Counter(r.operator for r in self.records).items()))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ufuzz")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def campaign_header(data: Any, output: str | Path, records: int, generator: str) -> dict[str, Any]:
    """The header of a corpus written from the campaign ``data`` (a ``CampaignData``) to ``output``."""
    seeds_cfg = data.config.get("seeds")
    return {
        "kind": "header", "schema": SCHEMA, "corpus": "regression",
        "backend": data.backend, "backend_options": portable_options(data.backend_options, output, data.backend), "k": data.k,
        "judging": Judging.of(data.config).to_dict(),
        "llm": llm_record(data.config, data.backend_info if isinstance(data.backend_info, dict) else {}),
        "source_campaign": data.campaign_id,
        "backend_info": data.backend_info,
        "source": {"budget": data.config.get("budget"), "seed": data.config.get("seed"),
                   "strategy": data.config.get("strategy"), "batch": data.config.get("batch"),
                   "readback": data.config.get("readback", False),  # campaigns before it existed did not
                   "seeds": Path(str(seeds_cfg)).name if seeds_cfg else "default"},
        "generator": f"{generator} (ufuzz {_version()})",
        "records": records,
    }


def export_campaign(campaign_dir: str | Path, output: str | Path, db: str | None = None, *,
                    max_records: int | None = None, campaign_id: str | None = None) -> ExportResult:
    """Write the unique failures of the campaign in ``campaign_dir`` to the regression corpus ``output``.

    ``max_records`` keeps the first N in discovery order plus the first failure of every
    (operator, kind) the prefix lacks. Raises ``FileNotFoundError``/``ValueError`` for bad input (naming
    the directory, file or URL) and ``ValueError`` when the campaign has no failure to export.
    """
    from ufuzz.corpus.campaign import load_campaign

    if max_records is not None and max_records < 1:
        raise ValueError(f"--max must be at least 1, got {max_records}")
    data = load_campaign(campaign_dir, db, campaign_id=campaign_id)
    records, skipped = build_records(data)
    uf = sum(1 for f in data.failures if f.origin == "mutant" and f.counts)  # the campaign's UF
    if not records:
        why = f" ({len(skipped)} could not be rebuilt: {skipped[0][1]})" if skipped else ""
        raise ValueError(f"campaign {data.campaign_id} has no failure to export{why}")
    chosen = select_records(records, lambda r: (r.operator, r.kind), max_records)
    header = campaign_header(data, output, len(chosen), "ufuzz corpus export")
    header["selection"] = {"max": max_records, "unique_failures": uf, "exportable": len(records),
                           "rule": "first N in discovery order plus the first of every (operator, kind)"}
    used_cps = list(dict.fromkeys(r.checkpoint_id for r in chosen))
    used_seeds = list(dict.fromkeys(r.seed_id for r in chosen))
    descriptors = {s: (data.seeds[s].descriptor if s in data.seeds else MutationDescriptor()) for s in used_seeds}
    seed_cp = {r.seed_id: r.checkpoint_id for r in chosen}
    path = write_corpus(output, header, [data.checkpoints[c] for c in used_cps],
                        [(s, seed_cp[s], descriptors[s]) for s in used_seeds], chosen)
    return ExportResult(path=path, records=chosen, checkpoints=len(used_cps), unique_failures=uf,
                        skipped=skipped)


def portable_options(options: dict[str, Any], corpus_path: str | Path, backend: str | None) -> dict[str, Any]:
    """``options`` with ``backend``'s file options (:func:`path_options`) rewritten relative to the corpus file's
    folder."""
    out = dict(options)
    here = Path(corpus_path).resolve().parent
    for key in path_options(backend):
        value = out.get(key)
        if isinstance(value, str) and value:
            out[key] = os.path.relpath(Path(value).resolve(), here)
    return out


def resolve_options(options: dict[str, Any], corpus_path: str | Path | None, backend: str | None) -> dict[str, Any]:
    """File options of a corpus header, resolved against the corpus file's folder (where the file is there;
    otherwise, for corpora written before paths were stored relative to them, as given)."""
    out = dict(options)
    if corpus_path is None:
        return out
    here = Path(corpus_path).resolve().parent
    for key in path_options(backend):
        value = out.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            candidate = here / value
            if candidate.exists() or not Path(value).exists():
                out[key] = str(candidate.resolve())
    return out


def rewrite_corpus(rc: RegressionCorpus, records: Sequence[RegressionRecord], path: str | Path | None = None,
                   **header_updates: Any) -> Path:
    """Write ``records`` of ``rc`` (to ``path``, default the file itself) with only the checkpoints and seeds
    they use; the header keeps everything but its record count and the given updates. Atomic; every record
    gets its content hash anew (an accepted record is a new export of it, not an edit)."""
    target = Path(path) if path is not None else rc.path
    if target is None:
        raise ValueError("no file to write the corpus to")
    used_cps = list(dict.fromkeys(r.checkpoint_id for r in records))
    seed_cp = {r.seed_id: r.checkpoint_id for r in records}
    header = {**rc.header, **header_updates, "records": len(records)}
    if rc.path is not None and target.resolve() != rc.path.resolve():
        # file options are relative to the corpus file: re-anchor them to the new one
        header["backend_options"] = portable_options(resolve_options(rc.backend_options, rc.path, rc.backend), target,
                                                     rc.backend)
    return write_corpus(target, header, [rc.checkpoints[c] for c in used_cps],
                        [(s, cp, rc.descriptors.get(s) or MutationDescriptor()) for s, cp in seed_cp.items()],
                        records)


def write_corpus(path: str | Path, header: dict[str, Any], checkpoints: Iterable[Checkpoint],
                 seeds: Iterable[tuple[str, str, MutationDescriptor]], records: Iterable[RegressionRecord]) -> Path:
    """Write atomically: a temp file in the same folder replaces ``path`` only once fully written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            def put(rec: dict[str, Any]) -> None:
                fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")

            def hashed(rec: dict[str, Any]) -> dict[str, Any]:
                return {**rec, "sha256": fmt.content_hash(rec)}

            put({**header, "kind": "header", "schema": SCHEMA})
            for cp in checkpoints:
                put(hashed({"kind": "checkpoint", **cp.to_dict()}))
            for seed_id, cp_id, desc in seeds:
                put(hashed({"kind": "seed", "id": seed_id, "checkpoint_id": cp_id, "descriptor": desc.to_dict()}))
            for r in records:
                put(hashed(r.to_dict()))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a corpus is an ordinary, shareable file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# ====================================================================== load


def _model(kind: str, rec: dict[str, Any], path: Path, line: int) -> Any:
    """The validated model of one line (:mod:`ufuzz.triage.corpusformat`); a CorpusFileError naming the field
    otherwise."""
    return validate_record(fmt.RECORDS[kind], rec, lambda message, field: CorpusFileError(path, line, message, field),
                           (RecordError,))


def _check_hash(rec: dict[str, Any], path: Path, line: int, hashed: bool) -> None:
    """A record's content hash (required from schema 2 on) matches its content."""
    if hashed or rec.get("sha256") is not None:
        if rec.get("sha256") is None:
            raise CorpusFileError(path, line, "missing content hash (every record of a schema "
                                  f"{fmt.HASHED_SINCE} corpus carries one)", "sha256")
        if fmt.content_hash(rec) != rec["sha256"]:
            raise CorpusFileError(path, line, "the record does not match its content hash: it was changed after "
                                  "the export (an edited memory text, op or reference?); re-export the corpus "
                                  "or undo the edit", "sha256")


def _side(m: fmt.CaseModel, side: str, path: Path, line: int) -> CaseRecipe:
    """A parent or mutant recipe, its ops and reference checked on their own."""
    for i, op in enumerate(m.ops):
        try:
            op.check()
        except RecordError as exc:
            raise CorpusFileError(path, line, str(exc), f"{side}.ops[{i}].{exc.field}") from None
    try:
        m.reference.check()
    except RecordError as exc:
        raise CorpusFileError(path, line, str(exc), f"{side}.reference.{exc.field}") from None
    return CaseRecipe(id=m.id, query=m.query.to_model(), ops=tuple(o.to_model() for o in m.ops),
                      reference=m.reference.to_model(), operator=m.operator, depth=m.depth, detail=m.detail)


def _failure(m: fmt.FailureLine, path: Path, line: int) -> RegressionRecord:
    parent = _side(m.parent, "parent", path, line)
    mutant = _side(m.mutant, "mutant", path, line)
    if not mutant.operator:
        raise CorpusFileError(path, line, "a mutant needs the operator that produced it", "mutant.operator")
    if m.mutant.obligation.operator != mutant.operator:
        raise CorpusFileError(path, line, f"obligation operator {m.mutant.obligation.operator!r} is not the "
                              f"mutant's operator {mutant.operator!r}", "mutant.obligation.operator")
    exp = m.expected
    if exp.kind not in FAILURE_KINDS:
        raise CorpusFileError(path, line, f"unknown failure kind {exp.kind!r}; expected one of "
                              f"{list(FAILURE_KINDS)}", "expected.kind")
    if exp.stage not in STAGES:
        raise CorpusFileError(path, line, f"unknown stage {exp.stage!r}; expected one of {list(STAGES)}",
                              "expected.stage")
    if exp.status not in EXPECTED_STATUSES:
        raise CorpusFileError(path, line, f"unknown status {exp.status!r}; expected one of "
                              f"{list(EXPECTED_STATUSES)}", "expected.status")
    return RegressionRecord(seed_id=m.seed_id, checkpoint_id=m.checkpoint_id, parent=parent, mutant=mutant,
                            target=m.mutant.obligation.target, kind=exp.kind, stage=exp.stage,
                            failure_key=exp.failure_key, offending=tuple(exp.offending),
                            first_seq=m.discovery.first_seq, occurrences=m.discovery.occurrences, line=line,
                            cause_key=exp.cause_key or "", status=exp.status)


def _check_ids(r: RegressionRecord, checkpoint: Checkpoint, path: Path) -> None:
    """Every memory id a side's ops target and its reference names is a memory of the checkpoint or one its
    own ops wrote: anything else is a broken record (bad input), not a regression of the backend."""
    base = {m.id for m in checkpoint.memories}
    for side, case in (("parent", r.parent), ("mutant", r.mutant)):
        known = set(base)
        for i, op in enumerate(case.ops):
            if op.target is not None and op.target not in known:
                raise CorpusFileError(path, r.line, f"op target {op.target!r} is neither in checkpoint "
                                      f"{r.checkpoint_id!r} nor written by an earlier op", f"{side}.ops[{i}].target")
            if op.memory is not None:
                known.add(op.memory.id)
        for fld in ("supporting", "invalidated"):
            for i, mid in enumerate(getattr(case.reference, fld)):
                if mid not in known:
                    raise CorpusFileError(path, r.line, f"memory id {mid!r} is neither in checkpoint "
                                          f"{r.checkpoint_id!r} nor written by the {side}'s ops",
                                          f"{side}.reference.{fld}[{i}]")


def load_corpus(path: str | Path) -> RegressionCorpus:
    """Read and validate a regression corpus. Any problem raises :class:`CorpusFileError` naming
    ``file:line`` and the field at fault: each line against its strict model (:mod:`ufuzz.triage.corpusformat`)
    and content hash, then the links between lines (checkpoints, seeds, memory ids)."""
    path = Path(path)
    if not path.is_file():
        raise CorpusFileError(path, None, "no such regression corpus file")
    header: dict[str, Any] | None = None
    header_line = 1
    hashed = False
    checkpoints: dict[str, Checkpoint] = {}
    seeds: dict[str, tuple[str, MutationDescriptor, int]] = {}
    records: list[RegressionRecord] = []
    keys: dict[str, int] = {}
    for lineno, kind, rec in iter_json_lines(path, CorpusFileError, LINE_KINDS):
        if kind == "header":  # the first record, and only that one
            header, header_line = _header(rec, path, lineno), lineno
            hashed = header["schema"] >= fmt.HASHED_SINCE
            continue
        model = _model(kind, rec, path, lineno)
        if kind == "failure":  # what is wrong with a record is named before a hash that no longer matches
            r = _failure(model, path, lineno)
        _check_hash(rec, path, lineno, hashed)
        if kind == "checkpoint":
            if model.id in checkpoints:
                raise CorpusFileError(path, lineno, f"duplicate checkpoint id {model.id!r}", "id")
            checkpoints[model.id] = model.to_model()
        elif kind == "seed":
            if model.id in seeds:
                raise CorpusFileError(path, lineno, f"duplicate seed id {model.id!r}", "id")
            seeds[model.id] = (model.checkpoint_id, model.descriptor.to_model(), lineno)
        else:
            if r.failure_key in keys:
                raise CorpusFileError(path, lineno, f"duplicate failure key {r.failure_key!r} (first on "
                                      f"line {keys[r.failure_key]})", "expected.failure_key")
            keys[r.failure_key] = lineno
            records.append(r)
    if header is None:
        raise CorpusFileError(path, None, "empty regression corpus file (no header)")
    for cp, _desc, line in seeds.values():
        if cp not in checkpoints:
            raise CorpusFileError(path, line, f"unknown checkpoint {cp!r}", "checkpoint_id")
    for r in records:
        if r.checkpoint_id not in checkpoints:
            raise CorpusFileError(path, r.line, f"unknown checkpoint {r.checkpoint_id!r} (no checkpoint record)",
                                  "checkpoint_id")
        if r.seed_id not in seeds:
            raise CorpusFileError(path, r.line, f"unknown seed {r.seed_id!r} (no seed record)", "seed_id")
        if seeds[r.seed_id][0] != r.checkpoint_id:
            raise CorpusFileError(path, r.line, f"seed {r.seed_id!r} is on checkpoint {seeds[r.seed_id][0]!r}, "
                                  f"not {r.checkpoint_id!r}", "checkpoint_id")
        _check_ids(r, checkpoints[r.checkpoint_id], path)
    declared = header.get("records")
    if declared is not None and declared != len(records):
        raise CorpusFileError(path, header_line, f"the header declares {declared} failure records, the file holds "
                              f"{len(records)} (truncated or edited?)", "records")
    return RegressionCorpus(path=path, header=header, checkpoints=checkpoints,
                            descriptors={s: d for s, (_c, d, _l) in seeds.items()}, records=records,
                            header_line=header_line)


def _header(rec: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    schema = rec.get("schema")
    if isinstance(schema, bool) or schema not in fmt.READS:
        raise CorpusFileError(path, line, f"unsupported schema version {schema!r}; this ufuzz reads version(s) "
                              f"{', '.join(map(str, fmt.READS))}", "schema")
    if rec.get("corpus", "regression") != "regression":
        raise CorpusFileError(path, line, f"not a regression corpus (corpus {rec.get('corpus')!r})", "corpus")
    model = _model("header", rec, path, line)
    try:
        Judging.from_dict(model.judging)
    except (TypeError, ValueError) as exc:
        raise CorpusFileError(path, line, str(exc), "judging") from None
    out = dict(rec)
    out["schema"] = model.schema_
    return out
