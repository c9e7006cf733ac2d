"""End states are whole: an outage that outlasts the budget is an error end even with
``--max-consecutive-errors 0``; a resumed campaign's ``plot_data.csv`` holds the committed prefix's curve (not
the rolled-back work); stray temporary files of an atomic write are cleaned when the campaign opens again."""

from __future__ import annotations

import pytest

from tests.support.faulty_backends import FaultyBackend
from ufuzz.engine import ending
from ufuzz.engine.campaign import OUTAGE_RUN, Campaign, CampaignConfig
from ufuzz.engine.plotdata import read_plot_data
from ufuzz.seeds.synth import synthesize


@pytest.fixture(scope="module")
def suite():
    return synthesize(personas=2, seed=3)


def _config(out, **kw) -> CampaignConfig:
    base = {"backend": "embedded", "backend_options": {"retrieval": "bm25"}, "budget": 80, "seed": 4,
            "out": str(out)}
    return CampaignConfig(**{**base, **kw})


def test_an_outage_to_the_end_of_the_budget_is_an_error_even_without_a_limit(tmp_path, suite):
    # every retrieval after the 30th fails: the rest of the budget is one outage
    backend = FaultyBackend(tmp_path / "b", {"retrieval": "bm25", "fail_op": "retrieve", "fail_after": 30})
    summary = Campaign(_config(tmp_path / "c", max_consecutive_errors=0), suite=suite, backend=backend).run()
    assert summary["executions"] == 80 and summary["errors"] >= OUTAGE_RUN
    assert summary["status"] == ending.ERROR and ending.EXIT_CODES[summary["status"]] != 0
    assert "the budget ran out in an outage" in summary["message"] and "injected fault" in summary["message"]


def test_a_few_errors_at_the_end_do_not_make_an_outage(tmp_path, suite):
    backend = FaultyBackend(tmp_path / "b", {"retrieval": "bm25", "fail_op": "retrieve", "fail_every": 7})
    summary = Campaign(_config(tmp_path / "c", max_consecutive_errors=0), suite=suite, backend=backend).run()
    assert summary["errors"] > 0 and summary["status"] == ending.BUDGET_SPENT


def test_plot_data_after_resume_is_the_committed_prefix_then_the_new_work(tmp_path, suite, monkeypatch):
    out = tmp_path / "c"
    first = Campaign(_config(out, budget=40), suite=suite).run()
    assert first["status"] == ending.BUDGET_SPENT
    rows = read_plot_data(out / "plot_data.csv")
    # rows of work a resume rolls back: as a kill after the snapshot would leave them
    with (out / "plot_data.csv").open("a", encoding="utf-8") as fh:
        fh.write("99.0,55,1,1,1,1,1,1,1,0,1\r\n")
    (out / ".summary.json.abc123.tmp").write_text("{")
    second = Campaign.resume(out, budget=60).run()
    assert second["status"] == ending.BUDGET_SPENT and second["executions"] == 60
    after = read_plot_data(out / "plot_data.csv")
    executions = [r["executions"] for r in after]
    assert executions == sorted(executions) and executions[-1] == 60  # never backwards
    assert not any(r["elapsed_s"] == 99.0 and r["executions"] == 55 for r in after)
    assert after[:len(rows)] == rows
    elapsed = [r["elapsed_s"] for r in after]
    assert elapsed == sorted(elapsed)  # the clock goes on; it does not restart at 0
    assert not list(out.glob(".summary.json.*.tmp"))


def test_resume_rebuilds_a_missing_summary_of_a_finished_campaign(tmp_path, suite):
    import json

    out = tmp_path / "c"
    first = Campaign(_config(out, budget=30), suite=suite).run()
    before = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()  # as a kill at its rename left it (with an older ufuzz)
    (out / ".summary.json.x1y2z3.tmp").write_text("{")
    again = Campaign.resume(out).run()  # nothing left to do: the end is recorded again, with its summary
    assert again["status"] == first["status"] == ending.BUDGET_SPENT
    rebuilt = json.loads((out / "summary.json").read_text())
    for key in ("executions", "unique_failures", "failures", "coverage", "retained", "errors"):
        assert rebuilt[key] == before[key], key
    assert not list(out.glob(".summary.json.*.tmp"))
    with pytest.raises(Exception, match="already spent its budget"):  # with its summary there, nothing to do
        Campaign.resume(out)


class _Product:
    """The HTTP test product (tests/support, with its planted delete defect: the campaigns find failures) on a
    port that stays its own: killed (it stops answering: every call is refused) and restarted empty on the same
    address, as a redeployed service would be."""

    def __init__(self, token: str) -> None:
        self.token, self.port, self._httpd, self._thread = token, 0, None, None

    def start(self) -> None:
        import threading

        from tests.support.http_product_server import ProductServer, _make_handler
        from tests.support.loopback import _Server

        state = ProductServer(token=self.token, delete_bug=True)
        self._httpd = _Server(("127.0.0.1", self.port), _make_handler(state))
        self._httpd.daemon_threads = True
        self.port = state.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def kill(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None


def test_an_http_outage_and_a_resume_give_the_campaign_that_had_none(tmp_path, monkeypatch):
    """The product goes down mid-campaign: the campaign ends in error after --max-consecutive-errors refused
    calls; the product comes back (empty: its states are rebuilt) and the resumed campaign redoes the failed
    steps — no error record is left, and it is the campaign that never had an outage, record by record."""
    from tests.engine.test_resume import _corpus
    from tests.oracles.test_http_ground_truth import TOKEN
    from tests.oracles.test_http_ground_truth import _config as product_config
    from tests.support.planted_world import PATH as WORLD

    monkeypatch.setenv("PRODUCT_API_TOKEN", TOKEN)
    product = _Product(TOKEN)
    product.start()
    try:
        config = product_config(tmp_path, f"http://127.0.0.1:{product.port}", "")

        def campaign(out):
            return Campaign(CampaignConfig(backend="http", backend_options={"config": str(config)}, seeds=str(WORLD),
                                           budget=90, seed=2, out=str(out), max_consecutive_errors=8,
                                           batch=8))  # progress is seen between batches: the outage comes mid-run

        clean = campaign(tmp_path / "clean").run()
        assert clean["status"] == ending.BUDGET_SPENT and clean["errors"] == 0

        def outage(progress):
            if progress.executions >= 40:
                product.kill()

        broken = campaign(tmp_path / "outage").run(on_progress=outage)
        assert broken["status"] == ending.ERROR and "backend errors in a row" in broken["message"]
        assert broken["errors"] >= 8 and broken["executions"] < 90
        product.start()  # redeployed on the same address, with nothing in it
        resumed = Campaign.resume(tmp_path / "outage").run()
    finally:
        product.kill()
    assert resumed["status"] == ending.BUDGET_SPENT and resumed["errors"] == 0
    expected, got = _corpus(tmp_path / "clean"), _corpus(tmp_path / "outage")
    assert not got["errors"] and expected["failures"]
    for part in expected:
        assert got[part] == expected[part], part
