"""The preflight checks that a backend's copy of a state is independent of the original before a campaign runs
parent and mutant on copies (a held-out product whose snapshot shared its search index: the campaign ran to the
end without a word, and its failures blamed mutations for other states' writes)."""

from __future__ import annotations

import pytest

from tests.support.operator_kit import embedded
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.engine.preflight import PreflightError, preflight


class SharedCopy(EmbeddedBackend):
    """A "copy" that is the original itself: every write to it is a write to the state it was copied from."""

    def fork(self, state):
        return state


def test_a_copy_that_shares_the_original_fails_the_preflight_saying_what_leaked(tmp_path):
    backend = embedded(tmp_path, cls=SharedCopy)
    try:
        with pytest.raises(PreflightError) as got:
            preflight(backend)
    finally:
        backend.close()
    said = str(got.value)
    assert "copy of a state is not independent" in said and "added to the copy is listed in the original" in said
    assert "remove [snapshot]" in said


def test_an_independent_copy_passes(tmp_path):
    backend = embedded(tmp_path)
    try:
        assert preflight(backend)["copy_isolated"] is True
    finally:
        backend.close()


class StoresNotEveryNote(EmbeddedBackend):
    """An extracting backend that makes nothing of one of the scratch notes (mem0 with LLM extraction may)."""

    def build(self, checkpoint):
        from dataclasses import replace

        return super().build(replace(checkpoint, memories=checkpoint.memories[:1]))


def test_a_backend_that_stored_not_every_note_is_not_taken_for_a_shared_copy(tmp_path):
    """Second read of the change: the check assumed the original lists the second scratch note, so a correct
    backend that had stored nothing of it was refused as if its copy shared the original."""
    backend = embedded(tmp_path, cls=StoresNotEveryNote)
    try:
        assert preflight(backend)["copy_isolated"] is True
    finally:
        backend.close()
