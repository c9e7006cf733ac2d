"""Small internal utilities the other packages share, below every layer: reading versioned JSONL files
(:mod:`~ufuzz._util.jsonl`), a bounded LRU mapping (:mod:`~ufuzz._util.lru`) and strict validation at the file-format
boundary (:mod:`~ufuzz._util.strict`). Not a public API."""
