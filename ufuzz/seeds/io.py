"""Seed suites on disk: JSONL with a versioned schema.

One JSON object per line. The first line is the header, then any order of the other kinds::

    {"kind": "header", "schema": 1, "suite": "synthetic-default", "generator": "...", ...}
    {"kind": "checkpoint", "id": ..., "memories": [...], "facts": [...], "entities": [...]}
    {"kind": "seed", "id": ..., "checkpoint_id": ..., "query": {...}, "descriptor": {...}}
    {"kind": "reference", "query_id": ..., "answer": ..., "abstain": ..., "supporting": [...], "invalidated": [...]}

A reference may carry the benchmark's judging rubric, ``"rubric": {"must_include": [...],
"must_not_include": [...]}`` (MemOps imports do); the field is optional and absent when there is none, so
files written before it existed load unchanged and the schema stays version 1.

References are kept apart from seeds (own records, keyed by query id). Loading checks each record against its
strict model (:mod:`ufuzz.seeds.schema`, published as ``seeds/schema.json``) and the links between records;
any problem raises :class:`SeedFileError` naming ``file:line`` and the field at fault.
Writing goes to a temporary file that replaces the target only when complete (nothing half-written).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from ufuzz._util.jsonl import LineError, iter_json_lines
from ufuzz._util.strict import validate_record
from ufuzz.model import SCHEMA_VERSION, SeedSuite
from ufuzz.seeds import schema

KINDS = ("header", "checkpoint", "seed", "reference")


class SeedFileError(LineError):
    """A malformed seed file; the message names file, line and field."""


def _record(kind: str, rec: dict[str, Any], path: Path, line: int) -> Any:
    """The validated model of one record (see :mod:`ufuzz.seeds.schema`), or a SeedFileError naming the
    field."""
    descriptor = rec.get("descriptor")
    if kind == "seed" and ("answer" in rec or (isinstance(descriptor, dict) and "answer" in descriptor)):
        raise SeedFileError(path, line, "seeds and descriptors never carry the answer; use a reference record",
                            "answer")
    if kind == "header" and "schema" in rec and rec["schema"] != SCHEMA_VERSION:
        raise SeedFileError(path, line, f"unsupported schema version {rec['schema']!r}; this ufuzz reads "
                            f"version {SCHEMA_VERSION}", "schema")
    return validate_record(schema.RECORDS[kind], rec, lambda message, field: SeedFileError(path, line, message, field),
                           (schema.RecordError,))


def load_suite(path: str | Path, *, memory_ops: Collection[str] | None = None) -> SeedSuite:
    """Read and validate a seed file; any problem raises :class:`SeedFileError` naming ``file:line`` and the
    field. Besides each record's own format (:mod:`ufuzz.seeds.schema`): ids are unique, every seed's
    checkpoint exists, every seed has its reference and every reference its seed, a reference's memory ids
    are memories of its seed's checkpoint, and the file holds at least one seed.

    ``memory_ops``: the names of the state operators registered (the operator registry sits above this layer,
    so the caller passes them); a seed whose descriptor names another is refused — a typo there would
    otherwise silently leave the seed without that operator."""
    path = Path(path)
    if not path.exists():
        raise SeedFileError(path, None, "no such seed file")
    if path.is_dir():
        raise SeedFileError(path, None, "is a directory, not a seed file")
    suite: SeedSuite | None = None
    seed_lines: dict[str, int] = {}
    query_lines: dict[str, int] = {}
    ref_lines: dict[str, int] = {}
    cp_lines: dict[str, int] = {}
    for lineno, kind, rec in iter_json_lines(path, SeedFileError, KINDS):
        model = _record(kind, rec, path, lineno)
        if kind == "header":  # the first record, and only that one
            suite = SeedSuite(name=model.suite or path.stem)
            continue
        assert suite is not None
        if kind == "checkpoint":
            if model.id in cp_lines:
                raise SeedFileError(path, lineno, f"duplicate checkpoint id {model.id!r} (first on line "
                                    f"{cp_lines[model.id]})", "id")
            cp_lines[model.id] = lineno
            suite.checkpoints[model.id] = model.to_model()
        elif kind == "seed":
            if model.id in seed_lines:
                raise SeedFileError(path, lineno, f"duplicate seed id {model.id!r} (first on line "
                                    f"{seed_lines[model.id]})", "id")
            if model.query.id in query_lines:
                raise SeedFileError(path, lineno, f"query id {model.query.id!r} is already the query of the seed "
                                    f"on line {query_lines[model.query.id]}; each seed's query needs its own "
                                    "reference", "query.id")
            seed_lines[model.id] = query_lines[model.query.id] = lineno
            suite.seeds.append(model.to_model())
        else:
            if model.query_id in ref_lines:
                raise SeedFileError(path, lineno, f"duplicate reference for {model.query_id!r} (first on line "
                                    f"{ref_lines[model.query_id]})", "query_id")
            ref_lines[model.query_id] = lineno
            suite.references[model.query_id] = model.to_model()
    if suite is None:
        raise SeedFileError(path, None, "empty seed file (no header)")
    _check_links(suite, path, seed_lines, ref_lines, query_lines)
    if memory_ops is not None:
        _check_memory_ops(suite, path, seed_lines, memory_ops)
    return suite


def _check_memory_ops(suite: SeedSuite, path: Path, seed_lines: dict[str, int], known: Collection[str]) -> None:
    for seed in suite.seeds:
        for i, op in enumerate(seed.descriptor.memory_ops or ()):
            if op not in known:
                raise SeedFileError(path, seed_lines[seed.id], f"unknown memory op {op!r}; the state operators "
                                    f"are: {', '.join(sorted(known))}", f"descriptor.memory_ops[{i}]")


def _check_links(suite: SeedSuite, path: Path, seed_lines: dict[str, int], ref_lines: dict[str, int],
                 query_lines: dict[str, int]) -> None:
    """The rules across records: seed → checkpoint, seed ↔ reference, reference ids ⊆ checkpoint."""
    if not suite.seeds:
        raise SeedFileError(path, None, "no seed records: nothing to fuzz (a seed file needs at least one "
                            "checkpoint, seed and reference)")
    for seed in suite.seeds:
        line = seed_lines[seed.id]
        if seed.checkpoint_id not in suite.checkpoints:
            raise SeedFileError(path, line, f"unknown checkpoint {seed.checkpoint_id!r}", "checkpoint_id")
        if seed.query.id not in suite.references:
            raise SeedFileError(path, line, f"no reference record for query {seed.query.id!r}", "query.id")
        ref = suite.references[seed.query.id]
        mem_ids = {m.id for m in suite.checkpoints[seed.checkpoint_id].memories}
        for fld in ("supporting", "invalidated"):
            for i, mid in enumerate(getattr(ref, fld)):
                if mid not in mem_ids:
                    raise SeedFileError(path, ref_lines[seed.query.id],
                                        f"memory id {mid!r} is not in checkpoint {seed.checkpoint_id!r}",
                                        f"{fld}[{i}]")
    for qid, line in ref_lines.items():
        if qid not in query_lines:
            raise SeedFileError(path, line, f"reference for query {qid!r} has no seed (no seed record has "
                                f"query.id {qid!r})", "query_id")


def suite_records(suite: SeedSuite, header: dict[str, Any] | None = None) -> Iterable[dict[str, Any]]:
    yield {"kind": "header", "schema": SCHEMA_VERSION, "suite": suite.name, **(header or {})}
    for cp in suite.checkpoints.values():
        yield {"kind": "checkpoint", **cp.to_dict()}
    for seed in suite.seeds:
        yield {"kind": "seed", **seed.to_dict()}
    for ref in suite.references.values():
        yield {"kind": "reference", **ref.to_dict()}


def write_suite(suite: SeedSuite, path: str | Path, header: dict[str, Any] | None = None) -> Path:
    """Write atomically: a temp file in the same folder replaces ``path`` only once fully written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for rec in suite_records(suite, header):
                fh.write(json.dumps(rec, sort_keys=False, ensure_ascii=False) + "\n")
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; a seed suite is ordinary data
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
