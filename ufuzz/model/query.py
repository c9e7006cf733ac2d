"""A query, its answer-affecting fields, and the mutation descriptor of a seed (never the answer)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

#: Temporal scope of a query: the value valid now, the one valid before the latest change, or unscoped.
SCOPES = ("current", "previous", "any")

_OP_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class QueryFields:
    """The answer-affecting fields of a query. Paraphrase must keep all four unchanged."""

    entity: str
    attribute: str
    scope: str = "current"  # one of SCOPES
    answerable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueryFields:
        scope = str(d.get("scope", "current"))
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
        return cls(entity=str(d["entity"]), attribute=str(d["attribute"]), scope=scope,
                   answerable=bool(d.get("answerable", True)))


@dataclass(frozen=True)
class Query:
    """A query: its text, its answer-affecting fields, and how it is worded.

    ``context`` is removable, non-restrictive context that is part of ``text`` (paraphrase may shorten it);
    ``form`` is the syntactic form (``question``, ``imperative``, ``indirect``, ``free``); ``template`` names
    the wording template used (``None`` for free text, e.g. imported benchmark questions). ``asked_at`` is
    when the question is asked (an ISO timestamp; a benchmark's question date), if the seed says: the state
    operators write nothing dated after it, since a value told after the question cannot be its answer.
    """

    id: str
    text: str
    fields: QueryFields
    context: str = ""
    form: str = "question"
    template: str | None = None
    asked_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "text": self.text, "fields": self.fields.to_dict(), "context": self.context,
             "form": self.form, "template": self.template}
        if self.asked_at is not None:  # absent when unknown: older files and the shipped suite read the same
            d["asked_at"] = self.asked_at
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Query:
        asked = d.get("asked_at")
        return cls(id=str(d["id"]), text=str(d["text"]), fields=QueryFields.from_dict(d["fields"]),
                   context=str(d.get("context", "")), form=str(d.get("form", "question")),
                   template=d.get("template"), asked_at=None if asked is None else str(asked))


@dataclass(frozen=True)
class MutationDescriptor:
    """What operators may do with a seed. Never contains the expected answer.

    ``replacement_targets`` maps a query field (``entity``/``attribute``/``scope``) to values the checkpoint
    supports for this query; ``absent_targets`` maps a field to type-compatible values the checkpoint has
    no fact for; ``memory_ops`` restricts the memory-state operators that apply (``None``: every state operator,
    so a new operator needs no change to existing seeds); ``value_pool`` gives type-compatible fresh values an
    update may write.
    """

    answer_fields: tuple[str, ...] = ("entity", "attribute", "scope")
    replacement_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    absent_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    memory_ops: tuple[str, ...] | None = None
    value_pool: tuple[str, ...] = ()

    def allows(self, operator: str) -> bool:
        """Whether the memory-state operator ``operator`` applies to this seed."""
        return self.memory_ops is None or operator in self.memory_ops

    def to_dict(self) -> dict[str, Any]:
        d = {"answer_fields": list(self.answer_fields),
             "replacement_targets": {k: list(v) for k, v in self.replacement_targets.items()},
             "absent_targets": {k: list(v) for k, v in self.absent_targets.items()},
             "value_pool": list(self.value_pool)}
        if self.memory_ops is not None:
            d["memory_ops"] = list(self.memory_ops)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MutationDescriptor:
        raw = d.get("memory_ops")
        ops = None if raw is None else tuple(str(o) for o in raw)
        bad = [o for o in ops or () if not _OP_NAME.fullmatch(o)]
        if bad:
            raise ValueError(f"memory op names are lower-case operator names, not {bad}")
        return cls(answer_fields=tuple(d.get("answer_fields", ("entity", "attribute", "scope"))),
                   replacement_targets={str(k): tuple(str(x) for x in v)
                                        for k, v in (d.get("replacement_targets") or {}).items()},
                   absent_targets={str(k): tuple(str(x) for x in v)
                                   for k, v in (d.get("absent_targets") or {}).items()},
                   memory_ops=ops, value_pool=tuple(str(v) for v in d.get("value_pool", ())))
