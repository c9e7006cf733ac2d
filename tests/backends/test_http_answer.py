"""The HTTP backend's [answer] operation: products that answer, and answer-only products (hidden retrieval).

Against the test agent (tests/support/agent_server.py), a real local service that answers from its memory and
cites the memories it used, configured by examples/agent.toml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests.support.agent_server import IDK, start_agent_server
from ufuzz.backends.adapters.http import HttpBackend, parse_config
from ufuzz.backends.conformance import CHECKS, run_check, tiny_checkpoint
from ufuzz.backends.protocol import Answer, BackendError
from ufuzz.model import Memory

AGENT = Path(__file__).resolve().parents[2] / "examples" / "agent.toml"
PRODUCT = Path(__file__).resolve().parents[2] / "examples" / "product.toml"


def agent_raw() -> dict[str, Any]:
    return tomllib.loads(AGENT.read_text())


@pytest.fixture(scope="module")
def agent():
    with start_agent_server() as srv:
        yield srv


@pytest.fixture
def backend(tmp_path, agent):
    b = HttpBackend(tmp_path, {"config": str(AGENT), "base_url": agent.base_url})
    yield b
    b.close()


# -- configuration -------------------------------------------------------------------------------------------

def test_answer_only_config_has_hidden_retrieval_and_answers():
    cfg = parse_config(agent_raw(), "agent.toml")
    assert "answer" in cfg.ops and "search" not in cfg.ops
    assert cfg.ops["answer"].method == "POST"


def test_search_and_answer_together_judge_both_levels(tmp_path, monkeypatch):
    monkeypatch.setenv("PRODUCT_API_TOKEN", "t")
    p = tmp_path / "both.toml"
    p.write_text(PRODUCT.read_text() + '\n[answer]\npath = "/v1/ns/{namespace}/chat"\ntext = "$.reply"\n')
    caps = HttpBackend(tmp_path / "w", {"config": str(p)}).capabilities
    assert caps.visible_retrieval and caps.answers


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("answer"), "agent.toml: needs [search] (ranked retrieval), [answer] (the product's own "
                                "response) or both"),
    (lambda r: r["answer"].pop("text"), "agent.toml: [answer] missing 'text'"),
    (lambda r: r["answer"].update(text="$.replies[*]"), "agent.toml: [answer] 'text': '$.replies[*]' must select "
                                                        "one value, not a list (no [*])"),
    (lambda r: r["answer"].update(cited="$.sources[0].id"), "agent.toml: [answer] 'cited': '$.sources[0].id' must "
                                                            "select a list with [*]"),
    (lambda r: r["answer"].update(body={"message": "{query}", "top_k": "{k}"}),
     "agent.toml: [answer] uses placeholder(s) k that answer does not provide; it provides: namespace, query"),
    (lambda r: r["answer"].update(bogus=1), "agent.toml: [answer] unknown key(s) 'bogus'"),
])
def test_bad_answer_config_names_the_key(change, message):
    raw = agent_raw()
    change(raw)
    with pytest.raises(ValueError) as exc:
        parse_config(raw, "agent.toml")
    assert str(exc.value).startswith(message)


# -- the adapter against the agent ------------------------------------------------------------------------------

def test_capabilities_of_an_answer_only_product(backend):
    caps = backend.capabilities
    assert not caps.visible_retrieval and caps.answers and caps.copyable
    assert "retrieval hidden" in caps.notes


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance_without_retrieval(check, backend):
    """State and forks are observed through the management API; retrieval checks do not apply."""
    res = run_check(check, backend)
    assert res.outcome == ("skipped" if check.name == "retrieve_ordered_and_deterministic" else "passed"), res


def test_answer_cites_ufuzz_ids_and_retrieval_stays_hidden(backend, agent):
    s = backend.build(tiny_checkpoint())
    assert backend.retrieve(s, "Where does Lena live?", 5) == []
    got = backend.answer(s, "Where does Lena live now?", [])
    assert isinstance(got, Answer)
    assert "Velmora" in got.text and got.cited == ("m1",)  # the agent's own id (m<n>) mapped back
    assert agent.agents[s].store[backend._states[s].to_product["m1"]].text == "My sister Lena lives in Velmora."
    assert backend.answer(s, "Where does Zdenka live now?", []) == Answer(IDK, ())


def test_answers_follow_the_state_and_forks_stay_apart(backend):
    s = backend.build(tiny_checkpoint())
    child = backend.fork(s)
    backend.update(child, "m1", Memory("m1", "My sister Lena lives in Brask.", "2024-02-01T10:00:00"))
    assert "Brask" in backend.answer(child, "Where does Lena live now?", []).text
    assert "Velmora" in backend.answer(s, "Where does Lena live now?", []).text
    backend.delete(child, "m1")
    assert backend.answer(child, "Where does Lena live now?", []).text == IDK


def test_a_null_reply_is_an_empty_answer_and_a_non_string_one_an_error(tmp_path, agent, monkeypatch):
    b = HttpBackend(tmp_path, {"config": str(AGENT), "base_url": agent.base_url})
    s = b.build(tiny_checkpoint())
    replies = iter([(200, {"reply": None}), (200, {"reply": {"text": "x"}}), (200, {"nothing": 1})])
    monkeypatch.setattr(b, "_request", lambda *a, **k: next(replies))
    assert b.answer(s, "Where does Lena live?", []) == Answer("", ())
    with pytest.raises(BackendError, match=r"answer: response text at '\$.reply' is not a string"):
        b.answer(s, "Where does Lena live?", [])
    with pytest.raises(BackendError, match=r"answer: response has no value at text = '\$.reply'"):
        b.answer(s, "Where does Lena live?", [])


def test_describe_names_the_answer_operation(backend):
    assert backend.describe()["operations"]["answer"] == "POST /v1/agents/{namespace}/chat"
