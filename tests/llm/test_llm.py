"""The LLM layer end to end: real ``openai`` client → real local OpenAI-compatible HTTP server.

The server's replies come from a deterministic rule-based responder (a local model stand-in); nothing of a
memory system is mocked here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.llm_server import RawReply, RuleBasedResponder, start_llm_server
from ufuzz.llm import (
    IDK,
    TRANSFORMATIONS,
    Answerer,
    CallCache,
    FieldExtractor,
    Judge,
    LLMClient,
    LLMConfig,
    LLMError,
    ParaphraseRealizer,
    cache_clear,
    cache_key,
    cache_stats,
    default_cache_path,
)

KEY_ENV = "UFUZZ_TEST_LLM_KEY"
FAKE_KEY = "sk-test-DO-NOT-LEAK-4f9c2a"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def server():
    with start_llm_server(RuleBasedResponder()) as srv:
        yield srv


@pytest.fixture()
def cache(tmp_path):
    return CallCache(tmp_path / "calls.sqlite")


def make_client(srv, cache=None, model="rule-model", **kw) -> LLMClient:
    return LLMClient(LLMConfig(base_url=srv.base_url, model=model, api_key_env=KEY_ENV, **kw), cache)


MSG = [{"role": "user", "content": "hello"}]


# -- the server itself ------------------------------------------------------------------------------------

def test_server_speaks_openai_shapes(server):
    from openai import OpenAI

    oc = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    assert [m.id for m in oc.models.list().data] == ["rule-model"]
    resp = oc.chat.completions.create(model="rule-model", messages=MSG)
    assert resp.object == "chat.completion"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage.total_tokens >= 1
    assert server.count == 1  # GET /v1/models is not a chat request


# -- the four uses ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("transformation,query,expected", [
    ("reword", "Where does Alice live currently?", "In what place does Alice live right now?"),
    ("reword", "Alice's city?", "Could you tell me: Alice's city?"),
    ("shorten", "By the way, where does Alice live?", "Where does Alice live?"),
    ("add_context", "Where does Alice live?", "I'm updating my notes, so: Where does Alice live?"),
    ("change_form", "Where does Alice live?", "Tell me where does Alice live."),
])
def test_paraphrase_realizer(server, transformation, query, expected):
    out = ParaphraseRealizer(make_client(server)).realize(query, transformation)
    assert out == expected
    req = server.chat_requests[-1].body
    assert req["model"] == "rule-model" and req["temperature"] == 0.0
    user = req["messages"][-1]["content"]
    assert f"Transformation: {transformation}" in user and query in user
    assert "Keep every entity, attribute and time scope" in req["messages"][0]["content"]


def test_paraphrase_cleans_labels_and_quotes():
    with start_llm_server(lambda r: '\n"Rewritten query: Where is Alice based?"\nI kept the entity.') as srv:
        assert ParaphraseRealizer(make_client(srv)).realize("Where does Alice live?", "reword") == \
            "Where is Alice based?"


def test_paraphrase_empty_reply_is_an_error():
    with start_llm_server(lambda r: "   \n ") as srv, pytest.raises(LLMError, match="empty"):
        ParaphraseRealizer(make_client(srv)).realize("Where does Alice live?", "shorten")


def test_paraphrase_unknown_transformation_makes_no_call(server):
    with pytest.raises(ValueError, match="unknown paraphrase transformation 'translate'"):
        ParaphraseRealizer(make_client(server)).realize("Where does Alice live?", "translate")
    assert server.count == 0
    assert set(TRANSFORMATIONS) == {"reword", "shorten", "add_context", "change_form"}


def test_answerer_answers_from_memories_or_abstains(server):
    ans = Answerer(make_client(server))
    mems = ["Bob adopted a dog named Rex.", "Alice lives in Lisbon since 2021."]
    assert ans.answer("Where does Alice live?", mems) == "Alice lives in Lisbon since 2021."
    user = server.chat_requests[-1].body["messages"][-1]["content"]
    assert "[1] Bob adopted a dog named Rex." in user and "[2] Alice lives in Lisbon" in user
    assert ans.answer("What is Carol's employer?", mems) == IDK
    assert ans.answer("Where does Alice live?", []) == IDK


@pytest.mark.parametrize("reference,response,label", [
    ("Lisbon", "Alice lives in Lisbon.", "Correct"),
    ("Lisbon", "I don't know.", "Omission"),
    ("Lisbon", "Alice lives in Porto.", "Hallucination"),
    (None, "I don't know", "Correct"),
    (None, "Alice lives in Porto.", "Hallucination"),
])
def test_judge_labels(server, reference, response, label):
    j = Judge(make_client(server)).judge("Where does Alice live?", reference, response)
    assert j.label == label and j.reason and not j.overridden
    req = server.chat_requests[-1].body
    assert req["response_format"]["type"] == "json_schema"
    assert req["response_format"]["json_schema"]["schema"]["properties"]["label"]["enum"] == \
        ["Correct", "Hallucination", "Omission"]


def _always(label):
    return lambda r: {"label": label, "reason": "the model's own view"}


@pytest.mark.parametrize("llm_label,response,rubric,label", [
    # a must_not_include hit forces Hallucination, whatever the model said
    ("Correct", "Alice lives in Lisbon, previously PORTO.", {"must_not_include": ["porto"]}, "Hallucination"),
    ("Omission", "Porto", {"must_include": ["Lisbon"], "must_not_include": ["Porto"]}, "Hallucination"),
    # a missing must_include forces Omission unless the verdict is Hallucination
    ("Correct", "Alice lives in Portugal.", {"must_include": ["Lisbon"]}, "Omission"),
    ("Hallucination", "Alice lives in Portugal.", {"must_include": ["Lisbon"]}, "Hallucination"),
    # a satisfied rubric leaves the verdict alone (matching is case- and whitespace-insensitive)
    ("Correct", "Alice lives in   lisbon.", {"must_include": ["Lisbon"], "must_not_include": ["Porto"]},
     "Correct"),
    ("Omission", "Lisbon, I think", {"must_include": ["lisbon"]}, "Omission"),
])
def test_judge_rubric_overrides(llm_label, response, rubric, label):
    with start_llm_server(_always(llm_label)) as srv:
        j = Judge(make_client(srv)).judge("Where does Alice live?", "Lisbon", response, rubric)
        user = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert j.label == label
    assert j.llm_label == llm_label
    assert j.overridden == (label != llm_label)
    if rubric.get("must_include"):
        assert "Rubric must_include: " + rubric["must_include"][0] in user
    if rubric.get("must_not_include"):
        assert "Rubric must_not_include: " + rubric["must_not_include"][0] in user


def test_judge_rejects_unknown_rubric_keys(server):
    with pytest.raises(ValueError, match="unknown keys"):
        Judge(make_client(server)).judge("q", "a", "a", {"must_have": ["a"]})
    assert server.count == 0


def test_judge_label_outside_enum_is_an_error():
    with start_llm_server(_always("Partly right")) as srv, pytest.raises(LLMError, match="label"):
        Judge(make_client(srv)).judge("Where does Alice live?", "Lisbon", "Lisbon")


def test_field_extractor(server):
    fx = FieldExtractor(make_client(server))
    assert fx.extract("Where does Alice live now?", ["Alice lives in Lisbon."]) == \
        {"entity": "Alice", "attribute": "city", "scope": "current", "answerable": True}
    assert fx.extract("Where did Alice work before?", ["Bob works at Acme."]) == \
        {"entity": "Alice", "attribute": "employer", "scope": "previous", "answerable": False}
    req = server.chat_requests[-1].body
    assert req["response_format"]["json_schema"]["name"] == "query_fields"
    assert "[1] Bob works at Acme." in req["messages"][-1]["content"]


def test_field_extractor_returns_none_when_fields_cannot_be_established(server):
    fx = FieldExtractor(make_client(server))
    assert fx.extract("where is it these days?", ["Alice lives in Lisbon."]) is None  # no entity
    assert fx.extract("What about Alice?", ["Alice lives in Lisbon."]) is None  # no attribute
    assert server.count == 2


def test_field_extractor_trusts_not_established_over_filled_fields():
    reply = {"established": False, "entity": "Alice", "attribute": "city", "scope": "current",
             "answerable": True}
    with start_llm_server(lambda r: reply) as srv:
        assert FieldExtractor(make_client(srv)).extract("Where does she live?", ["Alice lives in Lisbon."]) is None


def test_field_extractor_never_takes_empty_fields():
    reply = {"established": True, "entity": " ", "attribute": "city", "scope": "current", "answerable": True}
    with start_llm_server(lambda r: reply) as srv:
        assert FieldExtractor(make_client(srv)).extract("Where does Alice live?", []) is None


def test_field_extractor_invalid_scope_is_an_error():
    reply = {"established": True, "entity": "Alice", "attribute": "city", "scope": "future",
             "answerable": True}
    with start_llm_server(lambda r: reply) as srv, pytest.raises(LLMError, match="scope"):
        FieldExtractor(make_client(srv)).extract("Where will Alice live?", [])


# -- the cache --------------------------------------------------------------------------------------------

def test_second_identical_call_is_served_from_cache(server, cache):
    c = make_client(server, cache)
    first = Answerer(c).answer("Where does Alice live?", ["Alice lives in Lisbon."])
    assert server.count == 1 and c.calls_made == 1 and c.cache_hits == 0
    again = Answerer(c).answer("Where does Alice live?", ["Alice lives in Lisbon."])
    assert again == first
    assert server.count == 1 and c.calls_made == 1 and c.cache_hits == 1
    j1 = Judge(c).judge("Where does Alice live?", "Lisbon", first)
    j2 = Judge(c).judge("Where does Alice live?", "Lisbon", first)
    assert j1 == j2 and server.count == 2
    assert c.stats() == {"calls_made": 2, "cache_hits": 2, "errors": 0, "retries": 0}


def test_cache_survives_a_new_instance_and_a_new_process(server, tmp_path):
    path = tmp_path / "shared.sqlite"
    first = ParaphraseRealizer(make_client(server, CallCache(path))).realize("Where does Alice live?", "reword")
    assert server.count == 1

    fresh = make_client(server, CallCache(path))  # a new cache object on the same file
    assert ParaphraseRealizer(fresh).realize("Where does Alice live?", "reword") == first
    assert fresh.calls_made == 0 and fresh.cache_hits == 1 and server.count == 1

    child = textwrap.dedent(f"""
        import json
        from ufuzz.llm import CallCache, LLMClient, LLMConfig, ParaphraseRealizer
        c = LLMClient(LLMConfig(base_url={server.base_url!r}, model="rule-model", api_key_env={KEY_ENV!r}),
                      CallCache({str(path)!r}))
        out = ParaphraseRealizer(c).realize("Where does Alice live?", "reword")
        print(json.dumps({{"out": out, "calls": c.calls_made, "hits": c.cache_hits}}))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"out": first, "calls": 0, "hits": 1}
    assert server.count == 1


def test_one_client_and_cache_shared_by_threads(server, cache):
    from concurrent.futures import ThreadPoolExecutor

    c = make_client(server, cache)
    ans = Answerer(c)
    queries = [f"Where does Person{i} live?" for i in range(8)]
    mems = [f"Person{i} lives in City{i}." for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        first = list(pool.map(lambda q: ans.answer(q, mems), queries))
        again = list(pool.map(lambda q: ans.answer(q, mems), queries))
    assert first == again == [f"Person{i} lives in City{i}." for i in range(8)]
    assert server.count == 8 and c.calls_made == 8 and c.cache_hits == 8
    assert cache.stats()["entries"] == 8 and cache.stats()["hits"] == 8


def test_different_parameters_miss_the_cache(server, cache):
    c = make_client(server, cache)
    c.complete(MSG)
    c.complete(MSG, temperature=0.7)
    c.complete(MSG, max_tokens=5)
    c.complete(MSG + [{"role": "user", "content": "more"}])
    make_client(server, cache, model="other-model").complete(MSG)
    assert server.count == 5
    c.complete(MSG, temperature=0.0)  # the config default spelled out is the same request
    c.complete(MSG, max_tokens=5)
    assert server.count == 5 and c.cache_hits == 2
    # a different temperature in the config is a different request too
    make_client(server, cache, temperature=0.3).complete(MSG)
    assert server.count == 6


def test_json_calls_with_different_schemas_miss(server, cache):
    c = make_client(server, cache)
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    q = [{"role": "system", "content": Judge.SYSTEM},
         {"role": "user", "content": "Question: q\nReference answer: a\nResponse: a"}]
    c.complete_json(q, schema)
    c.complete_json(q, {**schema, "required": ["label", "reason"]})
    assert server.count == 2
    assert c.complete_json(q, schema) == {"label": "Correct", "reason": "response contains the reference answer"}
    assert server.count == 2


def test_cache_stats_and_clear(server, tmp_path):
    path = tmp_path / "stats.sqlite"
    assert cache_stats(path) == {"path": str(path), "entries": 0, "hits": 0, "size_bytes": 0, "models": {}}
    assert not path.exists() and cache_clear(path) == 0
    cache = CallCache(path)
    a, b = make_client(server, cache), make_client(server, cache, model="judge-model")
    a.complete(MSG)
    a.complete(MSG)
    a.complete(MSG, temperature=1.0)
    b.complete(MSG)
    s = cache_stats(path)
    assert s["entries"] == 3 and s["hits"] == 1 and s["size_bytes"] > 0
    assert s["models"] == {"judge-model": 1, "rule-model": 2}
    assert cache.stats() == s
    assert cache_clear(path) == 3
    assert cache_stats(path)["entries"] == 0 and cache.clear() == 0
    a.complete(MSG)  # cleared: the call goes out again
    assert server.count == 4


def test_cache_entry_records_request_and_never_the_key(server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    path = tmp_path / "k.sqlite"
    c = make_client(server, CallCache(path))
    out = c.complete(MSG, max_tokens=7)
    key = cache_key("rule-model", MSG, {"max_tokens": 7, "temperature": 0.0})
    e = CallCache(path).entry(key)
    assert e["response"] == out and e["model"] == "rule-model" and e["hits"] == 0 and e["created"] > 0
    assert e["request"] == {"model": "rule-model", "messages": MSG, "params": {"max_tokens": 7, "temperature": 0.0}}
    assert server.chat_requests[-1].headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY.encode() not in path.read_bytes()
    assert server.base_url.encode() not in path.read_bytes()


def test_default_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("UFUZZ_CACHE_DIR", str(tmp_path / "cd"))
    assert default_cache_path() == tmp_path / "cd" / "llm_calls.sqlite"
    assert CallCache().path == default_cache_path()
    monkeypatch.delenv("UFUZZ_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "ufuzz" / "llm_calls.sqlite"


def test_corrupt_cache_file_names_the_path(server, tmp_path):
    path = tmp_path / "broken.sqlite"
    path.write_bytes(b"this is not a sqlite database at all" * 50)
    with pytest.raises(OSError, match="broken.sqlite"):
        make_client(server, CallCache(path)).complete(MSG)


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(json_scalars, lambda ch: st.lists(ch, max_size=3) |
                           st.dictionaries(st.text(max_size=5), ch, max_size=3), max_leaves=8)


@settings(max_examples=40, deadline=None)
@given(params=st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=5),
       content=st.text(max_size=30))
def test_cache_key_is_canonical(params, content):
    msgs = [{"role": "user", "content": content}]
    reordered = dict(reversed(list(params.items())))
    msgs_reordered = [{"content": content, "role": "user"}]
    assert cache_key("m", msgs, params) == cache_key("m", msgs_reordered, reordered)
    assert cache_key("m", msgs, params) != cache_key("m2", msgs, params)
    # generated keys have at most 6 characters, so "__extra__" is always a new parameter
    assert cache_key("m", msgs, params) != cache_key("m", msgs, {**params, "__extra__": 1})
    assert cache_key("m", msgs, params) != cache_key("m", [{"role": "user", "content": content + "!"}], params)


# -- errors -----------------------------------------------------------------------------------------------

def test_http_500_is_an_llm_error_naming_the_server_not_the_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    holder = {}

    def echo_auth(_req):  # a badly behaved server that echoes the Authorization header in its error
        auth = holder["srv"].chat_requests[-1].headers.get("authorization", "")
        return RawReply(500, json.dumps({"error": {"message": f"internal error for {auth}"}}))

    with start_llm_server(echo_auth) as srv:
        holder["srv"] = srv
        with pytest.raises(LLMError) as ei:
            make_client(srv).complete(MSG)
        assert srv.count == 1  # max_retries=0: one request
    msg = str(ei.value)
    assert srv.base_url in msg and "rule-model" in msg and "HTTP 500" in msg
    assert FAKE_KEY not in msg and FAKE_KEY not in repr(ei.value.args)


def test_invalid_json_reply_is_an_llm_error_with_an_excerpt_and_is_not_cached(monkeypatch, cache):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    with start_llm_server(lambda r: "Sure! The label is {Correct") as srv:
        c = make_client(srv, cache)
        for _ in range(2):
            with pytest.raises(LLMError, match="not valid JSON") as ei:
                c.complete_json(MSG, schema)
            assert "The label is {Correct" in str(ei.value) and FAKE_KEY not in str(ei.value)
        assert srv.count == 2 and cache.stats()["entries"] == 0


def test_missing_required_key_is_an_llm_error(cache):
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label", "reason"]}
    with start_llm_server(lambda r: {"label": "Correct"}) as srv:
        with pytest.raises(LLMError, match=r"missing required key\(s\) \['reason'\]"):
            make_client(srv, cache).complete_json(MSG, schema)


def test_json_in_a_code_fence_is_accepted():
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    with start_llm_server(lambda r: '```json\n{"label": "Omission"}\n```') as srv:
        assert make_client(srv).complete_json(MSG, schema) == {"label": "Omission"}


@pytest.mark.parametrize("reply", [RawReply(200, "<html>gateway</html>", "text/html"),
                                   RawReply(200, "not json", "application/json"),
                                   RawReply(200, json.dumps({"choices": []}))])
def test_malformed_http_body_is_an_llm_error(reply, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with start_llm_server(lambda r: reply) as srv:
        with pytest.raises(LLMError) as ei:
            make_client(srv).complete(MSG)
    assert srv.base_url in str(ei.value) and FAKE_KEY not in str(ei.value)


def test_unreachable_server_is_an_llm_error(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with start_llm_server() as srv:
        url = srv.base_url
    c = LLMClient(LLMConfig(base_url=url, model="m", api_key_env=KEY_ENV, timeout=5))
    with pytest.raises(LLMError, match="cannot reach") as ei:
        c.complete(MSG)
    assert url in str(ei.value) and FAKE_KEY not in str(ei.value)
    assert c.calls_made == 1


def test_key_is_read_at_call_time_and_placeholder_when_unset(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    c = make_client(server)
    c.complete(MSG)
    assert server.chat_requests[-1].headers["authorization"] == "Bearer ufuzz-no-key"
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    c.complete(MSG, temperature=0.5)
    assert server.chat_requests[-1].headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in repr(c) and FAKE_KEY not in repr(c.config)


def test_config_validation_and_from_env(monkeypatch):
    with pytest.raises(ValueError, match="base_url"):
        LLMConfig(base_url=" ", model="m")
    with pytest.raises(ValueError, match="max_retries"):
        LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", max_retries=-1)
    for k in ("BASE_URL", "MODEL", "TEMPERATURE", "TIMEOUT", "MAX_RETRIES", "API_KEY_ENV"):
        monkeypatch.delenv("UFUZZ_LLM_" + k, raising=False)
    assert LLMConfig.from_env() is None
    monkeypatch.setenv("UFUZZ_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("UFUZZ_LLM_MODEL", "qwen")
    monkeypatch.setenv("UFUZZ_LLM_TEMPERATURE", "0.2")
    assert LLMConfig.from_env() == LLMConfig("http://127.0.0.1:8000/v1", "qwen", temperature=0.2)
    monkeypatch.setenv("UFUZZ_LLM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="UFUZZ_LLM_TIMEOUT"):
        LLMConfig.from_env()


def test_sqlite_file_is_plain_sqlite(server, cache):
    make_client(server, cache).complete(MSG)
    with sqlite3.connect(cache.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone() == (1,)
