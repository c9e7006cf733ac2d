"""Seed suites on disk: JSONL with a versioned schema.

One JSON object per line. The first line is the header, then any order of the other kinds::

    {"kind": "header", "schema": 1, "suite": "synthetic-default", "generator": "...", ...}
    {"kind": "checkpoint", "id": ..., "memories": [...], "facts": [...], "entities": [...]}
    {"kind": "seed", "id": ..., "checkpoint_id": ..., "query": {...}, "descriptor": {...}}
    {"kind": "reference", "query_id": ..., "answer": ..., "abstain": ..., "supporting": [...], "invalidated": [...]}

A reference may carry the benchmark's judging rubric, ``"rubric": {"must_include": [...],
"must_not_include": [...]}`` (MemOps imports do); the field is optional and absent when there is none, so
files written before it existed load unchanged and the schema stays version 1.

References are kept apart from seeds (own records, keyed by query id). Loading checks structure and
cross-references; any problem raises :class:`SeedFileError` naming ``file:line`` and the field at fault.
Writing goes to a temporary file that replaces the target only when complete (nothing half-written).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ufuzz.jsonl import LineError, iter_json_lines
from ufuzz.model import SCHEMA_VERSION, Checkpoint, Reference, Rubric, Seed, SeedSuite

KINDS = ("header", "checkpoint", "seed", "reference")


class SeedFileError(LineError):
    """A malformed seed file; the message names file, line and field."""


_REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "checkpoint": {"id": str, "memories": list},
    "seed": {"id": str, "checkpoint_id": str, "query": dict},
    "reference": {"query_id": str},
}
_NESTED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "memory": {"id": str, "text": str, "timestamp": str},
    "fact": {"entity": str, "attribute": str, "value": str, "evidence": list},
    "query": {"id": str, "text": str, "fields": dict},
    "fields": {"entity": str, "attribute": str},
}


def _check(obj: dict[str, Any], spec: dict[str, Any], path: Path, line: int, prefix: str) -> None:
    for key, typ in spec.items():
        if key not in obj:
            raise SeedFileError(path, line, "missing required field", f"{prefix}{key}")
        if not isinstance(obj[key], typ):
            tname = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise SeedFileError(path, line, f"expected {tname}, got {type(obj[key]).__name__}", f"{prefix}{key}")


def _validate(kind: str, rec: dict[str, Any], path: Path, line: int) -> None:
    _check(rec, _REQUIRED[kind], path, line, "")
    if kind == "checkpoint":
        seen: set[str] = set()
        for i, m in enumerate(rec["memories"]):
            if not isinstance(m, dict):
                raise SeedFileError(path, line, "memory must be an object", f"memories[{i}]")
            _check(m, _NESTED["memory"], path, line, f"memories[{i}].")
            if m["id"] in seen:
                raise SeedFileError(path, line, f"duplicate memory id {m['id']!r}", f"memories[{i}].id")
            seen.add(m["id"])
        for i, f in enumerate(rec.get("facts", [])):
            if not isinstance(f, dict):
                raise SeedFileError(path, line, "fact must be an object", f"facts[{i}]")
            _check(f, _NESTED["fact"], path, line, f"facts[{i}].")
            for e in f["evidence"]:
                if e not in seen:
                    raise SeedFileError(path, line, f"evidence id {e!r} is not a memory of this checkpoint",
                                        f"facts[{i}].evidence")
    elif kind == "seed":
        _check(rec["query"], _NESTED["query"], path, line, "query.")
        _check(rec["query"]["fields"], _NESTED["fields"], path, line, "query.fields.")
        if "descriptor" in rec and not isinstance(rec["descriptor"], dict):
            raise SeedFileError(path, line, "expected object", "descriptor")
        if "answer" in rec or "answer" in (rec.get("descriptor") or {}):
            raise SeedFileError(path, line, "seeds and descriptors never carry the answer; use a reference record",
                                "answer")
    elif kind == "reference" and rec.get("rubric") is not None:
        try:
            Rubric.from_dict(rec["rubric"])
        except ValueError as exc:
            raise SeedFileError(path, line, str(exc), "rubric") from None


def load_suite(path: str | Path) -> SeedSuite:
    path = Path(path)
    if not path.exists():
        raise SeedFileError(path, None, "no such seed file")
    suite: SeedSuite | None = None
    seed_lines: dict[str, int] = {}
    ref_lines: dict[str, int] = {}
    for lineno, kind, rec in iter_json_lines(path, SeedFileError, KINDS):
        if kind == "header":  # the first record, and only that one
            schema = rec.get("schema")
            if schema != SCHEMA_VERSION:
                raise SeedFileError(path, lineno, f"unsupported schema version {schema!r}; this ufuzz reads "
                                    f"version {SCHEMA_VERSION}", "schema")
            suite = SeedSuite(name=str(rec.get("suite") or path.stem))
            continue
        assert suite is not None
        _validate(kind, rec, path, lineno)
        try:
            if kind == "checkpoint":
                cp = Checkpoint.from_dict(rec)
                if cp.id in suite.checkpoints:
                    raise SeedFileError(path, lineno, f"duplicate checkpoint id {cp.id!r}", "id")
                suite.checkpoints[cp.id] = cp
            elif kind == "seed":
                seed = Seed.from_dict(rec)
                if seed.id in seed_lines:
                    raise SeedFileError(path, lineno, f"duplicate seed id {seed.id!r}", "id")
                seed_lines[seed.id] = lineno
                suite.seeds.append(seed)
            else:
                ref = Reference.from_dict(rec)
                if ref.query_id in ref_lines:
                    raise SeedFileError(path, lineno, f"duplicate reference for {ref.query_id!r}", "query_id")
                ref_lines[ref.query_id] = lineno
                suite.references[ref.query_id] = ref
        except SeedFileError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise SeedFileError(path, lineno, str(exc)) from None
    if suite is None:
        raise SeedFileError(path, None, "empty seed file (no header)")
    for seed in suite.seeds:
        line = seed_lines[seed.id]
        if seed.checkpoint_id not in suite.checkpoints:
            raise SeedFileError(path, line, f"unknown checkpoint {seed.checkpoint_id!r}", "checkpoint_id")
        if seed.query.id not in suite.references:
            raise SeedFileError(path, line, f"no reference record for query {seed.query.id!r}", "query.id")
        ref = suite.references[seed.query.id]
        mem_ids = {m.id for m in suite.checkpoints[seed.checkpoint_id].memories}
        for fld in ("supporting", "invalidated"):
            for mid in getattr(ref, fld):
                if mid not in mem_ids:
                    raise SeedFileError(path, ref_lines[seed.query.id],
                                        f"memory id {mid!r} is not in checkpoint {seed.checkpoint_id!r}", fld)
    return suite


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
