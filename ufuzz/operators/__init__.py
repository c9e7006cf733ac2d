"""Mutation operators: on the query (paraphrase, target change, unsupported, speaker swap) and on the memory
state (update, delete, unrelated edit). Each lives in its own module and is found by
:mod:`ufuzz.operators.registry` (``ufuzz strategies`` and the registry list them; nothing here is a second list)."""

from __future__ import annotations

from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.registry import create_all, names


def all_operators(realizer=None) -> dict[str, Operator]:
    """Fresh instances of every registered operator, by name (``realizer``: optional LLM paraphrase realizer)."""
    return create_all(realizer=realizer)


__all__ = ["Mutation", "Operator", "Rejected", "StateView", "Verdict", "all_operators", "create_all", "names"]
