"""Reproducers a developer can run and the Markdown ticket, against real local products.

The REST product (tests/support/http_product_server.py, planted soft-delete bug) and the answer-only agent
(tests/support/agent_server.py, planted response defects) are fuzzed; every kind of failure gets a reproducer
that must reproduce it with exit 0 against the buggy product and not (exit 1) against the fixed one, print the
full transcript with the token redacted, and judge with the campaign's own verdict code (an equivalence
property test below, plus the script embedding that code verbatim).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.agent_server import DEFECTS, start_agent_server
from tests.support.http_product_server import start_product_server
from ufuzz.cli import main
from ufuzz.model import Execution, Reference
from ufuzz.oracles import verdict
from ufuzz.reports.reproducer import verdict_source

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-" + "repro-77c1"
ENV = "PRODUCT_API_TOKEN"


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def run_script(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                          env={**os.environ, ENV: TOKEN}, timeout=120)


def one_per_kind(camp: Path) -> list[dict]:
    rows = json.loads(invoke("failures", "list", camp, "--json").output)
    seen: dict[tuple[str, str], dict] = {}
    for r in rows:
        seen.setdefault((r["operator"], r["kind"]), r)
    return list(seen.values())


@pytest.fixture(scope="module")
def product(tmp_path_factory):
    old = os.environ.get(ENV)
    os.environ[ENV] = TOKEN
    try:
        with start_product_server(TOKEN, delete_bug=True) as srv:
            d = tmp_path_factory.mktemp("product")
            cfg = d / "product.toml"
            cfg.write_text((ROOT / "examples" / "product.toml").read_text()
                           .replace('base_url = "http://127.0.0.1:8080"', f'base_url = "{srv.base_url}"'))
            r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--out", d / "camp", "--quiet")
            assert r.exit_code == 0, r.output
            yield srv, d / "camp"
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    with start_agent_server(DEFECTS) as srv:
        d = tmp_path_factory.mktemp("agent")
        r = invoke("run", "--backend", "http", "--config", ROOT / "examples" / "agent.toml", "--opt",
                   f"base_url={srv.base_url}", "--budget", 150, "--out", d / "camp", "--quiet")
        assert r.exit_code == 0, r.output
        yield srv, d / "camp"


def test_every_kind_reproduces_on_the_buggy_product_and_not_on_the_fixed_one(product, tmp_path):
    srv, camp = product
    rows = one_per_kind(camp)
    assert {r["kind"] for r in rows} >= {"deleted_evidence_retrieved", "missing_evidence"}
    scripts = {}
    for r in rows:
        path = tmp_path / f"repro-{r['key'][:8]}.py"
        shown = invoke("failures", "show", camp, r["key"][:12], "--reproducer", path)
        assert shown.exit_code == 0, shown.output
        res = run_script(path, "--quiet")
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"REPRODUCED {r['stage']}:{r['kind']}" in res.stdout
        scripts[r["kind"]] = path
    guard = run_script(scripts["deleted_evidence_retrieved"], "--quiet", "--expect-fixed")  # a regression test
    assert guard.returncode == 1 and "NOT FIXED: it still reproduces" in guard.stdout, guard.stdout
    srv.delete_bug = False
    try:
        res = run_script(scripts["deleted_evidence_retrieved"], "--quiet")
        guard = run_script(scripts["deleted_evidence_retrieved"], "--quiet", "--expect-fixed")
    finally:
        srv.delete_bug = True
    assert res.returncode == 1 and "NOT REPRODUCED: the mutant passes" in res.stdout, res.stdout
    assert guard.returncode == 0 and "fixed: it no longer reproduces" in guard.stdout, guard.stdout


def test_the_transcript_has_urls_and_bodies_and_never_the_token(product, tmp_path):
    _srv, camp = product
    row = next(r for r in one_per_kind(camp) if r["kind"] == "deleted_evidence_retrieved")
    path = tmp_path / "repro.py"
    assert invoke("failures", "show", camp, row["key"][:12], "--reproducer", path).exit_code == 0
    res = run_script(path, "--transcript", str(tmp_path / "t.json"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert TOKEN not in res.stdout + res.stderr + path.read_text() + (tmp_path / "t.json").read_text()
    assert "> Authorization: ***" in res.stdout
    assert "> DELETE http://127.0.0.1:" in res.stdout and '"results"' in res.stdout  # URL, response body
    assert "deleted " in res.stdout and "GET -> 404 (not found)" in res.stdout  # the management API's word
    log = json.loads((tmp_path / "t.json").read_text())
    search = next(e for e in log if e["op"] == "search")
    assert search["method"] == "POST" and search["url"].startswith("http://127.0.0.1:")
    assert "query" in json.dumps(search["request"]) and "results" in search["response"]
    assert search["headers"]["Authorization"] == "***"
    assert {e["op"] for e in log} >= {"add", "delete", "search", "get"}


def test_answer_only_products_reproduce(agent, tmp_path):
    srv, camp = agent
    rows = one_per_kind(camp)
    assert rows and all(r["stage"] == "response" for r in rows)
    for r in rows:
        path = tmp_path / f"repro-{r['key'][:8]}.py"
        assert invoke("failures", "show", camp, r["key"][:12], "--reproducer", path).exit_code == 0
        res = run_script(path, "--quiet")
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"REPRODUCED response:{r['kind']}" in res.stdout and "answer: " in res.stdout
    srv.defects = frozenset()  # the fixed build
    try:
        res = run_script(tmp_path / f"repro-{rows[0]['key'][:8]}.py", "--quiet")
    finally:
        srv.defects = frozenset(DEFECTS)
    assert res.returncode == 1 and "NOT REPRODUCED" in res.stdout, res.stdout


def test_minimise_writes_a_reproducer_and_the_ticket_uses_its_steps(product, tmp_path):
    _srv, camp = product
    row = next(r for r in one_per_kind(camp) if r["kind"] == "deleted_evidence_retrieved")
    key = row["key"]
    out = tmp_path / "min.jsonl"
    r = invoke("minimise", camp, key[:12], "-o", out, "--reproducer", tmp_path / "min.py")
    assert r.exit_code == 0, r.output
    assert f"--format md --minimised {out}" in r.output
    script = (tmp_path / "min.py").read_text()
    cp = json.loads(out.read_text().splitlines()[1])
    case = eval(script.split("\nCASE = ", 1)[1].split("\nJUDGING = ", 1)[0])  # the embedded literal
    assert [m["id"] for m in case["memories"]] == [m["id"] for m in cp["memories"]]
    res = run_script(tmp_path / "min.py", "--quiet")
    assert res.returncode == 0 and "REPRODUCED selection:deleted_evidence_retrieved" in res.stdout, res.stdout

    md = invoke("failures", "show", camp, key[:12], "--format", "md", "--minimised", out)
    assert md.exit_code == 0, md.output
    text = md.output
    title = text.splitlines()[0]
    assert title.startswith("# ") and "Search still returns a memory that DELETE removed" in title
    assert "get and list confirm it was deleted" in title
    assert f"add these {len(cp['memories'])} memories (minimised by `ufuzz minimise`" in text
    for m in cp["memories"]:
        assert f"`{m['id']}`" in text
    assert "## Steps" in text and "## Evidence" in text and "## Reproduce" in text
    assert "| rank | id | product id |" in text and "deleted, offending" in text
    # the evidence tables are the campaign's, on the whole checkpoint: said so beside the minimised steps
    # (new-user walkthrough: ids in the tables that the steps never add)
    assert "As the campaign saw it, on the whole checkpoint" in text.split("## Evidence")[1]
    # without the minimised file the steps name the full checkpoint
    full = invoke("failures", "show", camp, key[:12], "--format", "md").output
    assert "minimised by" not in full and "Start from checkpoint" in full and "As the campaign saw it" not in full
    assert invoke("failures", "show", camp, key[:12], "--format", "md", "--json").exit_code == 2
    assert invoke("failures", "show", camp, key[:12], "--format", "md", "--minimised", tmp_path / "no").exit_code == 2
    said = CliRunner().invoke(main, ["failures", "show", str(camp), key[:12], "--minimised", str(out),
                                     "--reproducer", str(tmp_path / "again.py")])
    assert said.exit_code == 0 and f"the minimised case ({len(cp['memories'])} memories" in said.stderr


def test_answer_only_ticket_says_what_the_product_answered(agent):
    _srv, camp = agent
    for r in one_per_kind(camp):
        text = invoke("failures", "show", camp, r["key"][:12], "--format", "md").output
        first = text.splitlines()[0].lower()
        if r["kind"] == "stale_answer" and r["operator"] == "delete":
            assert "the answer still uses a memory that delete removed" in first
        if r["kind"] == "unsupported_answer":
            assert "instead of saying it does not know" in first
        assert "- response: " in text


# ---------------------------------------------------------------- the embedded verdict is the campaign's


def _embedded() -> types.ModuleType:
    mod = types.ModuleType("ufuzz_verdict_test")
    sys.modules[mod.__name__] = mod
    for part in verdict_source():
        exec(compile(part, "<embedded>", "exec"), mod.__dict__)
    return mod


EMBEDDED = _embedded()
IDS = st.sampled_from([f"m{i}" for i in range(6)])
WORDS = st.sampled_from(["Velmora", "Brask", "I don't know.", "kitchen fitter", "none", "Velmora now", ""])


@st.composite
def refs(draw):
    abstain = draw(st.booleans())
    return Reference("q", None if abstain else draw(WORDS.filter(bool)), abstain=abstain,
                     supporting=tuple(draw(st.lists(IDS, max_size=2, unique=True))),
                     invalidated=tuple(draw(st.lists(IDS, max_size=2, unique=True))),
                     aliases=tuple(draw(st.lists(WORDS.filter(bool), max_size=1))),
                     stale_answers=tuple(draw(st.lists(WORDS.filter(bool), max_size=2))))


@st.composite
def executions(draw):
    ids = draw(st.lists(IDS, max_size=5, unique=True))
    responds = draw(st.booleans())
    return Execution(case_id="c", state_key="s", query="q", top_ids=ids,
                     top_scores=[float(draw(st.integers(0, 10))) / 10 for _ in ids],
                     top_texts=[draw(WORDS) for _ in ids], response=draw(WORDS) if responds else None,
                     responder="backend" if responds else None)


def _plain(levels):
    return {k: (o.passed, o.level, o.kind, tuple(o.offending)) for k, o in levels.items()}


@settings(max_examples=300, deadline=None)
@given(refs(), executions(), refs(), executions(), st.lists(IDS, max_size=2), st.booleans(),
       st.sampled_from([None, 0.5]))
def test_the_reproducers_verdict_equals_the_campaigns(pref, pex, mref, mex, deleted, visible, threshold):
    ctx = verdict.Context(visible=visible, threshold=threshold)
    ns = types.SimpleNamespace(visible=visible, threshold=threshold, judge=None)
    mine = {s: verdict.judge(r, e, tuple(deleted), ctx) for s, r, e in (("p", pref, pex), ("m", mref, mex))}
    theirs = {s: EMBEDDED.judge(r, e, tuple(deleted), ns) for s, r, e in (("p", pref, pex), ("m", mref, mex))}
    assert _plain(mine["p"]) == _plain(theirs["p"]) and _plain(mine["m"]) == _plain(theirs["m"])
    a, b = verdict.caused(mine["p"], mine["m"]), EMBEDDED.caused(theirs["p"], theirs["m"])
    assert (a is None) == (b is None)
    if a is not None:
        assert (a.level, a.kind, a.offending) == (b.level, b.kind, b.offending)


def test_the_script_embeds_the_verdict_code_verbatim(tmp_path):
    from ufuzz.oracles import expectations

    src = "\n".join(verdict_source())
    assert "def selection(" in src and "def response(" in src and "def caused(" in src
    body = [ln for ln in Path(expectations.__file__).read_text().splitlines() if not ln.startswith("from ufuzz")]
    assert "\n".join(body) in src  # nothing rewritten, so nothing can drift


_DATETIMES = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1))
_TIMESTAMPS = st.one_of(_DATETIMES.map(datetime.isoformat), _DATETIMES.map(lambda d: d.isoformat() + "Z"),
                        st.text(max_size=12))


@settings(max_examples=200, deadline=None)
@given(_TIMESTAMPS)
def test_the_script_sends_the_times_the_adapter_sends(stamp):
    """The request-time code is the adapter's own, embedded: the same placeholders for every timestamp."""
    from ufuzz.backends.adapters.http.adapter import _times
    from ufuzz.reports.reproducer import adapter_source

    ns: dict = {}
    exec(compile(adapter_source(), "<ufuzz adapter>", "exec"), ns)
    assert ns["_times"](stamp) == _times(stamp)


def test_the_script_reads_no_such_memory_as_the_adapter_does():
    """The reading of "no such memory" in an answer at HTTP 200 is the adapter's own function, embedded."""
    from ufuzz.backends.adapters.http.adapter import _not_found_by
    from ufuzz.reports.reproducer import adapter_source

    ns: dict = {}
    exec(compile(adapter_source(), "<ufuzz adapter>", "exec"), ns)
    cases = [([-32004], (-32004,)), ([1], (True,)), ([True], (1,)), ([True], (True,)), ([None], None),
             (["gone"], None), ([], None), (["x"], ("gone",))]
    for found, values in cases:
        assert ns["_not_found_by"](found, values) == _not_found_by(found, values), (found, values)
    assert [_not_found_by(f, v) for f, v in cases] == [True, False, False, True, False, True, False, False]


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "id"]), kids,
                                                                              max_size=3), max_leaves=12)
_STEPS = st.lists(st.sampled_from([".a", ".b", ".id", "[*]", ".*", "[0]", "[1]", "[-1]", "['a']"]), max_size=4)


@settings(max_examples=300, deadline=None)
@given(_STEPS, st.one_of(st.lists(_JSON, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "id"]), _JSON,
                                                                        max_size=3)))
def test_the_script_walks_a_json_path_as_the_adapters_library_reads_it(steps, doc):
    """The script reads a response by the adapter's own walk of a path's steps (embedded), with the steps worked out
    by the library the adapter parses paths with: whatever the document, it reaches what that library reaches."""
    from ufuzz.backends.adapters.http import JsonPath
    from ufuzz.reports.reproducer import adapter_source

    ns: dict = {}
    exec(compile(adapter_source(), "<ufuzz adapter>", "exec"), ns)
    jp = JsonPath.parse("$" + "".join(steps))
    assert jp.steps is not None  # names, indexes and wildcards are plain steps
    assert ns["_walk"](jp.steps, doc) == jp.compiled.findall(doc)


def test_a_reproducer_reads_answers_in_the_adapters_order(tmp_path):
    """A path with a filter is not walked by the script (it says so and names ``ufuzz replay``). Answers are read in
    the adapter's order: a not-found status is "no such memory" whatever its body; an answer at HTTP 200 that
    ``not_found_when`` reads as "no such memory" is that, though it has a value at ``error_when`` (a JSON-RPC error
    reply); any other answer with a value at ``error_when`` is a failed request."""
    import http.server
    import threading

    from ufuzz.backends.adapters.http import parse_config
    from ufuzz.model import Memory, Reference
    from ufuzz.reports.reproducer import http_reproducer

    raw = {"base_url": "http://127.0.0.1:9", "error_when": "$.error",
           "add": {"path": "/m", "body": {"text": "{text}"}},
           "get": {"path": "/m/{id}", "text": "$.text", "not_found_when": "$.error.code", "not_found_values": [-32004]},
           "list": {"path": "/m", "ids": "$.items[?@.live].id", "texts": "$.items[*].text"},
           "search": {"path": "/s", "body": {"q": "{query}"}, "ids": "$.hits[*].id"}}
    config = parse_config(raw)
    ref = Reference(query_id="q", answer="x", supporting=("m1",))
    script = tmp_path / "repro.py"
    script.write_text(http_reproducer(config, key="k", operator="paraphrase", kind="missing_evidence",
                                      stage="selection", memories=(Memory("m1", "x", "2024-01-01T00:00:00"),),
                                      parent=None, mutant=("q?", (), ref), k=5))
    ns: dict = {"__name__": "repro"}
    exec(compile(script.read_text(), str(script), "exec"), ns)
    assert ns["find"]("$.hits[*].id", {"hits": [{"id": "a"}, {"id": "b"}]}) == ["a", "b"]
    with pytest.raises(SystemExit, match="ufuzz replay"):
        ns["find"]("$.items[?@.live].id", {"items": []})

    answers = {"/s": (200, b'{"error": {"code": -32000, "message": "quota"}}'), "/m": (200, b'{"hits": []}'),
               "/m/p1": (200, b'{"text": "x"}'), "/m/p404": (404, b'{"error": "memory not found"}'),
               "/m/p200": (200, b'{"error": {"code": -32004, "message": "no such memory"}}'),
               "/m/p500": (200, b'{"error": {"code": -32603, "message": "internal"}}')}

    class Answers(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = answers[self.path]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815 - the stdlib's names

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        product = ns["Product"](f"http://127.0.0.1:{server.server_address[1]}", True)
        with pytest.raises(ns["RequestFailed"], match=r"answered an error at HTTP 200 \(\$\.error is set\)"):
            product.call("search", {"query": "q?", "k": 5, "namespace": "n"})
        assert product.call("add", {"text": "x", "namespace": "n"}) == (200, {"hits": []})
        ids = {"m1": "p1", "m404": "p404", "m200": "p200", "m500": "p500"}
        assert product.get("n", ids, "m1") == (200, {"text": "x"})
        assert product.get("n", ids, "m404") == (404, None)  # its body unread, as the adapter reads it
        assert product.get("n", ids, "m200") == (200, None)  # "no such memory" at HTTP 200, not an error
        with pytest.raises(ns["RequestFailed"], match="answered an error"):
            product.get("n", ids, "m500")
    finally:
        server.shutdown()


def test_a_corpus_record_gets_a_reproducer_too(product, tmp_path):
    """From a committed baseline corpus (a team's CI has the corpus, not the campaign)."""
    _srv, camp = product
    corpus = tmp_path / "baseline.jsonl"
    assert invoke("corpus", "export", camp, "-o", corpus).exit_code == 0
    row = next(r for r in one_per_kind(camp) if r["kind"] == "deleted_evidence_retrieved")
    r = invoke("corpus", "reproducer", corpus, "--key", row["key"][:10], "-o", tmp_path / "c.py")
    assert r.exit_code == 0, r.output
    res = run_script(tmp_path / "c.py", "--quiet")
    assert res.returncode == 0 and "REPRODUCED selection:deleted_evidence_retrieved" in res.stdout, res.stdout
    r = invoke("corpus", "reproducer", corpus, "-o", tmp_path / "d.py")
    assert r.exit_code == 2 and "choose one with --key" in r.output
    r = invoke("corpus", "reproducer", corpus, "--key", "zzzz", "-o", tmp_path / "d.py")
    assert r.exit_code == 2 and "no record" in r.output and not (tmp_path / "d.py").exists()


def test_a_seeds_baseline_failure_reproduces_alone(product, tmp_path):
    """Any failure, not only mutants': a seed failing its own reference is built and judged on its own."""
    _srv, camp = product
    rows = json.loads(invoke("failures", "list", camp, "--all", "--json").output)
    seeds = [r for r in rows if r["origin"] == "baseline" and r["case"] == r["seed"]]
    assert seeds, "the campaign has no seed failing its own reference"
    path = tmp_path / "seed.py"
    r = invoke("failures", "show", camp, seeds[0]["key"][:12], "--reproducer", path)
    assert r.exit_code == 0, r.output
    res = run_script(path, "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"REPRODUCED {seeds[0]['stage']}:{seeds[0]['kind']} (the question fails on the unmutated state)" \
        in res.stdout and "parent" not in res.stdout


def test_minimise_against_a_product_that_is_down_says_so_and_exits_3(tmp_path, monkeypatch):
    """Walkthrough: with the product stopped, `minimise` said the failure "does not reproduce" (exit 2) — a
    developer could close a real bug on it. A down product is exit 3, and nothing is written."""
    monkeypatch.setenv(ENV, TOKEN)
    with start_product_server(TOKEN, delete_bug=True) as srv:
        cfg = tmp_path / "product.toml"
        cfg.write_text((ROOT / "examples" / "product.toml").read_text()
                       .replace('base_url = "http://127.0.0.1:8080"', f'base_url = "{srv.base_url}"'))
        r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 120, "--out", tmp_path / "camp",
                   "--quiet")
        assert r.exit_code == 0, r.output
        key = one_per_kind(tmp_path / "camp")[0]["key"]
    r = CliRunner().invoke(main, ["minimise", str(tmp_path / "camp"), key[:12], "-o", str(tmp_path / "min.jsonl")])
    assert r.exit_code == 3, r.output
    assert ("unreachable" in r.output or "backend fault" in r.output) and "does not reproduce" not in r.output
    assert not (tmp_path / "min.jsonl").exists()
