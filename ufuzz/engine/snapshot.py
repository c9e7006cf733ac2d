"""Resume snapshots: the engine's state between two steps, as bytes for the corpus database.

A snapshot is the pickled state a campaign needs to go on exactly as it would have: the scheduler (with its
random generator), the feedback sets, the cases still pickable, the cached parent executions, the counters;
and, in its own table on the oracle side, the references, the parents' verdicts and the failure tallies.
Backend states are not in it: the executor rebuilds them from their recipes (checkpoint + operations) when
they are first used again, as it does after evicting one.

Snapshots are written by this version of ufuzz for this version: ``FORMAT`` changes whenever what they hold
changes, and a snapshot of another format is refused with a message rather than resumed wrongly.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any

FORMAT = 2

__all__ = ["FORMAT", "SnapshotError", "dump", "load"]


class SnapshotError(RuntimeError):
    """A snapshot that cannot be resumed from (another format, damaged, or inconsistent)."""


class _Pickler(pickle.Pickler):
    def __init__(self, file: Any, known: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._known = known

    def persistent_id(self, obj: Any) -> str | None:
        return self._known.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, known: dict[str, Any]) -> None:
        super().__init__(file)
        self._known = known

    def persistent_load(self, pid: str) -> Any:
        try:
            return self._known[pid]
        except KeyError:
            raise SnapshotError(f"the resume snapshot refers to {pid!r}, which the campaign no longer has") from None


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
        raise SnapshotError(f"the resume snapshot has format {found!r}; this ufuzz resumes format {FORMAT} only")
    return state
