"""Resume snapshots: the engine's state between two steps, as bytes for the corpus database.

A snapshot is the pickled state a campaign needs to go on exactly as it would have
(:class:`ufuzz.engine.state.CampaignState`): the scheduler (with its random generator), the feedback sets, the
cases still pickable, the cached parent executions, the counters, the batch in flight; and, in its own table on
the oracle side, the references, the parents' verdicts and the failure tallies.
Backend states are not in it: the executor rebuilds them from their recipes (checkpoint + operations) when
they are first used again, as it does after evicting one.

Snapshots are written by this version of ufuzz for this version: ``FORMAT`` changes whenever what they hold
changes, and a snapshot of another format is refused with a message rather than resumed wrongly.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any

#: 3: the state as dicts of named parts; 4: each half of :class:`ufuzz.engine.state.CampaignState` pickled whole;
#: 5: the same parts, for campaigns run in ``--batch`` batches with effects measured from what a mutation predicts
#: (2026-12-06) — a format-4 campaign resumed under those rules would not be the campaign it was, so it is refused;
#: 6: follow-ups owed to seeds whose mutants were retained after a spread phase 1 left them; 7: memories selected
#: for a question the memory cannot support count as its operator's effect (a format-6 campaign's rates were
#: counted without them); 8: the feedback state holds its signals as modules (:mod:`ufuzz.engine.signals`) and the
#: scheduler takes energy, effect and instability (a format-7 snapshot holds the classes they replaced); 9: the
#: modules moved — the state's bounded maps are :class:`ufuzz._util.lru.LRU`, the in-flight batch's lane jobs
#: :class:`ufuzz.engine.parallel.core.LaneJob` (a format-8 snapshot names the modules they moved from) — and the
#: engine's half names the feedback signals it ran with (:func:`signals_of`)
FORMAT = 9

__all__ = ["FORMAT", "SnapshotError", "dump", "format_of", "load", "signals_of"]


class SnapshotError(RuntimeError):
    """A snapshot that cannot be resumed from (another format, damaged, or inconsistent)."""


def _known_object(name: str) -> Any:
    """Stands for a known object in a snapshot; :class:`_Unpickler` resolves it by name, never this."""
    raise SnapshotError(f"the resume snapshot refers to {name!r}, which was not given")


class _Pickler(pickle.Pickler):
    """Writes the known objects as their names. ``reducer_override`` (not ``persistent_id``): pickle calls it
    only for objects that are not plain strings, numbers, lists, dicts, sets or tuples, which are most of a
    snapshot — a ``persistent_id`` hook cost a Python call for each of them (a million in a 2,000-step
    campaign)."""

    def __init__(self, file: Any, known: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._known = known

    def reducer_override(self, obj: Any) -> Any:
        name = self._known.get(id(obj))
        return NotImplemented if name is None else (_known_object, (name,))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, known: dict[str, Any]) -> None:
        super().__init__(file)
        self._known = known

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_known_object":
            return self._lookup
        return super().find_class(module, name)

    def _lookup(self, name: str) -> Any:
        try:
            return self._known[name]
        except KeyError:
            raise SnapshotError(f"the resume snapshot refers to {name!r}, which the campaign no longer has") from None


def dump(state: dict[str, Any], known: dict[str, Any] | None = None) -> bytes:
    """``state`` as compressed bytes, tagged with :data:`FORMAT`. Objects of ``known`` (name -> object: what
    a resume rebuilds by itself, e.g. the seed cases) are written as their names only."""
    import io

    buf = io.BytesIO()
    _Pickler(buf, {id(obj): name for name, obj in (known or {}).items()}).dump({"format": FORMAT, **state})
    return zlib.compress(buf.getvalue(), 1)


def load(data: bytes, known: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state :func:`dump` wrote, with the names of ``known`` objects resolved to the objects given."""
    import io

    try:
        # written by this campaign into its own corpus database
        state = _Unpickler(io.BytesIO(zlib.decompress(data)), known or {}).load()  # noqa: S301
    except SnapshotError:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage is reported the same way
        raise SnapshotError(f"the resume snapshot cannot be read ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else None
        raise SnapshotError(f"the resume snapshot has format {found!r}; this ufuzz resumes format {FORMAT} only (it "
                            "was written by another version of ufuzz: resume it with that version, or run the "
                            "campaign again)")
    return state


def format_of(data: bytes) -> int | None:
    """The format ``data`` was written in, read from its first bytes without unpickling anything (a resume
    refuses another format before it opens the campaign); None when that cannot be read."""
    found = _head(data, "format")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def signals_of(data: bytes) -> str | None:
    """The feedback signals the campaign ran with (their names, comma-separated), when the snapshot says (an engine
    snapshot does), read like :func:`format_of`: a resume refuses a campaign whose signals this ufuzz does not have
    the same of, before it opens it."""
    found = _head(data, "signals")
    return found if isinstance(found, str) else None


def _head(data: bytes, key: str) -> Any:
    """The value right after the first ``key`` among the first bytes of a snapshot (a top-level key of the state
    :func:`dump` wrote, a number or a string), without unpickling anything; None when it cannot be read there."""
    import io
    import pickletools

    try:
        head = zlib.decompressobj().decompress(data, 512)
        named = False
        for _, arg, _ in pickletools.genops(io.BytesIO(head)):
            if named and arg is not None:  # the value after the key (a memo op between them has no argument)
                return arg
            named = named or arg == key
    except Exception:  # noqa: BLE001 - damaged or cut short: unknown
        return None
    return None
