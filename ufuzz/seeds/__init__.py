"""Seeds: a memory checkpoint, a query and its mutation descriptor, with the reference kept apart.

- :mod:`~ufuzz.seeds.io` and :mod:`~ufuzz.seeds.schema` — seed suites on disk (versioned JSONL, strict models)
- :mod:`~ufuzz.seeds.importers` — the benchmarks (LoCoMo, LongMemEval, ...) made into seed suites, one module each
- :mod:`~ufuzz.seeds.synth`, :mod:`~ufuzz.seeds.pools`, :mod:`~ufuzz.seeds.planted_world` — synthetic suites
- :mod:`~ufuzz.seeds.wording`, :mod:`~ufuzz.seeds.speakers`, :mod:`~ufuzz.seeds.siblings` — how questions are worded
  and re-worded; :mod:`~ufuzz.seeds.criteria` — the benchmarks' judging rubrics
"""
