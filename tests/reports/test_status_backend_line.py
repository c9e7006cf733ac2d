"""The backend line of ``ufuzz status``: which system it is comes first, before the line is cut."""

from __future__ import annotations

from ufuzz.reports.status import _backend_words


def test_the_product_and_its_url_come_before_the_cut():
    facts = {"backend": "http", "auth": {"header": "X", "env": "Y"}, "base_url": "http://127.0.0.1:8740",
             "config": "/a/very/long/path/to/some/team/config/dir/memvault-production-copy.toml",
             "operations": {n: f"POST /{n}" for n in ("add", "get", "list", "search", "update", "delete",
                                                      "snapshot", "create", "drop")},
             "product": "memvault", "retries": 0, "timeout": 30.0, "update_policy": "rewrite"}
    line = _backend_words(facts, width=120)
    assert line.startswith("product=memvault base_url=http://127.0.0.1:8740 update_policy=rewrite operations=[add")
    assert line.endswith("… (--json for all)") and "backend=" not in line and "config=" not in line
    assert _backend_words(facts, width=1000).endswith("config=/a/very/long/path/to/some/team/config/dir/"
                                                      "memvault-production-copy.toml")  # a path: last
    rest = _backend_words({"b": 1, "a": 2, "retrieval": "dense"})
    assert rest == "retrieval=dense a=2 b=1"
