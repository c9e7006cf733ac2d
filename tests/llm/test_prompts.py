"""Prompts as versioned data (``--prompts DIR``) and the record of a campaign's LLM calls (campaign.json and
the regression corpus header): model, endpoint kind, sampling, each prompt's version and digest."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.support.llm_server import start_llm_server
from ufuzz.cli import main
from ufuzz.corpus.campaign import load_campaign
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.llm.prompts import DEFAULTS, digest, endpoint_kind, llm_record, load_prompts, system_of
from ufuzz.llm.uses import Answerer
from ufuzz.oracles.judging import Judging
from ufuzz.seeds.synth import synthesize
from ufuzz.triage.corpusfile import campaign_header

MINE = "You answer from the memories. Say exactly what the best memory says, or I don't know."


def test_load_prompts_text_and_json(tmp_path):
    (tmp_path / "answer.txt").write_text(MINE)
    (tmp_path / "judge.json").write_text(json.dumps({"version": "my-judge/3", "system": "Grade it."}))
    got = load_prompts(tmp_path)
    assert got == {"answer": {"version": f"custom:{digest(MINE)[:12]}", "system": MINE},
                   "judge": {"version": "my-judge/3", "system": "Grade it."}}
    assert system_of("answer", got) == MINE and system_of("paraphrase", got) == DEFAULTS["paraphrase"][1]


@pytest.mark.parametrize("name, content, needle", [
    ("answr.txt", "x", "unknown prompt 'answr'"),
    ("answer.txt", "  \n", "the prompt is empty"),
    ("judge.json", "{\n  nope", "judge.json:2: not JSON"),
    ("judge.json", json.dumps({"system": 3}), "expected"),
])
def test_bad_prompt_files_name_the_file(tmp_path, name, content, needle):
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=needle) as err:
        load_prompts(tmp_path)
    assert str(tmp_path / name).split("/")[-1] in str(err.value)


def test_cli_rejects_a_bad_prompts_dir(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "dream.txt").write_text("x")
    out = CliRunner().invoke(main, ["run", "--budget", "5", "--out", str(tmp_path / "c"), "--prompts",
                                    str(tmp_path / "p"), "--llm-uses", "answer", "--llm-base-url",
                                    "http://127.0.0.1:9/v1"])
    assert out.exit_code == 2 and "dream.txt: unknown prompt 'dream'" in out.output
    assert not (tmp_path / "c").exists(), "nothing half-written"


def test_endpoint_kind():
    assert endpoint_kind("http://127.0.0.1:8000/v1") == "loopback" == endpoint_kind("http://localhost/v1")
    assert endpoint_kind("https://api.example.com/v1") == "remote" and endpoint_kind(None) is None
    assert llm_record({"llm_uses": ()}) is None


def test_a_campaign_records_its_prompts_and_a_changed_prompt_is_a_new_call(tmp_path):
    suite = synthesize(personas=1, seed=3, queries_per_persona=3)
    with start_llm_server() as llm:
        def run(name, prompts):
            cfg = CampaignConfig(budget=12, seed=1, out=str(tmp_path / name), llm_base_url=llm.base_url,
                                 llm_model="rule-model", llm_uses=("answer",), prompts=prompts,
                                 llm_cache=str(tmp_path / "calls.sqlite"), backend_options={"retrieval": "bm25"})
            Campaign(cfg, suite=suite).run()
            return json.loads((tmp_path / name / "campaign.json").read_text())["llm"]

        default = run("default", None)
        calls = llm.count
        assert run("again", None) == default and llm.count == calls, "the same prompts answer from the cache"
        mine = run("mine", {"answer": {"version": "mine/1", "system": MINE}})
        assert llm.count > calls, "a changed prompt is a different cache key"
        systems = {r.body["messages"][0]["content"] for r in llm.chat_requests}
        assert systems == {Answerer.SYSTEM, MINE}
    assert default == {"uses": ["answer"], "model": "rule-model", "endpoint_kind": "loopback",
                       "api": "openai-compatible chat completions", "sampling": {"temperature": 0.0},
                       "prompts": {"answer": {"version": "answer/1", "sha256": digest(Answerer.SYSTEM),
                                              "source": "default"}}}
    assert mine["prompts"]["answer"] == {"version": "mine/1", "sha256": digest(MINE), "source": "--prompts"}
    # a corpus exported from it carries the prompt itself (a corpus check asks the same) and the record
    header = campaign_header(load_campaign(tmp_path / "mine"), tmp_path / "corpus.jsonl", 0, "test")
    assert header["llm"] == mine
    judging = Judging.from_dict(header["judging"])
    assert judging.prompts == {"answer": {"version": "mine/1", "system": MINE}}
    assert judging.to_dict() == header["judging"]
