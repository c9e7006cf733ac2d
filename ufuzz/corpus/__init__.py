"""The run database: everything a campaign records, in SQL (SQLite by default, PostgreSQL at scale).

- :mod:`~ufuzz.corpus.store` — the tables, opening and upgrading a database, and the repository of records
- :mod:`~ufuzz.corpus.window` — records written one window at a time
- :mod:`~ufuzz.corpus.failures` — the oracle side (failures and references), apart from what the scheduler reads
- :mod:`~ufuzz.corpus.campaign` — a campaign read back (what replay, export and reports start from)
- :mod:`~ufuzz.corpus.summary` — a campaign's typed, versioned summary

The regression-corpus *file* a campaign's failures are exported to is not this database: see :mod:`ufuzz.triage`.
"""
