"""The ticket's words for what the product did (walkthrough of a product with its own API shape: "a memory that
POST removed" for a delete that is ``POST /v2/memories/{id}:purge``; "State:collateral_removal after the
unrelated_edit case." as a title)."""

from __future__ import annotations

from ufuzz.reports.ticket import _op_word, summary_sentence

REST = {"operations": {"delete": "DELETE /v1/ns/{namespace}/memories/{id}", "update": "PATCH /v1/m/{id}",
                       "add": "POST /v1/ns/{namespace}/memories"}}
OWN = {"operations": {"delete": "POST /v2/memories/{id}:purge", "update": "POST /v2/memories/{id}:rewrite"}}


def test_a_conventional_method_says_the_operation_alone_any_other_with_its_path():
    assert _op_word("delete", "http", REST) == "DELETE"
    assert _op_word("update", "http", REST) == "PATCH"
    assert _op_word("add", "http", REST) == "POST"
    assert _op_word("delete", "http", OWN) == "POST /v2/memories/{id}:purge"
    assert _op_word("update", "http", OWN) == "POST /v2/memories/{id}:rewrite"
    assert _op_word("delete", "embedded", REST) == "delete"  # not a product over HTTP: the operation's name


def test_a_side_effect_is_said_in_the_verifications_own_words():
    v = {"kind": "collateral_removal", "operator": "unrelated_edit", "stage": "state", "backend": "http",
         "backend_info": OWN, "mutant": {}, "parent": {}, "state_change": [], "side_effects": [],
         "side_effect_reason": "the add changed more than it asked: m3 removed."}
    said = summary_sentence(v)
    assert said == "the add changed more than it asked: m3 removed (its get and list before and after it)."
    assert "State:" not in said and "case." not in said


def test_a_probe_finding_is_said_in_its_own_words_not_as_a_side_effect():
    v = {"kind": "memory_unreachable", "operator": "", "stage": "state", "backend": "embedded", "backend_info": {},
         "mutant": {}, "parent": {}, "state_change": [], "side_effects": [],
         "side_effect_reason": "the checkpoint's oldest memory m1 is not returned by a search for its own words"}
    said = summary_sentence(v)
    assert said == "the checkpoint's oldest memory m1 is not returned by a search for its own words."
    assert "get and list" not in said


def test_one_endpoint_for_every_operation_is_said_with_the_operations_name():
    """A JSON-RPC product (every operation ``POST /rpc``): "a memory that POST /rpc removed" names nothing."""
    rpc = {"operations": {op: "POST /rpc" for op in ("add", "get", "list", "delete", "update", "search")}}
    assert _op_word("delete", "http", rpc) == "delete (POST /rpc)"
    assert _op_word("update", "http", rpc) == "update (POST /rpc)"
