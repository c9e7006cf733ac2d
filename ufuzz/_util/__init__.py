"""Small internal utilities the other packages share, below every layer: reading versioned JSONL files
(:mod:`~ufuzz._util.jsonl`), a bounded LRU mapping (:mod:`~ufuzz._util.lru`), strict validation at the file-format
boundary (:mod:`~ufuzz._util.strict`) and where this ufuzz is (:mod:`~ufuzz._util.where`). Not a public API."""
