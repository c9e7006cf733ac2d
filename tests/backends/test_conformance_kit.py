"""The conformance kit as an outside package uses it: a backend defined here (not in ufuzz), registered at run
time or through an entry point, checked from Python, from pytest and by ``ufuzz backends check``; and
deliberately broken backends, whose broken promise the kit must name."""

from __future__ import annotations

import re
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ufuzz import plugins
from ufuzz.backends import registry
from ufuzz.backends.conformance import CHECKS, ConformanceSuite, run_conformance
from ufuzz.backends.options import Option
from ufuzz.backends.protocol import (
    BackendError,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.cli import main
from ufuzz.model import Checkpoint, Memory

_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class WordOverlapBackend(MemoryBackend):
    """What an outside package would ship: a small pure-Python memory (dicts, word-overlap retrieval)."""

    name = "word-overlap"
    options_spec = (Option("min_overlap", int, default=1, min=1, help="words a memory must share with a query"),)

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        self.min_overlap = self.settings["min_overlap"]
        self.states: StateTable[dict[str, StoredMemory]] = StateTable("word-overlap")
        self.closed = False

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(notes="test backend: dicts and word overlap")

    def build(self, checkpoint: Checkpoint) -> StateHandle:
        handle = self.states.mint()
        self.states.put(handle, {m.id: StoredMemory(m.id, m.text, m.timestamp, True, dict(m.metadata))
                                 for m in checkpoint.memories})
        return handle

    def fork(self, state: StateHandle) -> StateHandle:
        handle = self.states.mint()
        self.states.put(handle, dict(self.states.get(state, "fork")))
        return handle

    def release(self, state: StateHandle) -> None:
        self.states.pop(state)

    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        q = _terms(query)
        scored = [(len(q & _terms(m.text)), m) for m in self.states.get(state, "retrieve").values() if m.active]
        hits = sorted(((s, m) for s, m in scored if s >= self.min_overlap), key=lambda t: (-t[0], t[1].id))
        return [Retrieved(m.id, m.text, float(s)) for s, m in hits[:k]]

    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        st = self.states.get(state, "add")
        if memory.id in st:
            return OpResult("add", False, memory.id, detail="exists")
        st[memory.id] = StoredMemory(memory.id, memory.text, memory.timestamp)
        return OpResult("add", True, memory.id, written=(memory.id,))

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        st = self.states.get(state, "update")
        if memory_id not in st:
            return OpResult("update", False, memory_id, detail="unknown")
        st[memory_id] = StoredMemory(memory_id, new.text, new.timestamp)
        return OpResult("update", True, memory_id, written=(memory_id,))

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        if self.states.get(state, "delete").pop(memory_id, None) is None:
            return OpResult("delete", False, memory_id, detail="unknown")
        return OpResult("delete", True, memory_id, removed=(memory_id,))

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        return self.states.get(state, "get").get(memory_id)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return sorted(self.states.get(state, "list").values(), key=lambda m: m.id)

    def close(self) -> None:
        self.closed = True


class SharedForkBackend(WordOverlapBackend):
    """Broken on purpose: a fork shares its parent's dict, so writes to the fork reach the parent."""

    name = "shared-fork"

    def fork(self, state: StateHandle) -> StateHandle:
        handle = self.states.mint()
        self.states.put(handle, self.states.get(state, "fork"))
        return handle


class NewIdsForkBackend(WordOverlapBackend):
    """Independent copies, but a copy stores its memories under ids it mints anew (a product whose snapshot does)."""

    name = "new-ids-fork"

    def fork(self, state: StateHandle) -> StateHandle:
        handle = self.states.mint()
        self.states.put(handle, {f"{handle}-{m.id}": replace(m, id=f"{handle}-{m.id}")
                                 for m in self.states.get(state, "fork").values()})
        return handle


class LostListBackend(WordOverlapBackend):
    """Broken on purpose: list() raises, as a backend bug would."""

    name = "lost-list"

    def list(self, state: StateHandle) -> list[StoredMemory]:
        raise BackendError("lost-list: the index is gone")


class OnePageBackend(WordOverlapBackend):
    """Broken on purpose: list() shows the first two memories only (a paged listing read as its first page)."""

    name = "one-page"

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return super().list(state)[:2]


class NoCopyBackend(WordOverlapBackend):
    name = "no-copy"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(copyable=False)

    def fork(self, state: StateHandle) -> StateHandle:
        raise NotImplementedError


# -- Python and pytest --------------------------------------------------------------------------------------
class TestWordOverlapConformance(ConformanceSuite):
    """The pytest way for an outside package: one test per check."""

    @pytest.fixture
    def backend(self, tmp_path):
        b = WordOverlapBackend(tmp_path, {})
        yield b
        b.close()


def outcomes(results) -> dict[str, str]:
    return {r.check: r.outcome for r in results}


def test_a_conforming_backend_passes_every_check(tmp_path):
    results = run_conformance(lambda: WordOverlapBackend(tmp_path, {}))
    assert [r.check for r in results] == [c.name for c in CHECKS]
    assert all(r.outcome == "passed" and r.ok for r in results), results


def test_a_fork_that_shares_state_fails_fork_isolation_only(tmp_path):
    results = outcomes(run_conformance(lambda: SharedForkBackend(tmp_path, {})))
    assert results.pop("fork_isolation") == "failed"
    assert set(results.values()) == {"passed"}


def test_a_fork_that_gives_memories_new_ids_fails_fork_isolation_saying_so(tmp_path):
    """Product walkthrough: such a copy was blamed for a leak ("an update in a fork changed the sibling fork: m1 is
    None"); the check now says the fork does not list the parent's memories under their ids."""
    results = {r.check: r for r in run_conformance(lambda: NewIdsForkBackend(tmp_path, {}))}
    got = results.pop("fork_isolation")
    assert got.outcome == "failed" and "does not list its parent's memories under their ids" in got.message, got
    assert "changed the" not in got.message
    assert {r.outcome for r in results.values()} == {"passed"}


def test_an_exception_is_an_error_result_naming_it(tmp_path):
    results = {r.check: r for r in run_conformance(lambda: LostListBackend(tmp_path, {}))}
    assert results["build_and_list"].outcome == "error" and not results["build_and_list"].ok
    assert "BackendError: lost-list: the index is gone" in results["build_and_list"].message
    assert results["retrieve_ordered_and_deterministic"].outcome == "passed"


def test_a_listing_of_one_page_fails_build_and_list_and_is_not_blamed_on_isolation(tmp_path):
    """A listing that misses memories of a fresh build is build_and_list's failure; the checks that read list() of
    other states say nothing (skipped, naming why) instead of blaming forks or releases that are fine."""
    results = {r.check: r for r in run_conformance(lambda: OnePageBackend(tmp_path, {}))}
    assert results["build_and_list"].outcome == "failed"
    for name in ("fork_isolation", "release_is_independent"):
        assert results[name].outcome == "skipped" and "build_and_list" in results[name].message, results[name]


def test_fork_isolation_is_skipped_when_the_backend_cannot_copy(tmp_path):
    results = {r.check: r for r in run_conformance(lambda: NoCopyBackend(tmp_path, {}))}
    assert results["fork_isolation"].outcome == "skipped" and results["fork_isolation"].ok
    assert "copyable" in results["fork_isolation"].message


def test_one_backend_for_all_checks_or_a_fresh_one_each_and_all_closed(tmp_path):
    made: list[WordOverlapBackend] = []

    def factory() -> WordOverlapBackend:
        made.append(WordOverlapBackend(tmp_path, {}))
        return made[-1]

    run_conformance(factory)
    assert len(made) == 1 and made[0].closed and not made[0].states.handles()  # every check released its states
    made.clear()
    run_conformance(factory, fresh=True)
    assert len(made) == len(CHECKS) and all(b.closed for b in made)


# -- ufuzz backends check ------------------------------------------------------------------------------------
def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def runtime_registered(monkeypatch):
    for cls in (WordOverlapBackend, SharedForkBackend):
        monkeypatch.setitem(registry._runtime, cls.name, cls)


def test_check_command_on_a_backend_registered_at_run_time(runtime_registered):
    r = cli("backends", "check", "word-overlap", "--opt", "min_overlap=1")
    assert r.exit_code == 0, r.output
    assert "backend 'word-overlap' (min_overlap=1)" in r.output
    assert [line.split()[0] for line in r.output.splitlines()[1:-1]] == ["PASS"] * len(CHECKS)
    assert r.output.splitlines()[-1] == f"{len(CHECKS)} checks: {len(CHECKS)} passed"


def test_check_command_fails_with_the_broken_check_named(runtime_registered):
    r = cli("backends", "check", "shared-fork")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].split()[1] == "fork_isolation"
    assert "changed the parent" in lines[lines.index(failed[0]) + 1]
    assert lines[-1] == f"{len(CHECKS)} checks: {len(CHECKS) - 1} passed, 1 failed"


@pytest.mark.parametrize(("args", "needle"), [
    (("--opt", "min_overlap=0"), "option 'min_overlap': must be >= 1 (got 0)"),
    (("--opt", "colour=red"), "unknown option 'colour'; known options: min_overlap"),
    (("--opt", "novalue"), "--opt"),
])
def test_check_command_rejects_bad_options_before_running(runtime_registered, args, needle):
    r = cli("backends", "check", "word-overlap", *args)
    assert r.exit_code == 2 and needle in r.output and "PASS" not in r.output, r.output


def test_check_command_on_an_unknown_backend():
    r = cli("backends", "check", "no-such-backend")
    assert r.exit_code == 2 and "unknown backend 'no-such-backend'" in r.output


@pytest.fixture
def entry_point(monkeypatch):
    """An installed outside package, as importlib.metadata reports it."""
    ep = EntryPoint("outside", f"{__name__}:WordOverlapBackend", "ufuzz.backends")
    monkeypatch.setattr(plugins, "entry_points", lambda group: [ep] if group == "ufuzz.backends" else [])


def test_an_entry_point_backend_is_listed_with_its_options_and_checked_in_a_worker(entry_point, tmp_path):
    listed = cli("backends")
    assert listed.exit_code == 0
    block = listed.output[listed.output.index("outside "):]
    assert "min_overlap  integer >= 1; default: 1 — words a memory must share with a query" in block
    r = cli("backends", "check", "outside", "--isolation", "process", "--workdir", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == f"{len(CHECKS)} checks: {len(CHECKS)} passed"
    assert (tmp_path / "backend1" / "worker.log").exists()  # it really ran in a worker process


def test_check_command_on_the_embedded_backend():
    r = cli("backends", "check", "embedded", "--opt", "retrieval=bm25", "--opt", "db=memory", "--isolation", "none")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == f"{len(CHECKS)} checks: {len(CHECKS)} passed"
