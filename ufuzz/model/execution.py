"""An execution: the observed memory-use behaviour U(q, M) of one case on one memory state."""

from __future__ import annotations

from dataclasses import dataclass, field

#: the suffix of a result identified by its text as a version an in-place update overwrote (``m3@overwritten``):
#: the product returned text it was told to replace (:mod:`ufuzz.engine.identify`)
OVERWRITTEN = "@overwritten"


@dataclass
class Execution:
    """The observed memory-use behaviour U(q, M) of one case."""

    case_id: str
    state_key: str
    query: str
    top_ids: list[str] = field(default_factory=list)
    top_scores: list[float] = field(default_factory=list)
    top_texts: list[str] = field(default_factory=list)
    #: the system's own ids of the top-k, where the backend maps ids (None: they are the ufuzz ids)
    native_ids: list[str] | None = None
    response: str | None = None  # None: the system under test gave no response (no responder)
    responder: str | None = None  # who responded: "backend", "answerer:<model>", "reader:top-evidence"
    abstained: bool = False
    cited_ids: list[str] = field(default_factory=list)  # memories the backend's own answer cites (not judged)
    error: str | None = None
    seconds: float = 0.0
    #: what the system probes saw on a seed's execution (:mod:`ufuzz.engine.probes`): ``short`` (a short result
    #: list), ``unreachable`` (checkpoint memories a search for their own words misses); judged by no reference
    probes: dict | None = None

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple(self.top_ids)
