"""Memory backends with one planted defect each, beside the same backend without it: ground truth for the fuzzer.

They ship with the package for ``ufuzz bench --planted`` (:mod:`ufuzz.reports.planted`), which measures each
search strategy by the planted defects it finds and the false findings it reports on the clean twins, the way
Magma measures fuzzers by ground-truth bugs; ``tests/oracles/test_ground_truth.py`` checks every pair. None of
them is a backend of its own (no ``name``): :func:`register_all` registers them as ``planted-NAME`` and
``clean-NAME`` where they are used.

Each pair is the real embedded backend (:class:`~ufuzz.backends.adapters.embedded.EmbeddedBackend`: SQLite rows,
copy-on-write states, BM25 or MiniLM retrieval) with exactly one behaviour changed, and a ``defect`` flag that
switches only that behaviour: the defective build has ``defect = True``, its clean twin ``defect = False``.
The clean twin is correct for the property the defect breaks, so a campaign on the pair tells whether the
fuzzer finds the planted defect (operator + failure kind, :class:`PlantedClass`) and nothing else.

The planted behaviours are memory-system bugs a tester meets in real products: a delete that only reaches the
document store, versions kept as peers with ties broken by age, a "semantic" result cache that does not tell
questions about different people apart, a fixed-capacity search index, a relevance cut-off set too low, an update
stored but not re-indexed. None of them looks at what the fuzzer does: they act on ordinary add/update/delete/retrieve calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.adapters.embedded import EmbeddedBackend, _Row, _top
from ufuzz.backends.options import Option
from ufuzz.backends.protocol import OpResult, Retrieved, StateHandle, StoredMemory
from ufuzz.model import Checkpoint, Memory

#: metadata flags the planted builds keep on stored rows (never shown through get/list)
HIDDEN = "planted_hidden"  # deleted from the document store's point of view, still in the search index
UNINDEXED = "planted_unindexed"  # still stored, evicted from the search index
STORED = "planted_stored_text"  # the text the document store holds, where the search index still has an older one
_FLAGS = (HIDDEN, UNINDEXED, STORED)


def _public(m: StoredMemory) -> StoredMemory:
    meta = {k: v for k, v in m.metadata.items() if k not in _FLAGS}
    return StoredMemory(m.id, m.metadata.get(STORED, m.text), m.timestamp, m.active, meta)


class _Planted(EmbeddedBackend):
    """The embedded backend with hooks for one changed behaviour; ``defect`` switches it on."""

    defect: bool = False

    def _rows(self, state: StateHandle) -> dict[str, _Row]:
        """The rows visible in ``state`` (metadata included), by memory id."""
        return self._visible(self._node(state))

    def _scored(self, state: StateHandle, query: str) -> list[tuple[float, str, str]]:
        """Every retrievable memory of ``state`` the retrieval mode scores, best first, uncut."""
        view = self._view(self._node(state))
        n = view.size
        if n == 0:
            return []
        if self.retrieval == "dense":
            return _top(self._dense(view, query), n)
        if self.retrieval == "bm25":
            return _top(self._bm25(view, query), n)
        return self._hybrid(view, query, n)

    def _cut(self, ranked: list[tuple[float, str, str]], k: int) -> list[Retrieved]:
        thr = self.relevance_threshold
        return [Retrieved(mid, text, score) for score, mid, text in ranked[:k] if thr is None or score >= thr]

    # get/list are the document store's view: a row flagged HIDDEN is gone from it, internal flags are not shown
    def _get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        got = super()._get(state, memory_id)
        return None if got is None or got.metadata.get(HIDDEN) else _public(got)

    def _list(self, state: StateHandle) -> list[StoredMemory]:
        return [_public(m) for m in super()._list(state) if not m.metadata.get(HIDDEN)]


# -- (a) delete hides from list/get, search still returns --------------------------------------------------

class DeleteHidesOnly(_Planted):
    """Planted: ``delete`` only marks the memory deleted in the document store — ``get`` no longer finds it,
    ``list`` no longer shows it — but the search index is never told, so retrieval keeps returning it.
    Clean: ``delete`` removes the memory from the store and from search (the embedded hard delete)."""

    def _delete(self, state: StateHandle, memory_id: str) -> OpResult:
        if not self.defect:
            return super()._delete(state, memory_id)
        old = self._resolve(self._node(state), memory_id)
        if old is None or old.metadata.get(HIDDEN):
            return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
        node = self._writable(state)
        self._put(node, _Row(old.mem_id, old.text, old.timestamp, True, False, {**old.metadata, HIDDEN: True}))
        self._conn.commit()
        return OpResult("delete", True, memory_id, removed=(memory_id,), detail="deleted")


# -- (b) update appends, ties rank the oldest version first ------------------------------------------------

#: scores within this fraction of a version chain's best score count as tied
NEAR_TIE = 0.10


class VersionOrder(_Planted):
    """Both builds store an update as a new version beside the old one (``update_policy=append``: the new row
    says ``supersedes``, the old one ``superseded_by``) and keep both retrievable — ``previous`` questions
    need the old one.

    Planted: the versions of one memory are peers in ranking; where their scores are near-tied (within
    :data:`NEAR_TIE` of the best version's), the **oldest** version ranks first.
    Clean: an update supersedes: the newest version ranks where the best-scored version of its chain would
    rank (or higher), and older versions only after it — a superseded version is never ranked above its
    successor."""

    def __init__(self, workdir, options=None, **kw: Any) -> None:
        super().__init__(workdir, {**(options or {}), "update_policy": "append"}, **kw)

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        if k <= 0:
            return []
        rows = self._rows(state)
        scored = {mid: (score, text) for score, mid, text in self._scored(state, query)}
        keys = {m: (-s, m, 0) for m, (s, _) in scored.items()}
        for chain in _chains(rows):  # oldest version first
            present = [m for m in chain if m in scored]
            if not present:
                continue
            if self.defect:
                best = max(scored[m][0] for m in present)
                for age, m in enumerate(chain):
                    if m in scored and best - scored[m][0] <= NEAR_TIE * abs(best):
                        keys[m] = (-best, chain[0], age)  # near-tied versions: the oldest first
            else:
                head = min(keys[m][:2] for m in present)
                newest = chain[-1]
                if newest not in scored:
                    scored[newest] = (-head[0], rows[newest].text)
                keys[newest] = (*head, 0)  # where the best-ranked version of the chain would be
                for age, m in enumerate(reversed(chain[:-1]), start=1):
                    if m in scored:
                        keys[m] = (*keys[m][:2], age)  # never before the newest: keys[m][:2] >= head
        ranked = sorted(keys, key=keys.__getitem__)
        return self._cut([(-keys[m][0], m, scored[m][1]) for m in ranked], k)


def _chains(rows: dict[str, _Row]) -> list[list[str]]:
    """Version chains (oldest first) of the memories linked by ``supersedes`` in ``rows``."""
    succ = {r.metadata.get("supersedes"): mid for mid, r in rows.items() if r.metadata.get("supersedes") in rows}
    pred = {v: k for k, v in succ.items()}
    out = []
    for root in sorted(m for m in succ if m not in pred):
        chain = [root]
        while chain[-1] in succ:
            chain.append(succ[chain[-1]])
        out.append(chain)
    return out


# -- (c) search ignores the entity named -------------------------------------------------------------------

#: a capitalised word that does not start a sentence (a name), with a possessive if any
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*(?:['\u2019]s)?\b")


def scrub_names(query: str) -> str:
    """``query`` without the names it spells out (capitalised words that do not start a sentence)."""
    return " ".join(_NAME.sub(" ", query).split())


def normalise(query: str) -> str:
    return " ".join(re.findall(r"[\w']+", query.lower()))


class EntityBlindCache(_Planted):
    """Both builds put a result cache in front of search: a state remembers the results of the questions
    asked of it (forks see their parent's entries; any write to the state empties its cache).

    Planted: the cache key is the question with the names it spells out removed (a "semantic" cache that
    normalises questions through a name scrubber), so once a question was asked about one entity, the same
    question about another entity gets the first entity's results: search ignores the entity named.
    Clean: the cache key is the whole question (case and punctuation normalised)."""

    def __init__(self, workdir, options=None, **kw: Any) -> None:
        super().__init__(workdir, options, **kw)
        self._cache: dict[int, dict[tuple[str, int], list[Retrieved]]] = {}  # node -> key -> results

    def _key(self, query: str, k: int) -> tuple[str, int]:
        return (normalise(scrub_names(query) if self.defect else query), k)

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        node = self._node(state)
        key = self._key(query, k)
        cur: int | None = node
        while cur is not None:  # a fork's own cache, then its ancestors' while it has written nothing
            hit = self._cache.get(cur, {}).get(key)
            if hit is not None:
                return list(hit)
            if self._own.get(cur):
                break
            cur = self._parent.get(cur)
        got = super()._retrieve(state, query, k)
        self._cache.setdefault(node, {})[key] = list(got)
        return got

    def _put(self, node: int, row: _Row) -> None:
        super()._put(node, row)
        self._cache.pop(node, None)

    def _drop(self, node: int, mem_id: str) -> None:
        super()._drop(node, mem_id)
        self._cache.pop(node, None)

    def _release(self, state: StateHandle) -> None:
        super()._release(state)
        live = set(self._parent)
        for node in [n for n in self._cache if n not in live]:
            del self._cache[node]


# -- (d) an unrelated add evicts another memory ------------------------------------------------------------

class CapacityEviction(_Planted):
    """Planted: the search index has a fixed capacity — the number of memories the state was built with — and
    an ``add`` past it evicts the oldest indexed memory (by timestamp) from the index. The document store keeps
    it (``get``/``list`` show it unchanged); search no longer finds it.
    Clean: the index grows with the store; an add evicts nothing."""

    def __init__(self, workdir, options=None, **kw: Any) -> None:
        super().__init__(workdir, options, **kw)
        self._capacity: dict[int, int] = {}  # root node of a built state -> index capacity

    def _build(self, checkpoint: Checkpoint) -> StateHandle:
        handle = super()._build(checkpoint)
        self._capacity[self._root(self._node(handle))] = len(checkpoint.memories)
        return handle

    def _root(self, node: int) -> int:
        return self._chain(node)[-1]

    def _add(self, state: StateHandle, memory: Memory) -> OpResult:
        res = super()._add(state, memory)
        if not self.defect or not res.ok:
            return res
        node = self._node(state)
        indexed = [r for r in self._visible(node).values() if r.active and not r.metadata.get(UNINDEXED)]
        if len(indexed) > self._capacity.get(self._root(node), len(indexed)):
            victim = min((r for r in indexed if r.mem_id != memory.id), key=lambda r: (r.timestamp, r.mem_id))
            self._put(self._writable(state), _Row(victim.mem_id, victim.text, victim.timestamp, True, False,
                                                  {**victim.metadata, UNINDEXED: True}))
            self._conn.commit()
        return res

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        if k <= 0:
            return []
        gone = {m for m, r in self._rows(state).items() if r.metadata.get(UNINDEXED)}
        return self._cut([t for t in self._scored(state, query) if t[1] not in gone], k)


# -- (e) a relevance threshold set too low -----------------------------------------------------------------

class RelevanceCutoff(_Planted):
    """The embedded backend with its ``relevance_threshold`` option: results scored below it are not returned.
    Planted: the threshold is ``low`` (option ``low``), below what unsupported questions score.
    Clean: the threshold is ``high`` (option ``high``), one that separates supported from unsupported
    questions on the suite it serves. Both are declared (``Capabilities.relevance_threshold``)."""

    options_spec = (*EmbeddedBackend.options_spec,
                    Option("low", float, help="the planted twin's relevance_threshold"),
                    Option("high", float, help="the clean twin's relevance_threshold"))

    def __init__(self, workdir, options=None, **kw: Any) -> None:
        opts = dict(options or {})
        low, high = opts.pop("low", None), opts.pop("high", None)
        chosen = low if self.defect else high
        if chosen is not None:
            opts["relevance_threshold"] = chosen
        super().__init__(workdir, opts, **kw)


# -- (f) an update stored but not re-indexed -----------------------------------------------------------------

class StaleIndex(_Planted):
    """Both builds update in place (``update_policy=rewrite``): ``get``/``list`` show the new text under the
    memory's id. Planted: the search index is not told — it keeps the old text's terms and vector for the memory,
    and search returns the memory (with the text the store holds) wherever the *old* text would rank, so a
    question in the new text's words does not find it. Clean: the index is rewritten with the store."""

    def __init__(self, workdir, options=None, **kw: Any) -> None:
        super().__init__(workdir, {**(options or {}), "update_policy": "rewrite"}, **kw)

    def _update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        old = self._rows(state).get(memory_id)
        res = super()._update(state, memory_id, new)
        if not self.defect or not res.ok or old is None:
            return res
        indexed = old.text  # what the index had for the memory (an earlier stale update's included)
        self._put(self._writable(state), _Row(memory_id, indexed, new.timestamp, True, False,
                                              {**old.metadata, **new.metadata, STORED: new.text}))
        self._conn.commit()
        return res

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        rows = self._rows(state)
        return [Retrieved(r.id, rows[r.id].metadata.get(STORED, r.text) if r.id in rows else r.text, r.score)
                for r in super()._retrieve(state, query, k)]


# -- the pairs -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlantedClass:
    """The failures a planted defect must produce: failure kind(s) and the mutations that expose them — an
    operator, narrowed where the defect shows only for some of its obligations to a target field
    (``"entity"`` for ``entity=Bob``) or an exact target (``"add"``)."""

    kinds: tuple[str, ...]
    by: tuple[tuple[str, str | None], ...]  # (operator, target field or exact target; None = any target)

    def holds(self, f: Any) -> bool:
        """Whether failure ``f`` (a :class:`~ufuzz.oracles.verdict.Failure`) is of this class."""
        return f.kind in self.kinds and self.made_by(f.operator, f.target)

    def made_by(self, operator: str, target: str) -> bool:
        """Whether a mutation of ``operator`` with obligation ``target`` is one that exposes the defect."""
        return any(operator == op and _target_is(target, t) for op, t in self.by)

    def __str__(self) -> str:
        ops = " or ".join(f"{op}[{t}]" if t else op for op, t in self.by)
        return f"{'|'.join(self.kinds)} by {ops}"


def _target_is(target: str, spec: str | None) -> bool:
    if spec is None:
        return True
    name, sep, _ = target.partition("=")
    return target == spec or (bool(sep) and name == spec)


def _pair(base: type[_Planted]) -> tuple[type[_Planted], type[_Planted]]:
    bad = type(f"Defective{base.__name__}", (base,), {"defect": True, "__doc__": base.__doc__,
                                                     "__module__": __name__})
    good = type(f"Clean{base.__name__}", (base,), {"defect": False, "__doc__": base.__doc__,
                                                   "__module__": __name__})
    return bad, good


PAIRS: dict[str, tuple[type[_Planted], type[_Planted]]] = {
    "delete-hides": _pair(DeleteHidesOnly),
    "version-ties": _pair(VersionOrder),
    "entity-blind": _pair(EntityBlindCache),
    "add-evicts": _pair(CapacityEviction),
    "low-threshold": _pair(RelevanceCutoff),
    "stale-index": _pair(StaleIndex),
}
# importable by name, as a campaign's lanes (other processes) import a backend class
for _bad, _good in PAIRS.values():
    globals()[_bad.__name__], globals()[_good.__name__] = _bad, _good

#: the class of failures each planted defect must produce
CLASSES: dict[str, PlantedClass] = {
    # a deleted memory retrieved, whichever operator deleted it (the queried fact's evidence, or an
    # unrelated memory)
    "delete-hides": PlantedClass(("deleted_evidence_retrieved",), (("delete", None), ("unrelated_edit", "delete"))),
    # the superseded version ranked above the version that replaced it
    "version-ties": PlantedClass(("stale_ranked_above_valid",), (("update", None),)),
    # the same question about another entity answered with the first entity's results
    "entity-blind": PlantedClass(("missing_evidence", "stale_ranked_above_valid"), (("target_change", "entity"),)),
    # the queried fact's evidence evicted by an unrelated add
    "add-evicts": PlantedClass(("missing_evidence",), (("unrelated_edit", "add"),)),
    # the decoy of a question about a person nobody mentioned returned as relevant
    "low-threshold": PlantedClass(("unsupported_retrieved",), (("unsupported", "entity"),)),
    # the memory an update rewrote, searched for by its own words, not found beside a fresh memory of them
    # (ufuzz.engine.readback), whichever operator made the update
    "stale-index": PlantedClass(("write_not_found",), (("update", None), ("unrelated_edit", "update"),
                                                       ("stress_edit", "update-oldest"),
                                                       ("stress_edit", "update-newest"))),
}


@dataclass(frozen=True)
class Setting:
    """How the planted benchmark fuzzes a pair: the suite (``shipped``: the shipped seeds; ``plain-world``:
    :func:`ufuzz.seeds.planted_world.plain_world`, where the clean build retrieves right), retrieval mode, k and
    the backend options."""

    suite: str
    retrieval: str = "bm25"
    k: int = 5
    options: tuple[tuple[str, str], ...] = ()


#: the settings of each pair (why each suite: tests/oracles/test_ground_truth.py)
SETTINGS: dict[str, Setting] = {
    "delete-hides": Setting("shipped"),
    "version-ties": Setting("plain-world"),
    "entity-blind": Setting("plain-world", k=2),
    "add-evicts": Setting("plain-world"),
    "low-threshold": Setting("plain-world", k=10, options=(("low", "0.05"), ("high", "0.5"))),
    "stale-index": Setting("shipped"),
}


def register_all() -> dict[str, tuple[str, str]]:
    """Register every pair (``planted-NAME`` and ``clean-NAME``); returns name -> (defective, clean)."""
    out = {}
    for name, (bad, good) in PAIRS.items():
        registry.register(f"planted-{name}", bad)
        registry.register(f"clean-{name}", good)
        out[name] = (f"planted-{name}", f"clean-{name}")
    return out
