"""Seed importers: benchmark files → :class:`~ufuzz.model.SeedSuite` (checkpoints, seeds, references kept apart).

``import_file(fmt, path, extractor=None)`` returns an :class:`ImportResult` carrying the suite and two
counters: ``warnings`` (real-data quirks that were repaired or skipped) and ``dropped`` (seeds not
imported, by reason — ``no_fields`` when the question's entity/attribute cannot be established, never
guessed). A malformed file raises :class:`SeedImportError` naming the file and the record.

Formats: ``locomo``, ``longmemeval``, ``memops``, ``meme``, ``halumem``. Every imported reference is
exactly ``Provenance.of(checkpoint).reference_for(query.id, query.fields)`` (plus, for MemOps, the
question's judging rubric) and agrees with the benchmark's answer and evidence; a question whose derived
reference would disagree is dropped (``reference_mismatch``).
"""

from __future__ import annotations

from pathlib import Path

from ufuzz import plugins
from ufuzz.seeds.importers._common import UNSTATED, ImportResult, SeedImportError
from ufuzz.seeds.importers.fields import Extractor

#: entry-point group through which another package adds an importer (``name = "pkg.module:load"``)
GROUP = "ufuzz.importers"


def importers() -> dict[str, str]:
    """Format name -> ``"module:load"``: this package's importer modules (each names its ``FORMAT``) and the
    entry points of :data:`GROUP`; adding a format is adding one module."""
    return plugins.discover_modules(__name__, "FORMAT", GROUP)


def import_file(fmt: str, path: str | Path, *, extractor: Extractor | None = None,
                name: str | None = None) -> ImportResult:
    """Import ``path`` in format ``fmt``; ``name`` is the suite name (default: the file's stem)."""
    known = importers()
    key = fmt.strip().lower().replace("_", "").replace("-", "")
    spec = known.get(key) or known.get(fmt.strip())
    if spec is None:
        raise SeedImportError(path, f"unknown import format {fmt!r}; known formats: {', '.join(sorted(known))}")
    if extractor is not None and not callable(getattr(extractor, "extract", None)):
        raise TypeError("extractor must have an .extract(question, context_snippets) method")
    return plugins.load(spec)(path, extractor=extractor, name=name)


__all__ = ["GROUP", "UNSTATED", "ImportResult", "SeedImportError", "import_file", "importers"]
