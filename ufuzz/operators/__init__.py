"""Mutation operators: three on the query, three on the memory state."""

from __future__ import annotations

from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.delete import Delete
from ufuzz.operators.paraphrase import Paraphrase
from ufuzz.operators.target_change import TargetChange
from ufuzz.operators.unrelated_edit import UnrelatedEdit
from ufuzz.operators.unsupported import Unsupported
from ufuzz.operators.update import Update

OPERATOR_NAMES = ("paraphrase", "target_change", "unsupported", "update", "delete", "unrelated_edit")
QUERY_OPERATORS = ("paraphrase", "target_change", "unsupported")
STATE_OPERATORS = ("update", "delete", "unrelated_edit")


def all_operators(realizer=None) -> dict[str, Operator]:
    """Fresh instances of the six operators, by name (``realizer``: optional LLM paraphrase realizer)."""
    return {"paraphrase": Paraphrase(realizer), "target_change": TargetChange(), "unsupported": Unsupported(),
            "update": Update(), "delete": Delete(), "unrelated_edit": UnrelatedEdit()}


__all__ = ["Mutation", "Operator", "Rejected", "StateView", "Verdict", "OPERATOR_NAMES", "QUERY_OPERATORS",
           "STATE_OPERATORS", "all_operators"]
