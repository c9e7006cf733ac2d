"""The backend worker process: same protocol, states that survive recycling, crashes and hangs as errors.

The backends here are the real embedded backend (BM25, SQLite) served from a real child process; the faults
(SIGSEGV in native code, a hang, a leak) are injected by ``tests/faulty_backends.py``.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.faulty_backends import CRASH, HANG, HangingBackend, LeakingBackend, SegfaultingBackend
from ufuzz.backends import registry
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint
from ufuzz.backends.protocol import BackendError, BackendUnavailable
from ufuzz.backends.worker import WorkerBackend, wrap
from ufuzz.model import Memory

BM25 = {"retrieval": "bm25", "db": "memory"}
LENA = "Where does Lena live?"


def ids(results):
    return [r.id for r in results]


@pytest.fixture
def worker(tmp_path):
    b = wrap("embedded", EmbeddedBackend, tmp_path / "w", BM25, recycle_every=2)
    yield b
    b.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance_across_recycles(check, worker):
    """Every protocol check holds when the worker is replaced every second call, mid-check."""
    check(worker)
    assert worker.stats.recycles >= 1 and worker.stats.rebuilds >= 1


def test_state_survives_recycle_with_its_writes(tmp_path):
    plain = EmbeddedBackend(tmp_path / "p", BM25)
    b = wrap("embedded", EmbeddedBackend, tmp_path / "w", BM25, recycle_every=4)
    try:
        for x in (plain, b):
            s = x.build(tiny_checkpoint())
            assert x.update(s, "m1", Memory("m1u", "My sister Lena moved to Brackwater.", "2024-03-01T10:00:00")).ok
            f = x.fork(s)
            assert x.delete(f, "m2").ok
            x.add(f, Memory("m9", "Lena bought a boat.", "2024-03-02T10:00:00"))
            x.got = (ids(x.retrieve(s, LENA, 6)), ids(x.retrieve(f, LENA, 6)),
                     sorted((m.id, m.text, m.active) for m in x.list(s)),
                     sorted((m.id, m.text, m.active) for m in x.list(f)))
        assert b.got == plain.got
        assert b.stats.recycles >= 2 and b.stats.rebuilds >= 2
    finally:
        b.close()


def test_segfault_is_a_backend_error_and_the_state_comes_back(tmp_path):
    b = wrap("segv", SegfaultingBackend, tmp_path / "w", BM25)
    try:
        s = b.build(tiny_checkpoint())
        b.add(s, Memory("m9", "Lena's boat is called Heron.", "2024-03-02T10:00:00"))
        before = ids(b.retrieve(s, LENA, 4))
        with pytest.raises(BackendError, match="SIGSEGV"):
            b.retrieve(s, f"{CRASH} {LENA}", 4)
        assert ids(b.retrieve(s, LENA, 4)) == before
        assert b.get(s, "m9") is not None  # the write was replayed into the new worker
        assert (b.stats.crashes, b.stats.starts, b.stats.rebuilds) == (1, 2, 1)
        assert "Segmentation fault" in (tmp_path / "w" / "worker.log").read_text()
        assert not (tmp_path / "w" / "gen0001").exists()  # the dead worker's files are gone
    finally:
        b.close()


def test_hang_times_out_as_a_backend_error(tmp_path):
    b = wrap("hang", HangingBackend, tmp_path / "w", BM25, call_timeout=2)
    try:
        s = b.build(tiny_checkpoint())
        with pytest.raises(BackendError, match="longer than 2 s"):
            b.retrieve(s, f"{HANG} {LENA}", 3)
        assert ids(b.retrieve(s, LENA, 3))[0] == "m1"
        assert b.stats.crashes == 1
    finally:
        b.close()


def test_memory_limit_recycles_a_leaking_worker(tmp_path):
    b = wrap("leak", LeakingBackend, tmp_path / "w", {**BM25, "leak_mb": 16}, max_rss_mb=1)
    b.max_rss_mb = b.rss_mb() + 120  # the limit: 120 MB above what the fresh worker holds
    limit = b.max_rss_mb
    try:
        s = b.build(tiny_checkpoint())
        first = ids(b.retrieve(s, LENA, 3))
        for _ in range(60):  # 60 x 16 MB = 960 MB if never recycled
            assert ids(b.retrieve(s, LENA, 3)) == first
        assert b.stats.recycles >= 2
        # checked every 16 calls, so it can overshoot by at most 16 leaks before the next check
        assert b.stats.peak_rss_mb < limit + 16 * 16 + 64
    finally:
        b.close()


def test_start_failures_have_clear_messages(tmp_path):
    with pytest.raises(ValueError, match="unknown option 'bogus'"):
        wrap("embedded", EmbeddedBackend, tmp_path / "a", {"bogus": "1"})
    with pytest.raises(BackendUnavailable, match="No module named 'no_such_module'"):
        WorkerBackend("nope", "no_such_module:Backend", tmp_path / "b", {})


def test_registry_isolation_auto_follows_the_adapter_flag(tmp_path):
    registry.register("segv-test", SegfaultingBackend)
    auto = registry.create("segv-test", tmp_path / "a", BM25, isolation="auto")
    try:
        assert isinstance(auto, WorkerBackend)
    finally:
        auto.close()
    assert not isinstance(registry.create("embedded", tmp_path / "b", BM25, isolation="auto"), WorkerBackend)
    assert isinstance(registry.create("segv-test", tmp_path / "c", BM25, isolation="none"), SegfaultingBackend)
    with pytest.raises(ValueError, match="isolation must be one of"):
        registry.create("embedded", tmp_path / "d", BM25, isolation="thread")


# -- campaigns ----------------------------------------------------------------------------------------------
def _campaign(tmp_path, name, **kw):
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    c = Campaign(CampaignConfig(out=str(tmp_path / name), seed=5, **kw))
    return c, c.run()


def test_recycled_worker_campaign_equals_in_process_campaign(tmp_path):
    """Recycling rebuilds states from recipes: the same campaign, mutant for mutant and failure for failure."""
    common = dict(backend="embedded", backend_options={"retrieval": "bm25"}, budget=160)
    c0, s0 = _campaign(tmp_path, "inproc", isolation="none", **common)
    c1, s1 = _campaign(tmp_path, "worker", isolation="process", worker_recycle=150, **common)
    assert s1["worker"]["recycles"] >= 2 and s1["worker"]["rebuilds"] >= 1
    assert s0["worker"] is None
    for key in ("executions", "mutants_valid", "mutants_rejected", "retained", "coverage", "failures", "errors"):
        assert s1[key] == s0[key], key
    assert s0["unique_failures"] > 0
    seq = [(m.id, m.query.text, m.ops) for m in c0.cases.values()]
    assert [(m.id, m.query.text, m.ops) for m in c1.cases.values()] == seq


def test_campaign_survives_native_crashes(tmp_path):
    registry.register("segv-test", SegfaultingBackend)
    c, s = _campaign(tmp_path, "crashy", backend="segv-test", backend_options={"retrieval": "bm25", "crash_every": 40},
                     budget=150)
    assert s["status"] == "budget_spent"
    assert s["executions"] == 150
    assert s["worker"]["crashes"] >= 3 and s["errors"] >= 3
    assert s["unique_failures"] > 0
    errors = c.store.errors(c.campaign_id)
    assert any("SIGSEGV" in e.message for e in errors)


def test_cli_isolation_flags(tmp_path):
    from ufuzz.cli import main

    r = CliRunner().invoke(main, ["run", "--budget", "40", "--out", str(tmp_path / "c"), "--quiet", "--opt",
                                  "retrieval=bm25", "--isolation", "process", "--worker-recycle", "40"])
    assert r.exit_code == 0, r.output
    assert "backend worker: " in r.output and "recycled" in r.output
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["worker"]["recycles"] >= 1
    st = CliRunner().invoke(main, ["status", str(tmp_path / "c")])
    assert st.exit_code == 0, st.output
    assert f"worker     {summary['worker']['starts']} start(s), {summary['worker']['recycles']} recycled" in st.output
    # the backend line is one readable line (nested facts by their keys, never a dict repr, cut with a pointer
    # to --json); --json has every fact, the worker's settings included
    line = next(x for x in st.output.splitlines() if x.startswith("backend"))
    assert "': " not in line and len(line) < 200 and (line.endswith("(--json for all)") or "worker=[" in line), line
    js = CliRunner().invoke(main, ["status", str(tmp_path / "c"), "--json"])
    assert '"recycle_every": 40' in js.output
    bad = CliRunner().invoke(main, ["run", "--budget", "5", "--out", str(tmp_path / "d"), "--isolation", "thread"])
    assert bad.exit_code == 2 and "--isolation" in bad.output
    assert not (tmp_path / "d").exists()


# -- property: any sequence of operations gives what the in-process backend gives ---------------------------
_ops = st.lists(st.tuples(st.sampled_from(["add", "update", "delete", "fork", "retrieve", "list"]),
                          st.integers(0, 5)), min_size=1, max_size=12)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, recycle=st.integers(2, 8))
def test_worker_matches_in_process_backend(tmp_path_factory, ops, recycle):
    d = tmp_path_factory.mktemp("prop")
    plain = EmbeddedBackend(d / "p", BM25)
    b = wrap("embedded", EmbeddedBackend, d / "w", BM25, recycle_every=recycle)
    try:
        out = []
        for x in (plain, b):
            states = [x.build(tiny_checkpoint())]
            seen = []
            for n, (op, i) in enumerate(ops):
                s = states[i % len(states)]
                mid = f"m{i % 6 + 1}"
                if op == "add":
                    seen.append(x.add(s, Memory(f"n{n}", f"Lena visited place {n}.", f"2024-04-{n + 1:02d}T10:00:00")).ok)
                elif op == "update":
                    seen.append(x.update(s, mid, Memory(f"u{n}", f"Lena moved to town {n}.", "2024-05-01T10:00:00")).ok)
                elif op == "delete":
                    seen.append(x.delete(s, mid).ok)
                elif op == "fork":
                    states.append(x.fork(s))
                elif op == "retrieve":
                    seen.append([(r.id, round(r.score, 9)) for r in x.retrieve(s, LENA, 4)])
                else:
                    seen.append(sorted((m.id, m.text, m.active) for m in x.list(s)))
            out.append(seen)
        assert out[1] == out[0]
    finally:
        b.close()
