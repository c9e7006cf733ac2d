"""The backend conformance kit: does an adapter keep the promises of the backend protocol?

Every check builds small states from one six-memory checkpoint (:func:`tiny_checkpoint`) and asserts one
promise of :class:`~ufuzz.backends.protocol.MemoryBackend` that campaigns rely on: states list what they were
built from, retrieval is ordered and repeatable, forks and releases leave other states alone, and the native
add/update/delete show through ``get``/``list``. The kit is public so that a backend living in another package
runs the same checks as the built-in ones:

* command line: ``ufuzz backends check NAME [--opt KEY=VALUE ...] [--config FILE]`` (any installed backend,
  entry points included) prints one line per check and exits non-zero when one fails;
* Python: ``run_conformance(lambda: MyBackend(workdir, {...}))`` returns one :class:`CheckResult` per check;
* pytest: subclass :class:`ConformanceSuite` and give it a ``backend`` fixture (one test per check), or
  parametrize a test over :data:`CHECKS` and call ``check(backend)``.

A check that does not apply (fork isolation on a backend that cannot copy a state, retrieval on a product that
only answers) is skipped, not passed; the retrieval parts of the other checks are left out for such a product.
Checks raise :class:`ConformanceFailure` (an AssertionError, so pytest shows its message) rather than using
``assert``, which ``python -O`` would strip.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from ufuzz.backends.protocol import BackendError, BackendUnreachable, MemoryBackend, StateHandle
from ufuzz.model import Checkpoint, Entity, Fact, Memory

__all__ = ["CHECKS", "Check", "CheckResult", "ConformanceFailure", "ConformanceSuite", "Skip", "run_check",
           "run_conformance", "tiny_checkpoint"]

LENA = "Where does Lena live?"
UPDATE = Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00")
NEW = Memory("m7", "Omar adopted a cat named Sorrel.", "2024-02-02T10:00:00")


def tiny_checkpoint(cid: str = "ck-tiny") -> Checkpoint:
    """Six personal memories with their facts and entities: the checkpoint every check builds."""
    mems = (
        Memory("m1", "My sister Lena lives in Velmora.", "2024-01-01T10:00:00"),
        Memory("m2", "Lena works as a glassblower at Quillstone Works.", "2024-01-02T10:00:00"),
        Memory("m3", "Our dog Pip loves the beach at Orrin Bay.", "2024-01-03T10:00:00"),
        Memory("m4", "My friend Omar lives in Tessaly Heights.", "2024-01-04T10:00:00"),
        Memory("m5", "I usually go to the gym on Thursdays.", "2024-01-05T10:00:00"),
        Memory("m6", "Pip's vet is Dr. Harrow.", "2024-01-06T10:00:00"),
    )
    facts = (
        Fact("Lena", "city", "Velmora", ("m1",), True, "city", "2024-01-01T10:00:00"),
        Fact("Lena", "employer", "Quillstone Works", ("m2",), True, "employer", "2024-01-02T10:00:00"),
        Fact("Omar", "city", "Tessaly Heights", ("m4",), True, "city", "2024-01-04T10:00:00"),
        Fact("Pip", "vet", "Dr. Harrow", ("m6",), True, "person_name", "2024-01-06T10:00:00"),
    )
    ents = (Entity("Lena", "person"), Entity("Omar", "person"), Entity("Pip", "pet"))
    return Checkpoint(cid, mems, facts, ents)


class ConformanceFailure(AssertionError):
    """A backend broke a promise of the protocol; the message says which and what was seen."""


class Skip(Exception):  # noqa: N818 - it is an outcome, not an error
    """The check does not apply to this backend (the message says why)."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise ConformanceFailure(message)


@dataclass(frozen=True)
class Check:
    """One conformance check: ``check(backend)`` raises ConformanceFailure when the backend breaks it."""

    name: str
    fn: Callable[[MemoryBackend], None]

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip().splitlines()[0] if self.fn.__doc__ else ""

    def __call__(self, backend: MemoryBackend) -> None:
        """Run the check; under pytest a Skip becomes ``pytest.skip`` (elsewhere it returns quietly)."""
        try:
            self.fn(backend)
        except Skip as exc:
            if "pytest" in sys.modules:
                import pytest

                pytest.skip(f"{self.name}: {exc}")


# -- the checks ---------------------------------------------------------------------------------------------
@contextmanager
def _built(b: MemoryBackend) -> Iterator[list[StateHandle]]:
    """Collects the states a check makes and releases them afterwards (a failed release is not the check's)."""
    made: list[StateHandle] = []
    try:
        yield made
    finally:
        for s in reversed(made):
            try:
                b.release(s)
            except (BackendError, NotImplementedError):
                pass


def _build(b: MemoryBackend, made: list[StateHandle]) -> StateHandle:
    s = b.build(tiny_checkpoint())
    made.append(s)
    return s


def _active(b: MemoryBackend, s: StateHandle) -> dict[str, str]:
    return {m.id: m.text for m in b.list(s) if m.active}


def _listed(b: MemoryBackend, s: StateHandle) -> None:
    """Skip a check that reads list() where a fresh build does not list its own memories (a listing that shows one
    page of several, say): what build_and_list fails is not this check's to blame — a paged listing read as one
    page made fork isolation fail ("a delete in a fork removed m4 from the parent") on a product whose forks were
    fine."""
    ids = sorted(_active(b, s))
    if ids != ["m1", "m2", "m3", "m4", "m5", "m6"]:
        raise Skip(f"list() of a fresh build shows {ids}, not m1..m6 (see build_and_list: a listing of one page "
                   "of several?), so what it shows of other states says nothing here")


def _ids(hits: Iterable[Any]) -> list[str]:
    return [h.id for h in hits]


def _retrieves(b: MemoryBackend) -> bool:
    """Whether ``b`` shows its retrieval (a product that only answers does not: ``visible_retrieval`` False)."""
    return b.capabilities.visible_retrieval


def check_build_and_list(b: MemoryBackend) -> None:
    """A built state lists exactly the checkpoint's memories; get() finds one and returns None for others."""
    with _built(b) as made:
        s = _build(b, made)
        ids = sorted(_active(b, s))
        expect(ids == ["m1", "m2", "m3", "m4", "m5", "m6"], f"list() shows active ids {ids}, expected m1..m6")
        got = b.get(s, "m1")
        expect(got is not None, "get('m1') returned None after build")
        expect("Velmora" in got.text, f"get('m1') text is {got.text!r}, expected the memory's text")
        expect(b.get(s, "nope") is None, "get() of an id the state does not hold must return None")


def check_retrieve_ordered_and_deterministic(b: MemoryBackend) -> None:
    """retrieve() gives at most k hits, best first, the same twice, and finds the answering memory."""
    if not _retrieves(b):
        raise Skip("the backend shows no retrieval (capabilities.visible_retrieval is False: it only answers)")
    with _built(b) as made:
        s = _build(b, made)
        r1 = b.retrieve(s, LENA, 3)
        r2 = b.retrieve(s, LENA, 3)
        expect(1 <= len(r1) <= 3, f"retrieve(k=3) returned {len(r1)} hits, expected 1 to 3")
        expect(_ids(r1) == _ids(r2), f"the same query gave {_ids(r1)} then {_ids(r2)}")
        scores = [x.score for x in r1]
        expect(scores == sorted(scores, reverse=True), f"scores are not best first: {scores}")
        top6 = _ids(b.retrieve(s, LENA, 6))
        expect("m1" in top6, f"{LENA!r} with k=6 returned {top6}, without the answering memory m1")


def check_fork_isolation(b: MemoryBackend) -> None:
    """Writes to a fork reach neither its parent nor a sibling fork; releasing a fork leaves the parent."""
    if not b.capabilities.copyable:
        raise Skip("the backend cannot copy a state (capabilities.copyable is False)")
    with _built(b) as made:
        parent = _build(b, made)
        _listed(b, parent)
        child = b.fork(parent)
        made.append(child)
        sibling = b.fork(parent)
        made.append(sibling)
        held = sorted(_active(b, parent))
        for label, fork in (("a fork", child), ("a second fork", sibling)):  # the preflight's rule (_same_ids)
            ids = _active(b, fork)
            lost = [i for i in held if i not in ids]
            expect(not lost, f"{label} does not list its parent's memories under their ids ({lost} missing; the "
                             f"fork lists {sorted(ids)}): the copy gives them new ids or loses them, and ufuzz "
                             "addresses memories by id on every copy")
        b.update(child, "m1", UPDATE)
        b.delete(child, "m4")
        b.add(child, NEW)
        for label, other in (("parent", parent), ("sibling fork", sibling)):
            texts = _active(b, other)
            expect(texts.get("m1") == "My sister Lena lives in Velmora.",
                   f"an update in a fork changed the {label}: m1 is {texts.get('m1')!r}")
            expect("m4" in texts, f"a delete in a fork removed m4 from the {label}")
            expect("m7" not in texts and "m1~u" not in texts, f"an add in a fork reached the {label}")
            leaked = [x.id for x in b.retrieve(other, LENA, 6) if "Brask" in x.text] if _retrieves(b) else []
            expect(not leaked, f"the {label} retrieves the fork's update: {leaked}")
        child_ids = {m.id for m in b.list(child) if m.active}
        expect("m7" in child_ids and "m4" not in child_ids,
               f"the fork does not show its own writes: active ids {sorted(child_ids)}")
        b.release(made.pop(1))
        expect(b.get(parent, "m1") is not None, "releasing a fork removed m1 from its parent")


def check_release_is_independent(b: MemoryBackend) -> None:
    """Releasing one state leaves another state built from the same checkpoint intact."""
    with _built(b) as made:
        first = _build(b, made)
        second = _build(b, made)
        _listed(b, second)
        expect(first != second, f"two builds returned the same handle {first!r}")
        b.release(made.pop(0))
        ids = sorted(_active(b, second))
        expect(ids == ["m1", "m2", "m3", "m4", "m5", "m6"], f"after releasing another state, list() shows {ids}")
        if _retrieves(b):
            expect("m1" in _ids(b.retrieve(second, LENA, 6)), "after releasing another state, m1 is not retrieved")


def check_update_is_later_and_active(b: MemoryBackend) -> None:
    """update() reports what it wrote; the written memory holds the new text, is active and not older."""
    with _built(b) as made:
        s = _build(b, made)
        res = b.update(s, "m1", UPDATE)
        expect(res.ok and res.op == "update", f"update of m1 failed: {res}")
        expect(bool(res.written), f"update of m1 reports nothing written: {res}")
        new = b.get(s, res.written[0])
        expect(new is not None, f"get({res.written[0]!r}) after update returned None")
        expect("Brask" in new.text and new.active, f"the updated memory is {new}")
        # a backend that reports no times has nothing to compare (ufuzz then orders by nothing it reads)
        expect(not new.timestamp or new.timestamp >= "2024-02-01",
               f"the updated memory's timestamp {new.timestamp!r} is older than the update's (2024-02-01T10:00:00)")


def check_delete_is_observable(b: MemoryBackend) -> None:
    """After delete(), get() shows the memory gone or inactive and list() no longer has it active."""
    with _built(b) as made:
        s = _build(b, made)
        res = b.delete(s, "m4")
        expect(res.ok and res.op == "delete", f"delete of m4 failed: {res}")
        got = b.get(s, "m4")
        expect(got is None or not got.active, f"get('m4') after delete returned an active memory: {got}")
        expect("m4" not in _active(b, s), "list() still shows m4 active after delete")


def check_add(b: MemoryBackend) -> None:
    """add() reports the id it wrote; get() finds it and retrieval can return it."""
    with _built(b) as made:
        s = _build(b, made)
        res = b.add(s, NEW)
        expect(res.ok and "m7" in res.written, f"add of m7 failed or did not report it written: {res}")
        expect(b.get(s, "m7") is not None, "get('m7') after add returned None")
        hits = _ids(b.retrieve(s, "What is the name of Omar's cat?", 6)) if _retrieves(b) else ["m7"]
        expect("m7" in hits, f"the added memory m7 is not among the top 6 for a question it answers: {hits}")


CHECKS: tuple[Check, ...] = tuple(Check(fn.__name__.removeprefix("check_"), fn) for fn in (
    check_build_and_list, check_retrieve_ordered_and_deterministic, check_fork_isolation,
    check_release_is_independent, check_update_is_later_and_active, check_delete_is_observable, check_add))


#: memories in the state :func:`check_list_holds_a_large_state` builds: more than a product's usual page (20, 50, 100)
LARGE_STATE = 150


def check_list_holds_a_large_state(b: MemoryBackend) -> None:
    """A state of :data:`LARGE_STATE` memories lists every one of them: a product that pages its listing needs its
    paging described (``[list] next`` or ``cursor``), which the tiny checkpoint, smaller than a page, never shows."""
    base = tiny_checkpoint("ck-large")
    extra = tuple(Memory(f"n{i:03d}", f"Note {i}: the parcel for flat {i} was left at the desk.",
                         f"2024-03-{1 + i % 28:02d}T{i % 24:02d}:00:00") for i in range(LARGE_STATE - len(base.memories)))
    with _built(b) as made:
        s = b.build(replace(base, memories=base.memories + extra))
        made.append(s)
        ids = _active(b, s)
        expect(len(ids) == LARGE_STATE, f"list() of a state of {LARGE_STATE} memories shows {len(ids)} of them")


#: checks that build a large state, run by ``ufuzz backends check`` on a backend whose listing may come in pages
#: (``MemoryBackend.build_checks_listing``: a product over HTTP); not in :data:`CHECKS`, which every adapter's own
#: tests run
LARGE_CHECKS: tuple[Check, ...] = (Check("list_holds_a_large_state", check_list_holds_a_large_state),)


# -- running ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    check: str
    outcome: str  # passed | failed (a broken promise) | error (an exception) | skipped (does not apply)
    message: str = ""
    seconds: float = 0.0
    unreachable: bool = False  # an error because the backend could not be reached at all (nothing was checked)

    @property
    def ok(self) -> bool:
        return self.outcome in ("passed", "skipped")


def run_check(check: Check, backend: MemoryBackend) -> CheckResult:
    """One check on ``backend``; never raises (an exception of the backend is an ``error`` result)."""
    start = time.perf_counter()
    down = False
    try:
        check.fn(backend)
    except Skip as exc:
        outcome, message = "skipped", str(exc)
    except ConformanceFailure as exc:
        outcome, message = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - whatever the backend raised is the result
        outcome, message = "error", f"{type(exc).__name__}: {exc}"
        down = isinstance(exc, BackendUnreachable)
    else:
        outcome, message = "passed", ""
    return CheckResult(check.name, outcome, message, time.perf_counter() - start, unreachable=down)


def run_conformance(factory: Callable[[], MemoryBackend], checks: Iterable[Check] = CHECKS, *,
                    fresh: bool = False, on_result: Callable[[CheckResult], None] | None = None
                    ) -> list[CheckResult]:
    """Every check on a backend made by ``factory`` (one for all checks, or a new one per check when
    ``fresh``), closed afterwards. What ``factory`` raises is raised: without a backend nothing was checked.
    ``on_result`` sees each result as soon as it is known (for live output)."""
    results: list[CheckResult] = []
    backend: MemoryBackend | None = None
    try:
        for check in checks:
            if backend is None:
                backend = factory()
            results.append(run_check(check, backend))
            if on_result is not None:
                on_result(results[-1])
            if fresh:
                backend.close()
                backend = None
    finally:
        if backend is not None:
            backend.close()
    return results


class ConformanceSuite:
    """pytest: every check as a test method of a class that provides a ``backend`` fixture::

        from ufuzz.backends.conformance import ConformanceSuite

        class TestMyStoreConformance(ConformanceSuite):
            @pytest.fixture
            def backend(self, tmp_path):
                b = MyStoreBackend(tmp_path, {})
                yield b
                b.close()
    """


def _method(check: Check) -> Callable[[ConformanceSuite, MemoryBackend], None]:
    def test(self: ConformanceSuite, backend: MemoryBackend) -> None:
        check(backend)

    test.__name__ = f"test_{check.name}"
    test.__doc__ = check.doc
    return test


for _check in CHECKS:
    setattr(ConformanceSuite, f"test_{_check.name}", _method(_check))
