"""A product with a JSON-RPC API (``tests/support/rpc_product.py``) described by a product TOML alone: one endpoint
for every operation, the tenant in a header, "not found" as an error body at HTTP 200 (``not_found_when``), a soft
delete flagged ``deleted`` (``active = "!$.result.deleted"``) and a listing paged by an offset in the body
(``{cursor}``). The conformance kit passes on it, and a campaign runs with no error record."""

from __future__ import annotations

import re

import pytest

from tests.support.rpc_product import PAGE, start_rpc_product
from ufuzz.backends.adapters.http import HttpBackend
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint
from ufuzz.model import Memory


@pytest.fixture(scope="module")
def product():
    with start_rpc_product() as p:
        yield p


@pytest.fixture
def backend(tmp_path, product):
    cfg = tmp_path / "rpc.toml"
    cfg.write_text(product.config())
    b = HttpBackend(tmp_path / "work", {"config": str(cfg)})
    yield b
    b.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, backend):
    check(backend)


def test_every_page_is_read_and_a_soft_deleted_memory_is_listed_inactive(backend):
    state = backend.build(tiny_checkpoint())
    extra = [Memory(f"x{i}", f"Note {i} about Lena.", "2024-06-01T00:00:00") for i in range(2 * PAGE)]
    for m in extra:
        assert backend.add(state, m).ok
    listed = {m.id: m for m in backend.list(state)}
    assert {m.id for m in extra} <= set(listed) and len(listed) > 2 * PAGE + 1
    assert backend.delete(state, "x0").ok
    after = {m.id: m for m in backend.list(state)}
    assert after.keys() == listed.keys() and not after["x0"].active and after["x1"].active
    got = backend.get(state, "x0")
    assert got is not None and not got.active
    assert "x0" not in [h.id for h in backend.retrieve(state, "Note 0 about Lena", 10)]


def test_a_memory_the_product_does_not_have_is_none_not_a_fault(backend, product):
    state = backend.build(tiny_checkpoint())
    some = backend.list(state)[0]
    handle = backend._states.get(state, "get")  # the product's tenant behind the state
    with product.lock:
        del product.tenants[handle.addr][handle.to_product[some.id]]
    assert backend.get(state, some.id) is None


def test_a_campaign_on_it_has_no_error_record(tmp_path, product):
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    cfg = tmp_path / "rpc.toml"
    cfg.write_text(product.config())
    c = Campaign(CampaignConfig(backend="http", backend_options={"config": str(cfg)}, budget=60, seed=3,
                                out=str(tmp_path / "camp")))
    s = c.run()
    assert s["status"] == "budget_spent" and s["errors"] == 0, c.store.errors(c.campaign_id)[:3]
    valid = {m.operator for m in c.store.mutants(c.campaign_id, valid=True)}
    assert valid & {"update", "delete"}, valid  # state operations verified through get and list


def test_a_planted_search_of_deleted_memories_is_found_and_its_reproducer_says_what_get_shows(tmp_path):
    import json
    import subprocess
    import sys

    from click.testing import CliRunner

    from ufuzz.cli import main

    with start_rpc_product(search_deleted=True) as buggy:
        cfg = tmp_path / "rpc.toml"
        cfg.write_text(buggy.config())
        res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(cfg), "--budget", "150",
                                        "--seed", "1", "--out", str(tmp_path / "camp"), "--quiet"])
        assert res.exit_code == 0, res.output
        summary = json.loads((tmp_path / "camp" / "summary.json").read_text())
        assert summary["errors"] == 0 and summary["failures_by_kind"].get("selection:deleted_evidence_retrieved")
        listed = CliRunner().invoke(main, ["failures", "list", str(tmp_path / "camp"), "--kind",
                                           "deleted_evidence_retrieved", "--json"])
        key = json.loads(listed.output)[0]["key"]
        shown = CliRunner().invoke(main, ["failures", "show", str(tmp_path / "camp"), key, "--format", "md",
                                          "--reproducer", str(tmp_path / "repro.py")])
        assert shown.exit_code == 0, shown.output
        title = shown.output.splitlines()[0]
        assert "a memory that delete (POST /rpc) removed" in title and "confirm it was deleted" in title, title
        run = subprocess.run([sys.executable, str(tmp_path / "repro.py")], capture_output=True, text=True,
                             timeout=120)
    assert run.returncode == 0 and "REPRODUCED" in run.stdout, run.stdout + run.stderr
    assert "get -> 200 (still there, flagged deleted" in run.stdout, run.stdout


def test_its_config_is_valid_by_the_published_json_schema(product):
    import jsonschema
    import tomllib

    from ufuzz.backends.adapters.http.schema import product_schema

    jsonschema.validate(tomllib.loads(product.config()), product_schema())


def test_backends_check_lists_a_state_larger_than_a_page_and_names_missing_paging(tmp_path, product):
    """The kit's tiny checkpoint fits in one page; `backends check http` also builds a large state, so a TOML
    that leaves the product's paging out fails there, not at a campaign's start."""
    from click.testing import CliRunner

    from ufuzz.cli import main

    good, unpaged = tmp_path / "rpc.toml", tmp_path / "unpaged.toml"
    good.write_text(product.config())
    unpaged.write_text(product.config().replace('cursor = "$.result.next_offset"\n', "")  # pages of 20, unread
                       .replace('offset = "{cursor}", ', "").replace(f"limit = {PAGE} ", "limit = 20 "))
    ok = CliRunner().invoke(main, ["backends", "check", "http", "--config", str(good)])
    assert ok.exit_code == 0, ok.output
    assert "list_holds_a_large_state" in ok.output and "8 checks: 8 passed" in ok.output
    bad = CliRunner().invoke(main, ["backends", "check", "http", "--config", str(unpaged)])
    assert bad.exit_code == 1, bad.output
    assert "needs [list] next or cursor" in bad.output and "7 passed" in bad.output


@pytest.mark.parametrize("method", ["memory.delete", "memory.update", "memory.add"])
def test_an_error_at_http_200_is_a_fault_never_a_success(backend, product, method):
    """A JSON-RPC internal error (-32603) answered to a write is a backend fault (error_when), not a write done,
    and not "no such memory" (not_found_values names -32004 only)."""
    from ufuzz.backends.protocol import BackendError

    state = backend.build(tiny_checkpoint())
    product.failing = method
    try:
        with pytest.raises(BackendError, match=r"answered an error at HTTP 200 .*-32603"):
            if method == "memory.delete":
                backend.delete(state, "m1")
            elif method == "memory.update":
                backend.update(state, "m1", Memory("m1", "Lena now lives in Brask.", "2024-03-01T00:00:00"))
            else:
                backend.add(state, Memory("x1", "Lena has a cat.", "2024-03-01T00:00:00"))
    finally:
        product.failing = None
    assert backend.get(state, "m1").active and "Velmora" in backend.get(state, "m1").text


def test_not_found_keys_are_refused_where_nothing_reads_them(tmp_path, product):
    for old, new, needle in [
        ('not_found_values = [-32004]\n\n[list]', 'not_found_values = []\n\n[list]', "'not_found_values' is empty"),
        ('[search]\n', '[search]\nnot_found_when = "$.error.code"\n', "is read only by [get], [update]"),
        ('cursor = "$.result.next_offset"\n', 'cursor = "$.result.next_offset"\ncursor_param = "o"\n',
         "'cursor_param' names the query parameter"),
    ]:
        cfg = tmp_path / "bad.toml"
        text = product.config()
        assert old in text, old
        cfg.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError, match=re.escape(needle)):
            HttpBackend(tmp_path / "w", {"config": str(cfg)})
