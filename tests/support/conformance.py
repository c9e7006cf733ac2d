"""Backend-protocol conformance checks shared by every adapter's tests.

Use from a test module::

    from tests.support.conformance import CONFORMANCE_CHECKS, tiny_checkpoint
    @pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.__name__)
    def test_conformance(check, backend):   # backend: a fresh MemoryBackend fixture
        check(backend)
"""

from __future__ import annotations

from ufuzz.backends.protocol import MemoryBackend
from ufuzz.model import Checkpoint, Entity, Fact, Memory


def tiny_checkpoint(cid: str = "ck-tiny") -> Checkpoint:
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


def check_build_and_list(b: MemoryBackend) -> None:
    s = b.build(tiny_checkpoint())
    ids = sorted(m.id for m in b.list(s) if m.active)
    assert ids == ["m1", "m2", "m3", "m4", "m5", "m6"]
    got = b.get(s, "m1")
    assert got is not None and "Velmora" in got.text
    assert b.get(s, "nope") is None


def check_retrieve_ordered_and_deterministic(b: MemoryBackend) -> None:
    s = b.build(tiny_checkpoint())
    r1 = b.retrieve(s, "Where does Lena live?", 3)
    r2 = b.retrieve(s, "Where does Lena live?", 3)
    assert 1 <= len(r1) <= 3
    assert [x.id for x in r1] == [x.id for x in r2]
    scores = [x.score for x in r1]
    assert scores == sorted(scores, reverse=True)
    assert "m1" in [x.id for x in b.retrieve(s, "Where does Lena live?", 6)]


def check_fork_isolation(b: MemoryBackend) -> None:
    if not b.capabilities.copyable:
        return
    parent = b.build(tiny_checkpoint())
    child = b.fork(parent)
    sibling = b.fork(parent)
    b.update(child, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00"))
    b.delete(child, "m4")
    b.add(child, Memory("m7", "Omar adopted a cat named Sorrel.", "2024-02-02T10:00:00"))
    for other in (parent, sibling):
        texts = {m.id: m.text for m in b.list(other) if m.active}
        assert texts["m1"] == "My sister Lena lives in Velmora."
        assert "m4" in texts and "m7" not in texts and "m1~u" not in texts
        assert all("Brask" not in x.text for x in b.retrieve(other, "Where does Lena live?", 6))
    child_ids = {m.id for m in b.list(child) if m.active}
    assert "m7" in child_ids and "m4" not in child_ids
    b.release(child)
    assert b.get(parent, "m1") is not None  # releasing a fork leaves its parent alone


def check_update_is_later_and_active(b: MemoryBackend) -> None:
    s = b.build(tiny_checkpoint())
    res = b.update(s, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00"))
    assert res.ok and res.op == "update" and res.written
    new = b.get(s, res.written[0])
    assert new is not None and "Brask" in new.text and new.active
    assert new.timestamp >= "2024-02-01"


def check_delete_is_observable(b: MemoryBackend) -> None:
    s = b.build(tiny_checkpoint())
    res = b.delete(s, "m4")
    assert res.ok and res.op == "delete"
    got = b.get(s, "m4")
    assert got is None or not got.active
    assert "m4" not in {m.id for m in b.list(s) if m.active}


def check_add(b: MemoryBackend) -> None:
    s = b.build(tiny_checkpoint())
    res = b.add(s, Memory("m7", "Omar adopted a cat named Sorrel.", "2024-02-02T10:00:00"))
    assert res.ok and "m7" in res.written
    assert b.get(s, "m7") is not None
    assert "m7" in [x.id for x in b.retrieve(s, "What is the name of Omar's cat?", 6)]


CONFORMANCE_CHECKS = [check_build_and_list, check_retrieve_ordered_and_deterministic, check_fork_isolation,
                      check_update_is_later_and_active, check_delete_is_observable, check_add]
